#ifndef GOPT_POLICY_GO_TRAIN_LOG_H_
#define GOPT_POLICY_GO_TRAIN_LOG_H_

#include <string>
#include <vector>

#include "policy/go/ppo_trainer.h"

// The log of PPO training, pre-training and fine-tuning alike: one row per
// step, written as CSV by gopt-train. Plain values and pure functions.
namespace gopt::policy::go {

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

// Folds one PPO step over `batch` (the step's instances, in the order of
// stats.graphs) into a log row taken `seconds` after training started: the
// best plan's step time is the mean over the batch, its ratio to the default
// plan the geometric mean (an OOM or invalid best counts at 100x).
TrainLogRow MakeTrainLogRow(int step, double seconds, const PpoStepStats& stats,
                            const std::vector<const TrainingInstance*>& batch);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_TRAIN_LOG_H_
