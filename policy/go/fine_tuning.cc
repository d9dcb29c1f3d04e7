#include "policy/go/fine_tuning.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "policy/go/co_location_decode.h"
#include "policy/go/plan_search.h"
#include "simulator/plan.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

// Measured rewards for one FineTune call: each distinct plan is measured
// once, within options.max_measurements; counts go into `result`.
class MeasuredRewards {
 public:
  MeasuredRewards(const MeasuredRewardOptions& options, FineTuneResult* result)
      : options_(options), result_(result) {}

  // Measures the start plan, whose measured time normalises the rewards,
  // and replaces its step time and reward by the measured ones.
  absl::Status Start(ScoredPlan* start) {
    absl::StatusOr<double> seconds = Measure(start->plan);
    if (!seconds.ok()) {
      return absl::Status(
          seconds.status().code(),
          absl::StrCat("fine-tuning with measured rewards: the start plan "
                       "could not be measured: ",
                       seconds.status().message()));
    }
    start_s_ = *seconds;
    result_->start_measured_step_time_s = *seconds;
    start->step_time_s = *seconds;
    start->reward = PlanReward(*seconds, start->oom, start_s_);
    return absl::OkStatus();
  }

  // Whether `samples` more plans may be measured.
  bool Fits(int samples) const {
    return result_->measurements + samples <= options_.max_measurements;
  }

  // PpoOptions::rescore: a valid, fitting plan gets its measured step time
  // and reward; one that could not be measured becomes invalid.
  void Rescore(std::vector<ScoredPlan>* plans) {
    for (ScoredPlan& plan : *plans) {
      if (!plan.valid || plan.oom) continue;
      absl::StatusOr<double> seconds = Measure(plan.plan);
      if (!seconds.ok()) {
        if (result_->measurement_failures++ == 0) {
          result_->first_measurement_error =
              std::string(seconds.status().message());
        }
        plan.valid = false;
        plan.reward = kInvalidReward;
        continue;
      }
      plan.step_time_s = *seconds;
      plan.reward = PlanReward(*seconds, false, start_s_);
    }
  }

  double start_s() const { return start_s_; }

 private:
  using Key =
      std::tuple<std::vector<int32_t>, std::vector<int32_t>,
                 std::vector<int32_t>, std::vector<std::vector<int32_t>>>;

  absl::StatusOr<double> Measure(const simulator::Plan& plan) {
    Key key(plan.device, plan.priority, plan.fusion_group, plan.layout);
    if (auto it = measured_.find(key); it != measured_.end()) {
      return it->second;
    }
    if (result_->measurements >= options_.max_measurements) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the ", options_.max_measurements,
                       " measurements of this request are spent"));
    }
    ++result_->measurements;
    absl::StatusOr<double> seconds = options_.measure(plan);
    if (seconds.ok() && !(*seconds > 0)) {
      return absl::InternalError(
          absl::StrCat("the measurer returned a step time of ", *seconds,
                       " s; expected a positive time"));
    }
    if (seconds.ok()) measured_.emplace(std::move(key), *seconds);
    return seconds;
  }

  const MeasuredRewardOptions& options_;
  FineTuneResult* const result_;
  double start_s_ = 0;
  std::map<Key, double> measured_;
};

absl::Status CheckMeasuredReward(const MeasuredRewardOptions& options,
                                 const TrainingInstance& instance) {
  const int64_t nodes = instance.graph().num_nodes();
  if (nodes > options.max_graph_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fine-tuning with measured rewards: graph '", instance.graph().name(),
        "' has ", nodes, " nodes; measured rewards are for graphs of at most ",
        options.max_graph_nodes,
        " nodes (every PPO step runs its sampled plans for real); use "
        "simulated rewards"));
  }
  if (options.max_measurements < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("fine-tuning with measured rewards: max_measurements = ",
                     options.max_measurements, "; expected at least 1"));
  }
  return absl::OkStatus();
}

