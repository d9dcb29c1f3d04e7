#include "simulator/baselines/greedy_layout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/cost_table.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {
namespace {

using graph::Edge;
using graph::NodeId;
using graph::OpKind;

// Rank of output 0 when it can carry a layout, else -1.
int LayoutRank(const graph::Node& node) {
  if (node.outputs.empty() || node.outputs[0].is_tuple()) return -1;
  return node.outputs[0].rank();
}

std::vector<int32_t> Normalized(const std::vector<int32_t>& layout, int rank) {
  if (!layout.empty()) return layout;
  std::vector<int32_t> row_major(rank);
  for (int i = 0; i < rank; ++i) row_major[i] = rank - 1 - i;
  return row_major;
}

bool IsPermutation(const std::vector<int32_t>& layout, int rank) {
  if (static_cast<int>(layout.size()) != rank) return false;
  std::vector<uint8_t> seen(rank, 0);
  for (int32_t dim : layout) {
    if (dim < 0 || dim >= rank || seen[dim]) return false;
    seen[dim] = 1;
  }
  return true;
}

double CopySeconds(int64_t bytes, const DeviceProfile& device) {
  return 2.0 * static_cast<double>(bytes) /
             device.memory_bandwidth_bytes_per_s +
         device.launch_overhead_s;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int32_t>>> GreedyLayouts(
    const graph::Graph& graph, const Topology& topology,
    const OpCostModel& cost_model, const std::vector<int32_t>& device,
    const std::vector<std::vector<int32_t>>& pinned) {
  const int n = graph.num_nodes();
  RETURN_IF_ERROR(CheckPlacement(graph, topology.num_devices(), device));
  if (!pinned.empty() && pinned.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout: pinned layouts have ", pinned.size(), " entries; the graph '",
        graph.name(), "' has ", n, " nodes"));
  }
  std::vector<std::vector<int32_t>> layout(n);
  std::vector<uint8_t> is_pinned(n, 0);
  for (NodeId id = 0; id < static_cast<NodeId>(pinned.size()); ++id) {
    if (pinned[id].empty()) continue;
    if (!IsPermutation(pinned[id], LayoutRank(graph.node(id)))) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout: pinned layout of node '", graph.node(id).name,
                       "' is not a permutation of its output's dimensions"));
    }
    layout[id] = pinned[id];
    is_pinned[id] = 1;
  }
  std::vector<uint8_t> is_free(n);
  for (NodeId id = 0; id < n; ++id) is_free[id] = IsFreeNode(graph.node(id));

  std::vector<std::vector<int32_t>> candidates;
  bool any_explicit = false;
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    const int rank = LayoutRank(node);
    if (is_pinned[id]) {
      any_explicit = true;
      continue;
    }
    if (!node.layout_configurable || rank < 2) continue;
    candidates.assign(1, std::vector<int32_t>());
    auto add_candidate = [&](const std::vector<int32_t>& candidate) {
      if (!candidate.empty() && IsPermutation(candidate, rank) &&
          std::find(candidates.begin(), candidates.end(), candidate) ==
              candidates.end()) {
        candidates.push_back(candidate);
      }
    };
    add_candidate(node.outputs[0].minor_to_major);
    for (const Edge& edge : graph.in_edges(id)) add_candidate(layout[edge.src]);
    for (const Edge& edge : graph.out_edges(id)) {
      if (is_pinned[edge.dst]) add_candidate(layout[edge.dst]);
    }
    if (candidates.size() == 1) continue;

    const DeviceProfile& profile = topology.devices[device[id]];
    double slowdown_s = 0;
    if (node.kind == OpKind::kDot || node.kind == OpKind::kConvolution) {
      KernelWork work;
      work.kind = node.kind;
      work.flops = node.flops;
      work.bytes = node.bytes_read + node.bytes_written;
      work.dtype = node.outputs[0].dtype;
      const double ideal = cost_model.KernelSeconds(work, profile);
      work.efficiency_factor = 0.9;
      slowdown_s = cost_model.KernelSeconds(work, profile) - ideal;
    }
    size_t best = 0;
    double best_cost = 0;
    for (size_t c = 1; c < candidates.size(); ++c) {
      const std::vector<int32_t> mine = Normalized(candidates[c], rank);
      double cost = slowdown_s;
      for (const Edge& edge : graph.in_edges(id)) {
        const graph::Node& src = graph.node(edge.src);
        if (edge.control || is_free[id] || layout[edge.src].empty() ||
            LayoutRank(src) != rank) {
          continue;
        }
        if (Normalized(layout[edge.src], rank) != mine) {
          cost += CopySeconds(graph.EdgeBytes(edge), profile);
        }
      }
      for (const Edge& edge : graph.out_edges(id)) {
        if (edge.control || !is_pinned[edge.dst] || is_free[edge.dst] ||
            LayoutRank(graph.node(edge.dst)) != rank) {
          continue;
        }
        if (Normalized(layout[edge.dst], rank) != mine) {
          cost += CopySeconds(graph.EdgeBytes(edge),
                              topology.devices[device[edge.dst]]);
        }
      }
      if (cost < best_cost) {
        best_cost = cost;
        best = c;
      }
    }
    if (best != 0) {
      layout[id] = candidates[best];
      any_explicit = true;
    }
  }
  if (!any_explicit) layout.clear();
  return layout;
}

absl::StatusOr<std::vector<std::vector<int32_t>>>
DefaultLayoutAssigner::AssignLayouts(const BaselineContext& context,
                                     const std::vector<int32_t>& device) const {
  RETURN_IF_ERROR(
      CheckPlacement(context.graph, context.topology.num_devices(), device));
  return std::vector<std::vector<int32_t>>();
}

absl::StatusOr<std::vector<std::vector<int32_t>>>
GreedyLayoutAssigner::AssignLayouts(const BaselineContext& context,
                                    const std::vector<int32_t>& device) const {
  return GreedyLayouts(context.graph, context.topology, context.cost_model,
                       device, /*pinned=*/{});
}

}  // namespace gopt::simulator::baselines
