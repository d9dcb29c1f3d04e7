// gopt_executor_eval: how well the simulator predicts measured step times.
//
// For each --graph, runs a fixed set of candidate plans (placements over the
// executors, priorities, fusion; plus --chosen plans) on the executor and
// prints measured and predicted step times (calibrated --topology and the
// executor's nominal, uncalibrated topology), then the Spearman rank
// correlation and mean absolute percentage error of both predictions, and
// the measured speedup of each chosen plan over the default plan. With
// --real_ops, prints the share of nodes and FLOPs that run as real LibTorch
// ops for each file instead (one set-up pass: each node once at its real
// shapes; what cannot run on this host counts as not run, never as real).
//
//   gopt_executor_eval --topology=calibrated.json \
//       --graph=a.onnx,b.hlo --chosen=a.onnx=plan_a.json
//   gopt_executor_eval --topology=new.json --graph=a.onnx,b.hlo \
//       --chosen=a.onnx=plan_a.json --measured_from=earlier_run.log
//   gopt_executor_eval --real_ops=../shared/data/onnx/light_squeezenet.onnx
//   gopt_executor_eval --real_ops=silero_vad_legacy.onnx --dim=sequence=512

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "graph/import/builtin_importers.h"
#include "graph/importer.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "simulator/topology_proto.h"
#include "util/repeated_flags.h"
#include "worker/calibration.h"
#include "worker/executor.h"
#include "worker/measurement.h"

ABSL_FLAG(std::vector<std::string>, graph, {}, "graph files to evaluate");
ABSL_FLAG(std::string, topology, "",
          "calibrated topology JSON (gopt calibrate --out)");
ABSL_FLAG(std::string, calibrate_out, "",
          "calibrate this host's executors first (as gopt calibrate does, "
          "every executor device kind measured), write the topology JSON "
          "here and use it as --topology (for hosts without the gopt CLI: "
          "scripts/gpu-check.sh)");
ABSL_FLAG(std::vector<std::string>, chosen, {},
          "GRAPH=PLAN.json: a chosen plan (gopt optimize --out) per graph");
ABSL_FLAG(std::vector<std::string>, real_ops, {},
          "files whose real-op fraction to print (no correlation)");
ABSL_FLAG(bool, predict_only, false,
          "print the predictions only (measured columns 0): for comparing "
          "simulator changes against an earlier run's measurements");
ABSL_FLAG(std::string, measured_from, "",
          "an earlier run's output: its measured columns (rows matched by "
          "graph and plan) stand beside new predictions, nothing runs, and "
          "the summary compares them (re-scoring simulator changes against "
          "saved measurements)");
ABSL_FLAG(std::vector<std::string>, dim, {},
          "NAME=VALUE: a symbolic dimension's value for every imported file "
          "(ONNX dim_param, as gopt inspect --dim); repeatable");
ABSL_FLAG(double, real_ops_timeout_seconds, 300,
          "--real_ops: the limit on one file's set-up pass (nodes not "
          "reached by then count as not run)");
ABSL_FLAG(double, min_measure_seconds, 0.1, "measured time per plan");
ABSL_FLAG(int32_t, min_repeats, 5, "measured runs per plan at least");
ABSL_FLAG(int32_t, cpu_executors, 0,
          "CPU executors (0 = one per hardware thread)");
ABSL_FLAG(int32_t, cuda_devices, 0,
          "CUDA devices after the CPU executors (-1 = all; needs a CUDA "
          "LibTorch build, see scripts/gpu-check.sh)");

