#include "client/calibrate.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/import/builtin_importers.h"
#include "graph/importer.h"
#include "nlohmann/json.hpp"
#include "simulator/generators/generators.h"
#include "simulator/learned_cost_model.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "training/cost_model/runtime_model_training.h"
#include "util/status_macros.h"
#include "worker/calibration.h"
#include "worker/executor.h"
#include "worker/runtime_dataset.h"

namespace gopt::client {
namespace {

namespace fs = std::filesystem;

// The id a graph file gets in the dataset: its file name, with characters
// outside [A-Za-z0-9._-] replaced.
std::string FileGraphId(const std::string& path) {
  std::string id = fs::path(path).filename().string();
  for (char& c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return id;
}

// Parses "family:layers:batch:seq:hidden:image" (see LearnGeneratedGraphs).
absl::StatusOr<simulator::generators::GeneratorOptions> ParseSpec(
    const std::string& spec) {
  simulator::generators::GeneratorOptions options;
  int* const fields[] = {&options.layers, &options.batch, &options.seq,
                         &options.hidden, &options.image_size};
  size_t start = 0;
  size_t colon = spec.find(':');
  options.family = spec.substr(0, colon);
  for (int* field : fields) {
    if (colon == std::string::npos) break;
    start = colon + 1;
    colon = spec.find(':', start);
    if (!absl::SimpleAtoi(spec.substr(start, colon - start), field)) {
      return absl::InvalidArgumentError(
          absl::StrCat("generated graph '", spec, "': expected integers"));
    }
  }
  return options;
}

// Measures the graphs, trains the model, writes it beside the topology and
// points the topology file at it; prints what it did to `out`.
absl::Status Learn(const CalibrateOptions& options, worker::Executor& executor,
                   simulator::Topology topology, std::ostream& out) {
  const std::string stem =
      absl::EndsWith(options.out_path, ".json")
          ? options.out_path.substr(0, options.out_path.size() - 5)
          : options.out_path;
  const std::string dir =
      options.learn_dir.empty() ? stem + ".runtime-data" : options.learn_dir;
  // The graphs: generated training steps, then the given files.
  std::vector<graph::Graph> graphs;
  std::vector<worker::GraphToMeasure> to_measure;
  std::set<std::string> held_out;
  for (const auto& [id, spec] : LearnGeneratedGraphs(options.quick)) {
    ASSIGN_OR_RETURN(simulator::generators::GeneratorOptions generator,
                     ParseSpec(spec));
    ASSIGN_OR_RETURN(graph::Graph g,
                     simulator::generators::GenerateModelGraph(generator));
    graphs.push_back(std::move(g));
    to_measure.push_back({id, "generate:" + spec, nullptr});
  }
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  for (const std::vector<std::string>* files :
       {&options.learn_graphs, &options.held_out}) {
    for (const std::string& path : *files) {
      absl::StatusOr<graph::Graph> g = registry.ImportFile(path, "auto", {});
      if (!g.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            files == &options.held_out ? "--held_out" : "--learn_graphs", ": ",
            g.status().message()));
      }
      graphs.push_back(*std::move(g));
      to_measure.push_back({FileGraphId(path), path, nullptr});
      if (files == &options.held_out) held_out.insert(to_measure.back().id);
    }
  }
  for (size_t i = 0; i < graphs.size(); ++i) to_measure[i].graph = &graphs[i];

