#include "training/cost_model/experiments.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/hlo/tuning_data.h"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/cost_model/metrics.h"
#include "simulator/generators/generators.h"
#include "simulator/topology.h"
#include "util/status_macros.h"

namespace gopt::policy::cost_model {
namespace {

// The predicted log-runtime gain over the default a model needs before the
// gated choice leaves the default (5%; fixed before any evaluation).
constexpr double kGateLogGain = 0.04879;  // log(1.05)

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<std::string> SimPresets(absl::string_view spec) {
  std::vector<std::string> presets;
  for (absl::string_view part : absl::StrSplit(spec, '+', absl::SkipEmpty())) {
    if (part == "train-families") {
      for (const char* name :
           {"inception_v3-small", "resnet50-small", "amoebanet-small",
            "rnnlm-small", "gnmt2-small", "bert-small", "wavenet-small"}) {
        presets.push_back(name);
      }
    } else if (part == "heldout") {
      presets.push_back("transformer_xl-small");
      presets.push_back("transformer_xl-large");
    } else {
      presets.push_back(std::string(part));
    }
  }
  return presets;
}

absl::StatusOr<std::vector<ConfigGroup>> LoadSimulatorGroups(
    absl::string_view spec, uint64_t seed) {
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   simulator::PresetTopology("v100x4-nvlink"));
  std::vector<ConfigGroup> groups;
  for (const std::string& name : SimPresets(spec)) {
    ASSIGN_OR_RETURN(simulator::generators::GeneratorPreset preset,
                     simulator::generators::FindGeneratorPreset(name));
    ASSIGN_OR_RETURN(graph::Graph graph,
                     simulator::generators::GenerateModelGraph(preset.options));
    SimulatorLabelOptions options;
    options.seed = seed;
    ASSIGN_OR_RETURN(ConfigGroup group,
                     SimulatorLabelledGroup(graph, topology, options));
    group.graph.name = name;
    groups.push_back(std::move(group));
  }
  return groups;
}

uint64_t Fnv1a(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

// Cluster index (0 = fastest) of each runtime, cutting the sorted runtimes
// at their `cuts` largest gaps.
std::vector<int> RuntimeClusters(const std::vector<double>& runtimes,
                                 int cuts) {
  std::vector<double> sorted = runtimes;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<double, double>> gaps;  // (gap, boundary)
  for (size_t i = 1; i < sorted.size(); ++i) {
    gaps.push_back({sorted[i] - sorted[i - 1], sorted[i]});
  }
  std::sort(gaps.rbegin(), gaps.rend());
  std::vector<double> boundaries;
  for (int i = 0; i < cuts && i < static_cast<int>(gaps.size()); ++i) {
    boundaries.push_back(gaps[i].second);
  }
  std::vector<int> cluster;
  for (double r : runtimes) {
    int c = 0;
    for (double b : boundaries) c += r >= b ? 1 : 0;
    cluster.push_back(c);
  }
  return cluster;
}

std::string GitRevision() {
  FILE* pipe = popen("git rev-parse --short HEAD 2>/dev/null", "r");
  if (pipe == nullptr) return "unknown";
  char buffer[64] = {0};
  const bool read = fgets(buffer, sizeof(buffer), pipe) != nullptr;
  pclose(pipe);
  std::string revision = read ? buffer : "";
  while (!revision.empty() && std::isspace(revision.back())) {
    revision.pop_back();
  }
  return revision.empty() ? "unknown" : revision;
}

absl::StatusOr<std::vector<ConfigGroup>> LoadSources(const std::string& sources,
                                                     Task task, uint64_t seed) {
  std::vector<ConfigGroup> groups;
  for (absl::string_view source :
       absl::StrSplit(sources, ',', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(std::vector<ConfigGroup> more,
                     LoadConfigGroups(std::string(source), task, seed));
    for (ConfigGroup& group : more) groups.push_back(std::move(group));
  }
  return groups;
}

absl::StatusOr<std::vector<std::vector<double>>> ScoreAll(
    const CostModel& model, const std::vector<ConfigGroup>& groups) {
  std::vector<std::vector<double>> scores;
  for (const ConfigGroup& group : groups) {
    ASSIGN_OR_RETURN(std::vector<double> s, model.ScoreGroup(group));
    scores.push_back(std::move(s));
  }
  return scores;
}

// Trains `members` (at least 1) fresh models on `train`, with seeds
// train_options.seed, +1, ..., and returns their mean scores of each group
// of `scored`; adds their training steps to `*steps`.
absl::StatusOr<std::vector<std::vector<double>>> TrainEnsembleAndScore(
    const CostModelOptions& model_options, const TrainOptions& train_options,
    const std::vector<ConfigGroup>& train,
    const std::vector<const ConfigGroup*>& scored, int32_t members,
    int32_t* steps) {
  members = std::max(members, 1);
  std::vector<std::vector<double>> sums(scored.size());
  for (int32_t member = 0; member < members; ++member) {
    TrainOptions options = train_options;
    options.seed = train_options.seed + member;
    ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model,
                     CostModel::Create(model_options, options.seed));
    ASSIGN_OR_RETURN(TrainReport report, model->Train(train, options));
    *steps += report.steps;
    for (size_t i = 0; i < scored.size(); ++i) {
      ASSIGN_OR_RETURN(std::vector<double> s, model->ScoreGroup(*scored[i]));
      if (sums[i].empty()) sums[i].assign(s.size(), 0.0);
      for (size_t c = 0; c < s.size(); ++c) sums[i][c] += s[c] / members;
    }
  }
  return sums;
}

nlohmann::json TrainJson(const TrainOptions& options, int32_t steps,
                         double wall_seconds) {
  return {{"steps", steps},
          {"seed", options.seed},
          {"loss", std::string(RankingLossName(options.loss))},
          {"configs_per_step", options.configs_per_step},
          {"wall_seconds", wall_seconds}};
}

// Adds, per group and as a fraction, whether the model's top-1 lies in the
// fastest runtime cluster (clusters from all of `full`'s runtimes).
void AddClusterMetrics(const std::vector<ConfigGroup>& full,
                       const std::vector<ConfigGroup>& evaluated,
                       const std::vector<std::vector<double>>& scores,
                       nlohmann::json* metrics) {
  int in_fastest = 0;
  for (size_t g = 0; g < evaluated.size(); ++g) {
    const std::vector<int> clusters = RuntimeClusters(full[g].runtimes, 2);
    const double threshold_low = [&] {
      double lo = 1e300;
      for (size_t i = 0; i < clusters.size(); ++i) {
        if (clusters[i] == 1) lo = std::min(lo, full[g].runtimes[i]);
      }
      return lo;
    }();
    const std::vector<double>& s = scores[g];
    const size_t top = std::min_element(s.begin(), s.end()) - s.begin();
    const bool fastest = evaluated[g].runtimes[top] < threshold_low;
    in_fastest += fastest ? 1 : 0;
    int count[3] = {0, 0, 0};
    for (int c : clusters) ++count[std::min(c, 2)];
    std::vector<double> eval_clusters;
    for (double r : evaluated[g].runtimes) {
      eval_clusters.push_back(r < threshold_low ? 0 : 1);
    }
    (*metrics)["groups"][g]["kendall_tau_fast_vs_slow"] =
        KendallTau(scores[g], eval_clusters);
    (*metrics)["groups"][g]["top1_in_fastest_cluster"] = fastest;
    (*metrics)["groups"][g]["top1_runtime"] = evaluated[g].runtimes[top];
    (*metrics)["groups"][g]["cluster_sizes"] = {count[0], count[1], count[2]};
  }
  (*metrics)["top1_in_fastest_cluster"] =
      evaluated.empty() ? 0.0
                        : static_cast<double>(in_fastest) / evaluated.size();
}

}  // namespace

absl::StatusOr<std::vector<ConfigGroup>> LoadConfigGroups(
    const std::string& source, Task task, uint64_t seed) {
  std::vector<ConfigGroup> groups;
  if (absl::StartsWith(source, "sim:")) {
    if (task != Task::kLayout) {
      return absl::InvalidArgumentError(
          "simulator-labelled data ('sim:...') is layout data");
    }
    return LoadSimulatorGroups(absl::StripPrefix(source, "sim:"), seed);
  }
  std::error_code error;
  if (std::filesystem::is_directory(source, error)) {
    std::vector<std::string> paths;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(source, error)) {
      if (entry.is_regular_file() && entry.path().extension() == ".npz") {
        paths.push_back(entry.path().string());
      }
    }
    std::sort(paths.begin(), paths.end());
    for (const std::string& path : paths) {
      ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
      ASSIGN_OR_RETURN(ConfigGroup group,
                       ConfigGroupFromNpz(bytes, task, path));
      groups.push_back(std::move(group));
    }
  } else {
    ASSIGN_OR_RETURN(std::string bytes, ReadFile(source));
    if (absl::EndsWith(source, ".npz")) {
      ASSIGN_OR_RETURN(ConfigGroup group,
                       ConfigGroupFromNpz(bytes, task, source));
      groups.push_back(std::move(group));
    } else {
      absl::StatusOr<graph::hlo::TuningDataset> dataset =
          graph::hlo::ReadTuningData(bytes, graph::ImportOptions());
      if (!dataset.ok()) return Annotate(dataset.status(), source);
      ASSIGN_OR_RETURN(std::vector<ConfigGroup> all,
                       GroupsFromTuningData(*dataset));
      for (ConfigGroup& group : all) {
        if (group.task == task) groups.push_back(std::move(group));
      }
    }
  }
  if (groups.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", source, "' holds no ", TaskName(task), " configurations"));
  }
  return groups;
}