// The heuristic placements the network's placement priors read (HEFT,
// then METIS; GoModel::PlacementHintsUsed), each when it places every node.
std::vector<std::vector<int32_t>> HintPlacements(
    const GoModel& model, const TrainingInstance& instance) {
  const GoModel::PlacementHints used = model.PlacementHintsUsed();
  const GraphFeatures& features = instance.features;
  const size_t num_nodes = instance.graph().num_nodes();
  std::vector<std::vector<int32_t>> hints;
  for (const auto& [hint, on] :
       {std::pair(&features.heft_device, used.heft),
        std::pair(&features.metis_device, used.metis)}) {
    if (on && hint->size() == num_nodes &&
        std::find(hint->begin(), hint->end(), -1) == hint->end()) {
      hints.push_back(*hint);
    }
  }
  return hints;
}

// Every node on the machine's fastest device (highest f32 peak, then the
// most memory; the first of equals, so device 0 on a uniform machine, the
// framework default), except where a node's constraint forbids it
// (simulator::KeepDeviceConstraints).
std::vector<int32_t> OneDevicePlacement(const TrainingInstance& instance) {
  const simulator::Topology& topology = instance.simulator->topology();
  int fastest = 0;
  for (int d = 1; d < topology.num_devices(); ++d) {
    const simulator::DeviceProfile& a = topology.devices[d];
    const simulator::DeviceProfile& b = topology.devices[fastest];
    if (std::tie(a.peak_f32_flops, a.memory_bytes) >
        std::tie(b.peak_f32_flops, b.memory_bytes)) {
      fastest = d;
    }
  }
  std::vector<int32_t> device(instance.graph().num_nodes(), fastest);
  simulator::KeepDeviceConstraints(instance.graph(), topology, &device);
  return device;
}

}  // namespace

std::string MeasuredRewardNote(const FineTuneResult& tuned) {
  std::string note =
      absl::StrCat("fine-tuned with measured rewards: ", tuned.measurements,
                   " plans measured; the start plan measured ",
                   tuned.start_measured_step_time_s * 1e3, " ms, the best ",
                   tuned.best.step_time_s * 1e3, " ms");
  if (tuned.measurement_budget_spent) {
    absl::StrAppend(&note, "; PPO stopped after ", tuned.steps,
                    " steps: the measurement budget was spent");
  }
  if (tuned.measurement_failures > 0) {
    absl::StrAppend(
        &note, "; ", tuned.measurement_failures,
        " measurements failed (first: ", tuned.first_measurement_error, ")");
  }
  return note;
}

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
  result.inference_s = SecondsSince(clock, start);
  const Actions greedy = SampleActions(*output, nullptr);
  result.best = ScoreActions(instance, greedy);
  if (result.best.valid) ++result.num_valid;
  auto consider = [&result](
                      const ScoredPlan& plan, const char* decode,
                      simulator::baselines::FusionJoin join =
                          simulator::baselines::FusionJoin::kOneProducer) {
    if (plan.valid) ++result.num_valid;
    if (BetterPlan(plan, result.best)) {
      result.best = plan;
      result.decode = decode;
      result.fusion_join = join;
    }
  };
  // The greedy decisions with the fusion levels turned into groups by
  // greedy-join's rule too (a decode choice, not a sample).
  Actions joined = greedy;
  joined.fusion_join = simulator::baselines::FusionJoin::kAllProducers;
  if (tasks.fusion) {
    consider(ScoreActions(instance, joined), "greedy-join", joined.fusion_join);
  }
  // Placements tried with the greedy decode's priorities and fusion (and,
  // when fusion is decided, its greedy-join grouping), each counted as one
  // of the samples. A placement scored before (the greedy one, or one that
  // another decode gave first) is skipped and costs no sample.
  int samples = num_samples;
  std::vector<std::vector<int32_t>> tried = {greedy.device};
  auto try_placements = [&](std::vector<std::vector<int32_t>> candidates,
                            const char* decode, const char* joined_decode) {
    std::vector<std::vector<int32_t>> placements;
    for (std::vector<int32_t>& device : candidates) {
      if (static_cast<int>(placements.size()) >= samples) break;
      if (std::find(tried.begin(), tried.end(), device) != tried.end()) {
        continue;
      }
      tried.push_back(device);
      placements.push_back(std::move(device));
    }
    samples -= static_cast<int>(placements.size());
    for (const ScoredPlan& plan :
         ScorePlacements(instance, greedy, placements, threads)) {
      consider(plan, decode);
    }
    if (tasks.fusion) {
      for (const ScoredPlan& plan :
           ScorePlacements(instance, joined, placements, threads)) {
        consider(plan, joined_decode, joined.fusion_join);
      }
    }
  };
  if (tasks.placement && samples > 0) {
    // Every node on one device: the right placement for an op-by-op graph,
    // whatever the network's placement.
    try_placements({OneDevicePlacement(instance)}, "one-device",
                   "one-device+greedy-join");
    try_placements(HintPlacements(model, instance), "hint", "hint+greedy-join");
  }
  if (tasks.placement && !output->co_location.empty() && samples > 0) {
    ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> placements,
                     CoLocationPlacements(instance, output->co_location));
    try_placements(std::move(placements), "co-location",
                   "co-location+greedy-join");
  }
  std::mt19937_64 rng(seed);
  std::vector<Actions> actions;
  for (const ScoredPlan& plan :
       SampleAndScore(instance, *output, samples, threads, &rng, &actions)) {
    consider(plan, "sampled");
  }
  return result;
}

