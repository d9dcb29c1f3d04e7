#include "policy/go/pretraining.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gopt::policy::go {
namespace {

double Seconds(absl::Time start) {
  return absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace

absl::StatusOr<PretrainResult> Pretrain(
    GoModel* model, const std::vector<const TrainingInstance*>& instances,
    const PretrainOptions& options) {
  if (instances.empty()) {
    return absl::InvalidArgumentError("pre-training with no graphs");
  }
  PpoTrainer trainer(model, options.ppo);
  std::mt19937_64 rng(options.seed);
  std::vector<const TrainingInstance*> pool;
  size_t cursor = 0;
  PretrainResult result;
  const absl::Time start = absl::Now();
  for (int step = 0; step < options.max_steps; ++step) {
    if (Seconds(start) >= options.max_seconds) break;
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
    absl::StatusOr<PpoStepStats> stats = trainer.Step(batch);
    if (!stats.ok()) return stats.status();
    TrainLogRow row = MakeTrainLogRow(step, Seconds(start), *stats, batch);
    if (options.on_step) options.on_step(row);
    result.log.push_back(std::move(row));
    result.steps = step + 1;
  }
  result.seconds = Seconds(start);
  return result;
}

}  // namespace gopt::policy::go
