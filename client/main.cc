// gopt: command-line front end. Each subcommand is a thin wrapper over a
// library call; flags are read here once and turned into options.

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/bench.h"
#include "client/inspect.h"
#include "client/load_generator.h"
#include "client/optimize_report.h"
#include "client/optimizer_client.h"
#include "client/simulate_report.h"
#include "graph/import/builtin_importers.h"
#include "graph/native/native_importer.h"
#include "policy/go/go_model.h"
#include "policy/go/go_policy.h"
#include "server/builtin_policies.h"
#include "server/engine.h"
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
          "bench: graph files, or gen:PRESET for a generated graph (a comma "
          "list, or the flag repeated)");
ABSL_FLAG(std::vector<std::string>, methods, {},
          "bench: methods (default: the standard baselines + best-baseline)");
ABSL_FLAG(uint64_t, seed, 0, "seed for random baselines and generators");
ABSL_FLAG(double, stop_within_bound, 0,
          "optimize: stop fine-tuning and the plan search once the best plan "
          "is within this factor of the kernel-rules lower bound (e.g. 1.05); "
          "0 = never");
ABSL_FLAG(int32_t, layers, 0, "generate: layers (0 = family default)");
ABSL_FLAG(int32_t, batch, 0, "generate: batch size (0 = family default)");
ABSL_FLAG(int32_t, seq, 0, "generate: sequence/unroll length (0 = default)");
ABSL_FLAG(int32_t, hidden, 0, "generate: model width (0 = family default)");
ABSL_FLAG(int32_t, image_size, 0, "generate: image size (0 = default)");
ABSL_FLAG(std::string, preset, "",
          "generate: a named preset (see 'generate list')");
ABSL_FLAG(std::string, server, "",
          "optimize/evaluate/policies/health/load: gopt-server HOST:PORT "
          "(optimize/evaluate without it run the engine in-process)");
ABSL_FLAG(std::vector<std::string>, tasks, {},
          "optimize: placement,scheduling,fusion,layout (default: the first "
          "three)");
ABSL_FLAG(double, budget_seconds, 0,
          "optimize: time limit of the optimization (0 = none); fine-tuning "
          "starts a PPO step only when it is expected to end in time, and "
          "spends what is left on the plan search");
ABSL_FLAG(std::string, policy, "",
          "optimize: policy NAME or NAME@VERSION (default: every loaded one)");
ABSL_FLAG(int32_t, fine_tune_steps, 0,
          "optimize: fine-tune the policy for this many steps (0 = zero-shot)");
ABSL_FLAG(int32_t, search_simulations, 512,
          "bench: plans the GO refiner's local search simulates after each "
          "fine-tuning step (0 = PPO fine-tuning alone)");
ABSL_FLAG(std::string, policy_dir, GOPT_DEFAULT_POLICY_DIR,
          "optimize without --server: load policies from this directory "
          "(one sub-directory with a card.json per policy)");
ABSL_FLAG(bool, baselines_only, false,
          "optimize: no policy, only the baseline heuristics");
ABSL_FLAG(bool, allow_partial, false,
          "optimize: on deadline, answer with the best plan found so far");
ABSL_FLAG(bool, progress, false,
          "optimize --server: stream progress events to stderr");
ABSL_FLAG(double, timeout, 120, "remote calls: deadline in seconds");
ABSL_FLAG(int32_t, concurrency, 1, "load: requests in flight at once");
ABSL_FLAG(double, duration, 10, "load: seconds to send requests for");
ABSL_FLAG(int64_t, requests, 0,
          "load: stop after this many requests (0 = only --duration)");
ABSL_FLAG(std::string, tls_ca, "",
          "remote calls: PEM CA of the server certificate (enables TLS)");
ABSL_FLAG(std::string, tls_cert, "",
          "remote calls: PEM client certificate (mTLS)");
