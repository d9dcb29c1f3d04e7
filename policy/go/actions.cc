#include "policy/go/actions.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/greedy_fusion.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

std::vector<int32_t> SampleRows(const std::vector<float>& logp, int rows,
                                int cols, std::mt19937_64* rng) {
  std::vector<int32_t> out(rows, 0);
  for (int r = 0; r < rows; ++r) {
    const float* row = &logp[static_cast<size_t>(r) * cols];
    if (rng == nullptr) {
      int best = 0;
      for (int c = 1; c < cols; ++c) {
        if (row[c] > row[best]) best = c;
      }
      out[r] = best;
      continue;
    }
    const double u = UniformDouble(rng);
    double cumulative = 0;
    int chosen = -1;
    int last_possible = 0;
    for (int c = 0; c < cols; ++c) {
      const double p = std::exp(static_cast<double>(row[c]));
      if (p > 0) last_possible = c;
      cumulative += p;
      if (chosen < 0 && u < cumulative) chosen = c;
    }
    // Rounding can leave the cumulative sum just below u.
    out[r] = chosen >= 0 ? chosen : last_possible;
  }
  return out;
}

double RowsLogProb(const std::vector<float>& logp, int cols,
                   const std::vector<int32_t>& actions) {
  double sum = 0;
  for (size_t r = 0; r < actions.size(); ++r) {
    sum += logp[r * cols + actions[r]];
  }
  return sum;
}

absl::Status CheckLength(const std::vector<int32_t>& values,
                         const graph::Graph& graph, const char* what) {
  if (values.empty() || static_cast<int>(values.size()) == graph.num_nodes()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(what, " has ", values.size(),
                                                 " entries; the graph has ",
                                                 graph.num_nodes(), " nodes"));
}

}  // namespace

double UniformDouble(std::mt19937_64* rng) {
  return static_cast<double>((*rng)() >> 11) * 0x1.0p-53;
}

Actions SampleActions(const PolicyOutput& output, std::mt19937_64* rng) {
  Actions actions;
  if (!output.placement.empty()) {
    actions.device =
        SampleRows(output.placement, output.num_nodes, output.num_devices, rng);
  }
  if (!output.scheduling.empty()) {
    actions.priority =
        SampleRows(output.scheduling, output.num_nodes, kPriorityLevels, rng);
  }
  if (!output.fusion.empty()) {
    actions.fusion_priority =
        SampleRows(output.fusion, output.num_nodes, kPriorityLevels, rng);
  }
  return actions;
}

double ActionsLogProb(const PolicyOutput& output, const Actions& actions) {
  double sum = 0;
  if (!output.placement.empty()) {
    sum += RowsLogProb(output.placement, output.num_devices, actions.device);
  }
  if (!output.scheduling.empty()) {
    sum += RowsLogProb(output.scheduling, kPriorityLevels, actions.priority);
  }
  if (!output.fusion.empty()) {
    sum += RowsLogProb(output.fusion, kPriorityLevels, actions.fusion_priority);
  }
  return sum;
}

absl::StatusOr<simulator::Plan> ActionsToPlan(
    const graph::Graph& graph, const Actions& actions,
    const simulator::Plan* base_plan) {
  RETURN_IF_ERROR(CheckLength(actions.device, graph, "device"));
  RETURN_IF_ERROR(CheckLength(actions.priority, graph, "priority"));
  RETURN_IF_ERROR(
      CheckLength(actions.fusion_priority, graph, "fusion priority"));
  simulator::Plan plan =
      base_plan != nullptr ? *base_plan : simulator::DefaultPlan(graph);
  plan.method = "go";
  const bool placement_kept = actions.device.empty();
  if (!placement_kept) plan.device = actions.device;
  if (!actions.priority.empty()) plan.priority = actions.priority;
  if (!actions.fusion_priority.empty()) {
    ASSIGN_OR_RETURN(
        plan.fusion_group,
        simulator::baselines::GreedyFusionGroups(
            graph, plan.device, &actions.fusion_priority, actions.fusion_join));
  } else if (!placement_kept) {
    plan.fusion_group.clear();
  }
  return plan;
}

}  // namespace gopt::policy::go
