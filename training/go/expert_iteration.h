#ifndef GOPT_TRAINING_GO_EXPERT_ITERATION_H_
#define GOPT_TRAINING_GO_EXPERT_ITERATION_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "training/go/data_parallel.h"
#include "training/go/distillation.h"
#include "util/clock.h"

// Expert iteration (search distillation) for GO policies, gopt-train only.
namespace gopt::policy::go {

// The best plan of simulator::baselines::DefaultBaselineMethods on the
// instance (the methods `gopt bench` compares against), simulated on the
// instance's simulator, with `seed` for the randomized heuristics.
// FailedPrecondition (BestBaseline's) when no method gives a plan that fits
// memory.
absl::StatusOr<ScoredPlan> BestBaselinePlan(const TrainingInstance& instance,
                                            uint64_t seed);

// The network's greedy plan (most likely action per node; a placement that
// runs out of memory repaired as ScoreActions does) on the instance,
// simulated, with the policy output it came from in `output` (may be null).
// Errors: GoModel::Run's.
absl::StatusOr<ScoredPlan> GreedyPlan(const GoModel& model,
                                      const TrainingInstance& instance,
                                      const TaskSet& tasks,
                                      PolicyOutput* output);

// The geometric mean over `instances` of the zero-shot plan's step time
// (ZeroShot: greedy decoding plus samples - 1 sampled plans, best by
// simulation) over `baselines[i]`'s step time; an OOM or invalid zero-shot
// plan counts as 10x its baseline. InvalidArgument when the vectors differ
// in length or are empty; ZeroShot's errors.
absl::StatusOr<double> ZeroShotOverBaseline(
    const GoModel& model, const std::vector<const TrainingInstance*>& instances,
    const std::vector<ScoredPlan>& baselines, const TaskSet& tasks, int samples,
    uint64_t seed, int threads);

// What one round saw (for this rank's instances).
struct ExpertRoundStats {
  int round = 0;       // 0-based, counting resumed rounds
  double seconds = 0;  // wall time since the first round ever started
  int instances = 0;   // instances this rank searched
  // Geometric means over this rank's instances, against the best baseline:
  // the network's greedy plan before the round's updates, and the target
  // (the best plan the searches found).
  double greedy_over_baseline = 0;
  double target_over_baseline = 0;
  DistillStats distill;     // last supervised update
  double ppo_reward = 0;    // last PPO update's mean reward (0 without PPO)
  int64_t simulations = 0;  // plan-search simulations this round
};

struct ExpertIterationOptions {
  TaskSet tasks;                  // decided tasks (layout ignored)
  int rounds = 100;               // stop after this many rounds in total
  double max_seconds = 2400;      // or after this much wall time in total
  int instances_per_round = 4;    // over all ranks (a multiple of the world)
  int search_rounds = 8;          // PlanSearch rounds from each start
  int candidates_per_round = 16;  // PlanSearch candidates per round
  int distill_steps = 4;          // supervised updates per round
  int ppo_steps = 1;              // PPO updates per round after them
  int simulation_threads = 2;     // parallel simulations
  // Targets' symmetric devices are matched to the network's greedy
  // placement (true) or numbered by first use in topological order (false).
  bool relabel_to_greedy = true;
  // Each instance's searches start from the best plan found for it so far
  // (the best baseline and the greedy plan on its first visit), and its
  // target is the best plan ever found for it, so targets only improve
  // (true); or every visit searches from the best baseline and the greedy
  // plan anew (false). The memory is this rank's and this run's: it is not
  // checkpointed (a resumed run starts it empty) and with several ranks an
  // instance remembers only what the rank that visits it searched.
  bool keep_best = false;
  // Each supervised update adds this many targets of earlier visits (drawn,
  // seeded, from the instances this rank has searched in earlier rounds,
  // the round's own left out) to the round's targets, so the network keeps
  // fitting what it saw before. Targets are remembered as they were made
  // (labelled to the greedy plan of their round with relabel_to_greedy,
  // which the co-location loss does not see). 0 = the round's targets only.
  int replay_targets = 0;
  uint64_t seed = 0;  // instance order, searches, baselines
  // Borrowed; null = off. After every round's updates it moves toward the
  // trained network (GoModel::AverageToward(model, average_decay)): an
  // exponential moving average of the weights, for on_round to evaluate
  // and checkpoint in place of the last round's. The network that searches
  // and trains stays `model`. Same architecture as `model`.
  GoModel* averaged = nullptr;
  double average_decay = 0.9;  // in [0, 1): the average's weight per round
  DistillOptions distill;      // its tasks and hook are set from here
  PpoOptions ppo;              // its tasks and hook are set from here
  // Resuming: rounds and seconds already done by an earlier run.
  int start_round = 0;
  double start_seconds = 0;
  // The time source for max_seconds and the rounds' times; borrowed, never
  // null.
  const Clock* clock = &Clock::Real();
  // Borrowed; null = one process. Every rank runs the same round schedule,
  // searches and trains on its share of each round's instances; gradients
  // are averaged; rank 0's parameters are copied to all ranks first.
  DataParallel* data_parallel = nullptr;
  // Called after every round on rank 0 (e.g. to log and checkpoint); an
  // error stops training with it.
  std::function<absl::Status(const ExpertRoundStats&)> on_round;
};

struct ExpertIterationResult {
  int rounds = 0;           // total, including resumed ones
  double seconds = 0;       // this run's wall time
  int64_t simulations = 0;  // this run's plan-search simulations (this rank)
};

// Expert iteration over `instances`: each round takes the next
// instances_per_round instances of a seeded permutation (a new permutation
// per pass), and for each runs the plan search from the best baseline plan
// (computed once per instance) and from the network's own plan (its greedy
// plan, or with a co-location head the best of it and the co-location
// placements, co_location_decode.h; the searches are guided by the network's
// placement distribution), keeps the best plan found
// (BetterPlan) as the target (symmetric devices labelled to match the
// network's greedy placement: CanonicalDevices with a reference), then makes
// distill_steps supervised updates toward the round's targets
// (DistillationTrainer; with replay_targets, each over the round's targets
// and earlier ones) and ppo_steps PPO updates on the round's instances.
// With keep_best, searches continue from each instance's best plan so far.
// Stops after `rounds` rounds or max_seconds. Errors: InvalidArgument for no
// instances, a round that does not split over the ranks or an averaged
// network with average_decay outside [0, 1) or another architecture; the
// trainers', searches' and process group's errors. Deterministic for the seeds
// apart from wall-clock stopping.
absl::StatusOr<ExpertIterationResult> RunExpertIteration(
    GoModel* model, const std::vector<const TrainingInstance*>& instances,
    const ExpertIterationOptions& options);

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_EXPERT_ITERATION_H_
