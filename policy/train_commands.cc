#include "policy/train_commands.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/corpus.h"
#include "policy/go/fine_tuning.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/pretrain_card.h"
#include "policy/go/pretraining.h"
#include "policy/go/zero_shot_eval.h"
#include "simulator/topology.h"
#include "util/status_macros.h"

namespace gopt::policy {
namespace {

std::string GitRevision() {
  std::string revision;
  if (FILE* pipe = popen("git rev-parse --short HEAD 2>/dev/null", "r")) {
    char buffer[64];
    while (fgets(buffer, sizeof(buffer), pipe) != nullptr) revision += buffer;
    pclose(pipe);
  }
  while (!revision.empty() && std::isspace(revision.back())) {
    revision.pop_back();
  }
  return revision.empty() ? "unknown" : revision;
}

std::string UtcNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                          absl::UTCTimeZone());
}

// The GO model of policy directory `dir`, verified against its card's
// checkpoint_sha256 as the server verifies it.
absl::StatusOr<std::unique_ptr<go::GoModel>> LoadPolicyModel(
    const std::string& dir) {
  ASSIGN_OR_RETURN(nlohmann::json card, ReadCardFile(dir));
  ASSIGN_OR_RETURN(std::string checkpoint, VerifiedCheckpointPath(dir, card));
  return go::GoModel::Load(checkpoint);
}

