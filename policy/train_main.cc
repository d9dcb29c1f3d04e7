// gopt-train: trains and evaluates gopt's learned policies. One binary, one
// subcommand per job; flags are read here once and turned into options.
//
//   GO policy (policy/go):
//     pretrain   PPO over the generated + real-graph corpus -> checkpoint,
//                card.json and train.csv in --out_dir
//     finetune   PPO on one graph from a pretrained policy (--policy_dir)
//     eval       zero-shot decisions on graphs vs the baselines; with
//                --update_card, records them in the policy's card
//     expert     expert iteration (search distillation + PPO), resumable,
//                data-parallel (policy/train_expert.cc)
//
//   Any policy:
//     card-hash  records the SHA-256 of the checkpoint in its card.json
//                (checkpoint_sha256; pretrain and costmodel record it when
//                they save), which every policy load verifies

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/cost_model/experiments.h"
#include "policy/go/corpus.h"
#include "policy/go/fine_tuning.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/pretraining.h"
#include "policy/train_expert.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/topology.h"

// Shared by every subcommand.
ABSL_FLAG(uint64_t, seed, 1, "seed: initialisation, sampling, batches");
ABSL_FLAG(int32_t, threads, 2, "LibTorch intra-op threads");
ABSL_FLAG(int32_t, simulation_threads, 2, "parallel simulations");
ABSL_FLAG(int32_t, samples, 16, "plans sampled per graph per PPO step");
ABSL_FLAG(double, learning_rate, 5e-4, "Adam learning rate");
ABSL_FLAG(double, entropy_coef, 0.001, "PPO entropy bonus");
ABSL_FLAG(int32_t, epochs, 2, "PPO epochs per batch of samples");
ABSL_FLAG(std::vector<std::string>, tasks,
          std::vector<std::string>({"placement", "scheduling", "fusion"}),
          "tasks to decide: placement, scheduling, fusion");
ABSL_FLAG(std::vector<std::string>, topologies,
          std::vector<std::string>({"v100x4-nvlink", "h100x8-nvlink",
                                    "v100x2-pcie", "a100x8-nvlink"}),
          "pretrain: topologies; eval: topologies to evaluate on");
// GO pretrain.
ABSL_FLAG(std::string, out_dir, "", "pretrain: output policy directory");
ABSL_FLAG(std::string, data_dir, "../shared/data",
          "pretrain: real graphs (held-out files are skipped)");
ABSL_FLAG(int32_t, max_nodes, 8000, "pretrain: largest graph trained on");
ABSL_FLAG(int32_t, max_steps, 100000, "pretrain/finetune: PPO steps");
ABSL_FLAG(double, max_seconds, 2400, "pretrain/finetune: wall-clock budget");
ABSL_FLAG(int32_t, graphs_per_step, 2, "pretrain: graphs per PPO update");
ABSL_FLAG(int32_t, pool_size, 8, "pretrain: graphs in the current pool");
ABSL_FLAG(int32_t, switch_every, 25, "pretrain: steps between pool switches");
ABSL_FLAG(int32_t, checkpoint_every, 50, "pretrain: steps between saves");
ABSL_FLAG(int32_t, hidden, 128, "pretrain: network width");
ABSL_FLAG(int32_t, attention_layers, 2, "pretrain: layers per task stack");
// GO finetune / eval.
ABSL_FLAG(std::string, policy_dir, "policy/pretrained/go-multitask-v2",
          "finetune/eval: a GO policy directory (card.json + checkpoint)");
ABSL_FLAG(std::vector<std::string>, graph, {},
          "finetune/eval: graph files or gen:PRESET");
ABSL_FLAG(std::string, csv, "", "pretrain/finetune: training log CSV");
ABSL_FLAG(double, placement_prior_factor, 1.0,
          "finetune: reset the placement priors' gate and multiply their "
          "learned scales by this before fine-tuning (below 1 = samples "
          "stray further from the priors' placement)");
ABSL_FLAG(int32_t, search_simulations, 512,
          "finetune: plans the critical-path plan search simulates after "
          "each PPO step, around the best plan so far (0 = PPO alone)");
ABSL_FLAG(bool, update_card, false,
          "eval: write the results into the policy card's metrics");
// card-hash.
ABSL_FLAG(bool, replace_hash, false,
          "card-hash: overwrite a recorded checkpoint hash that differs from "
          "the checkpoint's (by default that is an error: the weights "
          "changed after the card was made)");
