#ifndef GOPT_TRAINING_GO_PRETRAINING_H_
#define GOPT_TRAINING_GO_PRETRAINING_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/train_log.h"
#include "training/go/data_parallel.h"
#include "util/clock.h"

// PPO pre-training of a GO policy over many graphs (gopt-train only; not
// linked into the server).
namespace gopt::policy::go {

struct PretrainOptions {
  PpoOptions ppo;
  int max_steps = 1000;
  double max_seconds = 2400;  // wall-clock budget
  int graphs_per_step = 2;    // instances per PPO update
  int pool_size = 6;          // instances in the current batch pool
  int switch_every = 40;      // steps between pool switches
  uint64_t seed = 0;          // pool selection
  // The time source for max_seconds and the log's times; borrowed, never
  // null.
  const Clock* clock = &Clock::Real();
  // Called after every step (e.g. to append to the CSV log); on rank 0 only
  // under data parallelism, with rank 0's share of the batch.
  std::function<void(const TrainLogRow&)> on_step;
  // Data-parallel training (borrowed; null = one process): every rank runs
  // the same pool schedule and takes graphs_per_step / world_size graphs of
  // each step's batch (graphs_per_step must be a multiple of the world
  // size); gradients are averaged over the ranks before each update, and
  // rank 0's parameters are copied to all ranks first. All ranks stop at
  // the same step.
  DataParallel* data_parallel = nullptr;
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
// for no instances or a batch that does not split evenly over the ranks;
// the trainer's and the process group's errors. Deterministic for the seeds
// (apart from wall-clock stopping).
absl::StatusOr<PretrainResult> Pretrain(
    GoModel* model, const std::vector<const TrainingInstance*>& instances,
    const PretrainOptions& options);

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_PRETRAINING_H_