ABSL_FLAG(std::string, tls_key, "", "remote calls: PEM key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "remote calls: expect this name in the server certificate");

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
  optimize FILE    decide placement, scheduling, fusion (--tasks) on
                   --topology: default vs every baseline vs the chosen plan
                   (in-process, or on --server; --out plan.json, --trace)
  evaluate FILE    simulate --plan plan.json on --topology (--server)
  policies         list the policies --server has loaded
  health           exit 0 only when --server reports SERVING
  load             send --graph FILE to --server with --concurrency N for
                   --duration S: throughput, p50/p90/p99, errors by code

FILE formats (sniffed, or --format): XLA HLO text (hlo), HloModuleProto
(hlo-proto), ONNX (onnx), TensorFlow GraphDef binary/text (graphdef),
TF.js model.json (tfjs), gopt.v1.Graph binary/JSON (gopt), TpuGraphs
tuning protobufs (tpugraphs).

methods: PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]], missing parts at the
framework default (fifo, none, default; m-etf and m-sct default to
placement-order, the order their memory check assumed). Placements: single,
round-robin, random, expert, metis, heft, m-etf, m-sct; scheduling: fifo,
critical-path, placement-order (m-etf, m-sct only); fusion: none, greedy;
layout: default, greedy. best-baseline = the best of
every combination. bench also runs the GO policy from --policy_dir:
go-zeroshot, go-finetune (--fine_tune_steps, default 50, at most 60 s;
warm-started from best-baseline, as gopt-server does; after each PPO step a
local search simulates --search_simulations plans around the best plan so
far, moving critical-path nodes between devices and ahead in the queues),
go-finetune-cold (the same from the policy's own zero-shot plan),
go-zeroshot-1by1 and go-finetune-1by1 (one task at a time: placement, then
scheduling, then fusion; the fine-tuned one from best-baseline, each task
with a third of the budget), go-zeroshot-separate and go-finetune-separate
(the GO paper's pl | sch | fu: placement with FIFO and no fusion, scheduling
and fusion each on the expert placement, decided apart, then combined).

exit codes: 0 ok, 1 the server failed, could not be reached or is not
SERVING, 2 an input (graph, topology, plan, policy) is invalid, 64 usage.

examples:
  gopt inspect ../shared/data/hlo/mixer_b16_jax_unopt.hlo
  gopt inspect model.onnx --dim=batch=32 --json
  gopt simulate mixer.hlo --topology=h100x8-nvlink --method=metis+critical-path+greedy --trace=t.json
  gopt bench --topology=v100x4-nvlink --graph=gen:gnmt8-large,model.onnx
  gopt generate gnmt --layers=8 --seq=100 --batch=256 --out=gnmt8.gopt.pb
  gopt optimize mixer.hlo --topology=v100x4-nvlink --server=127.0.0.1:50051
  gopt load --server=127.0.0.1:50051 --graph=mixer.hlo --concurrency=4 --duration=30

Flag names may use '-' for '_' (--budget-seconds).)";

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
  bool wants_go = false;
  for (const std::string& method : options.methods) {
    if (gopt::client::IsGoMethod(method)) wants_go = true;
    if (method == "best-baseline" || gopt::client::IsGoMethod(method)) continue;
    auto parsed =
        gopt::simulator::baselines::ParseBaselineMethod(registry, method);
    if (!parsed.ok()) return Fail("bench", parsed.status(), kExitUsage);
  }
  if (absl::GetFlag(FLAGS_search_simulations) < 0) {
    return Fail("bench",
                absl::InvalidArgumentError(
                    absl::StrCat("--search_simulations must be 0 or more, got ",
                                 absl::GetFlag(FLAGS_search_simulations))),
                kExitUsage);
  }
  // The go-* methods run the shipped GO policy from --policy_dir.
  std::unique_ptr<gopt::policy::Policy> go_policy;
  if (wants_go) {
    auto loaded = gopt::policy::LoadGoPolicy(absl::GetFlag(FLAGS_policy_dir) +
                                             "/go-multitask-v2");
    if (!loaded.ok()) return Fail("bench", loaded.status());
    go_policy = *std::move(loaded);
    options.go_policy = go_policy.get();
    if (absl::GetFlag(FLAGS_fine_tune_steps) > 0) {
      options.go_fine_tune_steps = absl::GetFlag(FLAGS_fine_tune_steps);
    }
    options.go_search_simulations_per_step =
        absl::GetFlag(FLAGS_search_simulations);
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

// Exit code for a failed engine or server call: 2 when the input is at
// fault, 1 when the server is.
int FailCall(absl::string_view command, const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kResourceExhausted:
      return Fail(command, status);
    default:
      std::cerr << "gopt " << command << ": "
                << absl::StatusCodeToString(status.code()) << ": "
                << status.message() << "\n";
      return 1;
  }
}

