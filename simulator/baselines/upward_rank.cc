#include "simulator/baselines/upward_rank.h"

#include <algorithm>

namespace gopt::simulator::baselines {

using graph::Edge;
using graph::NodeId;

std::vector<double> MeanUpwardRank(const CostTable& costs) {
  const graph::Graph& graph = costs.graph();
  std::vector<double> rank(graph.num_nodes(), 0);
  // Nodes are in topological order, so every successor is ranked first.
  for (NodeId id = graph.num_nodes() - 1; id >= 0; --id) {
    double tail = 0;
    for (const Edge& edge : graph.out_edges(id)) {
      const double transfer =
          edge.control ? 0 : costs.MeanTransferSeconds(graph.EdgeBytes(edge));
      tail = std::max(tail, transfer + rank[edge.dst]);
    }
    rank[id] = costs.MeanComputeSeconds(id) + tail;
  }
  return rank;
}

std::vector<double> PlacedUpwardRank(const CostTable& costs,
                                     const std::vector<int32_t>& device) {
  const graph::Graph& graph = costs.graph();
  std::vector<double> rank(graph.num_nodes(), 0);
  for (NodeId id = graph.num_nodes() - 1; id >= 0; --id) {
    double tail = 0;
    for (const Edge& edge : graph.out_edges(id)) {
      tail = std::max(
          tail, costs.EdgeTransferSeconds(edge, device[id], device[edge.dst]) +
                    rank[edge.dst]);
    }
    rank[id] = costs.ComputeSeconds(id, device[id]) + tail;
  }
  return rank;
}

}  // namespace gopt::simulator::baselines
