// gopt: command-line front end. Each subcommand is a thin wrapper over a
// library call; flags are read here once and turned into options.

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/bench.h"
#include "client/inspect.h"
#include "client/simulate_report.h"
#include "graph/import/builtin_importers.h"
#include "graph/native/native_importer.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/chrome_trace.h"
#include "simulator/generators/generators.h"
#include "simulator/simulator.h"

ABSL_FLAG(std::string, format, "auto",
          "input format: auto, hlo, hlo-proto, onnx, graphdef, tfjs, gopt, "
          "tpugraphs");
ABSL_FLAG(bool, json, false, "print one JSON object instead of tables");
ABSL_FLAG(std::vector<std::string>, dim, {},
          "symbolic dimension values, e.g. --dim=batch=8,seq=128");
ABSL_FLAG(int64_t, default_dim, 1,
          "value for symbolic/unknown dimensions not given by --dim");
ABSL_FLAG(int64_t, max_nodes, 5'000'000, "reject graphs with more nodes");
ABSL_FLAG(std::string, out, "",
          "convert/generate: output path (.json writes JSON, else binary)");
ABSL_FLAG(std::string, topology, "v100x4-nvlink",
          "simulate/bench: preset name (cpu-host, v100x2-pcie, v100x4-nvlink, "
          "a100x8-nvlink, h100x8-nvlink, tpuv3x8) or a topology JSON file");
ABSL_FLAG(std::string, method, "single",
          "simulate: PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]] or "
          "best-baseline");
ABSL_FLAG(std::string, plan, "", "simulate: a plan JSON file (gopt.v1.Plan)");
ABSL_FLAG(std::string, trace, "",
          "simulate: write a Chrome trace (Perfetto / chrome://tracing)");
ABSL_FLAG(int32_t, repeat, 1, "simulate: runs; the median time is reported");
ABSL_FLAG(std::vector<std::string>, graph, {},
          "bench: graph files, or gen:PRESET for a generated graph");
ABSL_FLAG(std::vector<std::string>, methods, {},
          "bench: methods (default: the standard baselines + best-baseline)");
ABSL_FLAG(uint64_t, seed, 0, "seed for random baselines and generators");
ABSL_FLAG(int32_t, layers, 0, "generate: layers (0 = family default)");
ABSL_FLAG(int32_t, batch, 0, "generate: batch size (0 = family default)");
ABSL_FLAG(int32_t, seq, 0, "generate: sequence/unroll length (0 = default)");
ABSL_FLAG(int32_t, hidden, 0, "generate: model width (0 = family default)");
ABSL_FLAG(int32_t, image_size, 0, "generate: image size (0 = default)");
ABSL_FLAG(std::string, preset, "",
          "generate: a named preset (see 'generate list')");

namespace {

constexpr int kExitUsage = 64;
constexpr int kExitInputError = 2;

constexpr char kUsage[] =
    R"(gopt: optimize ML computation graphs for ML compilers.

usage: gopt COMMAND [FLAGS] [FILE]

commands:
  inspect FILE     import a graph; print name, format, node/edge counts,
                   total FLOPs and bytes, op-kind histogram and warnings
  convert FILE     import a graph and write it in gopt's own format (--out)
  simulate FILE    simulate one plan (--method or --plan) on --topology:
                   step time, lower bound, memory, transfers (--trace FILE
                   writes a Chrome trace; --repeat N times the simulator)
  bench FILE...    every baseline (or --methods) on every graph (also
                   --graph=gen:PRESET): step time vs default and lower bound
  generate FAMILY  write a training-step graph of a model family (--out);
                   'generate list' shows families and presets

FILE formats (sniffed, or --format): XLA HLO text (hlo), HloModuleProto
(hlo-proto), ONNX (onnx), TensorFlow GraphDef binary/text (graphdef),
TF.js model.json (tfjs), gopt.v1.Graph binary/JSON (gopt), TpuGraphs
tuning protobufs (tpugraphs).

methods: PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]], missing parts at the
framework default (fifo, none, default). Placements: single, round-robin,
random, expert, metis, heft, m-etf, m-sct; scheduling: fifo, critical-path;
fusion: none, greedy; layout: default, greedy. best-baseline = the best of
every combination.