absl::StatusOr<std::unique_ptr<gopt::client::OptimizerClient>> ConnectFromFlags(
    int max_attempts) {
  gopt::client::ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout));
  options.max_attempts = max_attempts;
  options.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_server_name_override = absl::GetFlag(FLAGS_tls_server_name);
  return gopt::client::OptimizerClient::Connect(options);
}

// The topology flag as a request field: a preset name, or a JSON file.
absl::StatusOr<gopt::v1::TopologyInput> TopologyInputFromFlags() {
  gopt::v1::TopologyInput input;
  const std::string topology = absl::GetFlag(FLAGS_topology);
  const std::vector<std::string> presets =
      gopt::simulator::PresetTopologyNames();
  if (std::find(presets.begin(), presets.end(), topology) != presets.end()) {
    input.set_preset(topology);
    return input;
  }
  absl::StatusOr<gopt::simulator::Topology> loaded =
      gopt::simulator::LoadTopology(topology);
  if (!loaded.ok()) return loaded.status();
  *input.mutable_topology() = gopt::simulator::TopologyToProto(*loaded);
  return input;
}

gopt::v1::OptimizeOptions RequestOptionsFromFlags() {
  gopt::v1::OptimizeOptions options;
  // Validated in main() before any command runs.
  const gopt::graph::ImportOptions import = *ImportOptionsFromFlags();
  for (const auto& [name, value] : import.symbolic_dims) {
    (*options.mutable_symbolic_dims())[name] = value;
  }
  options.set_default_dim(import.default_symbolic_dim);
  options.set_seed(absl::GetFlag(FLAGS_seed));
  options.set_stop_within_lower_bound(absl::GetFlag(FLAGS_stop_within_bound));
  for (const std::string& method : absl::GetFlag(FLAGS_methods)) {
    options.add_baseline_methods(method);
  }
  return options;
}

absl::StatusOr<gopt::v1::OptimizeRequest> OptimizeRequestFromFlags(
    const std::string& path) {
  gopt::v1::OptimizeRequest request;
  absl::StatusOr<gopt::v1::GraphInput> graph =
      gopt::client::GraphInputFromFile(path, absl::GetFlag(FLAGS_format));
  if (!graph.ok()) return graph.status();
  *request.mutable_graph() = *std::move(graph);
  absl::StatusOr<gopt::v1::TopologyInput> topology = TopologyInputFromFlags();
  if (!topology.ok()) return topology.status();
  *request.mutable_topology() = *std::move(topology);
  for (const std::string& task : absl::GetFlag(FLAGS_tasks)) {
    if (task == "placement") {
      request.mutable_tasks()->set_placement(true);
    } else if (task == "scheduling") {
      request.mutable_tasks()->set_scheduling(true);
    } else if (task == "fusion") {
      request.mutable_tasks()->set_fusion(true);
    } else if (task == "layout") {
      request.mutable_tasks()->set_layout(true);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--tasks: unknown task '", task,
                       "'; known: placement, scheduling, fusion, layout"));
    }
  }
  const std::string policy = absl::GetFlag(FLAGS_policy);
  const size_t at = policy.find('@');
  request.mutable_policy()->set_name(policy.substr(0, at));
  if (at != std::string::npos) {
    request.mutable_policy()->set_version(policy.substr(at + 1));
  }
  gopt::v1::Budget* budget = request.mutable_budget();
  budget->set_seconds(absl::GetFlag(FLAGS_budget_seconds));
  if (absl::GetFlag(FLAGS_baselines_only)) {
    budget->set_mode(gopt::v1::Budget::BASELINES_ONLY);
  } else if (absl::GetFlag(FLAGS_fine_tune_steps) > 0) {
    budget->set_mode(gopt::v1::Budget::FINE_TUNE);
    budget->set_fine_tune_steps(absl::GetFlag(FLAGS_fine_tune_steps));
  } else {
    budget->set_mode(gopt::v1::Budget::ZERO_SHOT);
  }
  request.set_allow_partial_result(absl::GetFlag(FLAGS_allow_partial));
  *request.mutable_options() = RequestOptionsFromFlags();
  return request;
}