void SplitConfigsByHash(const ConfigGroup& group, uint64_t seed,
                        ConfigGroup* first, ConfigGroup* second) {
  const int64_t width = group.config_width();
  std::vector<int32_t> a;
  std::vector<int32_t> b;
  for (int32_t c = 0; c < group.num_configs; ++c) {
    const uint64_t hash =
        Fnv1a(group.config_features.data() + c * width, width * sizeof(float),
              14695981039346656037ull ^ (seed * 0x9E3779B97F4A7C15ull));
    ((hash >> 17) % 2 == 0 ? a : b).push_back(c);
  }
  *first = SelectConfigs(group, a);
  *second = SelectConfigs(group, b);
}

nlohmann::json RankingMetrics(const std::vector<ConfigGroup>& groups,
                              const std::vector<std::vector<double>>& scores) {
  nlohmann::json out;
  out["groups"] = nlohmann::json::array();
  double tau = 0, top1 = 0, top5 = 0, random1 = 0, random5 = 0, base = 0;
  double gated = 0;
  int with_default = 0;
  int64_t configs = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const ConfigGroup& group = groups[g];
    nlohmann::json row = {
        {"name", group.graph.name},
        {"configs", group.num_configs},
        {"kendall_tau", KendallTau(scores[g], group.runtimes)},
        {"top1_slowdown", TopKSlowdown(scores[g], group.runtimes, 1)},
        {"top5_slowdown", TopKSlowdown(scores[g], group.runtimes, 5)},
        {"random_top1_slowdown", RandomTopKSlowdown(group.runtimes, 1)},
        {"random_top5_slowdown", RandomTopKSlowdown(group.runtimes, 5)}};
    if (group.default_config >= 0) {
      const double best =
          *std::min_element(group.runtimes.begin(), group.runtimes.end());
      row["default_top1_slowdown"] =
          (group.runtimes[group.default_config] - best) / best;
      base += row["default_top1_slowdown"].get<double>();
      // Keep the default unless the model predicts it at least
      // kGateLogGain slower than its own top-1 (scores ~ log runtime).
      const std::vector<double>& s = scores[g];
      const size_t top = std::min_element(s.begin(), s.end()) - s.begin();
      const size_t chosen = s[group.default_config] - s[top] >= kGateLogGain
                                ? top
                                : static_cast<size_t>(group.default_config);
      row["gated_top1_slowdown"] = (group.runtimes[chosen] - best) / best;
      gated += row["gated_top1_slowdown"].get<double>();
      ++with_default;
    }
    tau += row["kendall_tau"].get<double>();
    top1 += row["top1_slowdown"].get<double>();
    top5 += row["top5_slowdown"].get<double>();
    random1 += row["random_top1_slowdown"].get<double>();
    random5 += row["random_top5_slowdown"].get<double>();
    configs += group.num_configs;
    out["groups"].push_back(row);
  }
  const double n = std::max<size_t>(groups.size(), 1);
  out["kendall_tau"] = tau / n;
  out["top1_slowdown"] = top1 / n;
  out["top5_slowdown"] = top5 / n;
  out["baseline_top1_slowdown"] =
      with_default > 0 ? nlohmann::json(base / with_default) : nlohmann::json();
  out["baseline_groups_with_default"] = with_default;
  out["gated_top1_slowdown"] = with_default > 0
                                   ? nlohmann::json(gated / with_default)
                                   : nlohmann::json();
  out["gate_log_gain"] = kGateLogGain;
  out["random_top1_slowdown"] = random1 / n;
  out["random_top5_slowdown"] = random5 / n;
  out["configs_evaluated"] = configs;
  return out;
}