// Learned cost model (costmodel, costmodel-eval).
ABSL_FLAG(std::string, task, "layout", "costmodel: layout or tile");
ABSL_FLAG(std::string, data, "",
          "costmodel: comma-separated sources: tuning .pb, .npz file or "
          "directory, sim:PRESET+... / sim:train-families / sim:heldout");
ABSL_FLAG(std::string, eval_data, "", "costmodel: sources evaluated after");
ABSL_FLAG(std::string, checkpoint, "",
          "costmodel-eval: score --data with this model instead of training");
ABSL_FLAG(bool, json, false, "costmodel/costmodel-eval: print one JSON object");
ABSL_FLAG(std::string, costmodel_out, "",
          "costmodel: write model.pt + card.json to this directory");
ABSL_FLAG(std::string, costmodel_name, "costmodel-layout",
          "costmodel: name recorded in the card");
ABSL_FLAG(bool, costmodel_half_split, false,
          "costmodel: train on one hash half of tuning-data layout groups, "
          "evaluate on the other");
ABSL_FLAG(int32_t, costmodel_steps, 300, "costmodel: training steps");
ABSL_FLAG(int32_t, costmodel_configs_per_step, 16,
          "costmodel: configurations per step");
ABSL_FLAG(std::string, costmodel_loss, "listmle",
          "costmodel: listmle|hinge|hinge+listmle");
ABSL_FLAG(double, costmodel_lr, 2e-3, "costmodel: Adam learning rate");
ABSL_FLAG(double, costmodel_tie_tolerance, 0,
          "costmodel: relative runtime difference counted as a tie (hinge)");
ABSL_FLAG(double, costmodel_regression_weight, 0.2,
          "costmodel: weight of the centred log-runtime regression term");
ABSL_FLAG(int32_t, costmodel_hidden, 32, "costmodel: GraphSAGE width");
ABSL_FLAG(int32_t, costmodel_prune_hops, 2,
          "costmodel: keep configurable nodes + this many hops (-1 = all)");
ABSL_FLAG(int32_t, costmodel_segment_size, 0,
          "costmodel: GST segment size in nodes (0 = whole graph)");
ABSL_FLAG(bool, costmodel_attention, true,
          "costmodel: cross-configuration attention");
ABSL_FLAG(int32_t, costmodel_threads, 1, "costmodel: LibTorch threads");
ABSL_FLAG(bool, costmodel_tile_relative, false,
          "costmodel: tile configs also relative to the kernel's default "
          "(+ is-default flag)");
ABSL_FLAG(int32_t, costmodel_ensemble, 1,
          "costmodel-eval: models trained per fold (tile) or per split "
          "(layout), seeds seed, seed+1, ...; their scores are averaged");
ABSL_FLAG(bool, costmodel_tile_protocol, false,
          "costmodel tile: run the tile protocol first; its metrics and "
          "default margin go into the card");
ABSL_FLAG(bool, costmodel_default_margin_cv, false,
          "costmodel-eval tile: default margin chosen by inner "
          "leave-one-kernel-out on the training kernels");

namespace {

namespace go = gopt::policy::go;

constexpr char kUsage[] = R"(gopt-train: train and evaluate gopt policies.

usage: gopt-train COMMAND [flags]

GO policy:
  pretrain   --out_dir=DIR [--data_dir --topologies --max_seconds --seed]
  finetune   --policy_dir=DIR --graph=SOURCE --topologies=T [--max_steps
             --max_seconds --search_simulations --csv]
  eval       --policy_dir=DIR --graph=SOURCE,... [--topologies --update_card]
  expert     --out_dir=DIR [--graph=HELD_OUT,... --topologies --max_seconds
             --init_policy_dir --resume --instances_per_round --search_rounds
             --distill_steps --ppo_steps --eval_every --random_graphs
             --random_topologies]; data-parallel under torchrun's variables

Learned cost model:
  costmodel       --data=SOURCES [--task --eval_data --costmodel_out=DIR ...]
  costmodel-eval  --task=tile|layout --data=FILE [--checkpoint --json]

Any policy:
  card-hash  --policy_dir=DIR [--replace_hash]

SOURCE: a graph file, or gen:PRESET (gopt generate list).

example (the shipped checkpoint; see policy/pretrained/go-multitask-v2):
  gopt-train pretrain --out_dir=policy/pretrained/go-multitask-v2 --seed=1)";

int Fail(const std::string& command, const absl::Status& status) {
  std::cerr << "gopt-train " << command << ": " << status.message() << "\n";
  return 1;
}

std::string CommandLine(int argc, char** argv) {
  std::vector<std::string> parts(argv, argv + argc);
  return absl::StrJoin(parts, " ");
}