// Runs an Optimize or Evaluate remotely (--server) or in-process.
class Backend {
 public:
  static absl::StatusOr<Backend> FromFlags() {
    Backend backend;
    if (absl::GetFlag(FLAGS_server).empty()) {
      gopt::server::EngineOptions options;
      options.max_graph_nodes = absl::GetFlag(FLAGS_max_nodes);
      std::shared_ptr<const gopt::server::PolicyRegistry> policies;
      if (!absl::GetFlag(FLAGS_baselines_only)) {
        auto loaded =
            gopt::server::LoadBuiltinPolicies(absl::GetFlag(FLAGS_policy_dir));
        if (!loaded.ok()) return loaded.status();
        policies = *std::move(loaded);
      }
      backend.engine_ =
          std::make_shared<gopt::server::Engine>(options, std::move(policies));
      return backend;
    }
    auto client = ConnectFromFlags(/*max_attempts=*/3);
    if (!client.ok()) return client.status();
    backend.client_ = *std::move(client);
    return backend;
  }

  absl::StatusOr<gopt::v1::OptimizeResponse> Optimize(
      const gopt::v1::OptimizeRequest& request) const {
    if (engine_ != nullptr) {
      gopt::server::RequestContext context;
      if (absl::GetFlag(FLAGS_progress)) context.on_progress = PrintProgress;
      return engine_->Optimize(request, context);
    }
    if (absl::GetFlag(FLAGS_progress)) {
      return client_->OptimizeStream(request, PrintProgress);
    }
    return client_->Optimize(request);
  }

  absl::StatusOr<gopt::v1::EvaluateResponse> Evaluate(
      const gopt::v1::EvaluateRequest& request) const {
    if (engine_ != nullptr) return engine_->Evaluate(request, {});
    return client_->Evaluate(request);
  }

 private:
  static void PrintProgress(const gopt::v1::OptimizeProgress& progress) {
    std::cerr << absl::StrFormat("[%6.2f s] %s step %d: best %s %.3f ms\n",
                                 progress.elapsed_s(), progress.stage(),
                                 progress.step(), progress.best_method(),
                                 progress.best_step_time_s() * 1e3);
  }

  std::shared_ptr<const gopt::server::Engine> engine_;
  std::shared_ptr<const gopt::client::OptimizerClient> client_;
};

// --trace: the chosen plan simulated with its timeline (Evaluate).
absl::Status WriteTrace(const Backend& backend,
                        const gopt::v1::OptimizeRequest& request,
                        const gopt::v1::Plan& plan) {
  gopt::v1::EvaluateRequest evaluate;
  *evaluate.mutable_graph() = request.graph();
  *evaluate.mutable_topology() = request.topology();
  *evaluate.mutable_plan() = plan;
  *evaluate.mutable_options() = request.options();
  evaluate.set_include_trace(true);
  absl::StatusOr<gopt::v1::EvaluateResponse> response =
      backend.Evaluate(evaluate);
  if (!response.ok()) return response.status();
  return WriteFile(absl::GetFlag(FLAGS_trace), response->chrome_trace_json());
}

