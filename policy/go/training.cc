#include "policy/go/training.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "graph/import/builtin_importers.h"
#include "graph/importer.h"
#include "graph/status_macros.h"
#include "policy/go/plan_search.h"
#include "simulator/generators/generators.h"

namespace gopt::policy::go {
namespace {

using simulator::generators::GeneratorOptions;

// Sizes beyond the presets, so that each family is seen at several scales.
std::vector<GeneratorOptions> ExtraGeneratorOptions() {
  std::vector<GeneratorOptions> extra;
  auto add = [&](std::string family, int layers, int batch, int seq, int hidden,
                 int image_size) {
    GeneratorOptions o;
    o.family = std::move(family);
    o.layers = layers;
    o.batch = batch;
    o.seq = seq;
    o.hidden = hidden;
    o.image_size = image_size;
    extra.push_back(o);
  };
  add("inception_v3", 0, 64, 0, 0, 0);
  add("resnet50", 101, 64, 0, 0, 0);
  add("amoebanet", 3, 32, 0, 64, 0);
  add("rnnlm", 2, 128, 32, 2048, 0);
  add("gnmt", 2, 128, 24, 1024, 0);
  add("bert", 6, 32, 256, 512, 0);
  add("wavenet", 30, 4, 16384, 64, 0);
  return extra;
}

double Seconds(absl::Time start) {
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// Folds one PPO step into a log row.
TrainLogRow MakeRow(int step, double seconds, const PpoStepStats& stats,
                    const std::vector<const TrainingInstance*>& batch) {
  TrainLogRow row;
  row.step = step;
  row.seconds = seconds;
  row.reward = stats.mean_reward;
  row.entropy = stats.entropy;
  row.kl = stats.kl;
  row.invalid_plans = stats.invalid_plans;
  std::vector<std::string> labels;
  double log_ratio = 0;
  for (size_t i = 0; i < stats.graphs.size(); ++i) {
    labels.push_back(stats.graphs[i].label);
    const ScoredPlan& best = stats.graphs[i].best;
    // An OOM or invalid best counts at the invalid reward's ratio (100x).
    const double ratio = best.valid && !best.oom
                             ? best.step_time_s / batch[i]->default_step_time_s
                             : kInvalidReward * kInvalidReward;
    log_ratio += std::log(ratio);
    row.best_step_time_s += best.step_time_s / stats.graphs.size();
  }
  row.graphs = absl::StrJoin(labels, ";");
  row.best_step_ratio = std::exp(log_ratio / stats.graphs.size());
  return row;
}

}  // namespace

absl::StatusOr<graph::Graph> LoadGraphSource(const std::string& source) {
  if (source.rfind("gen:", 0) == 0) {
    absl::StatusOr<simulator::generators::GeneratorPreset> preset =
        simulator::generators::FindGeneratorPreset(source.substr(4));
    if (!preset.ok()) return preset.status();
    return simulator::generators::GenerateModelGraph(preset->options);
  }
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  graph::ImportOptions options;
  options.source_name = source;
  return registry.ImportFile(source, "auto", options);
}

const std::vector<std::string>& HeldOutRealGraphs() {
  static const auto* held_out = new std::vector<std::string>{
      "hlo/mixer_b16_jax_unopt.hlo",
      "hlo/llama2_ptxla_neuron_train_tp1.hlo",
      "onnx/light_shufflenet.onnx",
  };
  return *held_out;
}

absl::StatusOr<std::vector<CorpusGraph>> BuildPretrainingCorpus(
    const CorpusOptions& options, std::vector<std::string>* skipped) {
  std::vector<CorpusGraph> corpus;
  auto add = [&](std::string label, graph::Graph graph) {
    if (graph.num_nodes() > options.max_nodes) {
      skipped->push_back(absl::StrCat(label, ": ", graph.num_nodes(),
                                      " nodes > max ", options.max_nodes));
      return;
    }
    corpus.push_back(
        {std::move(label), std::make_shared<graph::Graph>(std::move(graph))});
  };
  for (const auto& preset : simulator::generators::GeneratorPresets()) {
    if (preset.options.family == kHeldOutFamily) continue;
    absl::StatusOr<graph::Graph> graph =
        simulator::generators::GenerateModelGraph(preset.options);
    if (graph.status().code() == absl::StatusCode::kResourceExhausted) {
      skipped->push_back(
          absl::StrCat("gen:", preset.name, ": ", graph.status().message()));
      continue;
    }
    if (!graph.ok()) return graph.status();
    add(absl::StrCat("gen:", preset.name), *std::move(graph));
  }
  for (const GeneratorOptions& options : ExtraGeneratorOptions()) {
    absl::StatusOr<graph::Graph> graph =
        simulator::generators::GenerateModelGraph(options);
    if (!graph.ok()) return graph.status();
    std::string label = absl::StrCat("gen:", graph->name());
    add(std::move(label), *std::move(graph));
  }
  if (options.data_dir.empty()) return corpus;
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  for (const char* folder : {"hlo", "onnx", "tf_graphdef", "tfjs"}) {
    const std::filesystem::path dir =
        std::filesystem::path(options.data_dir) / folder;
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& file : files) {
      const std::string label =
          absl::StrCat(folder, "/", file.filename().string());
      const auto& held_out = HeldOutRealGraphs();
      if (std::find(held_out.begin(), held_out.end(), label) !=
          held_out.end()) {
        continue;
      }
      graph::ImportOptions import_options;
      import_options.source_name = file.string();
      absl::StatusOr<graph::Graph> graph =
          registry.ImportFile(file.string(), "auto", import_options);
      if (!graph.ok()) {
        skipped->push_back(absl::StrCat(label, ": ", graph.status().message()));
        continue;
      }
      add(label, *std::move(graph));
    }
  }
  return corpus;
}

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
    TrainLogRow row = MakeRow(step, Seconds(start), *stats, batch);
    if (options.on_step) options.on_step(row);
    result.log.push_back(std::move(row));
    result.steps = step + 1;
  }
  result.seconds = Seconds(start);
  return result;
}

