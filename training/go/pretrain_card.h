#ifndef GOPT_TRAINING_GO_PRETRAIN_CARD_H_
#define GOPT_TRAINING_GO_PRETRAIN_CARD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/train_log.h"
#include "training/go/pretraining.h"

// The card.json of a pre-trained GO policy (gopt-train pretrain; training
// only, not linked into the server).
namespace gopt::policy::go {

// What a pre-training run's card records.
struct PretrainCardInfo {
  std::string command_line;        // how the run was started
  std::vector<std::string> tasks;  // "placement", "scheduling", "fusion"
  std::string checkpoint;          // file name inside the policy directory
  nlohmann::json graphs = nlohmann::json::array();  // [{graph, nodes}]
  std::vector<std::string> topologies;
  uint64_t seed = 0;
  int torch_threads = 0;
  std::string git_revision;
  std::string started_utc;
  GoModelOptions model;
  int64_t parameters = 0;
  PretrainOptions pretrain;  // its ppo options included
};

// The card: format_version 1, kind "go", name "go-multitask", version "2",
// tasks, checkpoint, training {command, data {graphs, topologies, held_out},
// seed, steps 0, wall_seconds 0, git_revision, started_utc, device,
// architecture, ppo} and empty metrics; pre-training fills steps,
// wall_seconds, csv, checkpoint_sha256 and metrics.training as it saves.
nlohmann::json PretrainCard(const PretrainCardInfo& info);

// The card's training metrics: means over the first and the last 10% of
// the steps of a non-empty `log` (window_steps, mean_reward_first/last,
// geomean_best_step_ratio_first/last).
nlohmann::json TrainingMetrics(const std::vector<TrainLogRow>& log);

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_PRETRAIN_CARD_H_