std::string GitRevision() {
  std::string revision;
  if (FILE* pipe = popen("git rev-parse --short HEAD 2>/dev/null", "r")) {
    char buffer[64];
    while (fgets(buffer, sizeof(buffer), pipe) != nullptr) revision += buffer;
    pclose(pipe);
  }
  while (!revision.empty() && std::isspace(revision.back()))
    revision.pop_back();
  return revision.empty() ? "unknown" : revision;
}

absl::StatusOr<gopt::policy::TaskSet> TasksFromFlag() {
  gopt::policy::TaskSet tasks{false, false, false, false};
  for (const std::string& task : absl::GetFlag(FLAGS_tasks)) {
    if (task == "placement") {
      tasks.placement = true;
    } else if (task == "scheduling") {
      tasks.scheduling = true;
    } else if (task == "fusion") {
      tasks.fusion = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown task '", task, "'; known: placement, scheduling, fusion"));
    }
  }
  return tasks;
}

absl::StatusOr<go::PpoOptions> PpoOptionsFromFlags() {
  go::PpoOptions ppo;
  absl::StatusOr<gopt::policy::TaskSet> tasks = TasksFromFlag();
  if (!tasks.ok()) return tasks.status();
  ppo.tasks = *tasks;
  ppo.samples_per_graph = absl::GetFlag(FLAGS_samples);
  ppo.epochs = absl::GetFlag(FLAGS_epochs);
  ppo.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  ppo.entropy_coef = absl::GetFlag(FLAGS_entropy_coef);
  ppo.simulation_threads = absl::GetFlag(FLAGS_simulation_threads);
  ppo.seed = absl::GetFlag(FLAGS_seed);
  return ppo;
}

// The GO model of policy directory `dir`, verified against its card's
// checkpoint_sha256 as the server verifies it.
absl::StatusOr<std::unique_ptr<go::GoModel>> LoadPolicyModel(
    const std::string& dir) {
  absl::StatusOr<nlohmann::json> card = gopt::policy::ReadCardFile(dir);
  if (!card.ok()) return card.status();
  absl::StatusOr<std::string> checkpoint =
      gopt::policy::VerifiedCheckpointPath(dir, *card);
  if (!checkpoint.ok()) return checkpoint.status();
  return go::GoModel::Load(*checkpoint);
}

std::string UtcNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                          absl::UTCTimeZone());
}

// ---------------------------------------------------------------------------
// pretrain

// The card's training metrics: means over the first and the last 10% of
// the steps of a non-empty `log`.
nlohmann::json TrainingMetrics(const std::vector<go::TrainLogRow>& log) {
  const size_t window = std::max<size_t>(1, log.size() / 10);
  auto mean = [&](size_t begin, size_t end,
                  std::function<double(const go::TrainLogRow&)> f) {
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += f(log[i]);
    return sum / (end - begin);
  };
  auto reward = [](const go::TrainLogRow& r) { return r.reward; };
  auto ratio = [](const go::TrainLogRow& r) {
    return std::log(r.best_step_ratio);
  };
  return {{"window_steps", window},
          {"mean_reward_first", mean(0, window, reward)},
          {"mean_reward_last", mean(log.size() - window, log.size(), reward)},
          {"geomean_best_step_ratio_first", std::exp(mean(0, window, ratio))},
          {"geomean_best_step_ratio_last",
           std::exp(mean(log.size() - window, log.size(), ratio))}};
}

go::PretrainOptions PretrainOptionsFromFlags(const go::PpoOptions& ppo) {
  go::PretrainOptions options;
  options.ppo = ppo;
  options.max_steps = absl::GetFlag(FLAGS_max_steps);
  options.max_seconds = absl::GetFlag(FLAGS_max_seconds);
  options.graphs_per_step = absl::GetFlag(FLAGS_graphs_per_step);
  options.pool_size = absl::GetFlag(FLAGS_pool_size);
  options.switch_every = absl::GetFlag(FLAGS_switch_every);
  options.seed = absl::GetFlag(FLAGS_seed);
  return options;
}

