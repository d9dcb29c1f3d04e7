#include "training/go/expert_iteration.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "policy/go/co_location_decode.h"
#include "policy/go/fine_tuning.h"
#include "policy/go/plan_search.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

// The instances of round `round`: positions [round * k, (round + 1) * k) of
// the concatenated per-pass permutations of 0..n-1.
std::vector<int> RoundInstances(int n, int k, int round, uint64_t seed) {
  std::vector<int> chosen;
  for (int64_t position = static_cast<int64_t>(round) * k;
       static_cast<int>(chosen.size()) < k; ++position) {
    const int64_t pass = position / n;
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::seed_seq seeds{static_cast<uint32_t>(seed),
                        static_cast<uint32_t>(seed >> 32),
                        static_cast<uint32_t>(pass)};
    std::mt19937_64 rng(seeds);
    for (int i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    chosen.push_back(order[position % n]);
  }
  return chosen;
}

// The best plan of a plan search from `start`.
absl::StatusOr<ScoredPlan> Search(const TrainingInstance& instance,
                                  ScoredPlan start, const PolicyOutput* guide,
                                  const ExpertIterationOptions& options,
                                  uint64_t seed, int64_t* simulations) {
  PlanSearchOptions search_options;
  search_options.candidates_per_round = options.candidates_per_round;
  search_options.threads = options.simulation_threads;
  search_options.seed = seed;
  search_options.tasks = options.tasks;
  PlanSearch search(instance, std::move(start), search_options);
  absl::Status status = search.Run(options.search_rounds, guide);
  if (!status.ok()) return status;
  *simulations += search.candidates_simulated();
  return search.best();
}

// One instance's visit in a round: the searches' best plan (kept in
// `best`, which holds the best plan found so far with keep_best), the
// target made from it, and the round statistics' terms.
struct Visit {
  DistillTarget target;
  double log_greedy =
      0;  // log(greedy / baseline); an OOM or invalid plan: log 10
  double log_target = 0;  // log(target / baseline)
};

// The better of `greedy` and, when `output` has co-location logits and
// decides placement, the co-location placements (CoLocationPlacements) with the
// greedy plan's priorities and fusion; counts the simulations.
absl::StatusOr<ScoredPlan> BestCoLocationPlan(const TrainingInstance& instance,
                                              const PolicyOutput& output,
                                              const ScoredPlan& greedy,
                                              int64_t* simulations) {
  ScoredPlan best = greedy;
  if (output.co_location.empty() || output.placement.empty()) return best;
  ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> placements,
                   CoLocationPlacements(instance, output.co_location));
  *simulations += static_cast<int64_t>(placements.size());
  for (ScoredPlan& plan :
       ScorePlacements(instance, SampleActions(output, nullptr), placements,
                       /*threads=*/1)) {
    if (BetterPlan(plan, best)) best = std::move(plan);
  }
  return best;
}

// Searches `instance` from `start` (the best baseline, or with keep_best the
// best plan found so far) and from the network's own plan (BestCoLocationPlan),
// guided by the network's placement distribution; the better of those and
// `start` becomes `*best` and the target.
absl::StatusOr<Visit> VisitInstance(const GoModel& model,
                                    const TrainingInstance& instance,
                                    const ScoredPlan& baseline,
                                    const ScoredPlan& start,
                                    const ExpertIterationOptions& options,
                                    uint64_t seed, int64_t* simulations,
                                    ScoredPlan* best) {
  PolicyOutput guide;
  absl::StatusOr<ScoredPlan> greedy =
      GreedyPlan(model, instance, options.tasks, &guide);
  if (!greedy.ok()) return greedy.status();
  absl::StatusOr<ScoredPlan> from_start =
      Search(instance, start, &guide, options, seed, simulations);
  if (!from_start.ok()) return from_start.status();
  *best = *std::move(from_start);  // never worse than start: its incumbent
  // The network's own plan: its greedy decode, or the best co-location
  // placement with the greedy priorities and fusion when the network has a
  // co-location head (the partitions ZeroShot tries first).
  ASSIGN_OR_RETURN(ScoredPlan own,
                   BestCoLocationPlan(instance, guide, *greedy, simulations));
  if (own.valid) {
    absl::StatusOr<ScoredPlan> from_greedy =
        Search(instance, own, &guide, options, seed + 1, simulations);
    if (!from_greedy.ok()) return from_greedy.status();
    if (BetterPlan(*from_greedy, *best)) *best = *std::move(from_greedy);
  }
  // Symmetric devices are labelled as the network's own placement has
  // them (CanonicalDevices with a reference), or by first use.
  const bool aligned = options.relabel_to_greedy &&
                       greedy->plan.device.size() == best->plan.device.size();
  absl::StatusOr<DistillTarget> target = MakeDistillTarget(
      instance, best->plan, aligned ? &greedy->plan.device : nullptr);
  if (!target.ok()) return target.status();
  Visit visit;
  visit.target = *std::move(target);
  const double base = baseline.step_time_s;
  visit.log_greedy = greedy->valid && !greedy->oom
                         ? std::log(greedy->step_time_s / base)
                         : std::log(10.0);
  visit.log_target = std::log(best->step_time_s / base);
  return visit;
}