absl::StatusOr<nlohmann::json> RunCostModelTrain(
    const CostModelTrainRequest& request) {
  const Task task = request.model.task;
  ASSIGN_OR_RETURN(std::vector<ConfigGroup> eval,
                   LoadSources(request.eval_data, task, request.train.seed));
  std::vector<ConfigGroup> train;
  for (absl::string_view source :
       absl::StrSplit(request.data, ',', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(
        std::vector<ConfigGroup> groups,
        LoadConfigGroups(std::string(source), task, request.train.seed));
    const bool split = request.layout_half_split && task == Task::kLayout &&
                       !absl::StartsWith(source, "sim:");
    for (ConfigGroup& group : groups) {
      if (!split) {
        train.push_back(std::move(group));
        continue;
      }
      ConfigGroup first;
      ConfigGroup second;
      SplitConfigsByHash(group, request.train.seed, &first, &second);
      train.push_back(std::move(first));
      eval.push_back(std::move(second));
    }
  }
  nlohmann::json protocol = nullptr;
  if (request.tile_protocol && task == Task::kTile) {
    CostModelEvalRequest eval_request;
    eval_request.task = Task::kTile;
    eval_request.data = request.data;
    eval_request.model = request.model;
    eval_request.train = request.train;
    eval_request.default_margin_cv = true;
    ASSIGN_OR_RETURN(protocol, RunCostModelEval(eval_request));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model,
                   CostModel::Create(request.model, request.train.seed));
  ASSIGN_OR_RETURN(TrainReport report, model->Train(train, request.train));
  nlohmann::json out;
  out["protocol"] = protocol;
  out["train"] = TrainJson(request.train, report.steps, report.wall_seconds);
  out["train"]["first_loss"] = report.first_loss;
  out["train"]["final_loss"] = report.final_loss;
  out["train"]["groups"] = train.size();
  out["model"] = request.model.ToJson();
  out["eval"] = nullptr;
  if (!eval.empty()) {
    ASSIGN_OR_RETURN(auto scores, ScoreAll(*model, eval));
    out["eval"] = RankingMetrics(eval, scores);
  }
  out["checkpoint"] = nullptr;
  if (!request.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(request.output_dir, error);
    const std::string checkpoint = request.output_dir + "/model.pt";
    RETURN_IF_ERROR(model->Save(checkpoint));
    nlohmann::json card = {
        {"format_version", kPolicyCardFormatVersion},
        {"kind", absl::StrCat("cost-model-", TaskName(task))},
        {"name", request.name},
        {"version", "1"},
        {"tasks", {std::string(TaskName(task))}},
        {"checkpoint", "model.pt"},
        {"model", request.model.ToJson()},
        {"training",
         {{"command", request.command},
          {"data", request.data},
          {"eval_data", request.eval_data},
          {"layout_half_split", request.layout_half_split},
          {"seed", request.train.seed},
          {"steps", report.steps},
          {"wall_seconds", report.wall_seconds},
          {"git_revision", GitRevision()}}},
        {"metrics", protocol.is_null() ? out["eval"] : protocol}};
    RETURN_IF_ERROR(RecordCheckpointSha256(
        request.output_dir,
        "gopt-train costmodel (when it saved the checkpoint)", &card));
    if (!protocol.is_null()) {
      card["decision"] = {
          {"default_margin", protocol["loko_default_margin"]},
          {"how",
           "the margin whose top-1 slowdown is lowest over the "
           "leave-one-kernel-out scores of the training kernels "
           "(metrics.loko_default_margin); metrics are the protocol's, with "
           "margins chosen without the held-out kernel"}};
    }
    RETURN_IF_ERROR(WriteCardFile(request.output_dir, card));
    out["checkpoint"] = checkpoint;
  }
  return out;
}

namespace {

// RunCostModelEval with a checkpoint: its scores of every group.
absl::StatusOr<nlohmann::json> ScoreCheckpoint(
    const CostModelEvalRequest& request) {
  const uint64_t seed = request.train.seed;
  nlohmann::json out;
  ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model,
                   CostModel::Load(request.checkpoint));
  if (model->options().task != request.task) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint '", request.checkpoint, "' ranks ",
        TaskName(model->options().task), ", not ", TaskName(request.task)));
  }
  ASSIGN_OR_RETURN(std::vector<ConfigGroup> groups,
                   LoadConfigGroups(request.data, request.task, seed));
  ASSIGN_OR_RETURN(auto scores, ScoreAll(*model, groups));
  out = RankingMetrics(groups, scores);
  out["protocol"] = "checkpoint";
  out["task"] = std::string(TaskName(request.task));
  return out;
}