int RunPretrain(const std::string& command_line) {
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty()) {
    return Fail("pretrain",
                absl::InvalidArgumentError("--out_dir is required"));
  }
  std::filesystem::create_directories(out_dir);
  absl::StatusOr<go::PpoOptions> ppo = PpoOptionsFromFlags();
  if (!ppo.ok()) return Fail("pretrain", ppo.status());

  go::CorpusOptions corpus_options;
  corpus_options.data_dir = absl::GetFlag(FLAGS_data_dir);
  corpus_options.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<go::CorpusGraph>> corpus =
      go::BuildPretrainingCorpus(corpus_options, &skipped);
  if (!corpus.ok()) return Fail("pretrain", corpus.status());
  for (const std::string& why : skipped) std::cerr << "skipped " << why << "\n";

  std::vector<std::unique_ptr<go::TrainingInstance>> instances;
  std::vector<const go::TrainingInstance*> views;
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
    absl::StatusOr<gopt::simulator::Topology> topology =
        gopt::simulator::PresetTopology(name);
    if (!topology.ok()) return Fail("pretrain", topology.status());
    auto shared =
        std::make_shared<const gopt::simulator::Topology>(*std::move(topology));
    for (const go::CorpusGraph& graph : *corpus) {
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(absl::StrCat(graph.label, "@", name),
                                   graph.graph, shared);
      if (!instance.ok()) {
        std::cerr << "skipped " << graph.label << "@" << name << ": "
                  << instance.status().message() << "\n";
        continue;
      }
      views.push_back(instance->get());
      instances.push_back(*std::move(instance));
    }
  }
  for (const go::CorpusGraph& graph : *corpus) {
    data.push_back(
        {{"graph", graph.label}, {"nodes", graph.graph->num_nodes()}});
  }
  std::cerr << "pretrain: " << corpus->size() << " graphs x "
            << absl::GetFlag(FLAGS_topologies).size()
            << " topologies = " << instances.size() << " instances\n";

  go::GoModelOptions model_options;
  model_options.hidden = absl::GetFlag(FLAGS_hidden);
  model_options.attention_layers = absl::GetFlag(FLAGS_attention_layers);
  model_options.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<std::unique_ptr<go::GoModel>> model =
      go::GoModel::Create(model_options);
  if (!model.ok()) return Fail("pretrain", model.status());

  const std::string checkpoint = "go-multitask.pt";
  const std::string csv_path = absl::GetFlag(FLAGS_csv).empty()
                                   ? out_dir + "/train.csv"
                                   : absl::GetFlag(FLAGS_csv);
  std::ofstream csv(csv_path);
  csv << go::TrainLogHeader() << "\n";

  nlohmann::json card = {
      {"format_version", 1},
      {"kind", "go"},
      {"name", "go-multitask"},
      {"version", "2"},
      {"tasks", absl::GetFlag(FLAGS_tasks)},
      {"checkpoint", checkpoint},
      {"training",
       {{"command", command_line},
        {"data",
         {{"graphs", data},
          {"topologies", absl::GetFlag(FLAGS_topologies)},
          {"held_out",
           {{"real_graphs", go::HeldOutRealGraphs()},
            {"generator_family", go::kHeldOutFamily}}}}},
        {"seed", absl::GetFlag(FLAGS_seed)},
        {"steps", 0},
        {"wall_seconds", 0},
        {"git_revision", GitRevision()},
        {"started_utc", UtcNow()},
        {"device", absl::StrCat("CPU, ", absl::GetFlag(FLAGS_threads),
                                " LibTorch threads (shared 2-core host)")},
        {"architecture",
         {{"hidden", model_options.hidden},
          {"sage_layers", model_options.sage_layers},
          {"message", model_options.message},
          {"attention_layers_per_task", model_options.attention_layers},
          {"attention_dim", model_options.attention_dim},
          {"heads", model_options.heads},
          {"feed_forward", model_options.feed_forward},
          {"segment", model_options.segment},
          {"parameters", (*model)->num_parameters()}}},
        {"ppo",
         {{"samples_per_graph", ppo->samples_per_graph},
          {"epochs", ppo->epochs},
          {"learning_rate", ppo->learning_rate},
          {"clip", ppo->clip},
          {"entropy_coef", ppo->entropy_coef},
          {"max_grad_norm", ppo->max_grad_norm},
          {"graphs_per_step", absl::GetFlag(FLAGS_graphs_per_step)},
          {"pool_size", absl::GetFlag(FLAGS_pool_size)},
          {"switch_every", absl::GetFlag(FLAGS_switch_every)}}}}},
      {"metrics", nlohmann::json::object()}};

  auto save = [&](const std::vector<go::TrainLogRow>& log, int steps,
                  double seconds) -> absl::Status {
    absl::Status status = (*model)->Save(out_dir + "/" + checkpoint);
    if (!status.ok()) return status;
    status = gopt::policy::RecordCheckpointSha256(
        out_dir, "gopt-train pretrain (when it saved the checkpoint)", &card);
    if (!status.ok()) return status;
    card["training"]["steps"] = steps;
    card["training"]["wall_seconds"] = std::round(seconds);
    card["training"]["csv"] =
        std::filesystem::path(csv_path).filename().string();
    if (!log.empty()) card["metrics"]["training"] = TrainingMetrics(log);
    return gopt::policy::WriteCardFile(out_dir, card);
  };

  go::PretrainOptions options = PretrainOptionsFromFlags(*ppo);
  std::vector<go::TrainLogRow> log;
  const int checkpoint_every =
      std::max(absl::GetFlag(FLAGS_checkpoint_every), 1);
  absl::Status periodic = absl::OkStatus();
  options.on_step = [&](const go::TrainLogRow& row) {
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
  absl::StatusOr<go::PretrainResult> result =
      go::Pretrain(model->get(), views, options);
  if (!result.ok()) return Fail("pretrain", result.status());
  if (!periodic.ok()) return Fail("pretrain", periodic);
  absl::Status saved = save(log, result->steps, result->seconds);
  if (!saved.ok()) return Fail("pretrain", saved);
  std::cerr << "pretrain: " << result->steps << " steps in " << result->seconds
            << " s -> " << out_dir << "\n";
  return 0;
}