namespace gopt::worker {
namespace {

struct Candidate {
  std::string name;
  simulator::Plan plan;
};

struct Row {
  std::string graph;
  std::string plan;
  double measured_s = 0;      // median
  double measured_min_s = 0;  // fastest run
  double spread = 0;
  double calibrated_s = 0;
  double nominal_s = 0;
};

// Fuses runs of elementwise nodes on one device whose inputs are all in
// the group or precede it (so no group can form a cycle).
void FuseElementwiseChains(const graph::Graph& graph, simulator::Plan* plan) {
  plan->fusion_group.assign(graph.num_nodes(), -1);
  for (graph::NodeId id = 1; id < graph.num_nodes(); ++id) {
    const graph::NodeId prev = id - 1;
    if (graph::OpKindCategory(graph.node(id).kind) !=
            graph::OpCategory::kElementwise ||
        graph::OpKindCategory(graph.node(prev).kind) !=
            graph::OpCategory::kElementwise ||
        plan->device[id] != plan->device[prev]) {
      continue;
    }
    const int32_t group =
        plan->fusion_group[prev] >= 0 ? plan->fusion_group[prev] : prev;
    bool ok = true;
    for (const graph::Edge& e : graph.in_edges(id)) {
      ok = ok && (e.src < group || plan->fusion_group[e.src] == group ||
                  e.src == group);
    }
    if (!ok) continue;
    plan->fusion_group[prev] = group;
    plan->fusion_group[id] = group;
  }
}

std::vector<Candidate> Candidates(const graph::Graph& graph,
                                  const simulator::Topology& topology) {
  const int n = graph.num_nodes();
  const int devices = topology.num_devices();
  const simulator::Plan base = simulator::DefaultPlan(graph, topology);
  std::vector<Candidate> out;
  auto placed = [&](const std::string& name, auto device_of) {
    simulator::Plan plan = base;
    for (int i = 0; i < n; ++i) plan.device[i] = device_of(i) % devices;
    simulator::KeepDeviceConstraints(graph, topology, &plan.device);
    out.push_back({name, plan});
    return plan;
  };
  placed("default", [](int) { return 0; });
  placed("all-on-1", [](int) { return 1; });
  const simulator::Plan alternate =
      placed("alternate", [](int i) { return i; });
  for (int pct : {25, 50, 75}) {
    placed(absl::StrCat("split-", pct),
           [&](int i) { return i * 100 < pct * n ? 0 : 1; });
  }
  std::vector<int> depth(n, 0);
  for (int i = 0; i < n; ++i) {
    for (const graph::Edge& e : graph.in_edges(i)) {
      depth[i] = std::max(depth[i], depth[e.src] + 1);
    }
  }
  placed("depth-parity", [&](int i) { return depth[i]; });
  placed("depth-halves", [&](int i) { return (depth[i] / 8) % 2; });
  for (int seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    const int bias = seed % 3 == 0 ? 4 : 2;  // some mostly on one device
    placed(absl::StrCat("random-", seed),
           [&](int) { return static_cast<int>(rng() % bias) == 0 ? 1 : 0; });
  }
  for (int seed = 1; seed <= 2; ++seed) {
    std::mt19937 rng(100 + seed);
    for (const simulator::Plan* from : {&base, &alternate}) {
      simulator::Plan plan = *from;
      plan.priority.resize(n);
      for (int i = 0; i < n; ++i) plan.priority[i] = rng() % 1000;
      out.push_back({absl::StrCat(from == &base ? "default" : "alternate",
                                  "+random-priority-", seed),
                     plan});
    }
  }
  simulator::Plan reverse = out[4].plan;  // split-50
  reverse.priority.resize(n);
  for (int i = 0; i < n; ++i) reverse.priority[i] = -i;
  out.push_back({"split-50+reverse-priority", reverse});
  for (int index : {0, 4}) {
    simulator::Plan fused = out[index].plan;
    FuseElementwiseChains(graph, &fused);
    out.push_back({out[index].name + "+fused-elementwise", fused});
  }
  return out;
}

absl::StatusOr<double> Predict(const graph::Graph& graph,
                               const simulator::Topology& topology,
                               const simulator::Plan& plan) {
  const simulator::RooflineCostModel roofline;
  const simulator::Simulator simulator(graph, topology, roofline);
  simulator::SimulationOptions options;
  options.record_timeline = false;
  absl::StatusOr<simulator::SimulationResult> result =
      simulator.Simulate(plan, options);
  if (!result.ok()) return result.status();
  return result->step_time_s;
}

// Measured columns of an earlier run's output (the tab-separated rows of
// seven fields; other lines are skipped), keyed by (graph, plan), as a
// result whose measured fields are set. NotFound / InvalidArgument naming
// the file and line.
using MeasuredRows =
    std::map<std::pair<std::string, std::string>, ExecutionResult>;
absl::StatusOr<MeasuredRows> ReadMeasuredRows(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--measured_from: cannot read '", path, "'"));
  }
  MeasuredRows rows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    if (fields.size() != 7 || fields[0] == "graph") continue;
    ExecutionResult measured;
    double median_ms = 0, min_ms = 0;
    if (!absl::SimpleAtod(fields[2], &median_ms) ||
        !absl::SimpleAtod(fields[3], &min_ms) ||
        !absl::SimpleAtod(fields[4], &measured.measured_spread) ||
        !(median_ms > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", number,
          ": expected graph, plan and measured median/min ms and spread"));
    }
    measured.measured_step_time_s = median_ms / 1e3;
    measured.measured_min_step_time_s = min_ms / 1e3;
    rows[{fields[0], fields[1]}] = measured;
  }
  if (rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no measured rows (graph<TAB>plan<TAB>...)"));
  }
  return rows;
}

