// gopt-train pretrain: see training/train_commands.h.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/train_log.h"
#include "simulator/topology.h"
#include "training/commands/common.h"
#include "training/go/corpus.h"
#include "training/go/pretrain_card.h"
#include "training/go/pretraining.h"
#include "training/train_commands.h"
#include "util/status_macros.h"

namespace gopt::policy {

namespace {

// The pre-training instances: every corpus graph on every topology (those
// that cannot be made are reported and skipped). `data` gets the card's
// [{graph, nodes}].
absl::StatusOr<std::vector<std::unique_ptr<go::TrainingInstance>>>
PretrainingInstances(const PretrainCommandOptions& options,
                     nlohmann::json* data) {
  ASSIGN_OR_RETURN(std::vector<go::CorpusGraph> corpus,
                   LoadCorpus(options.data_dir, options.max_nodes));
  std::vector<std::unique_ptr<go::TrainingInstance>> instances;
  for (const std::string& name : options.topologies) {
    ASSIGN_OR_RETURN(simulator::Topology topology,
                     simulator::PresetTopology(name));
    auto shared =
        std::make_shared<const simulator::Topology>(std::move(topology));
    for (const go::CorpusGraph& graph : corpus) {
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(absl::StrCat(graph.label, "@", name),
                                   graph.graph, shared);
      if (!instance.ok()) {
        std::cerr << "skipped " << graph.label << "@" << name << ": "
                  << instance.status().message() << "\n";
        continue;
      }
      instances.push_back(*std::move(instance));
    }
  }
  for (const go::CorpusGraph& graph : corpus) {
    data->push_back(
        {{"graph", graph.label}, {"nodes", graph.graph->num_nodes()}});
  }
  std::cerr << "pretrain: " << corpus.size() << " graphs x "
            << options.topologies.size() << " topologies = " << instances.size()
            << " instances\n";
  return instances;
}

go::PretrainOptions PretrainOptionsOf(const PretrainCommandOptions& options,
                                      const go::PpoOptions& ppo) {
  go::PretrainOptions pretrain;
  pretrain.ppo = ppo;
  pretrain.max_steps = options.max_steps;
  pretrain.max_seconds = options.max_seconds;
  pretrain.graphs_per_step = options.graphs_per_step;
  pretrain.pool_size = options.pool_size;
  pretrain.switch_every = options.switch_every;
  pretrain.seed = options.go.seed;
  return pretrain;
}

}  // namespace

absl::Status RunPretrain(const PretrainCommandOptions& options,
                         std::ostream& out) {
  go::SetTorchThreads(options.go.torch_threads);
  ASSIGN_OR_RETURN(go::PpoOptions ppo, PpoOptionsOf(options.go));
  std::filesystem::create_directories(options.out_dir);
  go::PretrainCardInfo info;
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<go::TrainingInstance>> instances,
                   PretrainingInstances(options, &info.graphs));
  std::vector<const go::TrainingInstance*> views;
  for (const auto& instance : instances) views.push_back(instance.get());

  info.model.hidden = options.hidden;
  info.model.attention_layers = options.attention_layers;
  info.model.seed = options.go.seed;
  ASSIGN_OR_RETURN(std::unique_ptr<go::GoModel> model,
                   go::GoModel::Create(info.model));
  go::PretrainOptions pretrain = PretrainOptionsOf(options, ppo);
  info.command_line = options.command_line;
  info.tasks = options.go.tasks;
  info.checkpoint = "go-multitask.pt";
  info.topologies = options.topologies;
  info.seed = options.go.seed;
  info.torch_threads = options.go.torch_threads;
  info.git_revision = GitRevision();
  info.started_utc = UtcNow();
  info.parameters = model->num_parameters();
  info.pretrain = pretrain;
  nlohmann::json card = go::PretrainCard(info);

  const std::string csv_path =
      options.csv.empty() ? options.out_dir + "/train.csv" : options.csv;
  std::ofstream csv(csv_path);
  csv << go::TrainLogHeader() << "\n";
  auto save = [&](const std::vector<go::TrainLogRow>& log, int steps,
                  double seconds) -> absl::Status {
    RETURN_IF_ERROR(model->Save(options.out_dir + "/" + info.checkpoint));
    RETURN_IF_ERROR(RecordCheckpointSha256(
        options.out_dir, "gopt-train pretrain (when it saved the checkpoint)",
        &card));
    card["training"]["steps"] = steps;
    card["training"]["wall_seconds"] = std::round(seconds);
    card["training"]["csv"] =
        std::filesystem::path(csv_path).filename().string();
    if (!log.empty()) card["metrics"]["training"] = go::TrainingMetrics(log);
    return WriteCardFile(options.out_dir, card);
  };

  std::vector<go::TrainLogRow> log;
  const int checkpoint_every = std::max(options.checkpoint_every, 1);
  absl::Status periodic = absl::OkStatus();
  pretrain.on_step = [&](const go::TrainLogRow& row) {
    csv << go::TrainLogLine(row) << "\n";
    csv.flush();
    log.push_back(row);
    std::cerr << absl::StrFormat(
        "step %d %.0fs reward %.3f best/default %.3f entropy %.3f kl %.4f\n",
        row.step, row.seconds, row.reward, row.best_step_ratio, row.entropy,
        row.kl);
    if ((row.step + 1) % checkpoint_every == 0 && periodic.ok()) {
      periodic = save(log, row.step + 1, row.seconds);
    }
  };
  ASSIGN_OR_RETURN(go::PretrainResult result,
                   go::Pretrain(model.get(), views, pretrain));
  RETURN_IF_ERROR(periodic);
  RETURN_IF_ERROR(save(log, result.steps, result.seconds));
  out << "pretrain: " << result.steps << " steps in " << result.seconds
      << " s -> " << options.out_dir << "\n";
  return absl::OkStatus();
}

}  // namespace gopt::policy