// ---------------------------------------------------------------------------
// finetune

int RunFinetune() {
  const std::vector<std::string> graphs = absl::GetFlag(FLAGS_graph);
  const std::vector<std::string> topologies = absl::GetFlag(FLAGS_topologies);
  if (graphs.size() != 1 || topologies.empty()) {
    return Fail("finetune", absl::InvalidArgumentError(
                                "expected one --graph and a --topologies"));
  }
  absl::StatusOr<go::PpoOptions> ppo = PpoOptionsFromFlags();
  if (!ppo.ok()) return Fail("finetune", ppo.status());
  absl::StatusOr<std::unique_ptr<go::GoModel>> model =
      LoadPolicyModel(absl::GetFlag(FLAGS_policy_dir));
  if (!model.ok()) return Fail("finetune", model.status());
  absl::StatusOr<gopt::graph::Graph> graph = go::LoadGraphSource(graphs[0]);
  if (!graph.ok()) return Fail("finetune", graph.status());
  absl::StatusOr<gopt::simulator::Topology> topology =
      gopt::simulator::PresetTopology(topologies[0]);
  if (!topology.ok()) return Fail("finetune", topology.status());
  absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
      go::MakeTrainingInstance(
          graphs[0],
          std::make_shared<const gopt::graph::Graph>(*std::move(graph)),
          std::make_shared<const gopt::simulator::Topology>(
              *std::move(topology)));
  if (!instance.ok()) return Fail("finetune", instance.status());
  absl::StatusOr<go::ZeroShotResult> zero_shot =
      go::ZeroShot(**model, **instance, ppo->tasks, ppo->samples_per_graph,
                   ppo->seed, ppo->simulation_threads);
  if (!zero_shot.ok()) return Fail("finetune", zero_shot.status());
  std::cerr << absl::StrFormat("zero-shot: %.4f ms (default %.4f ms)\n",
                               zero_shot->best.step_time_s * 1e3,
                               (*instance)->default_step_time_s * 1e3);
  std::ofstream csv;
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    csv.open(absl::GetFlag(FLAGS_csv));
    csv << go::TrainLogHeader() << "\n";
  }
  go::FineTuneOptions options;
  options.ppo = *ppo;
  options.max_steps = absl::GetFlag(FLAGS_max_steps);
  options.placement_prior_factor =
      static_cast<float>(absl::GetFlag(FLAGS_placement_prior_factor));
  if (absl::GetFlag(FLAGS_search_simulations) < 0) {
    return Fail("finetune", absl::InvalidArgumentError(absl::StrCat(
                                "--search_simulations must be 0 or more, got ",
                                absl::GetFlag(FLAGS_search_simulations))));
  }
  options.search_simulations_per_step = absl::GetFlag(FLAGS_search_simulations);
  options.deadline =
      absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_max_seconds));
  options.on_step = [&](const go::TrainLogRow& row, const go::ScoredPlan&) {
    if (csv.is_open()) csv << go::TrainLogLine(row) << "\n";
    std::cerr << absl::StrFormat("step %d %.1fs reward %.3f best %.4f ms\n",
                                 row.step, row.seconds, row.reward,
                                 row.best_step_time_s * 1e3);
  };
  absl::StatusOr<go::FineTuneResult> result =
      go::FineTune(model->get(), **instance, zero_shot->best, options);
  if (!result.ok()) return Fail("finetune", result.status());
  std::cout << absl::StrFormat(
      "%s on %s: default %.4f ms, zero-shot %.4f ms, fine-tuned %.4f ms "
      "(%d steps, %.1f s; plan search: %d improvements in %d plans)\n",
      graphs[0], topologies[0], (*instance)->default_step_time_s * 1e3,
      zero_shot->best.step_time_s * 1e3, result->best.step_time_s * 1e3,
      result->steps, result->seconds, result->search_improvements,
      result->search_simulations);
  return 0;
}