// The pre-training instances: every corpus graph on every topology (those
// that cannot be made are reported and skipped). `data` gets the card's
// [{graph, nodes}].
absl::StatusOr<std::vector<std::unique_ptr<go::TrainingInstance>>>
PretrainingInstances(const PretrainCommandOptions& options,
                     nlohmann::json* data) {
  go::CorpusOptions corpus_options;
  corpus_options.data_dir = options.data_dir;
  corpus_options.max_nodes = options.max_nodes;
  std::vector<std::string> skipped;
  ASSIGN_OR_RETURN(std::vector<go::CorpusGraph> corpus,
                   go::BuildPretrainingCorpus(corpus_options, &skipped));
  for (const std::string& why : skipped) std::cerr << "skipped " << why << "\n";
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

absl::StatusOr<go::PpoOptions> PpoOptionsOf(const GoTrainingOptions& options) {
  go::PpoOptions ppo;
  ppo.tasks = TaskSet{false, false, false, false};
  for (const std::string& task : options.tasks) {
    if (task == "placement") {
      ppo.tasks.placement = true;
    } else if (task == "scheduling") {
      ppo.tasks.scheduling = true;
    } else if (task == "fusion") {
      ppo.tasks.fusion = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown task '", task, "'; known: placement, scheduling, fusion"));
    }
  }
  ppo.samples_per_graph = options.samples;
  ppo.epochs = options.epochs;
  ppo.learning_rate = options.learning_rate;
  ppo.entropy_coef = options.entropy_coef;
  ppo.simulation_threads = options.simulation_threads;
  ppo.seed = options.seed;
  return ppo;
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

absl::Status RunFinetune(const FinetuneCommandOptions& options,
                         std::ostream& out) {
  go::SetTorchThreads(options.go.torch_threads);
  ASSIGN_OR_RETURN(go::PpoOptions ppo, PpoOptionsOf(options.go));
  ASSIGN_OR_RETURN(std::unique_ptr<go::GoModel> model,
                   LoadPolicyModel(options.policy_dir));
  ASSIGN_OR_RETURN(graph::Graph graph, go::LoadGraphSource(options.graph));
  const std::string& topology_name = options.topologies.front();
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   simulator::PresetTopology(topology_name));
  ASSIGN_OR_RETURN(
      std::unique_ptr<go::TrainingInstance> instance,
      go::MakeTrainingInstance(
          options.graph, std::make_shared<const graph::Graph>(std::move(graph)),
          std::make_shared<const simulator::Topology>(std::move(topology))));
  ASSIGN_OR_RETURN(
      go::ZeroShotResult zero_shot,
      go::ZeroShot(*model, *instance, ppo.tasks, ppo.samples_per_graph,
                   ppo.seed, ppo.simulation_threads));
  std::cerr << absl::StrFormat("zero-shot: %.4f ms (default %.4f ms)\n",
                               zero_shot.best.step_time_s * 1e3,
                               instance->default_step_time_s * 1e3);
  std::ofstream csv;
  if (!options.csv.empty()) {
    csv.open(options.csv);
    csv << go::TrainLogHeader() << "\n";
  }
  go::FineTuneOptions fine_tune;
  fine_tune.ppo = ppo;
  fine_tune.max_steps = options.max_steps;
  fine_tune.placement_prior_factor =
      static_cast<float>(options.placement_prior_factor);
  fine_tune.search_simulations_per_step = options.search_simulations;
  fine_tune.deadline = absl::Now() + absl::Seconds(options.max_seconds);
  fine_tune.on_step = [&](const go::TrainLogRow& row, const go::ScoredPlan&) {
    if (csv.is_open()) csv << go::TrainLogLine(row) << "\n";
    std::cerr << absl::StrFormat("step %d %.1fs reward %.3f best %.4f ms\n",
                                 row.step, row.seconds, row.reward,
                                 row.best_step_time_s * 1e3);
  };
  ASSIGN_OR_RETURN(
      go::FineTuneResult result,
      go::FineTune(model.get(), *instance, zero_shot.best, fine_tune));
  out << absl::StrFormat(
      "%s on %s: default %.4f ms, zero-shot %.4f ms, fine-tuned %.4f ms "
      "(%d steps, %.1f s; plan search: %d improvements in %d plans)\n",
      options.graph, topology_name, instance->default_step_time_s * 1e3,
      zero_shot.best.step_time_s * 1e3, result.best.step_time_s * 1e3,
      result.steps, result.seconds, result.search_improvements,
      result.search_simulations);
  return absl::OkStatus();
}

absl::Status RunEval(const EvalCommandOptions& options, std::ostream& out) {
  go::SetTorchThreads(options.go.torch_threads);
  ASSIGN_OR_RETURN(go::PpoOptions ppo, PpoOptionsOf(options.go));
  ASSIGN_OR_RETURN(std::unique_ptr<go::GoModel> model,
                   LoadPolicyModel(options.policy_dir));
  ASSIGN_OR_RETURN(nlohmann::json result,
                   go::EvaluateZeroShot(*model, options.graphs,
                                        options.topologies, ppo, out));
  if (!options.update_card) return absl::OkStatus();
  ASSIGN_OR_RETURN(nlohmann::json card, ReadCardFile(options.policy_dir));
  card["metrics"]["held_out_zero_shot"] = {{"samples", ppo.samples_per_graph},
                                           {"tasks", options.go.tasks},
                                           {"rows", result["rows"]},
                                           {"summary", result["summary"]}};
  return WriteCardFile(options.policy_dir, card);
}

// A card that already records the same hash is left as it is; one that
// records another hash is an error unless replace_hash, so that a changed
// checkpoint is never blessed by accident.
absl::Status RunCardHash(const CardHashOptions& options, std::ostream& out) {
  const std::string& dir = options.policy_dir;
  ASSIGN_OR_RETURN(nlohmann::json card, ReadCardFile(dir));
  nlohmann::json updated = card;
  RETURN_IF_ERROR(RecordCheckpointSha256(
      dir, absl::StrCat(options.command_line, " (", UtcNow(), ")"), &updated));
  const nlohmann::json& hashes = updated[kCheckpointSha256Key];
  const auto recorded = card.find(kCheckpointSha256Key);
  if (recorded != card.end()) {
    if (*recorded == hashes) {
      out << dir << ": card.json already records " << hashes.dump() << "\n";
      return absl::OkStatus();
    }
    if (!options.replace_hash) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, "/card.json records ", recorded->dump(),
                       " but the checkpoint is now ", hashes.dump(),
                       "; pass --replace_hash if the new weights are meant"));
    }
  }
  RETURN_IF_ERROR(WriteCardFile(dir, updated));
  out << dir << ": recorded " << hashes.dump() << "\n";
  return absl::OkStatus();
}

CostModelTrainCommandOptions::CostModelTrainCommandOptions(
    cost_model::Task task) {
  const cost_model::CostModelRecipe recipe = cost_model::DefaultRecipe(task);
  request.model = recipe.model;
  request.train = recipe.train;
  request.name = absl::StrCat("costmodel-", cost_model::TaskName(task));
}

CostModelEvalCommandOptions::CostModelEvalCommandOptions(
    cost_model::Task task) {
  const cost_model::CostModelRecipe recipe = cost_model::DefaultRecipe(task);
  request.task = task;
  request.model = recipe.model;
  request.train = recipe.train;
  request.default_margin_cv = recipe.default_margin_cv;
}

absl::Status RunCostModelTrainCommand(
    const CostModelTrainCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(nlohmann::json result,
                   cost_model::RunCostModelTrain(options.request));
  out << (options.json ? result.dump() : result.dump(2)) << "\n";
  return absl::OkStatus();
}

absl::Status RunCostModelEvalCommand(const CostModelEvalCommandOptions& options,
                                     std::ostream& out) {
  ASSIGN_OR_RETURN(nlohmann::json result,
                   cost_model::RunCostModelEval(options.request));
  out << (options.json ? result.dump() : result.dump(2)) << "\n";
  return absl::OkStatus();
}

}  // namespace gopt::policy