ExecuteOptions MeasureOptions() {
  ExecuteOptions options;
  options.warmup_runs = 2;
  options.min_repeats = absl::GetFlag(FLAGS_min_repeats);
  options.max_repeats = std::max(options.min_repeats, 200);
  options.min_measure_seconds = absl::GetFlag(FLAGS_min_measure_seconds);
  options.timeout_seconds = 300;
  options.per_node_times = false;
  return options;
}

// The --dim values as import options; InvalidArgument naming a malformed one.
absl::StatusOr<graph::ImportOptions> ImportOptionsFromDims() {
  graph::ImportOptions import;
  for (const std::string& dim : absl::GetFlag(FLAGS_dim)) {
    std::vector<std::string> parts =
        absl::StrSplit(dim, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (parts.size() != 2 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &value) || value < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dim=", dim, ": expected NAME=VALUE with a positive integer"));
    }
    import.symbolic_dims[parts[0]] = value;
  }
  return import;
}

// Prints, per --real_ops file, the nodes that ran as real LibTorch ops in
// one set-up pass (each node once, values freed after their last consumer;
// nodes over the host's tensor limit, their dependents and the nodes after
// the time limit do not run and count as not real), the real share of nodes
// and FLOPs, the pass's seconds, then the slowest nodes and the warnings.
int PrintRealOps(Executor& executor, const graph::ImporterRegistry& registry) {
  absl::StatusOr<graph::ImportOptions> import = ImportOptionsFromDims();
  if (!import.ok()) {
    std::cerr << import.status().message() << "\n";
    return 64;
  }
  std::cout << "file\tnodes_real\tnodes\tnodes_not_run\t"
               "real_op_fraction_nodes\treal_op_fraction_flops\t"
               "setup_seconds\tstatus\n";
  ExecuteOptions options = MeasureOptions();
  options.setup_only = true;
  options.timeout_seconds = absl::GetFlag(FLAGS_real_ops_timeout_seconds);
  for (const std::string& path : absl::GetFlag(FLAGS_real_ops)) {
    absl::StatusOr<graph::Graph> graph =
        registry.ImportFile(path, "auto", *import);
    if (!graph.ok()) {
      std::cout << path << "\t-\t-\t-\t-\t-\t-\timport: " << graph.status()
                << "\n";
      continue;
    }
    absl::StatusOr<ExecutionResult> result = executor.Execute(
        *graph, simulator::DefaultPlan(*graph, executor.HostTopology()),
        options);
    if (!result.ok()) {
      std::cout << path << "\t-\t" << graph->num_nodes() << "\t-\t-\t-\t-\t"
                << result.status() << "\n";
      continue;
    }
    const std::vector<double>& seconds = result->per_node_seconds;
    double total_s = 0;
    for (double s : seconds) total_s += s;
    std::cout << absl::StrFormat(
        "%s\t%d\t%d\t%d\t%.4f\t%.4f\t%.1f\t%s\n", path, result->real_op_nodes,
        result->total_nodes, result->not_run_nodes,
        static_cast<double>(result->real_op_nodes) / result->total_nodes,
        result->real_op_flop_fraction, total_s,
        result->not_run_nodes > 0 ? "partial" : "ok");
    std::vector<graph::NodeId> slowest(seconds.size());
    for (size_t i = 0; i < seconds.size(); ++i) slowest[i] = i;
    const size_t shown = std::min<size_t>(5, slowest.size());
    std::partial_sort(slowest.begin(), slowest.begin() + shown, slowest.end(),
                      [&](graph::NodeId a, graph::NodeId b) {
                        return seconds[a] > seconds[b];
                      });
    for (size_t i = 0; i < shown; ++i) {
      const graph::Node& node = graph->node(slowest[i]);
      std::cout << absl::StrFormat(
          "  slowest: %s (%s, %s) %.3f s\n", node.name, node.op,
          node.outputs.empty() ? std::string("-") : node.outputs[0].ToString(),
          seconds[slowest[i]]);
    }
    for (const std::string& w : result->warnings) {
      std::cout << "  warning: " << w << "\n";
    }
  }
  return 0;
}