absl::StatusOr<FineTuneResult> FineTune(GoModel* model,
                                        const TrainingInstance& instance,
                                        const ScoredPlan& start,
                                        const FineTuneOptions& options) {
  FineTuneResult result;
  result.best = start;
  PpoOptions ppo = options.ppo;
  std::optional<MeasuredRewards> measured;
  if (options.measured_reward.measure) {
    RETURN_IF_ERROR(CheckMeasuredReward(options.measured_reward, instance));
    measured.emplace(options.measured_reward, &result);
    RETURN_IF_ERROR(measured->Start(&result.best));
    ppo.rescore = [&measured](const TrainingInstance&,
                              std::vector<ScoredPlan>* plans) {
      measured->Rescore(plans);
    };
  }
  RETURN_IF_ERROR(model->ScalePlacementPriors(options.placement_prior_factor));
  PpoTrainer trainer(model, ppo);
  PlanSearchOptions search_options;
  search_options.threads = options.ppo.simulation_threads;
  search_options.seed = options.ppo.seed;
  search_options.tasks = options.ppo.tasks;
  search_options.deadline = options.deadline;
  search_options.clock = options.clock;
  search_options.cancelled = options.cancelled;
  search_options.stop_at_step_time_s = options.stop_at_step_time_s;
  search_options.fusion_join = options.fusion_join;
  PlanSearch search(instance, start, search_options);
  // The search ranks plans by the simulator: off with measured rewards.
  const int search_rounds =
      measured.has_value()
          ? 0
          : options.search_simulations_per_step /
                std::max(search_options.candidates_per_round, 1);
  const double reference_s =
      measured.has_value() ? measured->start_s() : instance.default_step_time_s;
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
    if (measured.has_value() && !measured->Fits(ppo.samples_per_graph)) {
      result.measurement_budget_spent = true;
      break;
    }
    const absl::Time step_start = clock.Now();
    absl::StatusOr<PpoStepStats> stats = trainer.Step({&instance});
    if (!stats.ok()) return stats.status();
    expected_step_seconds = SecondsSince(clock, step_start);
    const ScoredPlan& best = stats->graphs[0].best;
    if (BetterPlan(best, result.best)) result.best = best;
    if (search_rounds > 0 && result.best.valid) {
      search.Offer(result.best);
      RETURN_IF_ERROR(search.Run(search_rounds, &stats->graphs[0].sampled));
      if (BetterPlan(search.best(), result.best)) result.best = search.best();
    }
    TrainLogRow row =
        MakeTrainLogRow(step, SecondsSince(clock, begin), *stats, {&instance});
    // For one graph the log tracks the best plan so far (with measured
    // rewards: against the measured start plan).
    row.best_step_time_s = result.best.step_time_s;
    row.best_step_ratio = result.best.step_time_s / reference_s;
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
  result.seconds = SecondsSince(clock, begin);
  result.search_improvements = search.improvements();
  result.search_simulations = search.candidates_simulated();
  return result;
}

}  // namespace gopt::policy::go
