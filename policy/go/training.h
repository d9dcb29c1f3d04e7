#ifndef GOPT_POLICY_GO_TRAINING_H_
#define GOPT_POLICY_GO_TRAINING_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/policy.h"

namespace gopt::policy::go {

// Real graphs under ../shared/data held out from training (paths relative
// to the data directory) and the held-out generator family: evaluation
// only, never trained on.
const std::vector<std::string>& HeldOutRealGraphs();
inline constexpr char kHeldOutFamily[] = "transformer_xl";

// A graph file (any importable format) or "gen:PRESET" for a generator
// preset. Errors: the importer's or the generator's.
absl::StatusOr<graph::Graph> LoadGraphSource(const std::string& source);

// A graph of the training corpus.
struct CorpusGraph {
  std::string label;  // "gen:gnmt2-small", "hlo/jaxrl_td_target.hlo", ...
  std::shared_ptr<const graph::Graph> graph;
};

struct CorpusOptions {
  // The shared data directory (hlo/, onnx/, tf_graphdef/, tfjs/); empty =
  // generated graphs only.
  std::string data_dir;
  // Graphs with more nodes are left out (training cost grows with size).
  int max_nodes = 8000;
};

// The pre-training corpus: every generator preset of every family except
// kHeldOutFamily, plus further sizes of those families (see training.cc),
// plus every graph under data_dir that imports and is not held out. Graphs
// over max_nodes or failing to import are skipped and listed in `skipped`
// (with the reason). Deterministic. Errors: only a generator failure.
absl::StatusOr<std::vector<CorpusGraph>> BuildPretrainingCorpus(
    const CorpusOptions& options, std::vector<std::string>* skipped);

// One row of a training log (CSV).
struct TrainLogRow {
  int step = 0;
  double seconds = 0;  // wall time since training started
  std::string graphs;  // labels of the step's graphs, ';'-separated
  double reward = 0;   // mean reward of the step's samples
  // Best sampled step time of the step (mean over the step's graphs) and
  // its geometric-mean ratio to the default plan's step time.
  double best_step_time_s = 0;
  double best_step_ratio = 0;
  double entropy = 0;
  double kl = 0;
  int invalid_plans = 0;
};

// "step,seconds,graphs,reward,best_step_time_s,best_step_ratio,entropy,kl,
// invalid_plans".
std::string TrainLogHeader();
std::string TrainLogLine(const TrainLogRow& row);

struct PretrainOptions {
  PpoOptions ppo;
  int max_steps = 1000;
  double max_seconds = 2400;  // wall-clock budget
  int graphs_per_step = 2;    // instances per PPO update
  int pool_size = 6;          // instances in the current batch pool
  int switch_every = 40;      // steps between pool switches
  uint64_t seed = 0;          // pool selection
  // Called after every step (e.g. to append to the CSV log).
  std::function<void(const TrainLogRow&)> on_step;
};

struct PretrainResult {
  int steps = 0;
  double seconds = 0;
  std::vector<TrainLogRow> log;
};

// Pre-trains `model` with PPO over `instances`: a pool of pool_size
// instances drawn at random is trained on (graphs_per_step per update,
// round robin) and replaced every switch_every steps, as GO switches graph
// batches. Stops after max_steps or max_seconds. Errors: InvalidArgument
// for no instances; the trainer's errors. Deterministic for the seeds
// (apart from wall-clock stopping).
absl::StatusOr<PretrainResult> Pretrain(
    GoModel* model, const std::vector<const TrainingInstance*>& instances,
    const PretrainOptions& options);

// Zero-shot decisions: `num_samples` sampled plans plus the greedy decode,
// scored by the simulator; returns the best (valid, fitting memory first,
// then lowest step time; the greedy plan wins ties).
struct ZeroShotResult {
  ScoredPlan best;
  int num_valid = 0;
  double inference_seconds = 0;  // network forward pass
};
absl::StatusOr<ZeroShotResult> ZeroShot(const GoModel& model,
                                        const TrainingInstance& instance,
                                        const TaskSet& tasks, int num_samples,
                                        uint64_t seed, int threads);

struct FineTuneOptions {
  PpoOptions ppo;
  int max_steps = 50;
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
};

// Fine-tunes `model` with PPO on one instance until max_steps, the deadline
// or cancellation, keeping the best plan sampled (starting from `start`);
// after each PPO step the plan search refines the best plan so far. Once a
// PPO step is not expected to finish before the deadline (see
// FineTuneOptions::first_step_estimate_seconds), the search runs alone
// until the deadline.
absl::StatusOr<FineTuneResult> FineTune(GoModel* model,
                                        const TrainingInstance& instance,
                                        const ScoredPlan& start,
                                        const FineTuneOptions& options);

// True when `a` is a better plan than `b`: valid and fitting memory beats
// anything else, then the lower step time.
bool BetterPlan(const ScoredPlan& a, const ScoredPlan& b);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_TRAINING_H_