void PrintSummary(const std::vector<Row>& rows) {
  std::map<std::string, std::vector<const Row*>> by_graph;
  for (const Row& r : rows) by_graph[r.graph].push_back(&r);
  auto stats = [](const std::vector<const Row*>& subset) {
    std::vector<double> m, f, c, u;
    for (const Row* r : subset) {
      m.push_back(r->measured_s);
      f.push_back(r->measured_min_s);
      c.push_back(r->calibrated_s);
      u.push_back(r->nominal_s);
    }
    return absl::StrFormat(
        "plans=%d median: spearman_calibrated=%.3f spearman_uncalibrated=%.3f "
        "mape_calibrated=%.1f%% mape_uncalibrated=%.1f%%; fastest run: "
        "spearman_calibrated=%.3f spearman_uncalibrated=%.3f "
        "mape_calibrated=%.1f%% mape_uncalibrated=%.1f%%",
        subset.size(), SpearmanRho(c, m), SpearmanRho(u, m),
        MeanAbsolutePercentageError(c, m), MeanAbsolutePercentageError(u, m),
        SpearmanRho(c, f), SpearmanRho(u, f), MeanAbsolutePercentageError(c, f),
        MeanAbsolutePercentageError(u, f));
  };
  std::vector<const Row*> all;
  for (const Row& r : rows) all.push_back(&r);
  std::cout << "\n== summary\nall graphs pooled: " << stats(all) << "\n";
  for (const auto& [graph, subset] : by_graph) {
    std::cout << graph << ": " << stats(subset) << "\n";
  }
}

void PrintSpeedups(const std::vector<Row>& rows) {
  std::cout << "\n== measured speedup of the chosen plan over the default\n";
  std::map<std::string, const Row*> defaults;
  for (const Row& r : rows) {
    if (r.plan == "default") defaults[r.graph] = &r;
  }
  for (const Row& r : rows) {
    if (r.plan.rfind("chosen", 0) != 0 || defaults.count(r.graph) == 0)
      continue;
    const Row& d = *defaults[r.graph];
    std::cout << absl::StrFormat(
        "%s: default %.3f ms (spread %.3f), %s %.3f ms (spread %.3f): "
        "measured speedup %.3fx median, %.3fx fastest run (calibrated "
        "simulator predicted %.3fx)\n",
        r.graph, d.measured_s * 1e3, d.spread, r.plan, r.measured_s * 1e3,
        r.spread, d.measured_s / r.measured_s,
        d.measured_min_s / r.measured_min_s, d.calibrated_s / r.calibrated_s);
  }
}

// Calibrates `executor`'s devices, writes the topology to `out` and prints
// what was fitted; 0, or 1 after printing the error.
int CalibrateInto(Executor& executor, const std::string& out) {
  absl::StatusOr<CalibrationResult> calibrated =
      Calibrate(executor, CalibrationOptions());
  absl::Status written = calibrated.ok()
                             ? WriteTopologyJson(calibrated->topology, out)
                             : calibrated.status();
  if (!written.ok()) {
    std::cerr << "calibration: " << written << "\n";
    return 1;
  }
  for (const std::string& note : calibrated->notes) {
    std::cout << "# calibration: " << note << "\n";
  }
  std::cout << "# calibration written to " << out << "\n";
  return 0;
}

