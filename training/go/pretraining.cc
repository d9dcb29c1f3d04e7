#include "training/go/pretraining.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "util/clock.h"

namespace gopt::policy::go {

absl::StatusOr<PretrainResult> Pretrain(
    GoModel* model, const std::vector<const TrainingInstance*>& instances,
    const PretrainOptions& options) {
  if (instances.empty()) {
    return absl::InvalidArgumentError("pre-training with no graphs");
  }
  DataParallel* parallel = options.data_parallel;
  const int world = parallel != nullptr ? parallel->world_size() : 1;
  const int rank = parallel != nullptr ? parallel->rank() : 0;
  PpoOptions ppo = options.ppo;
  if (world > 1) {
    absl::Status synced = parallel->BroadcastParameters(model);
    if (!synced.ok()) return synced;
    ppo.after_backward = [parallel, model] {
      return parallel->AverageGradients(model);
    };
  }
  PpoTrainer trainer(model, ppo);
  std::mt19937_64 rng(options.seed);
  std::vector<const TrainingInstance*> pool;
  size_t cursor = 0;
  PretrainResult result;
  const Clock& clock = *options.clock;
  const absl::Time start = clock.Now();
  for (int step = 0; step < options.max_steps; ++step) {
    bool out_of_time = SecondsSince(clock, start) >= options.max_seconds;
    if (world > 1) {
      absl::StatusOr<bool> any = parallel->AnyRank(out_of_time);
      if (!any.ok()) return any.status();
      out_of_time = *any;
    }
    if (out_of_time) break;
    if (step % std::max(options.switch_every, 1) == 0) {
      // A new pool: a random subset without repetition.
      std::vector<size_t> order(instances.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      for (size_t i = order.size(); i > 1; --i) {
        std::swap(order[i - 1], order[rng() % i]);
      }
      pool.clear();
      for (size_t i = 0;
           i < order.size() && static_cast<int>(i) < options.pool_size; ++i) {
        pool.push_back(instances[order[i]]);
      }
      cursor = 0;
    }
    std::vector<const TrainingInstance*> batch;
    for (int i = 0;
         i < options.graphs_per_step && i < static_cast<int>(pool.size());
         ++i) {
      batch.push_back(pool[cursor++ % pool.size()]);
    }
    if (batch.size() % world != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a batch of ", batch.size(), " graphs does not split over ", world,
          " ranks (graphs_per_step and pool_size must be multiples of the "
          "world size)"));
    }
    const int share = static_cast<int>(batch.size()) / world;
    std::vector<const TrainingInstance*> mine(
        batch.begin() + rank * share, batch.begin() + (rank + 1) * share);
    absl::StatusOr<PpoStepStats> stats = trainer.Step(mine, rank * share);
    if (!stats.ok()) return stats.status();
    TrainLogRow row =
        MakeTrainLogRow(step, SecondsSince(clock, start), *stats, mine);
    if (options.on_step && rank == 0) options.on_step(row);
    result.log.push_back(std::move(row));
    result.steps = step + 1;
  }
  result.seconds = SecondsSince(clock, start);
  return result;
}

}  // namespace gopt::policy::go