exit codes: 0 ok, 2 an input (graph, topology, plan) is invalid, 64 usage.

examples:
  gopt inspect ../shared/data/hlo/mixer_b16_jax_unopt.hlo
  gopt inspect model.onnx --dim=batch=32 --json
  gopt simulate mixer.hlo --topology=h100x8-nvlink --method=metis+critical-path+greedy --trace=t.json
  gopt bench --topology=v100x4-nvlink --graph=gen:gnmt8-large,model.onnx
  gopt generate gnmt --layers=8 --seq=100 --batch=256 --out=gnmt8.gopt.pb)";

int Fail(absl::string_view command, const absl::Status& status,
         int code = kExitInputError) {
  std::cerr << "gopt " << command << ": " << status.message() << "\n";
  return code;
}

absl::StatusOr<gopt::graph::ImportOptions> ImportOptionsFromFlags() {
  gopt::graph::ImportOptions options;
  options.default_symbolic_dim = absl::GetFlag(FLAGS_default_dim);
  options.limits.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  if (options.default_symbolic_dim < 0) {
    return absl::InvalidArgumentError("--default_dim must be >= 0");
  }
  for (const std::string& entry : absl::GetFlag(FLAGS_dim)) {
    std::vector<std::string> parts = absl::StrSplit(entry, '=');
    int64_t value = 0;
    if (parts.size() != 2 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dim entry '", entry, "' is not NAME=VALUE with VALUE >= 0"));
    }
    options.symbolic_dims[parts[0]] = value;
  }
  return options;
}

// A graph file, or gen:PRESET for a generated graph.
absl::StatusOr<gopt::graph::Graph> LoadGraph(const std::string& source) {
  if (absl::StartsWith(source, "gen:")) {
    auto preset =
        gopt::simulator::generators::FindGeneratorPreset(source.substr(4));
    if (!preset.ok()) return preset.status();
    return gopt::simulator::generators::GenerateModelGraph(preset->options);
  }
  // Validated in main() before any command runs.
  const gopt::graph::ImportOptions options = *ImportOptionsFromFlags();
  gopt::graph::ImporterRegistry registry;
  gopt::graph::RegisterBuiltinImporters(&registry);
  return registry.ImportFile(source, absl::GetFlag(FLAGS_format), options);
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

int RunInspect(const std::string& path) {
  absl::StatusOr<gopt::graph::Graph> graph = LoadGraph(path);
  if (!graph.ok()) return Fail("inspect", graph.status());
  const gopt::client::InspectReport report = gopt::client::Inspect(*graph);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::InspectReportToJson(report).dump(2) << "\n";
  } else {
    std::cout << gopt::client::InspectReportToText(report);
  }
  return 0;
}

int WriteGraph(absl::string_view command, const gopt::graph::Graph& graph) {
  const std::string out = absl::GetFlag(FLAGS_out);
  const bool json = absl::EndsWith(out, ".json");
  absl::StatusOr<std::string> bytes = gopt::graph::SerializeGraph(graph, json);
  if (!bytes.ok()) return Fail(command, bytes.status(), 1);
  if (absl::Status s = WriteFile(out, *bytes); !s.ok())
    return Fail(command, s, 1);
  std::cerr << "wrote " << out << " (" << graph.num_nodes() << " nodes)\n";
  return 0;
}

int RunConvert(const std::string& path) {
  if (absl::GetFlag(FLAGS_out).empty()) {
    return Fail("convert", absl::InvalidArgumentError("--out is required"),
                kExitUsage);
  }
  absl::StatusOr<gopt::graph::Graph> graph = LoadGraph(path);
  if (!graph.ok()) return Fail("convert", graph.status());
  return WriteGraph("convert", *graph);
}

