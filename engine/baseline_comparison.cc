#include "engine/baseline_comparison.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gopt::engine {
namespace {

using simulator::baselines::BaselineTrial;

// Methods (full names) grouped by placement, groups in the order the
// methods first name them.
using MethodGroups =
    std::vector<std::pair<std::string, std::vector<std::string>>>;

absl::StatusOr<MethodGroups> GroupByPlacement(
    const simulator::baselines::BaselineRegistry& registry,
    const std::vector<std::string>& methods) {
  MethodGroups groups;
  for (const std::string& method : methods) {
    absl::StatusOr<simulator::baselines::BaselineMethod> parsed =
        simulator::baselines::ParseBaselineMethod(registry, method);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(parsed.status().message());
    }
    auto group = std::find_if(groups.begin(), groups.end(), [&](auto& g) {
      return g.first == parsed->placement;
    });
    if (group == groups.end()) {
      groups.emplace_back(parsed->placement, std::vector<std::string>());
      group = groups.end() - 1;
    }
    group->second.push_back(parsed->FullName());
  }
  return groups;
}

// The row of a trial BestBaseline made; counts its simulation.
BaselineTrial TrialRow(const BaselineTrial& trial, int64_t* num_simulations) {
  BaselineTrial row;
  row.method = trial.method;
  row.valid = trial.valid;
  row.error = trial.error;
  if (trial.valid && !UsableStepTime(trial.step_time_s)) {
    row.valid = false;
    row.error = absl::StrCat("simulated to ", trial.step_time_s,
                             " s, which is not a step time");
    return row;
  }
  row.step_time_s = trial.step_time_s;
  row.oom = trial.oom;
  if (trial.valid) ++*num_simulations;
  return row;
}

// Makes and simulates `method` alone (a group without a winner): the row
// says why it gave no plan.
BaselineTrial SimulateAlone(
    const simulator::baselines::BaselineRegistry& registry,
    const simulator::baselines::BaselineContext& context,
    const simulator::Simulator& simulator, const std::string& method,
    int64_t* num_simulations) {
  BaselineTrial row;
  row.method = method;
  absl::StatusOr<simulator::Plan> plan =
      simulator::baselines::MakeBaselinePlan(registry, method, context);
  if (!plan.ok()) {
    row.error = std::string(plan.status().message());
    return row;
  }
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  absl::StatusOr<simulator::SimulationResult> result =
      simulator.Simulate(*plan, quick);
  if (!result.ok()) {
    row.error = std::string(result.status().message());
    return row;
  }
  ++*num_simulations;
  if (!UsableStepTime(result->step_time_s)) {
    row.error = absl::StrCat("simulated to ", result->step_time_s,
                             " s, which is not a step time");
    return row;
  }
  row.valid = true;
  row.step_time_s = result->step_time_s;
  row.oom = result->oom;
  return row;
}

}  // namespace

bool UsableStepTime(double seconds) {
  return std::isfinite(seconds) && seconds > 0;
}

std::vector<std::string> BaselineMethodsFor(
    const simulator::baselines::BaselineRegistry& registry,
    const policy::TaskSet& tasks) {
  std::vector<std::string> methods;
  for (const simulator::baselines::BaselineMethod& method :
       simulator::baselines::BaselineCombinations(
           registry,
           {tasks.placement, tasks.scheduling, tasks.fusion, tasks.layout})) {
    methods.push_back(method.FullName());
  }
  return methods;
}

absl::StatusOr<BaselineComparison> CompareBaselines(
    const simulator::baselines::BaselineRegistry& registry,
    const simulator::baselines::BaselineContext& context,
    const simulator::Simulator& simulator,
    const BaselineComparisonOptions& options) {
  absl::StatusOr<MethodGroups> groups =
      GroupByPlacement(registry, options.methods);
  if (!groups.ok()) return groups.status();
  const auto check_stop = [&options] {
    return options.check_stop ? options.check_stop() : absl::OkStatus();
  };
  BaselineComparison out;
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::vector<std::string>& methods = (*groups)[i].second;
    out.stopped = check_stop();
    if (!out.stopped.ok()) return out;
    simulator::baselines::BestBaselineOptions group_options;
    group_options.methods = methods;
    group_options.check_stop = check_stop;
    absl::StatusOr<simulator::baselines::BestBaselineResult> best =
        simulator::baselines::BestBaseline(registry, context, group_options);
    if (absl::IsDeadlineExceeded(best.status()) ||
        absl::IsCancelled(best.status())) {
      out.stopped = best.status();
      return out;
    }
    std::optional<BaselineGroupWinner> winner;
    if (best.ok()) {
      double winner_s = 0;
      for (const BaselineTrial& trial : best->trials) {
        out.rows.push_back(TrialRow(trial, &out.num_simulations));
        if (out.rows.back().valid && trial.method == best->plan.method) {
          winner_s = trial.step_time_s;
        }
      }
      const bool best_so_far =
          out.best_method.empty() || winner_s < out.best_step_time_s;
      if (best_so_far) {
        out.best_method = best->plan.method;
        out.best_step_time_s = winner_s;
      }
      winner =
          BaselineGroupWinner{std::move(best->plan), winner_s, best_so_far};
    } else {
      for (const std::string& method : methods) {
        out.stopped = check_stop();
        if (!out.stopped.ok()) return out;
        out.rows.push_back(SimulateAlone(registry, context, simulator, method,
                                         &out.num_simulations));
      }
    }
    if (options.on_group) options.on_group(static_cast<int>(i + 1), winner);
  }
  return out;
}

double RatioOrZero(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0;
}

}  // namespace gopt::engine
