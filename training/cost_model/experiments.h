#ifndef GOPT_TRAINING_COST_MODEL_EXPERIMENTS_H_
#define GOPT_TRAINING_COST_MODEL_EXPERIMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/cost_model/cost_model.h"
#include "training/cost_model/dataset.h"

namespace gopt::policy::cost_model {

// Loads the configuration groups of one data source:
//  - a TpuGraphs tuning protobuf (TuningData / ModuleTuningData),
//  - a TpuGraphs `.npz` sample, or a directory of them (searched
//    recursively, sorted by path),
//  - "sim:SPEC": simulator-labelled layout groups of generated graphs, SPEC
//    a '+'-separated list of generator preset names or the sets
//    "train-families" (the small preset of every family but
//    transformer_xl) and "heldout" (transformer_xl-small and
//    transformer_xl-large), labelled on v100x4-nvlink device 0 with
//    SimulatorLabelOptions{seed}.
// Only groups of `task` are returned. InvalidArgument / NotFound naming the
// source when it cannot be read or has no group of the task.
absl::StatusOr<std::vector<ConfigGroup>> LoadConfigGroups(
    const std::string& source, Task task, uint64_t seed);

// Splits the configurations of `group` in two fixed halves by a seeded hash
// of each configuration's features: `first` gets the configurations whose
// hash is even. Deterministic for (features, seed).
void SplitConfigsByHash(const ConfigGroup& group, uint64_t seed,
                        ConfigGroup* first, ConfigGroup* second);

// Ranking metrics of scored groups: per group Kendall tau, top-1/top-5
// slowdown of the model, of the default config (when the group has one) and
// of a random choice, and their means in the top-level fields
// (kendall_tau, top1_slowdown, top5_slowdown, baseline_top1_slowdown,
// random_top1_slowdown, random_top5_slowdown, configs_evaluated, groups),
// plus gated_top1_slowdown: the default is kept unless the model predicts
// it at least 5% (log gain 0.0488) slower than the model's top-1.
nlohmann::json RankingMetrics(const std::vector<ConfigGroup>& groups,
                              const std::vector<std::vector<double>>& scores);

// The recipe of `task` that works, measured (policy/cost_model/README.md):
// the defaults of `gopt-train costmodel` and `costmodel-eval`, so that a
// command without flags trains a model that does not lose to
// always-default:
//   tile:   the recipe of the shipped costmodel-tile-v1: features relative
//           to the kernel's default (+ is-default flag), hinge + ListMLE,
//           300 steps, no cross-configuration attention; costmodel-eval
//           chooses the default margin by inner leave-one-kernel-out
//           (default_margin_cv);
//   layout: the real-data layout protocol's recipe: pairwise hinge with
//           runs within 0.1% tied, regression weight 2, learning rate
//           0.003, 6,000 steps, pruned to configurable nodes + 1 hop, no
//           cross-configuration attention (the shipped costmodel-layout-v1
//           was trained with learning rate 0.005 and regression weight 0.2:
//           Makefile pretrained-costmodel-layout passes them).
// Everything else is CostModelOptions' and TrainOptions' defaults (seed 0).
struct CostModelRecipe {
  CostModelOptions model;
  TrainOptions train;
  bool default_margin_cv = false;  // costmodel-eval, tile
};
CostModelRecipe DefaultRecipe(Task task);

// `gopt-train costmodel`: trains a model and optionally ships it.
struct CostModelTrainRequest {
  // Comma-separated data sources (see LoadConfigGroups) to train on.
  std::string data;
  // Comma-separated sources evaluated after training (may be empty).
  std::string eval_data;
  // Layout groups from sources other than sim: train on one hash half of
  // their configurations (seeded by train.seed); the other half is added to
  // the evaluation groups. The real-data layout protocol.
  bool layout_half_split = false;
  CostModelOptions model;
  TrainOptions train;
  // When set: writes <output_dir>/model.pt and card.json (format_version 1,
  // kind cost-model-<task>, name, version "1", tasks, checkpoint,
  // checkpoint_sha256 (policy/checkpoint_integrity.h), training {command,
  // data, seed, steps, wall_seconds, git_revision}, metrics).
  std::string output_dir;
  // Tile: before training, run the tile protocol (RunCostModelEval with
  // default_margin_cv) on `data`; its metrics go to the card's "metrics"
  // and its loko_default_margin to the card's decision.default_margin,
  // which the served tile policy applies.
  bool tile_protocol = false;
  std::string name = "costmodel-layout";
  std::string command;  // the command line, recorded in the card
};

// Trains as requested and returns {"train": {...}, "eval": RankingMetrics
// or null, "protocol": the tile protocol's result or null, "checkpoint":
// path or null}. Errors: those of the loaders,
// CostModel::Train, and Internal when the output cannot be written.
absl::StatusOr<nlohmann::json> RunCostModelTrain(
    const CostModelTrainRequest& request);

// `gopt-train costmodel-eval`: the real-data and simulator protocols.
struct CostModelEvalRequest {
  Task task = Task::kTile;
  std::string data;        // one source (see LoadConfigGroups)
  std::string checkpoint;  // when set: score `data` with this model only
  CostModelOptions model;  // architecture when training (task overridden)
  TrainOptions train;
  // Models trained per tile fold or layout split, seeds train.seed,
  // train.seed + 1, ...; their scores are averaged. Default 1.
  int32_t ensemble = 1;
  // Tile protocol: per held-out kernel, choose a default margin
  // (ChooseDefaultMargin) by an inner leave-one-kernel-out over the
  // training kernels only, and apply it to the held-out kernel's scores.
  bool default_margin_cv = false;
};

// Without a checkpoint, runs the protocol for the data:
//  - tile: leave-one-kernel-out over the groups (a fresh model, or
//    `ensemble` of them, per held-out kernel, trained on all others; with
//    default_margin_cv the margin for a held-out kernel comes from models
//    trained without it, scored on the other training kernels). Adds
//    network_top1_slowdown (the scores before the margin), default_margins
//    (per held-out kernel) and loko_default_margin (the margin the outer
//    folds' scores themselves would choose: what a model trained on every
//    kernel ships with);
//  - layout from a tuning protobuf: train on one hash half of each group's
//    valid configurations (an `ensemble` of models, or one), evaluate on
//    the other half; adds
//    top1_in_fastest_cluster (runtimes clustered at their two largest gaps);
//  - layout from "sim:...": train on `data`'s groups' hash halves likewise
//    unless data is "sim:heldout-protocol", which trains on
//    sim:train-families and evaluates on sim:heldout.
// With a checkpoint, scores every group of `data` with it. Returns
// RankingMetrics plus "protocol", "task", "train" (steps, seed,
// wall_seconds). Errors as RunCostModelTrain, plus InvalidArgument when the
// checkpoint's task differs from `task`.
absl::StatusOr<nlohmann::json> RunCostModelEval(
    const CostModelEvalRequest& request);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_TRAINING_COST_MODEL_EXPERIMENTS_H_