// The tile protocol of RunCostModelEval: leave-one-kernel-out (and the
// default margin by inner leave-one-kernel-out). Adds the training steps
// to `*steps`.
absl::StatusOr<nlohmann::json> TileProtocol(
    const CostModelEvalRequest& request, const CostModelOptions& model_options,
    int32_t* steps_out) {
  const uint64_t seed = request.train.seed;
  int32_t& steps = *steps_out;
  nlohmann::json out;
  ASSIGN_OR_RETURN(std::vector<ConfigGroup> groups,
                   LoadConfigGroups(request.data, request.task, seed));
  const size_t n = groups.size();
  // Scores of `scored` by the (ensemble) model trained on every group but
  // those in `left_out`.
  auto train_and_score = [&](const std::vector<size_t>& left_out,
                             const std::vector<size_t>& scored)
      -> absl::StatusOr<std::vector<std::vector<double>>> {
    std::vector<ConfigGroup> train;
    for (size_t g = 0; g < n; ++g) {
      if (std::find(left_out.begin(), left_out.end(), g) == left_out.end()) {
        train.push_back(groups[g]);
      }
    }
    std::vector<const ConfigGroup*> targets;
    for (size_t g : scored) targets.push_back(&groups[g]);
    return TrainEnsembleAndScore(model_options, request.train, train, targets,
                                 request.ensemble, &steps);
  };
  std::vector<std::vector<double>> raw(n);
  for (size_t held = 0; held < n; ++held) {
    ASSIGN_OR_RETURN(auto s, train_and_score({held}, {held}));
    raw[held] = std::move(s[0]);
  }
  std::vector<std::vector<double>> runtimes;
  std::vector<int> defaults;
  for (const ConfigGroup& group : groups) {
    runtimes.push_back(group.runtimes);
    defaults.push_back(group.default_config);
  }
  std::vector<std::vector<double>> scores = raw;
  nlohmann::json margins = nlohmann::json::array();
  if (request.default_margin_cv) {
    // inner[a][b]: scores of kernel b by the model trained without a and
    // b, which serves both outer folds a and b (neither sees the other's
    // held-out kernel).
    std::vector<std::vector<std::vector<double>>> inner(
        n, std::vector<std::vector<double>>(n));
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        ASSIGN_OR_RETURN(auto s, train_and_score({a, b}, {a, b}));
        inner[b][a] = std::move(s[0]);
        inner[a][b] = std::move(s[1]);
      }
    }
    for (size_t held = 0; held < n; ++held) {
      std::vector<std::vector<double>> s;
      std::vector<std::vector<double>> r;
      std::vector<int> d;
      for (size_t g = 0; g < n; ++g) {
        if (g == held) continue;
        s.push_back(inner[held][g]);
        r.push_back(runtimes[g]);
        d.push_back(defaults[g]);
      }
      const double margin = ChooseDefaultMargin(s, r, d);
      margins.push_back(margin);
      scores[held] = WithDefaultMargin(raw[held], defaults[held], margin);
    }
  }
  out = RankingMetrics(groups, scores);
  double network_top1 = 0;
  for (size_t g = 0; g < n; ++g) {
    const double t = TopKSlowdown(raw[g], runtimes[g], 1);
    out["groups"][g]["network_top1_slowdown"] = t;
    if (request.default_margin_cv) {
      out["groups"][g]["default_margin"] = margins[g];
    }
    network_top1 += t / n;
  }
  out["network_top1_slowdown"] = network_top1;
  out["default_margins"] = margins;
  out["loko_default_margin"] = ChooseDefaultMargin(raw, runtimes, defaults);
  out["ensemble"] = std::max(request.ensemble, 1);
  out["protocol"] = request.default_margin_cv
                        ? "leave-one-kernel-out, default margin by inner "
                          "leave-one-kernel-out"
                        : "leave-one-kernel-out";
  return out;
}