// Up to `count` distinct entries of `remembered` not in `exclude`, drawn
// with `rng`.
std::vector<int> DrawReplay(const std::vector<int>& remembered,
                            const std::vector<int>& exclude, int count,
                            std::mt19937_64* rng) {
  std::vector<int> pool;
  for (int index : remembered) {
    if (std::find(exclude.begin(), exclude.end(), index) == exclude.end()) {
      pool.push_back(index);
    }
  }
  const int n = static_cast<int>(pool.size());
  const int k = std::min(count, n);
  for (int i = 0; i < k; ++i) {
    std::swap(pool[i], pool[i + static_cast<int>((*rng)() % (n - i))]);
  }
  pool.resize(k);
  return pool;
}

}  // namespace

absl::StatusOr<ScoredPlan> BestBaselinePlan(const TrainingInstance& instance,
                                            uint64_t seed) {
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{
      instance.graph(), instance.simulator->topology(), cost_model, seed};
  simulator::baselines::BestBaselineOptions options;
  options.methods = simulator::baselines::DefaultBaselineMethods();
  absl::StatusOr<simulator::baselines::BestBaselineResult> best =
      simulator::baselines::BestBaseline(registry, context, options);
  if (!best.ok()) {
    return absl::Status(best.status().code(),
                        absl::StrCat(instance.label, ": best baseline: ",
                                     best.status().message()));
  }
  return ScorePlan(instance, std::move(best->plan));
}

absl::StatusOr<ScoredPlan> GreedyPlan(const GoModel& model,
                                      const TrainingInstance& instance,
                                      const TaskSet& tasks,
                                      PolicyOutput* output) {
  const std::vector<int32_t>* fixed =
      instance.base_plan != nullptr ? &instance.base_plan->device : nullptr;
  absl::StatusOr<PolicyOutput> out = model.Run(instance.features, tasks, fixed);
  if (!out.ok()) return out.status();
  ScoredPlan plan = ScoreActions(instance, SampleActions(*out, nullptr));
  if (output != nullptr) *output = *std::move(out);
  return plan;
}

absl::StatusOr<double> ZeroShotOverBaseline(
    const GoModel& model, const std::vector<const TrainingInstance*>& instances,
    const std::vector<ScoredPlan>& baselines, const TaskSet& tasks, int samples,
    uint64_t seed, int threads) {
  if (instances.empty() || instances.size() != baselines.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        instances.size(), " instances for ", baselines.size(), " baselines"));
  }
  double log_sum = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    absl::StatusOr<ZeroShotResult> zero_shot =
        ZeroShot(model, *instances[i], tasks, samples, seed, threads);
    if (!zero_shot.ok()) return zero_shot.status();
    const ScoredPlan& plan = zero_shot->best;
    log_sum += plan.valid && !plan.oom
                   ? std::log(plan.step_time_s / baselines[i].step_time_s)
                   : std::log(10.0);
  }
  return std::exp(log_sum / instances.size());
}