bool BetterPlan(const ScoredPlan& a, const ScoredPlan& b) {
  const bool a_ok = a.valid && !a.oom;
  const bool b_ok = b.valid && !b.oom;
  if (a_ok != b_ok) return a_ok;
  if (a.valid != b.valid) return a.valid;
  return a.step_time_s < b.step_time_s;
}

absl::StatusOr<ZeroShotResult> ZeroShot(const GoModel& model,
                                        const TrainingInstance& instance,
                                        const TaskSet& tasks, int num_samples,
                                        uint64_t seed, int threads) {
  const absl::Time start = absl::Now();
  const std::vector<int32_t>* fixed =
      instance.base_plan != nullptr ? &instance.base_plan->device : nullptr;
  absl::StatusOr<PolicyOutput> output =
      model.Run(instance.features, tasks, fixed);
  if (!output.ok()) return output.status();
  ZeroShotResult result;
  result.inference_seconds = Seconds(start);
  result.best = ScoreActions(instance, SampleActions(*output, nullptr));
  if (result.best.valid) ++result.num_valid;
  std::mt19937_64 rng(seed);
  std::vector<Actions> actions;
  for (const ScoredPlan& plan : SampleAndScore(instance, *output, num_samples,
                                               threads, &rng, &actions)) {
    if (plan.valid) ++result.num_valid;
    if (BetterPlan(plan, result.best)) result.best = plan;
  }
  return result;
}

absl::StatusOr<FineTuneResult> FineTune(GoModel* model,
                                        const TrainingInstance& instance,
                                        const ScoredPlan& start,
                                        const FineTuneOptions& options) {
  {
    absl::Status status =
        model->ScalePlacementPriors(options.placement_prior_factor);
    if (!status.ok()) return status;
  }
  PpoTrainer trainer(model, options.ppo);
  FineTuneResult result;
  result.best = start;
  PlanSearchOptions search_options;
  search_options.threads = options.ppo.simulation_threads;
  search_options.seed = options.ppo.seed;
  search_options.tasks = options.ppo.tasks;
  search_options.deadline = options.deadline;
  search_options.cancelled = options.cancelled;
  search_options.stop_at_step_time_s = options.stop_at_step_time_s;
  PlanSearch search(instance, start, search_options);
  const int search_rounds = options.search_simulations_per_step /
                            std::max(search_options.candidates_per_round, 1);
  const absl::Time begin = absl::Now();
  auto stopped = [&] {
    return absl::Now() >= options.deadline ||
           (options.cancelled != nullptr && options.cancelled->load()) ||
           (result.best.valid && !result.best.oom &&
            result.best.step_time_s <= options.stop_at_step_time_s);
  };
  double expected_step_seconds = options.first_step_estimate_seconds;
  for (int step = 0; step < options.max_steps; ++step) {
    if (stopped()) break;
    if (absl::Now() + absl::Seconds(expected_step_seconds) > options.deadline) {
      result.ppo_stopped_for_deadline = true;
      break;
    }
    const absl::Time step_start = absl::Now();
    absl::StatusOr<PpoStepStats> stats = trainer.Step({&instance});
    if (!stats.ok()) return stats.status();
    expected_step_seconds = Seconds(step_start);
    const ScoredPlan& best = stats->graphs[0].best;
    if (BetterPlan(best, result.best)) result.best = best;
    if (search_rounds > 0 && result.best.valid) {
      search.Offer(result.best);
      RETURN_IF_ERROR(search.Run(search_rounds, &stats->graphs[0].sampled));
      if (BetterPlan(search.best(), result.best)) result.best = search.best();
    }
    TrainLogRow row = MakeRow(step, Seconds(begin), *stats, {&instance});
    // For one graph the log tracks the best plan so far.
    row.best_step_time_s = result.best.step_time_s;
    row.best_step_ratio =
        result.best.step_time_s / instance.default_step_time_s;
    if (options.on_step) options.on_step(row, result.best);
    result.log.push_back(std::move(row));
    result.steps = step + 1;
  }
  if (result.ppo_stopped_for_deadline && search_rounds > 0 &&
      result.best.valid) {
    // Devices are proposed uniformly: as good as the policy's distribution
    // (card README), and there may be no PPO step to take one from.
    for (int step = result.steps; step < options.max_steps && !stopped();
         ++step) {
      RETURN_IF_ERROR(search.Run(search_rounds, /*placement=*/nullptr));
      if (BetterPlan(search.best(), result.best)) result.best = search.best();
      if (options.on_search) {
        options.on_search(step - result.steps + 1, result.best);
      }
    }
  }
  result.seconds = Seconds(begin);
  result.search_improvements = search.improvements();
  result.search_simulations = search.candidates_simulated();
  return result;
}

}  // namespace gopt::policy::go
