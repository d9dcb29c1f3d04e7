#ifndef GOPT_GRAPH_HLO_HLO_SHARDING_H_
#define GOPT_GRAPH_HLO_HLO_SHARDING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gopt::graph::hlo {

// An SPMD sharding as XLA prints it in `sharding={...}`: how an array is
// split over the partitions of a module. A value type.
struct HloSharding {
  enum class Kind {
    kReplicated,  // {replicated}: every device holds the whole array
    kMaximal,     // {maximal device=N}: one device holds it
    kManual,      // {manual}: the program already works on shards
    kTiled,       // {devices=[...]...}: split into tiles
    kTuple,       // {{...}, {...}}: one sharding per tuple element
    kUnknown,     // {unknown}: left to the partitioner
  };
  Kind kind = Kind::kReplicated;
  // kMaximal: the device.
  int64_t device = -1;
  // kTiled: tiles per array dimension, then the trailing subgroup
  // dimensions (a replicated last tile dimension, or `last_tile_dims`).
  std::vector<int64_t> tile_dims;
  // kTiled: trailing entries of tile_dims that are not array dimensions.
  int64_t subgroup_dims = 0;
  // kTiled: the kinds `last_tile_dims={...}` names for them ("manual",
  // "replicated"), one per subgroup dimension; empty for
  // last_tile_dim_replicate (one replicated subgroup dimension).
  std::vector<std::string> subgroup_types;
  // kTiled: the device of each tile in row-major order of tile_dims (an
  // explicit list or the iota form `<=[dims]T(perm)` expanded).
  std::vector<int64_t> devices;
  // kTuple: the elements.
  std::vector<HloSharding> elements;

  // Tiles along array dimension `dim` (1 beyond the tiled rank).
  int64_t TilesAlong(size_t dim) const;

  // The shape of one shard of an array of `dims` (dimensions split
  // ceil(dims[i] / tiles)); `dims` itself unless kTiled.
  std::vector<int64_t> ShardDims(const std::vector<int64_t>& dims) const;
};

// Parses the value of a `sharding=` attribute, braces included:
//   {replicated}  {maximal device=2}  {manual}  {unknown}
//   {devices=[2,1,4]<=[8] last_tile_dim_replicate}
//   {devices=[4,2]<=[2,4]T(1,0)}  {devices=[2,2]0,2,1,3}
//   {devices=[2,1,2]<=[4] last_tile_dims={manual}}  {{replicated}, {manual}}
// Trailing `metadata={...}`, `shard_as N` / `shard_like N` are skipped.
// Returns InvalidArgument naming the offset at fault and what was expected
// (e.g. a device count that does not match the tile dims).
absl::StatusOr<HloSharding> ParseHloSharding(absl::string_view text);

// Devices per group of a collective's `replica_groups=` value, as XLA
// prints it: the size of the first explicit group ({{0,1,2,3},{4,5,6,7}}
// -> 4, {{0}} -> 1), or the last dimension of the iota form ([2,4]<=[8]
// -> 4). 0 for {} (every device in one group) and for text in neither
// form: the group size is then not known, which costs as before.
int64_t ReplicaGroupSize(absl::string_view text);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_SHARDING_H_