// The layout protocols of RunCostModelEval: the hash half split, or the
// simulator's held-out families. Adds the training steps to `*steps`.
absl::StatusOr<nlohmann::json> LayoutProtocol(
    const CostModelEvalRequest& request, const CostModelOptions& model_options,
    int32_t* steps_out) {
  const uint64_t seed = request.train.seed;
  int32_t& steps = *steps_out;
  nlohmann::json out;
  std::vector<ConfigGroup> full;
  std::vector<ConfigGroup> train;
  std::vector<ConfigGroup> eval;
  if (request.data == "sim:heldout-protocol") {
    ASSIGN_OR_RETURN(
        train, LoadConfigGroups("sim:train-families", request.task, seed));
    ASSIGN_OR_RETURN(eval,
                     LoadConfigGroups("sim:heldout", request.task, seed + 1));
    out["protocol"] = "simulator: train sim:train-families, eval sim:heldout";
  } else {
    ASSIGN_OR_RETURN(full, LoadConfigGroups(request.data, request.task, seed));
    for (const ConfigGroup& group : full) {
      ConfigGroup first;
      ConfigGroup second;
      SplitConfigsByHash(group, seed, &first, &second);
      train.push_back(std::move(first));
      eval.push_back(std::move(second));
    }
    out["protocol"] = "hash half split (train on one half, eval the other)";
  }
  std::vector<const ConfigGroup*> targets;
  for (const ConfigGroup& group : eval) targets.push_back(&group);
  ASSIGN_OR_RETURN(auto scores,
                   TrainEnsembleAndScore(model_options, request.train, train,
                                         targets, request.ensemble, &steps));
  const nlohmann::json protocol = out["protocol"];
  out = RankingMetrics(eval, scores);
  out["protocol"] = protocol;
  out["ensemble"] = std::max(request.ensemble, 1);
  out["train_configs"] = nlohmann::json::array();
  for (const ConfigGroup& group : train) {
    out["train_configs"].push_back(group.num_configs);
  }
  if (!full.empty()) {
    AddClusterMetrics(full, eval, scores, &out);
    // Always-default baseline: the default's measured runtime against the
    // best of the evaluated half, also when the default fell in the
    // training half (it is then not among the evaluated configurations).
    double baseline = 0;
    int groups = 0;
    for (size_t g = 0; g < full.size(); ++g) {
      if (full[g].default_config < 0) continue;
      const double best =
          *std::min_element(eval[g].runtimes.begin(), eval[g].runtimes.end());
      baseline += (full[g].runtimes[full[g].default_config] - best) / best;
      ++groups;
    }
    if (groups > 0) {
      out["baseline_top1_slowdown"] = baseline / groups;
      out["baseline_groups_with_default"] = groups;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<nlohmann::json> RunCostModelEval(
    const CostModelEvalRequest& request) {
  if (!request.checkpoint.empty()) return ScoreCheckpoint(request);
  CostModelOptions model_options = request.model;
  model_options.task = request.task;
  const auto start = std::chrono::steady_clock::now();
  int32_t steps = 0;
  nlohmann::json out;
  if (request.task == Task::kTile) {
    ASSIGN_OR_RETURN(out, TileProtocol(request, model_options, &steps));
  } else {
    ASSIGN_OR_RETURN(out, LayoutProtocol(request, model_options, &steps));
  }
  out["task"] = std::string(TaskName(request.task));
  out["model"] = model_options.ToJson();
  out["train"] = TrainJson(
      request.train, steps,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  return out;
}

CostModelRecipe DefaultRecipe(Task task) {
  CostModelRecipe recipe;
  recipe.model.task = task;
  recipe.model.cross_config_attention = false;
  if (task == Task::kTile) {
    recipe.model.tile_relative_to_default = true;
    recipe.train.loss = RankingLoss::kHingeListMle;
    recipe.train.steps = 300;
    recipe.default_margin_cv = true;
  } else {
    recipe.model.prune_hops = 1;
    recipe.train.loss = RankingLoss::kPairwiseHinge;
    recipe.train.steps = 6000;
    recipe.train.tie_tolerance = 0.001;
    recipe.train.regression_weight = 2;
    recipe.train.learning_rate = 0.003;
  }
  return recipe;
}

}  // namespace gopt::policy::cost_model
