#ifndef GOPT_POLICY_GO_FINE_TUNING_H_
#define GOPT_POLICY_GO_FINE_TUNING_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/train_log.h"
#include "policy/policy.h"
#include "util/clock.h"

// A GO policy's decisions for one graph, as the server makes them: the
// zero-shot plan, then PPO fine-tuning with the plan search around it.
namespace gopt::policy::go {

// Zero-shot decisions: the greedy decode plus `num_samples` more plans,
// scored by the simulator through ScoreActions (whose memory-fitting decode
// moves nodes of a plan that runs out of memory); returns the best (valid,
// fitting memory first, then lowest step time; the greedy plan wins ties,
// then the earlier plan). When `tasks` include placement, the first of the
// `num_samples` plans are every node on the fastest device (highest f32
// peak, then most memory, the first of equals: device 0, the framework
// default, on a uniform machine; a node whose constraint forbids it as
// simulator::KeepDeviceConstraints moves it), then
// the heuristic placements the network's placement priors read (HEFT, then
// METIS: at most 2, those in use, GoModel::PlacementHintsUsed, complete),
// then, when the network has a co-location head, the co-location placements
// (CoLocationPlacements, co_location_decode.h: at most 13), all with the greedy
// decode's priorities and fusion, each placement only when unlike the
// greedy one and every one tried before (a repeat costs no sample); the
// rest are sampled. When
// `tasks` include fusion, the greedy plan and those placements are also
// tried with their fusion levels grouped by the `greedy-join` rule
// (Actions::fusion_join; not counted as samples: the same decisions,
// another way to make kernels of them). `clock` times the forward pass.
struct ZeroShotResult {
  ScoredPlan best;
  int num_valid = 0;
  double inference_s = 0;  // network forward pass
  // Which decode gave `best`: "greedy", "greedy-join", "one-device",
  // "one-device+greedy-join", "hint", "hint+greedy-join", "co-location",
  // "co-location+greedy-join" or "sampled". OptimizeResponse and `gopt bench`
  // print it.
  std::string decode = "greedy";
  // The rule that grouped `best`'s fusion levels (for a plan search that
  // starts from it: FineTuneOptions::fusion_join).
  simulator::baselines::FusionJoin fusion_join =
      simulator::baselines::FusionJoin::kOneProducer;
};
absl::StatusOr<ZeroShotResult> ZeroShot(const GoModel& model,
                                        const TrainingInstance& instance,
                                        const TaskSet& tasks, int num_samples,
                                        uint64_t seed, int threads,
                                        const Clock& clock = Clock::Real());

// Runs a plan of the fine-tuned graph for real and returns its measured
// step time in seconds (the engine passes its worker pool: policy/ knows no
// server). Errors are the measurer's. Called on the FineTune thread.
using MeasurePlanFunction =
    std::function<absl::StatusOr<double>(const simulator::Plan&)>;

// Fine-tuning with measured rewards (gopt optimize --reward=measured): PPO's
// reward is -sqrt(measured step / measured step of the start plan), from
// `measure`, instead of the simulator's prediction.
struct MeasuredRewardOptions {
  // Null (default) = simulated rewards.
  MeasurePlanFunction measure;
  // Largest graph, in nodes, fine-tuned with measured rewards; FineTune
  // refuses larger ones (InvalidArgument). Default 2000.
  int64_t max_graph_nodes = 2000;
  // Most plans measured in one FineTune call (the start plan included;
  // a plan seen before is not measured again). PPO stops before a step
  // whose samples could exceed it. Default 64.
  int max_measurements = 64;
};

struct FineTuneOptions {
  PpoOptions ppo;
  // With measured_reward.measure set, rewards come from measurements, the
  // plan search around the best plan is off (it ranks plans by the
  // simulator) and every step time in the result and the log is measured.
  MeasuredRewardOptions measured_reward;
  int max_steps = 50;
  // How the plan search's fusion moves group fusion levels; unset: as the
  // start plan's method says (PlanSearchOptions::fusion_join). Set it to
  // ZeroShotResult::fusion_join when starting from a zero-shot plan (whose
  // method is "go").
  std::optional<simulator::baselines::FusionJoin> fusion_join;
  // Before the first step the placement priors' graph-conditioned gate is
  // reset to 1 and their scales are multiplied by this
  // (GoModel::ScalePlacementPriors). Pre-training drives the gate up until
  // the placement is certain, so every sample would be the same plan; at
  // the trained scales each node leaves its prior's device with a few
  // percent probability, a local search around it. The best plan seen is
  // kept whatever the samples score.
  float placement_prior_factor = 1.0f;
  // After every PPO step, this many plans are simulated by the plan search
  // around the best plan so far (PlanSearch, plan_search.h), proposing
  // devices from the step's placement distribution; 0 = PPO alone.
  int search_simulations_per_step = 512;
  absl::Time deadline = absl::InfiniteFuture();
  // The time source for the deadline and the step timings; borrowed, never
  // null.
  const Clock* clock = &Clock::Real();
  // Fine-tuning and the search stop once the best plan's step time is at
  // or below this (PlanSearchOptions::stop_at_step_time_s). 0 = never.
  double stop_at_step_time_s = 0;
  // Seconds the first PPO step is expected to take (0 = unknown: it runs
  // whenever time is left). A step starts only when the time left before
  // the deadline covers the expected time (the previous step's after the
  // first), since a step cannot stop half-way: on an 85k-node graph one
  // takes about 30 s. When PPO no longer fits, the plan search spends the
  // rest of the time, with at most the simulations the remaining steps
  // would have had.
  double first_step_estimate_seconds = 0;
  const std::atomic<bool>* cancelled = nullptr;
  // Called after every step with its log row and the best plan so far.
  std::function<void(const TrainLogRow&, const ScoredPlan&)> on_step;
  // Called after every batch of search rounds that runs without PPO (see
  // first_step_estimate_seconds), with the batch's number (from 1) and the
  // best plan so far.
  std::function<void(int, const ScoredPlan&)> on_search;
};

struct FineTuneResult {
  ScoredPlan best;  // best plan seen (including `start`)
  int steps = 0;
  // PPO stopped before max_steps because the next step was not expected to
  // finish before the deadline (the plan search then went on alone).
  bool ppo_stopped_for_deadline = false;
  int search_improvements = 0;  // times the plan search beat the incumbent
  int64_t search_simulations = 0;
  double seconds = 0;
  std::vector<TrainLogRow> log;
  // With measured rewards: plans measured (distinct plans, the start plan
  // included), measurements that failed (their plans got the invalid
  // reward; the first error is kept), whether PPO stopped because the next
  // step could exceed max_measurements, and the start plan's measured step
  // time (best.step_time_s is measured too).
  int measurements = 0;
  int measurement_failures = 0;
  std::string first_measurement_error;
  bool measurement_budget_spent = false;
  double start_measured_step_time_s = 0;
};

// One line on a fine-tuning with measured rewards: plans measured, the start
// and best plans' measured step times, whether the measurement budget
// stopped PPO, failed measurements and the first failure.
std::string MeasuredRewardNote(const FineTuneResult& tuned);

// Fine-tunes `model` with PPO on one instance until max_steps, the deadline
// or cancellation, keeping the best plan sampled (starting from `start`);
// after each PPO step the plan search refines the best plan so far. Once a
// PPO step is not expected to finish before the deadline (see
// FineTuneOptions::first_step_estimate_seconds), the search runs alone
// until the deadline. With measured rewards (options.measured_reward):
// InvalidArgument for a graph over max_graph_nodes or max_measurements < 1,
// the measurer's error when the start plan cannot be measured.
absl::StatusOr<FineTuneResult> FineTune(GoModel* model,
                                        const TrainingInstance& instance,
                                        const ScoredPlan& start,
                                        const FineTuneOptions& options);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_FINE_TUNING_H_
