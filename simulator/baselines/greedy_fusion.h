#ifndef GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_
#define GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "simulator/baselines/fuser.h"

namespace gopt::simulator::baselines {

// How many producers' groups a consumer may join.
enum class FusionJoin {
  // The first producer (in the order below) whose group qualifies: the
  // `greedy` fuser, and the rules the GO policy's fusion decisions and the
  // plan search's fusion moves are built on.
  kOneProducer,
  // Every producer whose group qualifies, the groups becoming one kernel
  // (as XLA fuses all fusible producers into a consumer), so an elementwise
  // op reading two fused chains ends both in one kernel. Its cycle rule is
  // exact instead (as XLA's reachability check): a join is refused only
  // when a path leads from one of the two groups to the other through a
  // third (or when that search expands more than 64 groups). Besides: a
  // consumer with an input from another device joins no group (the joined
  // kernel would wait for that transfer), two groups that exchange data
  // with another device never become one, and no join puts a reduce's
  // consumer in the reduce's kernel. Passes over the producers repeat
  // until none joins. The `greedy-join` fuser.
  kAllProducers,
};

// kAllProducers when the fusion part of a method name (the third of
// "placement+scheduling+fusion[+layout]") is "greedy-join", else
// kOneProducer: how a plan made by that method was fused, so that whoever
// refuses its groups (the GO plan search) keeps its rule.
FusionJoin FusionJoinOfMethod(absl::string_view method);

// XLA-style greedy producer -> consumer fusion. Nodes are visited once, in
// topological order; a node joins the fusion group of one of its producers
// (kOneProducer) or of each that qualifies (kAllProducers) when all of
// these hold:
//  - it is a cheap consumer: elementwise (convert included), reduce,
//    reduce-window, broadcast, transpose, copy, slice, dynamic-slice, pad,
//    concatenate, reverse, a view (reshape, bitcast), a normalization or a
//    softmax;
//  - the producer is in a group that can grow: a group starts at a node
//    with real work that is cheap (as above) or heavy (dot, convolution),
//    so a group holds at most one heavy op, as its first member, and no
//    node that computes statistics (ComputesStatistics: softmax, layer
//    norm, training batch norm, ...) beside it, while an inference batch
//    norm joins its convolution's group; a reduce or reduce-window ends a
//    fusion (its consumers do not join through it); parameters, constants
//    and other free ops never start a group;
//  - producer and consumer are on the same device;
//  - joining cannot create a cycle between groups: under kOneProducer,
//    every other input of the consumer is in the group, is a free node
//    without inputs (parameter, constant), or comes before the group's
//    first member in topological order; then every edge entering a group
//    from outside starts before the group's first member, so following
//    edges between groups always moves to a later first member and no
//    cycle can close (sound, not complete: a consumer whose other input is
//    a later, independent node joins that node's group or none). Under
//    kAllProducers, the exact check above.
// Among several eligible producers the consumer tries the one with the
// highest fusion priority first, then the largest edge in bytes, then the
// lowest NodeId. With `fusion_priority` (one entry per node), a node whose
// priority is <= 0 neither joins a group nor lets consumers join through
// it, and higher priorities win among producers; with nullptr every node is
// equally eager. The GO policy turns its per-node fusion priorities into
// groups with this same function.
//
absl::StatusOr<std::vector<int32_t>> GreedyFusionGroups(
    const graph::Graph& graph, const std::vector<int32_t>& device,
    const std::vector<int32_t>* fusion_priority,
    FusionJoin join = FusionJoin::kOneProducer);

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

// "greedy-join": GreedyFusionGroups with FusionJoin::kAllProducers, every
// node equally eager. Far fewer kernels on graphs written op by op
// (efficientnet_jax_lambda256 on one V100: 400 -> 81 kernels, 328 -> 93 ms
// simulated; mixer_b16 8.2 -> 5.1 ms), but bigger kernels wait longer for
// their inputs, which can cost a multi-device plan up to 15% (amoebanet-
// small, h100x8-nvlink, m-sct's placement): the default baselines try both
// fusers.
// Stateless and thread-safe.
class GreedyJoinFuser final : public Fuser {
 public:
  GreedyJoinFuser() = default;
  absl::string_view name() const override { return "greedy-join"; }
  absl::StatusOr<std::vector<int32_t>> Fuse(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_GREEDY_FUSION_H_
