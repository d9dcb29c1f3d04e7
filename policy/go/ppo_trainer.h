#ifndef GOPT_POLICY_GO_PPO_TRAINER_H_
#define GOPT_POLICY_GO_PPO_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "policy/go/actions.h"
#include "policy/go/features.h"
#include "policy/go/go_model.h"
#include "policy/policy.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::policy::go {

// Reward of a plan: -sqrt(step / default step) for a valid plan that fits
// memory, kInvalidReward for an invalid or OOM plan.
inline constexpr double kInvalidReward = -10.0;
double PlanReward(double step_time_s, bool oom, double default_step_time_s);

// One (graph, topology) pair to train on or decide for, with the simulator
// that scores its plans and its features. Not copyable; immutable once made,
// so the simulator serves parallel rollouts.
struct TrainingInstance {
  std::string label;
  const simulator::Simulator* simulator = nullptr;  // scores every plan
  GraphFeatures features;
  double default_step_time_s = 0;  // everything on device 0
  bool default_oom = false;
  // Decisions kept for tasks the trainer does not decide (null = defaults).
  std::unique_ptr<simulator::Plan> base_plan;
  // What `simulator` borrows, when the instance owns it (MakeTrainingInstance).
  std::shared_ptr<const graph::Graph> owned_graph;
  std::shared_ptr<const simulator::Topology> owned_topology;
  std::unique_ptr<simulator::OpCostModel> owned_cost_model;
  std::unique_ptr<simulator::Simulator> owned_simulator;

  const graph::Graph& graph() const { return simulator->graph(); }
};

// An instance that owns its graph, topology, a roofline cost model and the
// simulator over them. Featurizes and simulates the default plan. Errors:
// those of Featurize, and the simulator's for a graph whose default plan
// cannot be simulated.
absl::StatusOr<std::unique_ptr<TrainingInstance>> MakeTrainingInstance(
    std::string label, std::shared_ptr<const graph::Graph> graph,
    std::shared_ptr<const simulator::Topology> topology);

// An instance over a borrowed simulator (which must outlive it), pricing
// features with `cost_model`; `base_plan` (may be null) is copied.
absl::StatusOr<std::unique_ptr<TrainingInstance>> MakeInstanceForSimulator(
    std::string label, const simulator::Simulator& simulator,
    const simulator::OpCostModel& cost_model, const simulator::Plan* base_plan);

// A plan with its score.
struct ScoredPlan {
  simulator::Plan plan;
  bool valid = false;  // simulated without error
  double step_time_s = 0;
  bool oom = false;
  double reward = kInvalidReward;
};

// True when `a` is a better plan than `b`: valid and fitting memory beats
// anything else, then the lower step time.
bool BetterPlan(const ScoredPlan& a, const ScoredPlan& b);

// Turns `actions` into a plan (ActionsToPlan) and simulates it: the decode
// every GO plan goes through (greedy and sampled, zero-shot, PPO, expert
// iteration). When the plan decides placement and runs out of memory, the
// memory-fitting decode moves nodes until it fits (PlacementMemoryFit,
// memory_fit.h: up to 4 placements, each simulated; the nodes the
// estimate refuses a device, then every node following its inputs and
// consumers, then the same within budgets scaled by the overflow) and
// returns the first placement that fits, else the best plan seen
// (BetterPlan). A plan that fits, or that decides no placement, is
// returned as simulated. Deterministic; thread-safe.
ScoredPlan ScoreActions(const TrainingInstance& instance,
                        const Actions& actions);

// Simulates `plan` on the instance (not valid when the simulator rejects
// it, e.g. a plan for another graph). When `critical_path` is given, the
// simulation's critical path is stored there (left empty for a rejected
// plan).
ScoredPlan ScorePlan(const TrainingInstance& instance, simulator::Plan plan,
                     std::vector<graph::NodeId>* critical_path = nullptr);

// Calls work(i) for every i in [0, count), on the calling thread and up to
// threads - 1 more; returns when all calls are done. `work` must be safe to
// call concurrently for distinct i.
void RunInParallel(int count, int threads,
                   const std::function<void(int)>& work);

