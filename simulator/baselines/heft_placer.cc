#include "simulator/baselines/heft_placer.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>

#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/upward_rank.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {

using graph::Edge;
using graph::NodeId;

absl::StatusOr<std::vector<int32_t>> HeftPlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const graph::Graph& graph = context.graph;
  const CostTable costs(graph, context.topology, context.cost_model);
  const int n = graph.num_nodes();
  const std::vector<double> rank = MeanUpwardRank(costs);

  std::vector<int32_t> device(n, -1);
  std::vector<double> finish(n, 0);
  std::vector<double> device_free(costs.num_devices(), 0);
  std::vector<int32_t> pending(n, 0);
  // Parameters and constants wait for their first consumer.
  std::vector<uint8_t> deferred(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    deferred[id] = costs.IsFreeSource(id) ? 1 : 0;
  }
  using Entry = std::pair<double, NodeId>;  // (rank, -id) order
  auto lower = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(lower)> ready(lower);
  for (NodeId id = 0; id < n; ++id) {
    for (const Edge& edge : graph.in_edges(id)) {
      if (!deferred[edge.src]) ++pending[id];
    }
    if (!deferred[id] && pending[id] == 0) ready.emplace(rank[id], id);
  }

  auto data_ready = [&](NodeId id, int32_t d) {
    double time = 0;
    for (const Edge& edge : graph.in_edges(id)) {
      const NodeId src = edge.src;
      if (device[src] < 0) {
        // An unplaced parameter comes along to d when allowed there.
        const int32_t src_device = costs.NearestAllowedDevice(src, d);
        time = std::max(time, costs.EdgeTransferSeconds(edge, src_device, d));
        continue;
      }
      time = std::max(
          time, finish[src] + costs.EdgeTransferSeconds(edge, device[src], d));
    }
    return time;
  };

  while (!ready.empty()) {
    const NodeId id = ready.top().second;
    ready.pop();
    const bool is_free = costs.IsFree(id);
    int32_t best_device = -1;
    double best_finish = std::numeric_limits<double>::infinity();
    for (int32_t d : costs.AllowedDevices(id)) {
      double end = data_ready(id, d);
      if (!is_free) {
        end = std::max(end, device_free[d]) + costs.ComputeSeconds(id, d);
      }
      // The first allowed device is taken even when every finish time is
      // infinite or NaN, so a device is always chosen.
      if (best_device < 0 || end < best_finish) {
        best_finish = end;
        best_device = d;
      }
    }
    device[id] = best_device;
    finish[id] = best_finish;
    if (!is_free) device_free[best_device] = best_finish;
    for (const Edge& edge : graph.in_edges(id)) {
      if (device[edge.src] < 0) {
        device[edge.src] = costs.NearestAllowedDevice(edge.src, best_device);
      }
    }
    for (const Edge& edge : graph.out_edges(id)) {
      if (--pending[edge.dst] == 0) ready.emplace(rank[edge.dst], edge.dst);
    }
  }
  // Parameters nobody consumes.
  for (NodeId id = 0; id < n; ++id) {
    if (device[id] < 0) device[id] = costs.NearestAllowedDevice(id, 0);
  }
  return device;
}

}  // namespace gopt::simulator::baselines
