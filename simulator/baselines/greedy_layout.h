#ifndef GOPT_SIMULATOR_BASELINES_GREEDY_LAYOUT_H_
#define GOPT_SIMULATOR_BASELINES_GREEDY_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/baselines/layout_assigner.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::simulator::baselines {

// Greedy per-node layout choice under the simulator's layout model:
//  - a copy (read + write of the edge's bytes at the consumer device's
//    memory bandwidth, plus a launch) is paid on an edge whose producer and
//    consumer both carry explicit, different layouts (normalized, so an
//    explicit row-major layout equals the default one);
//  - a dot or convolution with an explicit layout runs at 90% efficiency.
// Nodes are visited in topological order. `pinned` (empty, or one entry per
// node) fixes layouts: a non-empty entry is copied to the result. Every
// other layout-configurable node whose output 0 is a non-tuple of rank >= 2
// picks, among the default (empty), its imported layout, and the explicit
// layouts of its producers (already decided) and of its pinned consumers,
// the candidate of least extra time: copies with explicit producers and
// pinned consumers, plus the efficiency loss of a dot/convolution (priced
// by `cost_model` on its device). Ties keep the earlier candidate, the
// default first.
//
// In this model the default layout never costs anything, so without pinned
// layouts every node keeps its default: greedy only pays off when some
// layouts are fixed from outside (a user's plan, a compiler configuration),
// where it aligns the configurable neighbours to avoid copies.
//
// Returns Plan::layout, or an empty vector when every node keeps its
// default. InvalidArgument when `device` or a non-empty `pinned` does not
// have one entry per node, or a pinned layout is not a permutation of its
// node's output rank. O(nodes + edges) candidates * degree. Thread-safe.
absl::StatusOr<std::vector<std::vector<int32_t>>> GreedyLayouts(
    const graph::Graph& graph, const Topology& topology,
    const OpCostModel& cost_model, const std::vector<int32_t>& device,
    const std::vector<std::vector<int32_t>>& pinned);

// "default": every node keeps its default layout (an empty result).
// Stateless and thread-safe.
class DefaultLayoutAssigner final : public LayoutAssigner {
 public:
  DefaultLayoutAssigner() = default;
  absl::string_view name() const override { return "default"; }
  absl::StatusOr<std::vector<std::vector<int32_t>>> AssignLayouts(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

// "greedy": GreedyLayouts with nothing pinned (see there: under the
// simulator's model this keeps every default). Stateless and thread-safe.
class GreedyLayoutAssigner final : public LayoutAssigner {
 public:
  GreedyLayoutAssigner() = default;
  absl::string_view name() const override { return "greedy"; }
  absl::StatusOr<std::vector<std::vector<int32_t>>> AssignLayouts(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_GREEDY_LAYOUT_H_