// Samples `count` plans from `output` with `rng` (sequentially, so the
// result is deterministic) and scores them on up to `threads` threads
// (ScoreActions). `actions` receives the actions of the plans returned:
// where the memory-fitting decode moved nodes, their devices.
std::vector<ScoredPlan> SampleAndScore(const TrainingInstance& instance,
                                       const PolicyOutput& output, int count,
                                       int threads, std::mt19937_64* rng,
                                       std::vector<Actions>* actions);

struct PpoOptions {
  // Called with each graph's sampled plans once the simulator scored them,
  // before their rewards become advantages; it may replace their valid,
  // step_time_s, oom and reward (fine-tuning with measured rewards,
  // fine_tuning.h). Called on the Step thread. Null (default): the
  // simulator's scores stand.
  std::function<void(const TrainingInstance&, std::vector<ScoredPlan>*)>
      rescore;
  TaskSet tasks;                // decided tasks (layout ignored)
  int samples_per_graph = 16;   // K plans per graph per step
  int epochs = 2;               // gradient steps per batch of samples
  double learning_rate = 3e-4;  // Adam
  double clip = 0.2;            // PPO ratio clip
  double entropy_coef = 0.01;   // entropy bonus
  double max_grad_norm = 1.0;   // global gradient-norm clip
  int simulation_threads = 2;   // parallel simulations
  uint64_t seed = 0;            // action sampling
  // Called after each epoch's backward pass, before the gradient-norm clip
  // (data-parallel training averages the gradients over its ranks here); an
  // error ends the step with that error. Null: nothing is called.
  std::function<absl::Status()> after_backward;
};

// What one PPO step saw, per graph and overall.
struct PpoGraphStats {
  std::string label;
  double mean_reward = 0;
  ScoredPlan best;       // best sampled plan of this step (lowest valid step)
  PolicyOutput sampled;  // the distribution this step's plans came from
};

struct PpoStepStats {
  double mean_reward = 0;  // over all samples of all graphs
  double entropy = 0;      // mean per-node entropy, summed over tasks
  // Approximate KL(old || new), measured in the last epoch (after
  // epochs - 1 updates).
  double kl = 0;
  int invalid_plans = 0;  // invalid or OOM samples
  std::vector<PpoGraphStats> graphs;
};

// Proximal policy optimisation of a GoModel against the simulator. Each
// Step, per graph: one forward pass, K plans sampled from it and simulated
// in parallel, reward normalised by the per-graph mean and standard
// deviation (advantages), then `epochs` Adam steps on the clipped surrogate
// (per-node probability ratios of the sampled actions, weighted by the
// plan's advantage) plus an entropy bonus, gradients clipped by norm.
// The trainer borrows `model` (which must outlive it) and mutates its
// parameters: no Run on the same model may overlap a Step. Deterministic for
// options.seed and a fixed torch thread count. Not thread-safe.
class PpoTrainer {
 public:
  PpoTrainer(GoModel* model, const PpoOptions& options);
  ~PpoTrainer();
  PpoTrainer(const PpoTrainer&) = delete;
  PpoTrainer& operator=(const PpoTrainer&) = delete;

  // One PPO update over `batch`. `first_index` is batch[0]'s position in
  // the global batch when ranks share one (data parallel): each graph's
  // plans are sampled from a generator seeded by (seed, step number,
  // first_index + its position), so a graph gets the same samples whichever
  // rank takes it. InvalidArgument for an empty batch; Internal for a
  // LibTorch failure; the after_backward hook's error.
  absl::StatusOr<PpoStepStats> Step(
      const std::vector<const TrainingInstance*>& batch, int first_index = 0);

  const PpoOptions& options() const { return options_; }

 private:
  class State;
  GoModel* model_;
  PpoOptions options_;
  int64_t steps_ = 0;  // Step calls so far
  std::unique_ptr<State> state_;
};

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_PPO_TRAINER_H_