int RunOptimize(const std::string& path) {
  absl::StatusOr<gopt::v1::OptimizeRequest> request =
      OptimizeRequestFromFlags(path);
  if (!request.ok()) return Fail("optimize", request.status());
  absl::StatusOr<Backend> backend = Backend::FromFlags();
  if (!backend.ok()) return Fail("optimize", backend.status(), kExitUsage);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      backend->Optimize(*request);
  if (!response.ok()) return FailCall("optimize", response.status());
  if (!absl::GetFlag(FLAGS_out).empty()) {
    absl::Status written =
        WriteFile(absl::GetFlag(FLAGS_out),
                  gopt::client::MessageToJson(response->plan()));
    if (!written.ok()) return Fail("optimize", written, 1);
  }
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    absl::Status written = WriteTrace(*backend, *request, response->plan());
    if (!written.ok()) return FailCall("optimize", written);
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::MessageToJson(*response) << "\n";
  } else {
    std::cout << gopt::client::OptimizeResponseToText(*response);
  }
  return 0;
}

int RunEvaluate(const std::string& path) {
  if (absl::GetFlag(FLAGS_plan).empty()) {
    return Fail("evaluate", absl::InvalidArgumentError("--plan is required"),
                kExitUsage);
  }
  absl::StatusOr<gopt::simulator::Plan> plan =
      gopt::simulator::LoadPlan(absl::GetFlag(FLAGS_plan));
  if (!plan.ok()) return Fail("evaluate", plan.status());
  gopt::v1::EvaluateRequest request;
  absl::StatusOr<gopt::v1::GraphInput> graph =
      gopt::client::GraphInputFromFile(path, absl::GetFlag(FLAGS_format));
  if (!graph.ok()) return Fail("evaluate", graph.status());
  *request.mutable_graph() = *std::move(graph);
  absl::StatusOr<gopt::v1::TopologyInput> topology = TopologyInputFromFlags();
  if (!topology.ok()) return Fail("evaluate", topology.status());
  *request.mutable_topology() = *std::move(topology);
  *request.mutable_plan() = gopt::simulator::PlanToProto(*plan);
  *request.mutable_options() = RequestOptionsFromFlags();
  request.set_include_trace(!absl::GetFlag(FLAGS_trace).empty());
  absl::StatusOr<Backend> backend = Backend::FromFlags();
  if (!backend.ok()) return Fail("evaluate", backend.status(), kExitUsage);
  absl::StatusOr<gopt::v1::EvaluateResponse> response =
      backend->Evaluate(request);
  if (!response.ok()) return FailCall("evaluate", response.status());
  if (request.include_trace()) {
    absl::Status written =
        WriteFile(absl::GetFlag(FLAGS_trace), response->chrome_trace_json());
    if (!written.ok()) return Fail("evaluate", written, 1);
    response->clear_chrome_trace_json();
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::MessageToJson(*response) << "\n";
  } else {
    std::cout << gopt::client::EvaluateResponseToText(*response);
  }
  return 0;
}

int RunHealth() {
  auto client = ConnectFromFlags(/*max_attempts=*/1);
  if (!client.ok()) return Fail("health", client.status(), kExitUsage);
  auto status = (*client)->Health();
  if (!status.ok()) return FailCall("health", status.status());
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                   *status)
            << "\n";
  return *status == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

int RunPolicies() {
  auto client = ConnectFromFlags(/*max_attempts=*/3);
  if (!client.ok()) return Fail("policies", client.status(), kExitUsage);
  auto response = (*client)->ListPolicies();
  if (!response.ok()) return FailCall("policies", response.status());
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::MessageToJson(*response) << "\n";
    return 0;
  }
  if (response->policies().empty()) {
    std::cout << "no policies loaded: Optimize answers with the best "
                 "baseline plan\n";
  }
  for (const gopt::v1::PolicyInfo& policy : response->policies()) {
    std::vector<std::string> tasks;
    if (policy.tasks().placement()) tasks.push_back("placement");
    if (policy.tasks().scheduling()) tasks.push_back("scheduling");
    if (policy.tasks().fusion()) tasks.push_back("fusion");
    if (policy.tasks().layout()) tasks.push_back("layout");
    std::cout << policy.name() << "@" << policy.version() << "  kind "
              << policy.kind() << "  tasks " << absl::StrJoin(tasks, "+")
              << "\n";
  }
  return 0;
}

