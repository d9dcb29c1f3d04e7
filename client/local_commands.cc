#include "client/local_commands.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/bench.h"
#include "client/inspect.h"
#include "client/simulate_report.h"
#include "graph/import/builtin_importers.h"
#include "graph/native/native_importer.h"
#include "policy/card.h"
#include "policy/go/go_policy.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/chrome_trace.h"
#include "simulator/generators/generators.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"

namespace gopt::client {
namespace {

// Writes `graph` in gopt's format (.json: JSON, else binary) to `path`.
absl::Status WriteGraph(const graph::Graph& graph, const std::string& path) {
  absl::StatusOr<std::string> bytes =
      graph::SerializeGraph(graph, absl::EndsWith(path, ".json"));
  if (!bytes.ok()) return absl::InternalError(bytes.status().message());
  RETURN_IF_ERROR(WriteFileBytes(path, *bytes));
  std::cerr << "wrote " << path << " (" << graph.num_nodes() << " nodes)\n";
  return absl::OkStatus();
}

// The plan `simulate` runs: --plan, else --method.
absl::StatusOr<simulator::Plan> SimulatePlan(
    const SimulateOptions& options,
    const simulator::baselines::BaselineContext& context) {
  if (!options.plan_path.empty()) {
    ASSIGN_OR_RETURN(simulator::Plan plan,
                     simulator::LoadPlan(options.plan_path));
    if (plan.method.empty()) plan.method = "plan file";
    return plan;
  }
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  if (options.method == "best-baseline") {
    ASSIGN_OR_RETURN(simulator::baselines::BestBaselineResult best,
                     simulator::baselines::BestBaseline(registry, context));
    return std::move(best.plan);
  }
  return simulator::baselines::MakeBaselinePlan(registry, options.method,
                                                context);
}

// A bench row's graph label: the preset name, or the file name.
std::string SourceLabel(const std::string& source) {
  if (absl::StartsWith(source, "gen:")) return source.substr(4);
  return source.substr(source.find_last_of('/') + 1);
}

}  // namespace

std::string DefaultPolicyDir() { return GOPT_DEFAULT_POLICY_DIR; }

absl::Status WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<graph::Graph> LoadGraph(const std::string& source,
                                       const GraphReadOptions& options) {
  if (absl::StartsWith(source, "gen:")) {
    ASSIGN_OR_RETURN(
        simulator::generators::GeneratorPreset preset,
        simulator::generators::FindGeneratorPreset(source.substr(4)));
    return simulator::generators::GenerateModelGraph(preset.options);
  }
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  return registry.ImportFile(source, options.format, options.import);
}

absl::Status RunInspect(const InspectOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(graph::Graph graph, LoadGraph(options.path, options.read));
  const InspectReport report = Inspect(graph);
  std::vector<NodeDetail> details;
  for (const std::string& name : options.nodes) {
    std::vector<NodeDetail> found = FindNodes(graph, name);
    if (found.empty()) {
      return absl::NotFoundError(absl::StrCat(
          options.path, ": no node named '", name, "' (--node takes the ",
          "name the file gives it: HLO instruction, ONNX node, NodeDef)"));
    }
    for (NodeDetail& detail : found) details.push_back(std::move(detail));
  }
  if (options.json) {
    nlohmann::json json = InspectReportToJson(report);
    if (!options.nodes.empty()) {
      json["node_details"] = nlohmann::json::array();
      for (const NodeDetail& detail : details) {
        json["node_details"].push_back(NodeDetailToJson(detail));
      }
    }
    out << json.dump(2) << "\n";
  } else {
    out << InspectReportToText(report);
    for (const NodeDetail& detail : details) {
      out << "\n" << NodeDetailToText(detail);
    }
  }
  return absl::OkStatus();
}

absl::Status RunConvert(const ConvertOptions& options, std::ostream& out) {
  (void)out;
  ASSIGN_OR_RETURN(graph::Graph graph, LoadGraph(options.path, options.read));
  return WriteGraph(graph, options.out_path);
}

absl::Status RunSimulate(const SimulateOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(graph::Graph graph, LoadGraph(options.path, options.read));
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   simulator::LoadTopology(options.topology));
  simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{graph, topology,
                                                      cost_model, options.seed};
  ASSIGN_OR_RETURN(simulator::Plan plan, SimulatePlan(options, context));
  simulator::Simulator simulator(graph, topology, cost_model);
  SimulateReport report;
  report.graph = graph.name();
  report.topology = topology.name;
  report.method = plan.method;
  report.nodes = graph.num_nodes();
  report.lower_bound_s = simulator.LowerBound();
  report.repeats = options.repeat;
  std::vector<double> seconds;
  for (int i = 0; i < options.repeat; ++i) {
    const absl::Time start = absl::Now();
    absl::StatusOr<simulator::SimulationResult> result =
        simulator.Simulate(plan);
    seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    if (!result.ok()) return result.status();
    report.result = *std::move(result);
  }
  std::sort(seconds.begin(), seconds.end());
  report.simulation_seconds = seconds[seconds.size() / 2];
  if (!options.trace_path.empty()) {
    absl::Status written = simulator::WriteChromeTrace(
        options.trace_path, graph, topology, plan, report.result);
    if (!written.ok()) return absl::InternalError(written.message());
  }
  if (options.json) {
    out << SimulateReportToJson(report).dump(2) << "\n";
  } else {
    out << SimulateReportToText(report);
  }
  return absl::OkStatus();
}

