#ifndef GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_
#define GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/baselines/fuser.h"

namespace gopt::simulator::baselines {

// XLA-style greedy producer -> consumer fusion. Nodes are visited once, in
// topological order; a node joins the fusion group of one of its producers
// when all of these hold:
//  - it is a cheap consumer: elementwise (convert included), reduce,
//    reduce-window, broadcast, transpose, copy, slice, dynamic-slice, pad,
//    concatenate, reverse, or a view (reshape, bitcast);
//  - the producer is in a group that can grow: a group starts at a node
//    with real work that is cheap (as above) or heavy (dot, convolution),
//    so a group holds at most one heavy op, as its first member; a reduce
//    or reduce-window ends a fusion (its consumers do not join through it);
//    parameters, constants and other free ops never start a group;
//  - producer and consumer are on the same device;
//  - joining cannot create a cycle between groups: every other input of the
//    consumer is in the same group, is a free node without inputs
//    (parameter, constant), or comes before the group's first member in
//    topological order. Then every edge entering a group from outside
//    starts before the group's first member, so following edges between
//    groups always moves to a later first member: no cycle can close.
//    (Sound, not complete: a consumer whose other input is a later,
//    independent node stays unfused.)
// Among several eligible producers the consumer picks the one with the
// highest fusion priority, then the largest edge in bytes, then the lowest
// NodeId. With `fusion_priority` (one entry per node), a node whose
// priority is <= 0 neither joins a group nor lets consumers join through
// it, and higher priorities win among producers; with nullptr every node is
// equally eager. The GO policy turns its per-node fusion priorities into
// groups with this same function.
//
// Returns Plan::fusion_group: groups numbered 0..k-1 in order of their
// first member, -1 for nodes left alone. InvalidArgument when `device` or
// `fusion_priority` does not have one entry per node. O((nodes + edges) *
// small constant): at most 8 producers are tried per consumer. Thread-safe.
absl::StatusOr<std::vector<int32_t>> GreedyFusionGroups(
    const graph::Graph& graph, const std::vector<int32_t>& device,
    const std::vector<int32_t>* fusion_priority);

// "none": no fusion (the framework default); returns an empty vector.
// Stateless and thread-safe.
class NoFuser final : public Fuser {
 public:
  NoFuser() = default;
  absl::string_view name() const override { return "none"; }
  absl::StatusOr<std::vector<int32_t>> Fuse(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

// "greedy": GreedyFusionGroups with every node equally eager. Stateless and
// thread-safe.
class GreedyFuser final : public Fuser {
 public:
  GreedyFuser() = default;
  absl::string_view name() const override { return "greedy"; }
  absl::StatusOr<std::vector<int32_t>> Fuse(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_