int RunLoad() {
  const std::vector<std::string> graphs = absl::GetFlag(FLAGS_graph);
  if (absl::GetFlag(FLAGS_server).empty() || graphs.size() != 1) {
    return Fail("load",
                absl::InvalidArgumentError(
                    "load needs --server=HOST:PORT and one --graph=FILE"),
                kExitUsage);
  }
  absl::StatusOr<gopt::v1::OptimizeRequest> request =
      OptimizeRequestFromFlags(graphs[0]);
  if (!request.ok()) return Fail("load", request.status());
  // Every answer counts, UNAVAILABLE included: no retries.
  auto client = ConnectFromFlags(/*max_attempts=*/1);
  if (!client.ok()) return Fail("load", client.status(), kExitUsage);
  gopt::client::LoadOptions options;
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration));
  options.max_requests = absl::GetFlag(FLAGS_requests);
  std::cerr << "load: " << options.concurrency << " in flight for "
            << options.duration << " against " << absl::GetFlag(FLAGS_server)
            << "...\n";
  absl::StatusOr<gopt::client::LoadReport> report =
      gopt::client::RunLoad(**client, *request, options);
  if (!report.ok()) return Fail("load", report.status(), kExitUsage);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << gopt::client::LoadReportToJson(*report).dump(2) << "\n";
  } else {
    std::cout << gopt::client::LoadReportToText(*report);
  }
  return report->ok == report->requests ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Corrupt protobuf input makes libprotobuf log (e.g. invalid UTF-8) before
  // the importer returns its own precise error; keep stderr to that one line.
  google::protobuf::SetLogHandler(nullptr);
  absl::SetProgramUsageMessage(kUsage);
  // optimize and bench fine-tune the GO network in-process (see
  // KeepFreedMemory: a PPO step on an 85k-node graph takes 3x as long
  // without it).
  gopt::policy::go::KeepFreedMemory();
  // Flag names may be written with '-' for '_' (--budget-seconds). The
  // list flags may be repeated: each one's values are joined into one list
  // (absl would silently keep only the last occurrence).
  constexpr absl::string_view kListFlags[] = {"graph", "dim", "methods",
                                              "tasks"};
  std::vector<std::string> normalized(argv, argv + argc);
  std::vector<char*> raw;
  std::vector<std::vector<std::string>> lists(std::size(kListFlags));
  for (size_t i = 0; i < normalized.size(); ++i) {
    std::string& arg = normalized[i];
    if (absl::StartsWith(arg, "--")) {
      const size_t end = std::min(arg.find('='), arg.size());
      std::replace(arg.begin() + 2, arg.begin() + end, '-', '_');
    }
    bool listed = false;
    for (size_t f = 0; f < std::size(kListFlags) && !listed; ++f) {
      const std::string name = absl::StrCat("--", kListFlags[f]);
      if (absl::StartsWith(arg, name + "=")) {
        lists[f].push_back(arg.substr(name.size() + 1));
        listed = true;
      } else if (arg == name && i + 1 < normalized.size()) {
        lists[f].push_back(normalized[++i]);
        listed = true;
      }
    }
    if (!listed) raw.push_back(arg.data());
  }
  std::vector<std::string> list_flags;
  list_flags.reserve(lists.size());
  for (size_t f = 0; f < lists.size(); ++f) {
    if (lists[f].empty()) continue;
    list_flags.push_back(
        absl::StrCat("--", kListFlags[f], "=", absl::StrJoin(lists[f], ",")));
    raw.push_back(list_flags.back().data());
  }
  std::vector<char*> args =
      absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
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
  if (command == "health" || command == "policies") {
    if (absl::GetFlag(FLAGS_server).empty() || !operands.empty()) {
      return Fail(command,
                  absl::InvalidArgumentError("expected --server=HOST:PORT"),
                  kExitUsage);
    }
    return command == "health" ? RunHealth() : RunPolicies();
  }
  if (command == "load") return RunLoad();
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
  if (command != "inspect" && command != "convert" && command != "simulate" &&
      command != "optimize" && command != "evaluate") {
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
  if (command == "optimize") return RunOptimize(operands[0]);
  if (command == "evaluate") return RunEvaluate(operands[0]);
  return RunSimulate(operands[0]);
}
