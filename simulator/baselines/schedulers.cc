#include "simulator/baselines/schedulers.h"

#include <algorithm>
#include <numeric>

#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/upward_rank.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {

absl::StatusOr<std::vector<int32_t>> FifoScheduler::Schedule(
    const BaselineContext& context, const std::vector<int32_t>& device) const {
  RETURN_IF_ERROR(
      CheckPlacement(context.graph, context.topology.num_devices(), device));
  return std::vector<int32_t>();
}

absl::StatusOr<std::vector<int32_t>> CriticalPathScheduler::Schedule(
    const BaselineContext& context, const std::vector<int32_t>& device) const {
  RETURN_IF_ERROR(
      CheckPlacement(context.graph, context.topology.num_devices(), device));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  return DenseRanks(PlacedUpwardRank(costs, device));
}

std::vector<int32_t> DenseRanks(const std::vector<double>& values) {
  std::vector<int32_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return values[a] < values[b]; });
  std::vector<int32_t> rank(values.size(), 0);
  int32_t current = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && values[order[i]] != values[order[i - 1]]) ++current;
    rank[order[i]] = current;
  }
  return rank;
}

}  // namespace gopt::simulator::baselines