  worker::CollectOptions collect;
  collect.dir = dir;
  collect.seed = options.seed;
  collect.plans_per_graph = options.learn_plans;
  if (options.quick) {
    collect.execute.min_repeats = 3;
    collect.execute.min_measure_seconds = 0.02;
  }
  collect.progress = [](int done, int total, const std::string& what) {
    std::cerr << absl::StrFormat("\r[%d/%d] %-70.70s", done, total, what)
              << (done == total ? "\n" : "") << std::flush;
  };
  ASSIGN_OR_RETURN(
      worker::CollectReport report,
      worker::CollectRuntimeData(executor, topology, to_measure, collect));
  out << "measured " << report.plans_measured << " plans ("
      << report.plans_already_present << " already in " << dir << ", "
      << report.failures.size() << " failed)\n";
  for (const std::string& failure : report.failures) {
    out << "  not measured: " << failure << "\n";
  }
  ASSIGN_OR_RETURN(worker::RuntimeDataset dataset,
                   worker::ReadRuntimeDataset(dir));
  policy::cost_model::RuntimeTrainingOptions training;
  training.seed = options.seed;
  training.held_out = held_out;
  ASSIGN_OR_RETURN(
      policy::cost_model::RuntimeTrainingResult trained,
      policy::cost_model::TrainRuntimeModel(dataset, topology, training));
  nlohmann::json card;
  card["command"] = "gopt calibrate --learn";
  card["data"] = dir;
  card["seed"] = options.seed;
  card["kernel_samples"] = trained.kernel_samples;
  card["kernel_log_rmse"] = {{"learned", trained.kernel_log_rmse_learned},
                             {"roofline", trained.kernel_log_rmse_roofline}};
  for (const policy::cost_model::GraphFidelity& f : trained.per_graph) {
    card["graphs"].push_back({{"graph", f.graph},
                              {"held_out", f.held_out},
                              {"plans", f.plans},
                              {"spearman_learned", f.spearman_learned},
                              {"spearman_roofline", f.spearman_roofline},
                              {"mape_learned", f.mape_learned},
                              {"mape_roofline", f.mape_roofline}});
  }
  trained.params.card_json = card.dump();
  const std::string model_path = stem + ".runtime-model.json";
  {
    std::ofstream file(model_path, std::ios::trunc);
    file << simulator::RuntimeModelToJson(trained.params) << "\n";
    if (!file.flush()) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write '", model_path, "'"));
    }
  }
  topology.runtime_model_path = fs::path(model_path).filename().string();
  RETURN_IF_ERROR(worker::WriteTopologyJson(topology, options.out_path));
  out << absl::StrFormat(
      "kernel time error (rms of log predicted/measured, %d kernels): "
      "learned %.3f, roofline %.3f\n",
      trained.kernel_samples, trained.kernel_log_rmse_learned,
      trained.kernel_log_rmse_roofline);
  out << absl::StrFormat("%-34s %-9s %5s %9s %9s %8s %8s\n", "graph", "",
                         "plans", "rho lrn", "rho roof", "mape lrn",
                         "mape roof");
  for (const policy::cost_model::GraphFidelity& f : trained.per_graph) {
    out << absl::StrFormat("%-34s %-9s %5d %9.3f %9.3f %7.1f%% %7.1f%%\n",
                           f.graph, f.held_out ? "held-out" : "trained",
                           f.plans, f.spearman_learned, f.spearman_roofline,
                           f.mape_learned, f.mape_roofline);
  }
  out << "wrote " << model_path << "; " << options.out_path
      << " references it\n";
  return absl::OkStatus();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> LearnGeneratedGraphs(
    bool quick) {
  // id, "family:layers:batch:seq:hidden:image" (0 = the family's default).
  if (quick) {
    return {{"rnnlm-tiny", "rnnlm:1:2:4:32:0"},
            {"resnet50-tiny", "resnet50:50:1:0:0:32"}};
  }
  return {{"resnet50-b1-i64", "resnet50:50:1:0:0:64"},
          {"inception_v3-b1-i75", "inception_v3:0:1:0:0:75"},
          {"amoebanet-n1-f8", "amoebanet:1:1:0:8:32"},
          {"rnnlm-l2-h128", "rnnlm:2:4:8:128:0"},
          {"gnmt-l2-h128", "gnmt:2:4:8:128:0"},
          {"transformer_xl-l2-h128", "transformer_xl:2:2:32:128:0"},
          {"bert-l2-h128", "bert:2:2:32:128:0"},
          {"wavenet-l8-h16", "wavenet:8:1:256:16:0"}};
}

absl::Status RunCalibrate(const CalibrateOptions& options, std::ostream& out) {
  if (options.out_path.empty()) {
    return absl::InvalidArgumentError(
        "calibrate: --out=FILE (the topology JSON to write) is required");
  }
  if (!options.only.empty() && options.topology.empty()) {
    return absl::InvalidArgumentError(
        "calibrate: --only needs --topology=FILE (the calibration to update)");
  }
  worker::ExecutorOptions executor_options;
  executor_options.cpu_executors = options.cpu_executors;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Executor> executor,
                   worker::Executor::Create(executor_options));
  worker::CalibrationOptions calibration;
  calibration.quick = options.quick;
  calibration.min_measure_seconds = options.min_measure_seconds;
  worker::CalibrationResult result;
  if (options.only.empty()) {
    ASSIGN_OR_RETURN(result, worker::Calibrate(*executor, calibration));
  } else {
    ASSIGN_OR_RETURN(simulator::Topology base,
                     simulator::LoadTopology(options.topology));
    ASSIGN_OR_RETURN(result, worker::CalibratePart(*executor, calibration,
                                                   options.only, base));
  }
  RETURN_IF_ERROR(worker::WriteTopologyJson(result.topology, options.out_path));
  if (options.json) {
    nlohmann::json j;
    j["out"] = options.out_path;
    j["devices"] = result.topology.num_devices();
    for (const worker::CalibrationPoint& p : result.points) {
      j["points"].push_back({{"benchmark", p.benchmark},
                             {"op_class", p.op_class},
                             {"flops", p.flops},
                             {"bytes", p.bytes},
                             {"seconds", p.seconds}});
    }
    j["notes"] = result.notes;
    out << j.dump(2) << "\n";
    if (options.learn) {
      return Learn(options, *executor, result.topology, out);
    }
    return absl::OkStatus();
  }
  out << absl::StrFormat("%-36s %-14s %12s %12s %12s\n", "benchmark", "class",
                         "flops", "bytes", "seconds");
  for (const worker::CalibrationPoint& p : result.points) {
    out << absl::StrFormat("%-36s %-14s %12.4g %12d %12.4g\n", p.benchmark,
                           p.op_class, p.flops, p.bytes, p.seconds);
  }
  out << "\n";
  for (const std::string& note : result.notes) out << note << "\n";
  out << "wrote " << options.out_path << " (" << result.topology.num_devices()
      << " devices): use it with --topology=" << options.out_path << "\n";
  if (options.learn) {
    return Learn(options, *executor, result.topology, out);
  }
  return absl::OkStatus();
}

}  // namespace gopt::client