int RunSimulate(const std::string& path) {
  const int repeat = absl::GetFlag(FLAGS_repeat);
  if (repeat < 1) {
    return Fail("simulate", absl::InvalidArgumentError("--repeat must be >= 1"),
                kExitUsage);
  }
  absl::StatusOr<gopt::graph::Graph> graph = LoadGraph(path);
  if (!graph.ok()) return Fail("simulate", graph.status());
  absl::StatusOr<gopt::simulator::Topology> topology =
      gopt::simulator::LoadTopology(absl::GetFlag(FLAGS_topology));
  if (!topology.ok()) return Fail("simulate", topology.status());
  gopt::simulator::RooflineCostModel cost_model;
  gopt::simulator::baselines::BaselineRegistry registry;
  gopt::simulator::baselines::RegisterBuiltinBaselines(&registry);
  const gopt::simulator::baselines::BaselineContext context{
      *graph, *topology, cost_model, absl::GetFlag(FLAGS_seed)};
  absl::StatusOr<gopt::simulator::Plan> plan;
  if (!absl::GetFlag(FLAGS_plan).empty()) {
    plan = gopt::simulator::LoadPlan(absl::GetFlag(FLAGS_plan));
    if (plan.ok() && plan->method.empty()) plan->method = "plan file";
  } else if (absl::GetFlag(FLAGS_method) == "best-baseline") {
    auto best = gopt::simulator::baselines::BestBaseline(registry, context);
    if (best.ok()) {
      plan = best->plan;
    } else {
      plan = best.status();
    }
  } else {
    plan = gopt::simulator::baselines::MakeBaselinePlan(
        registry, absl::GetFlag(FLAGS_method), context);
  }
  if (!plan.ok()) return Fail("simulate", plan.status());

  gopt::simulator::Simulator simulator(*graph, *topology, cost_model);
  gopt::client::SimulateReport report;
  report.graph = graph->name();
  report.topology = topology->name;
  report.method = plan->method;
  report.nodes = graph->num_nodes();
  report.lower_bound_s = simulator.LowerBound();
  report.repeats = repeat;
  std::vector<double> seconds;
  for (int i = 0; i < repeat; ++i) {
    const absl::Time start = absl::Now();
    absl::StatusOr<gopt::simulator::SimulationResult> result =
        simulator.Simulate(*plan);
    seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    if (!result.ok()) return Fail("simulate", result.status());
    report.result = *std::move(result);
  }
  std::sort(seconds.begin(), seconds.end());
  report.simulation_seconds = seconds[seconds.size() / 2];
  const std::string trace = absl::GetFlag(FLAGS_trace);
  if (!trace.empty()) {
    absl::Status written = gopt::simulator::WriteChromeTrace(
        trace, *graph, *topology, *plan, report.result);
    if (!written.ok()) return Fail("simulate", written, 1);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::SimulateReportToJson(report).dump(2) << "\n";
  } else {
    std::cout << gopt::client::SimulateReportToText(report);
  }
  return 0;
}

int RunBench(std::vector<std::string> sources) {
  for (const std::string& source : absl::GetFlag(FLAGS_graph)) {
    sources.push_back(source);
  }
  if (sources.empty()) {
    return Fail("bench",
                absl::InvalidArgumentError(
                    "no graphs: pass FILE... or --graph=FILE,gen:PRESET"),
                kExitUsage);
  }
  absl::StatusOr<gopt::simulator::Topology> topology =
      gopt::simulator::LoadTopology(absl::GetFlag(FLAGS_topology));
  if (!topology.ok()) return Fail("bench", topology.status());
  gopt::simulator::baselines::BaselineRegistry registry;
  gopt::simulator::baselines::RegisterBuiltinBaselines(&registry);
  gopt::client::BenchOptions options;
  options.methods = absl::GetFlag(FLAGS_methods);
  options.seed = absl::GetFlag(FLAGS_seed);
  for (const std::string& method : options.methods) {
    if (method == "best-baseline") continue;
    auto parsed =
        gopt::simulator::baselines::ParseBaselineMethod(registry, method);
    if (!parsed.ok()) return Fail("bench", parsed.status(), kExitUsage);
  }
  std::vector<gopt::client::BenchGraphResult> results;
  for (const std::string& source : sources) {
    std::cerr << "bench: " << source << "...\n";
    absl::StatusOr<gopt::graph::Graph> graph = LoadGraph(source);
    if (!graph.ok()) return Fail("bench", graph.status());
    const std::string label =
        absl::StartsWith(source, "gen:")
            ? source.substr(4)
            : std::string(source.substr(source.find_last_of('/') + 1));
    auto result =
        gopt::client::BenchGraph(*graph, label, *topology, registry, options);
    if (!result.ok()) return Fail("bench", result.status());
    results.push_back(*std::move(result));
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::BenchToJson(topology->name, results).dump(2)
              << "\n";
  } else {
    std::cout << gopt::client::BenchToText(topology->name, results);
  }
  return 0;
}