absl::StatusOr<ExpertIterationResult> RunExpertIteration(
    GoModel* model, const std::vector<const TrainingInstance*>& instances,
    const ExpertIterationOptions& options) {
  if (instances.empty()) {
    return absl::InvalidArgumentError("expert iteration with no instances");
  }
  DataParallel* parallel = options.data_parallel;
  const int world = parallel != nullptr ? parallel->world_size() : 1;
  const int rank = parallel != nullptr ? parallel->rank() : 0;
  if (options.instances_per_round < 1 ||
      options.instances_per_round % world != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("instances_per_round ", options.instances_per_round,
                     " must be a positive multiple of the world size ", world));
  }
  if (options.averaged != nullptr) {
    absl::Status decay = GoModel::CheckAverageDecay(options.average_decay);
    if (!decay.ok()) return decay;
  }
  if (options.replay_targets < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replay_targets must be 0 or more, got ", options.replay_targets));
  }
  DistillOptions distill = options.distill;
  distill.tasks = options.tasks;
  PpoOptions ppo = options.ppo;
  ppo.tasks = options.tasks;
  if (world > 1) {
    absl::Status synced = parallel->BroadcastParameters(model);
    if (!synced.ok()) return synced;
    auto average = [parallel, model] {
      return parallel->AverageGradients(model);
    };
    distill.after_backward = average;
    ppo.after_backward = average;
  }
  DistillationTrainer distiller(model, distill);
  PpoTrainer ppo_trainer(model, ppo);
  std::vector<std::optional<ScoredPlan>> baselines(instances.size());
  // Per instance, its latest target and best plan (see keep_best); the
  // instances that have one, in the order first visited.
  struct Remembered {
    ScoredPlan best;
    DistillTarget target;
  };
  std::vector<std::optional<Remembered>> memory(instances.size());
  std::vector<int> remembered;
  const int share = options.instances_per_round / world;
  ExpertIterationResult result;
  result.rounds = options.start_round;
  const Clock& clock = *options.clock;
  const absl::Time start = clock.Now();
  for (int round = options.start_round; round < options.rounds; ++round) {
    bool out_of_time = options.start_seconds + SecondsSince(clock, start) >=
                       options.max_seconds;
    if (world > 1) {
      absl::StatusOr<bool> any = parallel->AnyRank(out_of_time);
      if (!any.ok()) return any.status();
      out_of_time = *any;
    }
    if (out_of_time) break;
    const std::vector<int> chosen =
        RoundInstances(static_cast<int>(instances.size()),
                       options.instances_per_round, round, options.seed);
    ExpertRoundStats stats;
    stats.round = round;
    std::vector<const TrainingInstance*> mine;
    std::vector<int> mine_indices;
    double log_greedy = 0;
    double log_target = 0;
    for (int s = rank * share; s < (rank + 1) * share; ++s) {
      const int index = chosen[s];
      const TrainingInstance& instance = *instances[index];
      mine.push_back(&instance);
      mine_indices.push_back(index);
      if (!baselines[index].has_value()) {
        absl::StatusOr<ScoredPlan> baseline =
            BestBaselinePlan(instance, options.seed);
        if (!baseline.ok()) return baseline.status();
        baselines[index] = *std::move(baseline);
      }
      const ScoredPlan& baseline = *baselines[index];
      const bool known = options.keep_best && memory[index].has_value();
      const uint64_t seed = options.seed * 1000003 + round * 131 + s;
      ScoredPlan best;
      absl::StatusOr<Visit> visit = VisitInstance(
          *model, instance, baseline, known ? memory[index]->best : baseline,
          options, seed, &stats.simulations, &best);
      if (!visit.ok()) return visit.status();
      log_greedy += visit->log_greedy;
      log_target += visit->log_target;
      if (!memory[index].has_value()) remembered.push_back(index);
      memory[index] = Remembered{std::move(best), std::move(visit->target)};
    }
    stats.instances = share;
    stats.greedy_over_baseline = std::exp(log_greedy / share);
    stats.target_over_baseline = std::exp(log_target / share);
    std::mt19937_64 replay_rng(options.seed * 7919 + round * 104729 + rank);
    for (int step = 0; step < options.distill_steps; ++step) {
      std::vector<const DistillTarget*> batch;
      for (int index : mine_indices) batch.push_back(&memory[index]->target);
      for (int index : DrawReplay(remembered, mine_indices,
                                  options.replay_targets, &replay_rng)) {
        batch.push_back(&memory[index]->target);
      }
      absl::StatusOr<DistillStats> distilled = distiller.Step(batch);
      if (!distilled.ok()) return distilled.status();
      stats.distill = *distilled;
    }
    for (int step = 0; step < options.ppo_steps; ++step) {
      absl::StatusOr<PpoStepStats> ppo_stats =
          ppo_trainer.Step(mine, rank * share);
      if (!ppo_stats.ok()) return ppo_stats.status();
      stats.ppo_reward = ppo_stats->mean_reward;
    }
    if (options.averaged != nullptr) {
      absl::Status averaged =
          options.averaged->AverageToward(*model, options.average_decay);
      if (!averaged.ok()) return averaged;
    }
    result.simulations += stats.simulations;
    result.rounds = round + 1;
    stats.seconds = options.start_seconds + SecondsSince(clock, start);
    if (rank == 0 && options.on_round) {
      absl::Status status = options.on_round(stats);
      if (!status.ok()) return status;
    }
  }
  result.seconds = SecondsSince(clock, start);
  return result;
}

}  // namespace gopt::policy::go