// Measures and predicts the candidate plans of every --graph, the
// calibrated predictions from the topology JSON at `topology_path`.
int Evaluate(Executor& executor, const graph::ImporterRegistry& registry,
             const std::string& topology_path) {
  const simulator::Topology nominal = executor.HostTopology();
  absl::StatusOr<simulator::Topology> calibrated =
      simulator::LoadTopology(topology_path);
  if (!calibrated.ok()) {
    std::cerr << "--topology: " << calibrated.status() << "\n";
    return 2;
  }
  std::map<std::string, std::string> chosen;
  for (const std::string& entry : absl::GetFlag(FLAGS_chosen)) {
    std::vector<std::string> parts = absl::StrSplit(entry, '=');
    if (parts.size() == 2) chosen[parts[0]] = parts[1];
  }
  MeasuredRows saved;
  const bool from_log = !absl::GetFlag(FLAGS_measured_from).empty();
  if (from_log) {
    absl::StatusOr<MeasuredRows> read =
        ReadMeasuredRows(absl::GetFlag(FLAGS_measured_from));
    if (!read.ok()) {
      std::cerr << read.status() << "\n";
      return 2;
    }
    saved = *std::move(read);
  }
  std::vector<Row> rows;
  std::cout << "graph\tplan\tmeasured_median_ms\tmeasured_min_ms\tspread\t"
               "predicted_calibrated_ms\tpredicted_uncalibrated_ms\n";
  for (const std::string& path : absl::GetFlag(FLAGS_graph)) {
    absl::StatusOr<graph::Graph> graph = registry.ImportFile(path, "auto", {});
    if (!graph.ok()) {
      std::cerr << graph.status() << "\n";
      return 1;
    }
    std::vector<Candidate> candidates = Candidates(*graph, nominal);
    if (chosen.count(path)) {
      absl::StatusOr<simulator::Plan> plan = simulator::LoadPlan(chosen[path]);
      if (!plan.ok()) {
        std::cerr << plan.status() << "\n";
        return 1;
      }
      candidates.push_back({"chosen:" + plan->method, *plan});
    }
    const std::string name = path.substr(path.find_last_of('/') + 1);
    for (const Candidate& c : candidates) {
      absl::StatusOr<double> cal = Predict(*graph, *calibrated, c.plan);
      absl::StatusOr<double> nom = Predict(*graph, nominal, c.plan);
      absl::StatusOr<ExecutionResult> measured = ExecutionResult();
      if (from_log) {
        auto it = saved.find({name, c.name});
        if (it == saved.end()) {
          measured = absl::NotFoundError("not in --measured_from");
        } else {
          measured = it->second;
        }
      } else if (!absl::GetFlag(FLAGS_predict_only)) {
        measured = executor.Execute(*graph, c.plan, MeasureOptions());
      }
      if (!cal.ok() || !nom.ok() || !measured.ok()) {
        std::cout << name << "\t" << c.name << "\tskipped: "
                  << (!measured.ok() ? measured.status()
                      : !cal.ok()    ? cal.status()
                                     : nom.status())
                  << "\n";
        continue;
      }
      Row row{name,
              c.name,
              measured->measured_step_time_s,
              measured->measured_min_step_time_s,
              measured->measured_spread,
              *cal,
              *nom};
      std::cout << absl::StrFormat("%s\t%s\t%.4f\t%.4f\t%.3f\t%.4f\t%.4f\n",
                                   name, c.name, row.measured_s * 1e3,
                                   row.measured_min_s * 1e3, row.spread,
                                   row.calibrated_s * 1e3, row.nominal_s * 1e3);
      rows.push_back(row);
    }
  }
  if (absl::GetFlag(FLAGS_predict_only) && !from_log) return 0;
  PrintSummary(rows);
  PrintSpeedups(rows);
  return 0;
}

}  // namespace
}  // namespace gopt::worker

int main(int argc, char** argv) {
  if (absl::Status s = gopt::util::RefuseRepeatedFlags(argc, argv); !s.ok()) {
    std::cerr << "gopt_executor_eval: " << s.message() << "\n";
    return 64;
  }
  absl::ParseCommandLine(argc, argv);
  gopt::graph::ImporterRegistry registry;
  gopt::graph::RegisterBuiltinImporters(&registry);
  gopt::worker::ExecutorOptions options;
  options.cpu_executors = absl::GetFlag(FLAGS_cpu_executors);
  options.cuda_devices = absl::GetFlag(FLAGS_cuda_devices);
  absl::StatusOr<std::unique_ptr<gopt::worker::Executor>> executor =
      gopt::worker::Executor::Create(options);
  if (!executor.ok()) {
    std::cerr << executor.status() << "\n";
    return 1;
  }
  if (!absl::GetFlag(FLAGS_real_ops).empty()) {
    return gopt::worker::PrintRealOps(**executor, registry);
  }
  std::string topology = absl::GetFlag(FLAGS_topology);
  if (const std::string out = absl::GetFlag(FLAGS_calibrate_out);
      !out.empty()) {
    if (!topology.empty()) {
      std::cerr << "gopt_executor_eval: give --topology or --calibrate_out, "
                   "not both\n";
      return 64;
    }
    if (int rc = gopt::worker::CalibrateInto(**executor, out); rc != 0) {
      return rc;
    }
    topology = out;
  }
  return gopt::worker::Evaluate(**executor, registry, topology);
}
