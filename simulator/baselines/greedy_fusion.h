#ifndef GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_
#define GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/baselines/fuser.h"

namespace gopt::simulator::baselines {

// XLA-style greedy producer -> consumer fusion. Nodes are visited once, in
// topological order; a node joins the fusion groups of its producers (each
// that qualifies, so a consumer of two fused chains makes them one kernel)
// when all of these hold:
//  - it is a cheap consumer: elementwise (convert included), reduce,
//    reduce-window, broadcast, transpose, copy, slice, dynamic-slice, pad,
//    concatenate, reverse, or a view (reshape, bitcast);
//  - the producer is in a group that can grow: a group starts at a node
//    with real work that is cheap (as above) or heavy (dot, convolution);
//    a reduce or reduce-window ends a fusion (its consumers do not join
//    through it); parameters, constants and other free ops never start a
//    group;
//  - the joined group keeps the library-call shape: at most one heavy op,
//    and it the group's first member (cheap consumers fused after a GEMM or
//    convolution, never before it);
//  - producer and consumer are on the same device, and the consumer has no
//    input from another device (the joined kernel would wait for that
//    transfer before any of its work could start);
//  - joining cannot create a cycle between groups: no input of the joined
//    group from outside it depends on the joined group (an exact
//    reachability check, as XLA makes; it gives up, refusing the join,
//    after visiting 512 groups).
// The producers are tried in order of the highest fusion priority, then
// the largest edge in bytes, then the lowest NodeId (at most 8 per
// consumer). With `fusion_priority` (one entry per node), a node whose
// priority is <= 0 neither joins a group nor lets consumers join through
// it; with nullptr every node is equally eager. The GO policy turns its
// per-node fusion priorities into groups with this same function.
//
// Returns Plan::fusion_group: groups numbered 0..k-1 in order of their
// first member, -1 for nodes left alone. InvalidArgument when `device` or
// `fusion_priority` does not have one entry per node. O((nodes + edges) *
// small constant) on typical graphs: at most 8 producers are tried per
// consumer, and a cycle check stops at 512 groups. Thread-safe.
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
