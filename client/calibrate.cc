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
  for (const auto& [id, spec] :
       options.learn_generated
           ? LearnGeneratedGraphs(options.quick)
           : std::vector<std::pair<std::string, std::string>>{}) {
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
      to_measure.push_back({worker::GraphIdForFile(path), path, nullptr});
      if (files == &options.held_out) held_out.insert(to_measure.back().id);
    }
  }
  for (size_t i = 0; i < graphs.size(); ++i) to_measure[i].graph = &graphs[i];

  worker::CollectOptions collect;
  collect.dir = dir;
  collect.seed = options.seed;
  collect.plans_per_graph = options.learn_plans;
  if (options.quick) {
    collect.rounds = 1;
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
  // The calibration the measurements were priced against, for retraining
  // (gopt-train costmodel --task=runtime reads it by default).
  RETURN_IF_ERROR(worker::WriteTopologyJson(
      topology, (fs::path(dir) / "calibrated.json").string()));
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
  const std::string model_path = stem + ".runtime-model.json";
  RETURN_IF_ERROR(policy::cost_model::WriteRuntimeModel(
      trained, "gopt calibrate --learn", dir, options.seed, model_path));
  simulator::Topology learned = trained.topology;
  learned.runtime_model_path = fs::path(model_path).filename().string();
  RETURN_IF_ERROR(worker::WriteTopologyJson(learned, options.out_path));
  policy::cost_model::PrintRuntimeTraining(trained, out);
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
            {"wavenet-tiny", "wavenet:2:1:64:8:0"}};
  }
  // About 500-1,400 nodes each: a step of 50-200 ms on this 2-core host
  // (eager dispatch costs ~0.1 ms per op), so 20 plans of a graph take
  // about a minute. inception_v3 (2,463 nodes) and amoebanet (4,048 at
  // its smallest) are left out for that reason; resnet50 brings the
  // convolutions.
  return {{"resnet50-b1-i32", "resnet50:50:1:0:0:32"},
          {"rnnlm-l2-h128", "rnnlm:2:4:8:128:0"},
          {"gnmt-l2-h64", "gnmt:2:4:4:64:0"},
          {"transformer_xl-l2-h128", "transformer_xl:2:2:32:128:0"},
          {"bert-l1-h128", "bert:1:2:32:128:0"},
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