int RunGenerate(const std::string& family) {
  if (family == "list") {
    std::cout << "families: "
              << absl::StrJoin(gopt::simulator::generators::GeneratorFamilies(),
                               ", ")
              << "\n\npresets (use --preset=NAME, or gen:NAME in bench):\n";
    for (const auto& preset : gopt::simulator::generators::GeneratorPresets()) {
      std::cout << "  " << preset.name << ": " << preset.description
                << (preset.single_v100_oom ? " [OOM on one V100]" : "") << "\n";
    }
    return 0;
  }
  if (absl::GetFlag(FLAGS_out).empty()) {
    return Fail("generate", absl::InvalidArgumentError("--out is required"),
                kExitUsage);
  }
  gopt::simulator::generators::GeneratorOptions options;
  if (!absl::GetFlag(FLAGS_preset).empty()) {
    auto preset = gopt::simulator::generators::FindGeneratorPreset(
        absl::GetFlag(FLAGS_preset));
    if (!preset.ok()) return Fail("generate", preset.status(), kExitUsage);
    options = preset->options;
  }
  if (!family.empty()) options.family = family;
  if (absl::GetFlag(FLAGS_layers) != 0)
    options.layers = absl::GetFlag(FLAGS_layers);
  if (absl::GetFlag(FLAGS_batch) != 0)
    options.batch = absl::GetFlag(FLAGS_batch);
  if (absl::GetFlag(FLAGS_seq) != 0) options.seq = absl::GetFlag(FLAGS_seq);
  if (absl::GetFlag(FLAGS_hidden) != 0)
    options.hidden = absl::GetFlag(FLAGS_hidden);
  if (absl::GetFlag(FLAGS_image_size) != 0) {
    options.image_size = absl::GetFlag(FLAGS_image_size);
  }
  if (absl::GetFlag(FLAGS_seed) != 0) options.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<gopt::graph::Graph> graph =
      gopt::simulator::generators::GenerateModelGraph(options);
  if (!graph.ok()) return Fail("generate", graph.status(), kExitUsage);
  return WriteGraph("generate", *graph);
}

}  // namespace

int main(int argc, char** argv) {
  // Corrupt protobuf input makes libprotobuf log (e.g. invalid UTF-8) before
  // the importer returns its own precise error; keep stderr to that one line.
  google::protobuf::SetLogHandler(nullptr);
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::cerr << kUsage << "\n";
    return kExitUsage;
  }
  const std::string command = args[1];
  std::vector<std::string> operands(args.begin() + 2, args.end());
  if (command == "help") {
    std::cout << kUsage << "\n";
    return 0;
  }
  if (absl::Status options = ImportOptionsFromFlags().status(); !options.ok()) {
    return Fail(command, options, kExitUsage);
  }
  if (command == "bench") return RunBench(operands);
  if (command == "generate") {
    if (operands.size() > 1 ||
        (operands.empty() && absl::GetFlag(FLAGS_preset).empty())) {
      return Fail(command,
                  absl::InvalidArgumentError(
                      "expected one FAMILY (or --preset=NAME, or 'list')"),
                  kExitUsage);
    }
    return RunGenerate(operands.empty() ? "" : operands[0]);
  }
  if (command != "inspect" && command != "convert" && command != "simulate") {
    std::cerr << "gopt: unknown command '" << command << "'\n\n"
              << kUsage << "\n";
    return kExitUsage;
  }
  if (operands.size() != 1) {
    return Fail(command,
                absl::InvalidArgumentError("expected exactly one FILE"),
                kExitUsage);
  }
  if (command == "inspect") return RunInspect(operands[0]);
  if (command == "convert") return RunConvert(operands[0]);
  return RunSimulate(operands[0]);
}
