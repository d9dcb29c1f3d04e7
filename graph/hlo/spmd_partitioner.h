#ifndef GOPT_GRAPH_HLO_SPMD_PARTITIONER_H_
#define GOPT_GRAPH_HLO_SPMD_PARTITIONER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/hlo/hlo_module.h"

namespace gopt::graph::hlo {

// What PartitionSpmdModule found and did.
struct SpmdPartitionResult {
  // The module is an SPMD program: num_partitions > 1, or tiled shardings.
  bool spmd = false;
  // Shapes were rewritten to per-device shards (false for a module that
  // came partitioned already: an optimized dump, whose shapes are per
  // device and whose collectives are explicit).
  bool partitioned = false;
  // Devices of the mesh: num_partitions, or (num_partitions = 1) the most
  // devices any sharding names.
  int64_t num_partitions = 1;
  // Collectives inserted, by opcode ("all-gather" -> 2).
  std::map<std::string, int64_t> inserted;
  int64_t collectives_inserted() const;
  // What the user should know (ops costed unpartitioned, a sharding whose
  // device count differs from num_partitions).
  std::vector<std::string> warnings;
};

// Rewrites a pre-partitioning SPMD module (what pjit / MaxText / shard_map
// hand to XLA's SPMD partitioner: global shapes, `sharding=` on some
// instructions, `num_partitions=N`) into the program ONE device runs, as
// the partitioner would, so that the lowering costs every op on its shard:
//  - each array value gets a sharding: its own `sharding=` attribute, else
//    the one its operands imply (elementwise ops, transpose, broadcast,
//    reshape, reduce, dot, convolution, slice, pad, concatenate, ... keep
//    their operands' tiling on the dimensions it passes through; parameters
//    and ops without a rule: replicated); values made from nothing the mesh
//    splits (constants, iotas, and broadcasts, reshapes, transposes and
//    elementwise ops of them or of replicated values) take the split their
//    users need instead, made once per split, as sharding propagation
//    gives them their users' sharding;
//  - each op's shape becomes its shard's (dims split ceil(dim / tiles));
//    `devices=[a,b]<=[n]`, explicit device lists, last_tile_dim_replicate
//    and last_tile_dims subgroups tile as written; replicated, maximal
//    (costed where it runs: on the representative device, in full) and
//    manual values keep their shapes;
//  - where an operand's sharding differs from the one its consumer needs,
//    the collectives that reshard it are inserted as instructions
//    (all-gather where tiles merge, a local slice where they split, an
//    all-to-all where tiles move between dimensions, a collective-permute
//    where only the device order differs), each with its group size in
//    OpAttributes::collective_group_size;
//  - a dot or reduce over a sharded dimension yields partial sums: an
//    all-reduce follows (a reduce-scatter when the result is wanted split
//    by exactly the reduced group);
//  - `while`, `call` and `conditional` bodies are partitioned with the
//    shardings of the values they are passed (once per computation);
//  - custom-calls Sharding, SPMDFullToShardShape and SPMDShardToFullShape
//    become free `bitcast`s of the resharded value.
// Ops the rules do not cover (gather, scatter, sort, custom-calls, ...) run
// on their full (replicated) operands, named in one warning.
//
// A module that came partitioned (is_scheduled, or fusions, partition-id or
// collectives without the partitioner's custom-calls) and a module that is
// no SPMD program are left untouched (result.partitioned false).
// Inserted instructions are `synthetic` and named
// "<value>.spmd.<opcode>[.n]". InvalidArgument naming the instruction for
// a sharding that does not parse or does not fit its shape (more tile
// dimensions than the rank). Not thread-safe on one module.
absl::StatusOr<SpmdPartitionResult> PartitionSpmdModule(HloModule* module);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_SPMD_PARTITIONER_H_