// ---------------------------------------------------------------------------
// eval

int RunEval() {
  const std::string dir = absl::GetFlag(FLAGS_policy_dir);
  absl::StatusOr<go::PpoOptions> ppo = PpoOptionsFromFlags();
  if (!ppo.ok()) return Fail("eval", ppo.status());
  absl::StatusOr<std::unique_ptr<go::GoModel>> model = LoadPolicyModel(dir);
  if (!model.ok()) return Fail("eval", model.status());
  gopt::simulator::baselines::BaselineRegistry registry;
  gopt::simulator::baselines::RegisterBuiltinBaselines(&registry);
  nlohmann::json rows = nlohmann::json::array();
  double log_vs_expert = 0;
  double log_vs_best = 0;
  int count = 0;
  std::cout << absl::StrFormat("%-40s %-14s %7s %11s %11s %11s %11s\n", "graph",
                               "topology", "nodes", "default ms", "expert ms",
                               "best-bl ms", "go-zs ms");
  for (const std::string& source : absl::GetFlag(FLAGS_graph)) {
    absl::StatusOr<gopt::graph::Graph> loaded = go::LoadGraphSource(source);
    if (!loaded.ok()) return Fail("eval", loaded.status());
    auto graph = std::make_shared<const gopt::graph::Graph>(*std::move(loaded));
    for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
      absl::StatusOr<gopt::simulator::Topology> topology =
          gopt::simulator::PresetTopology(name);
      if (!topology.ok()) return Fail("eval", topology.status());
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(
              source, graph,
              std::make_shared<const gopt::simulator::Topology>(
                  *std::move(topology)));
      if (!instance.ok()) return Fail("eval", instance.status());
      const go::TrainingInstance& inst = **instance;
      absl::StatusOr<go::ZeroShotResult> zero_shot =
          go::ZeroShot(**model, inst, ppo->tasks, ppo->samples_per_graph,
                       ppo->seed, ppo->simulation_threads);
      if (!zero_shot.ok()) return Fail("eval", zero_shot.status());
      gopt::simulator::RooflineCostModel cost_model;
      const gopt::simulator::baselines::BaselineContext context{
          inst.graph(), inst.simulator->topology(), cost_model,
          absl::GetFlag(FLAGS_seed)};
      gopt::simulator::SimulationOptions sim_options;
      sim_options.record_timeline = false;
      double expert = 0;
      absl::StatusOr<gopt::simulator::Plan> expert_plan =
          gopt::simulator::baselines::MakeBaselinePlan(registry, "expert",
                                                       context);
      if (expert_plan.ok()) {
        auto simulated = inst.simulator->Simulate(*expert_plan, sim_options);
        if (simulated.ok() && !simulated->oom) expert = simulated->step_time_s;
      }
      double best = 0;
      std::string best_method;
      gopt::simulator::baselines::BestBaselineOptions best_options;
      best_options.methods =
          gopt::simulator::baselines::DefaultBaselineMethods();
      auto best_baseline = gopt::simulator::baselines::BestBaseline(
          registry, context, best_options);
      if (best_baseline.ok()) {
        best = best_baseline->result.step_time_s;
        best_method = best_baseline->plan.method;
      }
      const go::ScoredPlan& go_plan = zero_shot->best;
      const bool go_ok = go_plan.valid && !go_plan.oom;
      std::cout << absl::StrFormat(
          "%-40s %-14s %7d %11.4f %11.4f %11.4f %11.4f%s\n", source, name,
          inst.graph().num_nodes(), inst.default_step_time_s * 1e3,
          expert * 1e3, best * 1e3, go_plan.step_time_s * 1e3,
          go_ok ? "" : " (OOM)");
      nlohmann::json row = {{"graph", source},
                            {"topology", name},
                            {"nodes", inst.graph().num_nodes()},
                            {"default_ms", inst.default_step_time_s * 1e3},
                            {"expert_ms", expert * 1e3},
                            {"best_baseline_ms", best * 1e3},
                            {"best_baseline", best_method},
                            {"go_zero_shot_ms", go_plan.step_time_s * 1e3},
                            {"go_zero_shot_oom", go_plan.oom}};
      rows.push_back(row);
      if (go_ok && expert > 0 && best > 0) {
        log_vs_expert += std::log(go_plan.step_time_s / expert);
        log_vs_best += std::log(go_plan.step_time_s / best);
        ++count;
      }
    }
  }
  nlohmann::json summary = {{"pairs", count},
                            {"geomean_go_zero_shot_over_expert",
                             count ? std::exp(log_vs_expert / count) : 0.0},
                            {"geomean_go_zero_shot_over_best_baseline",
                             count ? std::exp(log_vs_best / count) : 0.0}};
  std::cout << "\n" << summary.dump(2) << "\n";
  if (absl::GetFlag(FLAGS_update_card)) {
    absl::StatusOr<nlohmann::json> card = gopt::policy::ReadCardFile(dir);
    if (!card.ok()) return Fail("eval", card.status());
    (*card)["metrics"]["held_out_zero_shot"] = {
        {"samples", ppo->samples_per_graph},
        {"tasks", absl::GetFlag(FLAGS_tasks)},
        {"rows", rows},
        {"summary", summary}};
    absl::Status status = gopt::policy::WriteCardFile(dir, *card);
    if (!status.ok()) return Fail("eval", status);
  }
  return 0;
}

