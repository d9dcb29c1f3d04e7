#include "policy/go/train_log.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/geometric_mean.h"

namespace gopt::policy::go {

std::string TrainLogHeader() {
  return "step,seconds,graphs,reward,best_step_time_s,best_step_ratio,entropy,"
         "kl,invalid_plans";
}

std::string TrainLogLine(const TrainLogRow& row) {
  return absl::StrFormat("%d,%.3f,%s,%.6f,%.6g,%.6f,%.6f,%.6g,%d", row.step,
                         row.seconds, row.graphs, row.reward,
                         row.best_step_time_s, row.best_step_ratio, row.entropy,
                         row.kl, row.invalid_plans);
}

TrainLogRow MakeTrainLogRow(int step, double seconds, const PpoStepStats& stats,
                            const std::vector<const TrainingInstance*>& batch) {
  TrainLogRow row;
  row.step = step;
  row.seconds = seconds;
  row.reward = stats.mean_reward;
  row.entropy = stats.entropy;
  row.kl = stats.kl;
  row.invalid_plans = stats.invalid_plans;
  std::vector<std::string> labels;
  GeometricMean best_step_ratio;
  for (size_t i = 0; i < stats.graphs.size(); ++i) {
    labels.push_back(stats.graphs[i].label);
    const ScoredPlan& best = stats.graphs[i].best;
    // An OOM or invalid best counts at the invalid reward's ratio (100x).
    const double ratio = best.valid && !best.oom
                             ? best.step_time_s / batch[i]->default_step_time_s
                             : kInvalidReward * kInvalidReward;
    best_step_ratio.Add(ratio);
    row.best_step_time_s += best.step_time_s / stats.graphs.size();
  }
  row.graphs = absl::StrJoin(labels, ";");
  row.best_step_ratio = best_step_ratio.value();
  return row;
}

}  // namespace gopt::policy::go