absl::Status RunBench(const BenchCommandOptions& options, std::ostream& out) {
  if (options.sources.empty()) {
    return absl::InvalidArgumentError(
        "no graphs: pass FILE... or --graph=FILE,gen:PRESET");
  }
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   simulator::LoadTopology(options.topology));
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  BenchOptions bench;
  bench.methods = options.methods;
  bench.seed = options.seed;
  bench.go_fine_tune_steps = options.fine_tune_steps;
  bench.go_samples = options.go_samples;
  bench.go_search_simulations_per_step = options.search_simulations;
  std::unique_ptr<policy::Policy> go_policy;
  if (std::any_of(options.methods.begin(), options.methods.end(), IsGoMethod)) {
    std::string directory;
    if (options.go_policy.empty()) {
      ASSIGN_OR_RETURN(directory,
                       policy::NewestPolicyDirectory(options.policy_dir, "go"));
    } else {
      directory = absl::StrCat(options.policy_dir, "/", options.go_policy);
    }
    ASSIGN_OR_RETURN(go_policy, policy::LoadGoPolicy(directory));
    bench.go_policy = go_policy.get();
  }
  std::vector<BenchGraphResult> results;
  for (const std::string& source : options.sources) {
    std::cerr << "bench: " << source << "...\n";
    ASSIGN_OR_RETURN(graph::Graph graph, LoadGraph(source, options.read));
    ASSIGN_OR_RETURN(
        BenchGraphResult result,
        BenchGraph(graph, SourceLabel(source), topology, registry, bench));
    results.push_back(std::move(result));
  }
  if (options.json) {
    out << BenchToJson(topology.name, results).dump(2) << "\n";
  } else {
    out << BenchToText(topology.name, results);
  }
  return absl::OkStatus();
}

absl::Status RunGenerate(const GenerateOptions& options, std::ostream& out) {
  namespace generators = simulator::generators;
  if (options.family == "list") {
    out << "families: " << absl::StrJoin(generators::GeneratorFamilies(), ", ")
        << "\n\npresets (use --preset=NAME, or gen:NAME in bench):\n";
    for (const auto& preset : generators::GeneratorPresets()) {
      out << "  " << preset.name << ": " << preset.description
          << (preset.single_v100_oom ? " [OOM on one V100]" : "") << "\n";
    }
    return absl::OkStatus();
  }
  generators::GeneratorOptions generator;
  if (!options.preset.empty()) {
    ASSIGN_OR_RETURN(generators::GeneratorPreset preset,
                     generators::FindGeneratorPreset(options.preset));
    generator = preset.options;
  }
  if (!options.family.empty()) generator.family = options.family;
  if (options.layers != 0) generator.layers = options.layers;
  if (options.batch != 0) generator.batch = options.batch;
  if (options.seq != 0) generator.seq = options.seq;
  if (options.hidden != 0) generator.hidden = options.hidden;
  if (options.image_size != 0) generator.image_size = options.image_size;
  if (options.seed != 0) generator.seed = options.seed;
  ASSIGN_OR_RETURN(graph::Graph graph,
                   generators::GenerateModelGraph(generator));
  return WriteGraph(graph, options.out_path);
}

}  // namespace gopt::client