// ---------------------------------------------------------------------------
// card-hash

// Records the checkpoint's SHA-256 in --policy_dir's card.json. A card that
// already records the same hash is left as it is; one that records another
// hash is an error unless --replace_hash, so that a changed checkpoint is
// never blessed by accident.
int RunCardHash(const std::string& command_line) {
  const std::string dir = absl::GetFlag(FLAGS_policy_dir);
  absl::StatusOr<nlohmann::json> card = gopt::policy::ReadCardFile(dir);
  if (!card.ok()) return Fail("card-hash", card.status());
  nlohmann::json updated = *card;
  absl::Status status = gopt::policy::RecordCheckpointSha256(
      dir, absl::StrCat(command_line, " (", UtcNow(), ")"), &updated);
  if (!status.ok()) return Fail("card-hash", status);
  const nlohmann::json& hashes = updated[gopt::policy::kCheckpointSha256Key];
  const auto recorded = card->find(gopt::policy::kCheckpointSha256Key);
  if (recorded != card->end()) {
    if (*recorded == hashes) {
      std::cout << dir << ": card.json already records " << hashes.dump()
                << "\n";
      return 0;
    }
    if (!absl::GetFlag(FLAGS_replace_hash)) {
      return Fail("card-hash",
                  absl::FailedPreconditionError(absl::StrCat(
                      dir, "/card.json records ", recorded->dump(),
                      " but the checkpoint is now ", hashes.dump(),
                      "; pass --replace_hash if the new weights are meant")));
    }
  }
  status = gopt::policy::WriteCardFile(dir, updated);
  if (!status.ok()) return Fail("card-hash", status);
  std::cout << dir << ": recorded " << hashes.dump() << "\n";
  return 0;
}

// ---------------------------------------------------------------------------
// costmodel, costmodel-eval (policy/cost_model)

namespace cm = gopt::policy::cost_model;

absl::Status CostModelOptionsFromFlags(cm::CostModelOptions* model,
                                       cm::TrainOptions* train) {
  absl::StatusOr<cm::Task> task = cm::ParseTask(absl::GetFlag(FLAGS_task));
  if (!task.ok()) return task.status();
  absl::StatusOr<cm::RankingLoss> loss =
      cm::ParseRankingLoss(absl::GetFlag(FLAGS_costmodel_loss));
  if (!loss.ok()) return loss.status();
  model->task = *task;
  model->hidden_dim = absl::GetFlag(FLAGS_costmodel_hidden);
  model->prune_hops = absl::GetFlag(FLAGS_costmodel_prune_hops);
  model->segment_size = absl::GetFlag(FLAGS_costmodel_segment_size);
  model->cross_config_attention = absl::GetFlag(FLAGS_costmodel_attention);
  model->tile_relative_to_default =
      absl::GetFlag(FLAGS_costmodel_tile_relative);
  train->loss = *loss;
  train->steps = absl::GetFlag(FLAGS_costmodel_steps);
  train->configs_per_step = absl::GetFlag(FLAGS_costmodel_configs_per_step);
  train->learning_rate = absl::GetFlag(FLAGS_costmodel_lr);
  train->tie_tolerance = absl::GetFlag(FLAGS_costmodel_tie_tolerance);
  train->regression_weight = absl::GetFlag(FLAGS_costmodel_regression_weight);
  train->seed = absl::GetFlag(FLAGS_seed);
  train->num_threads = absl::GetFlag(FLAGS_costmodel_threads);
  return absl::OkStatus();
}

