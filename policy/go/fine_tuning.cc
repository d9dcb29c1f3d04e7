#include "policy/go/fine_tuning.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "policy/go/plan_search.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

double Seconds(const Clock& clock, absl::Time start) {
  return absl::ToDoubleSeconds(clock.Now() - start);
}

}  // namespace

absl::StatusOr<ZeroShotResult> ZeroShot(const GoModel& model,
                                        const TrainingInstance& instance,
                                        const TaskSet& tasks, int num_samples,
                                        uint64_t seed, int threads,
                                        const Clock& clock) {
  const absl::Time start = clock.Now();
  const std::vector<int32_t>* fixed =
      instance.base_plan != nullptr ? &instance.base_plan->device : nullptr;
  absl::StatusOr<PolicyOutput> output =
      model.Run(instance.features, tasks, fixed);
  if (!output.ok()) return output.status();
  ZeroShotResult result;
  result.inference_s = Seconds(clock, start);
  result.best = ScoreActions(instance, SampleActions(*output, nullptr));
  if (result.best.valid) ++result.num_valid;
  std::mt19937_64 rng(seed);
  std::vector<Actions> actions;
  for (const ScoredPlan& plan : SampleAndScore(instance, *output, num_samples,
                                               threads, &rng, &actions)) {
    if (plan.valid) ++result.num_valid;
    if (BetterPlan(plan, result.best)) result.best = plan;
  }
  return result;
}

absl::StatusOr<FineTuneResult> FineTune(GoModel* model,
                                        const TrainingInstance& instance,
                                        const ScoredPlan& start,
                                        const FineTuneOptions& options) {
  {
    absl::Status status =
        model->ScalePlacementPriors(options.placement_prior_factor);
    if (!status.ok()) return status;
  }
  PpoTrainer trainer(model, options.ppo);
  FineTuneResult result;
  result.best = start;
  PlanSearchOptions search_options;
  search_options.threads = options.ppo.simulation_threads;
  search_options.seed = options.ppo.seed;
  search_options.tasks = options.ppo.tasks;
  search_options.deadline = options.deadline;
  search_options.clock = options.clock;
  search_options.cancelled = options.cancelled;
  search_options.stop_at_step_time_s = options.stop_at_step_time_s;
  PlanSearch search(instance, start, search_options);
  const int search_rounds = options.search_simulations_per_step /
                            std::max(search_options.candidates_per_round, 1);
  const Clock& clock = *options.clock;
  const absl::Time begin = clock.Now();
  auto stopped = [&] {
    return clock.Now() >= options.deadline ||
           (options.cancelled != nullptr && options.cancelled->load()) ||
           (result.best.valid && !result.best.oom &&
            result.best.step_time_s <= options.stop_at_step_time_s);
  };
  double expected_step_seconds = options.first_step_estimate_seconds;
  for (int step = 0; step < options.max_steps; ++step) {
    if (stopped()) break;
    if (clock.Now() + absl::Seconds(expected_step_seconds) > options.deadline) {
      result.ppo_stopped_for_deadline = true;
      break;
    }
    const absl::Time step_start = clock.Now();
    absl::StatusOr<PpoStepStats> stats = trainer.Step({&instance});
    if (!stats.ok()) return stats.status();
    expected_step_seconds = Seconds(clock, step_start);
    const ScoredPlan& best = stats->graphs[0].best;
    if (BetterPlan(best, result.best)) result.best = best;
    if (search_rounds > 0 && result.best.valid) {
      search.Offer(result.best);
      RETURN_IF_ERROR(search.Run(search_rounds, &stats->graphs[0].sampled));
      if (BetterPlan(search.best(), result.best)) result.best = search.best();
    }
    TrainLogRow row =
        MakeTrainLogRow(step, Seconds(clock, begin), *stats, {&instance});
    // For one graph the log tracks the best plan so far.
    row.best_step_time_s = result.best.step_time_s;
    row.best_step_ratio =
        result.best.step_time_s / instance.default_step_time_s;
    if (options.on_step) options.on_step(row, result.best);
    result.log.push_back(std::move(row));
    result.steps = step + 1;
  }
  if (result.ppo_stopped_for_deadline && search_rounds > 0 &&
      result.best.valid) {
    // Devices are proposed uniformly: as good as the policy's distribution
    // (card README), and there may be no PPO step to take one from.
    for (int step = result.steps; step < options.max_steps && !stopped();
         ++step) {
      RETURN_IF_ERROR(search.Run(search_rounds, /*placement=*/nullptr));
      if (BetterPlan(search.best(), result.best)) result.best = search.best();
      if (options.on_search) {
        options.on_search(step - result.steps + 1, result.best);
      }
    }
  }
  result.seconds = Seconds(clock, begin);
  result.search_improvements = search.improvements();
  result.search_simulations = search.candidates_simulated();
  return result;
}

}  // namespace gopt::policy::go