int PrintCostModelResult(const nlohmann::json& result) {
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << result.dump() << "\n";
  } else {
    std::cout << result.dump(2) << "\n";
  }
  return 0;
}

int RunCostModelTrainCommand(const std::string& command_line) {
  cm::CostModelTrainRequest request;
  absl::Status status =
      CostModelOptionsFromFlags(&request.model, &request.train);
  if (!status.ok()) return Fail("costmodel", status);
  request.data = absl::GetFlag(FLAGS_data);
  request.eval_data = absl::GetFlag(FLAGS_eval_data);
  request.layout_half_split = absl::GetFlag(FLAGS_costmodel_half_split);
  request.output_dir = absl::GetFlag(FLAGS_costmodel_out);
  request.name = absl::GetFlag(FLAGS_costmodel_name);
  request.tile_protocol = absl::GetFlag(FLAGS_costmodel_tile_protocol);
  request.command = command_line;
  if (absl::GetFlag(FLAGS_costmodel_ensemble) != 1) {
    return Fail("costmodel", absl::InvalidArgumentError(
                                 "--costmodel_ensemble is for costmodel-eval's "
                                 "protocols; a checkpoint holds one model"));
  }
  absl::StatusOr<nlohmann::json> result = cm::RunCostModelTrain(request);
  if (!result.ok()) return Fail("costmodel", result.status());
  return PrintCostModelResult(*result);
}

int RunCostModelEvalCommand() {
  cm::CostModelEvalRequest request;
  absl::Status status =
      CostModelOptionsFromFlags(&request.model, &request.train);
  if (!status.ok()) return Fail("costmodel-eval", status);
  request.task = request.model.task;
  request.data = absl::GetFlag(FLAGS_data);
  request.checkpoint = absl::GetFlag(FLAGS_checkpoint);
  request.ensemble = absl::GetFlag(FLAGS_costmodel_ensemble);
  request.default_margin_cv = absl::GetFlag(FLAGS_costmodel_default_margin_cv);
  if (request.ensemble < 1 ||
      (!request.checkpoint.empty() && request.ensemble != 1)) {
    return Fail("costmodel-eval",
                absl::InvalidArgumentError(absl::StrCat(
                    "--costmodel_ensemble=", request.ensemble,
                    ": must be >= 1, and 1 with --checkpoint (it scores with "
                    "that one model)")));
  }
  absl::StatusOr<nlohmann::json> result = cm::RunCostModelEval(request);
  if (!result.ok()) return Fail("costmodel-eval", result.status());
  return PrintCostModelResult(*result);
}

// ---------------------------------------------------------------------------
// expert (policy/train_expert.cc)

int RunExpert(const std::string& command_line) {
  absl::StatusOr<go::PpoOptions> ppo = PpoOptionsFromFlags();
  if (!ppo.ok()) return Fail("expert", ppo.status());
  gopt::policy::ExpertCommandContext context;
  context.command_line = command_line;
  context.git_revision = GitRevision();
  context.ppo = *ppo;
  context.load_policy = LoadPolicyModel;
  return gopt::policy::RunExpertCommand(context);
}

// The subcommands, by name. The learned cost model adds its own here.
const std::map<std::string, std::function<int(const std::string&)>>&
Commands() {
  static const auto* commands =
      new std::map<std::string, std::function<int(const std::string&)>>{
          {"pretrain", [](const std::string& cl) { return RunPretrain(cl); }},
          {"finetune", [](const std::string&) { return RunFinetune(); }},
          {"eval", [](const std::string&) { return RunEval(); }},
          {"expert", [](const std::string& cl) { return RunExpert(cl); }},
          {"card-hash", [](const std::string& cl) { return RunCardHash(cl); }},
          {"costmodel",
           [](const std::string& cl) { return RunCostModelTrainCommand(cl); }},
          {"costmodel-eval",
           [](const std::string&) { return RunCostModelEvalCommand(); }},
      };
  return *commands;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  const std::string command_line = CommandLine(argc, argv);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::cerr << kUsage << "\n";
    return 2;
  }
  const std::string command = args[1];
  auto it = Commands().find(command);
  if (it == Commands().end()) {
    std::cerr << "gopt-train: unknown command '" << command << "'\n\n"
              << kUsage << "\n";
    return 2;
  }
  go::SetTorchThreads(absl::GetFlag(FLAGS_threads));
  go::KeepFreedMemory();
  return it->second(command_line);
}
