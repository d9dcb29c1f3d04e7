#include "worker/calibration.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/hlo/hlo_importers.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"

namespace gopt::worker {
namespace {

using simulator::OpCostClass;

// A micro-benchmark: an HLO module whose node named "op" is measured.
struct Bench {
  std::string name;
  OpCostClass op_class;
  std::string hlo;
};

std::string Dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    absl::StrAppend(&s, i ? "," : "", dims[i]);
  }
  return s;
}

Bench DotBench(int64_t n) {
  return {absl::StrCat("dot ", n, "x", n, "x", n), OpCostClass::kDot,
          absl::StrFormat(R"(HloModule dot
ENTRY main {
  a = f32[%d,%d] parameter(0)
  b = f32[%d,%d] parameter(1)
  ROOT op = f32[%d,%d] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                          n, n, n, n, n, n)};
}

Bench ConvBench(int64_t hw, int64_t c) {
  return {absl::StrCat("convolution 1x", hw, "x", hw, "x", c, " 3x3"),
          OpCostClass::kConvolution,
          absl::StrFormat(R"(HloModule conv
ENTRY main {
  x = f32[1,%d,%d,%d] parameter(0)
  w = f32[3,3,%d,%d] parameter(1)
  ROOT op = f32[1,%d,%d,%d] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})",
                          hw, hw, c, c, c, hw, hw, c)};
}

Bench ElementwiseBench(int64_t n) {
  return {absl::StrCat("elementwise add f32[", n, "]"),
          OpCostClass::kElementwise,
          absl::StrFormat(R"(HloModule add
ENTRY main {
  a = f32[%d] parameter(0)
  b = f32[%d] parameter(1)
  ROOT op = f32[%d] add(a, b)
})",
                          n, n, n)};
}

Bench ReduceBench(int64_t rows) {
  return {absl::StrCat("reduce f32[", rows, ",1024]"), OpCostClass::kReduction,
          absl::StrFormat(R"(HloModule reduce
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[%d,1024] parameter(0)
  z = f32[] constant(0)
  ROOT op = f32[%d] reduce(a, z), dimensions={1}, to_apply=sum
})",
                          rows, rows)};
}

Bench TransposeBench(int64_t n) {
  return {absl::StrCat("transpose f32[", n, ",", n, "]"),
          OpCostClass::kDataMovement,
          absl::StrFormat(R"(HloModule transpose
ENTRY main {
  a = f32[%d,%d] parameter(0)
  ROOT op = f32[%d,%d] transpose(a), dimensions={1,0}
})",
                          n, n, n, n)};
}

// `length` tiny dependent ops: the step time per op is the executor's
// dispatch overhead.
std::string ChainHlo(int length) {
  std::string hlo =
      "HloModule chain\nENTRY main {\n  v0 = f32[8] parameter(0)\n";
  for (int i = 1; i <= length; ++i) {
    absl::StrAppend(&hlo, i == length ? "  ROOT " : "  ", "v", i,
                    " = f32[8] negate(v", i - 1, ")\n");
  }
  return hlo + "}\n";
}

// Two negations of f32[n]: the second on device 1 receives the first's
// output over the link.
std::string TransferHlo(int64_t n) {
  return absl::StrFormat(R"(HloModule transfer
ENTRY main {
  a = f32[%d] parameter(0)
  x = f32[%d] negate(a)
  ROOT y = f32[%d] negate(x)
})",
                         n, n, n);
}

// A chain of `length` elementwise ops on f32[n] (add, multiply, maximum,
// subtract, repeating), each reading the previous one's output and a
// parameter: what a fusion group of cheap ops looks like.
std::string ElementwiseChainHlo(int64_t n, int length) {
  std::string hlo = absl::StrFormat(
      "HloModule fusion\nENTRY main {\n  a = f32[%d] parameter(0)\n"
      "  b = f32[%d] parameter(1)\n  v0 = f32[%d] negate(a)\n",
      n, n, n);
  const char* ops[] = {"add", "multiply", "maximum", "subtract"};
  for (int i = 1; i <= length; ++i) {
    absl::StrAppendFormat(&hlo, "  %sv%d = f32[%d] %s(v%d, %s)\n",
                          i == length ? "ROOT " : "", i, n, ops[i % 4], i - 1,
                          i % 2 ? "b" : "a");
  }
  return hlo + "}\n";
}

// Chains a (first) and b of `length` adds on f32[8], each add reading the
// chain's previous value and, from `lag` steps back, the other chain's
// value (`cross`) or its own (not `cross`); the chains start from
// parameters pa and pb and end in a tuple.
std::string ExchangeHlo(int length, int lag, bool cross) {
  std::string hlo =
      "HloModule exchange\nENTRY main {\n  pa = f32[8] parameter(0)\n"
      "  pb = f32[8] parameter(1)\n  a0 = f32[8] negate(pa)\n"
      "  b0 = f32[8] negate(pb)\n";
  for (int i = 1; i < length; ++i) {
    for (const char* chain : {"a", "b"}) {
      const char* other = chain[0] == 'a' ? "b" : "a";
      const std::string far =
          i < lag ? absl::StrCat("p", chain)
                  : absl::StrCat(cross ? other : chain, i - lag);
      absl::StrAppend(&hlo, "  ", chain, i, " = f32[8] add(", chain, i - 1,
                      ", ", far, ")\n");
    }
  }
  absl::StrAppend(&hlo, "  ROOT out = (f32[8], f32[8]) tuple(a", length - 1,
                  ", b", length - 1, ")\n}\n");
  return hlo;
}

absl::StatusOr<graph::Graph> ParseHlo(const std::string& hlo) {
  std::unique_ptr<graph::Importer> importer = graph::NewHloTextImporter();
  return importer->Import(hlo, graph::ImportOptions());
}

// Runs `graph` under `plan` and returns the result (measured as options say).
absl::StatusOr<ExecutionResult> Measure(Executor& executor,
                                        const graph::Graph& graph,
                                        const simulator::Plan& plan,
                                        const CalibrationOptions& options,
                                        bool per_node_times = true) {
  ExecuteOptions execute;
  // Per-node times wait for each node's kernels on accelerators: only
  // where a node's own time is wanted.
  execute.per_node_times = per_node_times;
  execute.warmup_runs = 2;
  execute.min_repeats = options.quick ? 3 : 5;
  execute.max_repeats = options.quick ? 20 : 200;
  execute.min_measure_seconds = options.min_measure_seconds;
  execute.timeout_seconds = 120;
  return executor.Execute(graph, plan, execute);
}

// A name for what ran on `device`: `what` on device 0 (the names earlier
// calibrations printed), else `what` followed by the device's name.
std::string OnDevice(const Executor& executor, int device,
                     const std::string& what) {
  return device == 0
             ? what
             : absl::StrCat(what, " on ", executor.Describe()[device].name);
}

// `graph`'s plan with every node on `device`.
simulator::Plan AllOn(const graph::Graph& graph, int device) {
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.device.assign(graph.num_nodes(), device);
  return plan;
}

// Measures every benchmark's "op" node on `device`.
absl::Status RunBenches(Executor& executor, const std::vector<Bench>& benches,
                        const CalibrationOptions& options, int device,
                        CalibrationResult* result) {
  for (const Bench& bench : benches) {
    ASSIGN_OR_RETURN(graph::Graph graph, ParseHlo(bench.hlo));
    const std::optional<graph::NodeId> op = graph.FindNode("op");
    if (!op.has_value()) {
      return absl::InternalError(absl::StrCat(bench.name, ": no node 'op'"));
    }
    ASSIGN_OR_RETURN(ExecutionResult measured,
                     Measure(executor, graph, AllOn(graph, device), options));
    const graph::Node& node = graph.node(*op);
    result->points.push_back(CalibrationPoint{
        OnDevice(executor, device, bench.name),
        std::string(simulator::OpCostClassName(bench.op_class)), node.flops,
        node.bytes_read + node.bytes_written, measured.per_node_seconds[*op],
        device});
  }
  return absl::OkStatus();
}

// The micro-benchmarks: for a CPU executor, or `large` ones for an
// accelerator (whose fixed costs would hide the slopes of the CPU sizes).
std::vector<Bench> Benches(bool quick, bool large) {
  using Sizes = std::vector<int64_t>;
  using ConvSizes = std::vector<std::pair<int64_t, int64_t>>;
  std::vector<Bench> benches;
  const Sizes dots =
      large ? (quick ? Sizes{256, 1024} : Sizes{256, 512, 1024, 2048, 4096})
            : (quick ? Sizes{32, 128} : Sizes{32, 64, 128, 256, 384, 512});
  for (int64_t n : dots) benches.push_back(DotBench(n));
  const ConvSizes convs =
      large
          ? (quick ? ConvSizes{{28, 64}, {56, 128}}
                   : ConvSizes{{28, 64},
                               {56, 64},
                               {56, 128},
                               {112, 128},
                               {28, 512}})
          : (quick
                 ? ConvSizes{{8, 16}, {16, 32}}
                 : ConvSizes{{8, 16}, {16, 32}, {28, 64}, {14, 128}, {56, 64}});
  for (auto [hw, c] : convs) benches.push_back(ConvBench(hw, c));
  const Sizes sizes =
      large ? (quick ? Sizes{1 << 18, 1 << 22}
                     : Sizes{1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26})
            : (quick ? Sizes{1 << 12, 1 << 16}
                     : Sizes{1 << 12, 1 << 15, 1 << 18, 1 << 20, 1 << 22});
  for (int64_t n : sizes) {
    benches.push_back(ElementwiseBench(n));
    benches.push_back(ReduceBench(std::max<int64_t>(1, n / 1024)));
    benches.push_back(TransposeBench(
        static_cast<int64_t>(std::sqrt(static_cast<double>(n)))));
  }
  return benches;
}

// Points of one class measured on `device` as (x, seconds), x = FLOPs
// (compute) or bytes.
void ClassSeries(const CalibrationResult& result, OpCostClass op_class,
                 bool by_flops, int device, std::vector<double>* x,
                 std::vector<double>* t) {
  const std::string name(simulator::OpCostClassName(op_class));
  for (const CalibrationPoint& p : result.points) {
    if (p.op_class != name || p.device != device) continue;
    x->push_back(by_flops ? p.flops : static_cast<double>(p.bytes));
    t->push_back(p.seconds);
  }
}

}  // namespace

// Link bandwidth and latency: the step time a transfer between devices 0
// and 1 adds to two dependent ops, by size; used for every pair.
absl::Status CalibrateLinks(Executor& executor,
                            const CalibrationOptions& options,
                            simulator::Topology* topology,
                            CalibrationResult* result) {
  const std::vector<int64_t> sizes =
      options.quick
          ? std::vector<int64_t>{1 << 12, 1 << 18}
          : std::vector<int64_t>{1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22};
  const bool mixed = topology->devices[0].kind != topology->devices[1].kind;
  std::vector<double> x, t;
  for (int64_t n : sizes) {
    ASSIGN_OR_RETURN(graph::Graph graph, ParseHlo(TransferHlo(n)));
    simulator::Plan local = simulator::DefaultPlan(graph);
    simulator::Plan split = local;
    split.device[*graph.FindNode("y")] = 1;
    ASSIGN_OR_RETURN(ExecutionResult a,
                     Measure(executor, graph, local, options));
    ASSIGN_OR_RETURN(ExecutionResult b,
                     Measure(executor, graph, split, options));
    // Between devices of different kinds the two negations take different
    // times in the two plans: each run's own node times come off.
    const auto nodes_s = [&](const ExecutionResult& r) {
      return r.per_node_seconds[*graph.FindNode("x")] +
             r.per_node_seconds[*graph.FindNode("y")];
    };
    const double transfer_s =
        std::max(1e-9, mixed ? (b.measured_step_time_s - nodes_s(b)) -
                                   (a.measured_step_time_s - nodes_s(a))
                             : b.measured_step_time_s - a.measured_step_time_s);
    result->points.push_back(
        CalibrationPoint{absl::StrCat("copy ", 4 * n, " B device 0 -> 1"),
                         "copy", 0, 4 * n, transfer_s});
    x.push_back(4.0 * n);
    t.push_back(transfer_s);
  }
  // Noise (another load on the host) can bend the line, or leave one size
  // with no measurable transfer time (1e-9 s against 1e-3 s: too far apart
  // for a relative fit): then the largest transfer gives the bandwidth and
  // the smallest the latency.
  absl::StatusOr<std::pair<double, double>> fitted = FitRelativeLine(x, t);
  const bool noisy = !fitted.ok() || !(fitted->first > 0) || fitted->second < 0;
  const std::pair<double, double> fit =
      noisy ? std::make_pair(t.back() / x.back(), t.front()) : *fitted;
  const simulator::Link link{std::clamp(1 / fit.first, 1.0, 1e16),
                             std::clamp(fit.second, 0.0, 10.0)};
  for (simulator::Link& l : topology->links) l = link;
  result->notes.push_back(absl::StrFormat(
      "links: %.3g B/s, latency %.3g s (device 0 -> 1, %d sizes)%s",
      link.bandwidth_bytes_per_s, link.latency_s, sizes.size(),
      noisy ? "; noisy: the times did not make a growing line (other load "
              "on this host?): calibrate again on an idle host"
            : ""));
  return absl::OkStatus();
}

// The device time per transfer: ExchangeHlo's chains with the b chain on
// device 1, reading each other's values (cross) and their own (apart). The
// lag keeps every transfer off the critical path, so the difference is what
// the transfers take from the devices' time; the simulator's difference is
// linear in device_overhead_s (each device sends and receives one transfer
// per step), so one probe turns the measured difference into the field.
absl::Status CalibrateTransferOverhead(Executor& executor,
                                       const CalibrationOptions& options,
                                       simulator::Topology* topology,
                                       CalibrationResult* result) {
  if (topology->num_devices() < 2) {
    return absl::FailedPreconditionError(
        "the transfer overhead needs two devices");
  }
  const int length = options.quick ? 64 : 256;
  const int lag = options.quick ? 16 : 32;
  std::vector<graph::Graph> graphs;
  std::array<simulator::Plan, 2> plans;
  for (bool cross : {false, true}) {
    ASSIGN_OR_RETURN(graph::Graph parsed,
                     ParseHlo(ExchangeHlo(length, lag, cross)));
    graphs.push_back(std::move(parsed));
    const graph::Graph& graph = graphs[cross];
    plans[cross] = simulator::DefaultPlan(graph);
    for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
      const std::string& name = graph.node(id).name;
      if (name[0] == 'b' || name == "pb") plans[cross].device[id] = 1;
    }
  }
  // The fastest run of several rounds, the two variants alternating: what
  // a transfer costs is a floor that other load on the host only adds to,
  // and alternating spreads a change of load over both.
  constexpr int kRounds = 3;
  std::array<double, 2> measured_s{std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::infinity()};
  for (int round = 0; round < kRounds; ++round) {
    for (bool cross : {false, true}) {
      ASSIGN_OR_RETURN(ExecutionResult run,
                       Measure(executor, graphs[cross], plans[cross], options));
      measured_s[cross] =
          std::min(measured_s[cross], run.measured_min_step_time_s);
    }
  }
  for (bool cross : {false, true}) {
    result->points.push_back(CalibrationPoint{
        absl::StrCat("two chains of ", length, " adds f32[8], ",
                     cross ? "exchanging values" : "apart"),
        "transfer", 0, 0, measured_s[cross]});
  }
  // The simulated difference at overhead 0 and at a probe.
  constexpr double kProbeS = 1e-5;
  const simulator::RooflineCostModel roofline;
  std::array<double, 2> predicted_s{};
  for (double overhead_s : {0.0, kProbeS}) {
    simulator::Topology probe = *topology;
    for (simulator::Link& l : probe.links) l.device_overhead_s = overhead_s;
    std::array<double, 2> step_s{};
    for (bool cross : {false, true}) {
      const simulator::Simulator simulator(graphs[cross], probe, roofline);
      simulator::SimulationOptions sim;
      sim.record_timeline = false;
      ASSIGN_OR_RETURN(simulator::SimulationResult r,
                       simulator.Simulate(plans[cross], sim));
      step_s[cross] = r.step_time_s;
    }
    predicted_s[overhead_s > 0] = step_s[1] - step_s[0];
  }
  const double slope = (predicted_s[1] - predicted_s[0]) / kProbeS;
  const double measured_difference_s = measured_s[1] - measured_s[0];
  const double overhead_s =
      slope > 0 ? std::clamp((measured_difference_s - predicted_s[0]) / slope,
                             0.0, 1e-3)
                : 0.0;
  for (simulator::Link& l : topology->links) l.device_overhead_s = overhead_s;
  result->notes.push_back(absl::StrFormat(
      "transfers: %.3g s of device time per transfer at each end (two chains "
      "of %d ops exchanging values: %.3g s vs %.3g s apart; simulated "
      "difference %.3g s + %.3g per second of overhead)",
      overhead_s, length, measured_s[1], measured_s[0], predicted_s[0], slope));
  return absl::OkStatus();
}

// Whether a fusion group saves anything here: an elementwise chain, by
// size, measured unfused and as one fusion group; the measured ratio
// (group / unfused) is compared with the ratio the simulator predicts when
// groups run as one kernel and when they run op by op, and the closer rule
// (in log ratio, summed over the sizes) is written into every device.
absl::Status CalibrateFusion(Executor& executor,
                             const CalibrationOptions& options,
                             simulator::Topology* topology,
                             CalibrationResult* result) {
  constexpr int kLength = 8;
  const std::vector<int64_t> sizes =
      options.quick ? std::vector<int64_t>{1 << 12}
                    : std::vector<int64_t>{1 << 12, 1 << 16, 1 << 20};
  const simulator::RooflineCostModel roofline;
  double one_kernel_error = 0;
  double op_by_op_error = 0;
  int runs_fused = 0;
  std::string measured;
  for (int64_t n : sizes) {
    ASSIGN_OR_RETURN(graph::Graph graph,
                     ParseHlo(ElementwiseChainHlo(n, kLength)));
    const simulator::Plan unfused = simulator::DefaultPlan(graph);
    simulator::Plan grouped = unfused;
    grouped.fusion_group.assign(graph.num_nodes(), -1);
    for (int i = 0; i <= kLength; ++i) {
      grouped.fusion_group[*graph.FindNode(absl::StrCat("v", i))] = 0;
    }
    ASSIGN_OR_RETURN(ExecutionResult a,
                     Measure(executor, graph, unfused, options));
    ASSIGN_OR_RETURN(ExecutionResult b,
                     Measure(executor, graph, grouped, options));
    runs_fused += b.fused_groups_run_fused;
    const double ratio = b.measured_step_time_s / a.measured_step_time_s;
    result->points.push_back(
        CalibrationPoint{absl::StrCat("chain of ", kLength + 1,
                                      " elementwise f32[", n, "] unfused"),
                         "fusion", 0, 0, a.measured_step_time_s});
    result->points.push_back(
        CalibrationPoint{absl::StrCat("chain of ", kLength + 1,
                                      " elementwise f32[", n, "] as one group"),
                         "fusion", 0, 0, b.measured_step_time_s});
    simulator::Topology rule = *topology;
    std::array<double, 2> predicted_ratio{};
    for (bool op_by_op : {false, true}) {
      for (simulator::DeviceProfile& d : rule.devices) {
        d.fused_groups_run_op_by_op = op_by_op;
      }
      const simulator::Simulator simulator(graph, rule, roofline);
      simulator::SimulationOptions sim;
      sim.record_timeline = false;
      ASSIGN_OR_RETURN(simulator::SimulationResult p,
                       simulator.Simulate(unfused, sim));
      ASSIGN_OR_RETURN(simulator::SimulationResult q,
                       simulator.Simulate(grouped, sim));
      predicted_ratio[op_by_op] = q.step_time_s / p.step_time_s;
    }
    one_kernel_error += std::abs(std::log(ratio / predicted_ratio[0]));
    op_by_op_error += std::abs(std::log(ratio / predicted_ratio[1]));
    absl::StrAppendFormat(&measured, "%s f32[%d] %.2f (one kernel %.2f)",
                          measured.empty() ? "" : ",", n, ratio,
                          predicted_ratio[0]);
  }
  const bool op_by_op = op_by_op_error <= one_kernel_error;
  for (simulator::DeviceProfile& d : topology->devices) {
    d.fused_groups_run_op_by_op = op_by_op;
  }
  result->notes.push_back(absl::StrFormat(
      "fusion: a group of %d elementwise ops takes x the unfused time: %s; "
      "%d group run(s) fused by the executor; groups priced %s",
      kLength + 1, measured, runs_fused,
      op_by_op ? "op by op (fused_groups_run_op_by_op)" : "as one kernel"));
  return absl::OkStatus();
}

absl::StatusOr<std::pair<double, double>> FitRelativeLine(
    const std::vector<double>& x, const std::vector<double>& t) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size() && i < t.size(); ++i) {
    if (!(t[i] > 0)) continue;
    const double w = 1 / (t[i] * t[i]);
    sw += w;
    sx += w * x[i];
    sy += w * t[i];
    sxx += w * x[i] * x[i];
    sxy += w * x[i] * t[i];
  }
  const double det = sw * sxx - sx * sx;
  if (!(std::abs(det) > 1e-12 * std::max(1.0, sw * sxx))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a line needs at least two points with distinct x and "
        "positive t; got x = [",
        absl::StrJoin(x, ", "), "], t = [", absl::StrJoin(t, ", "), "]"));
  }
  const double slope = (sw * sxy - sx * sy) / det;
  const double intercept = (sy - slope * sx) / sw;
  return std::make_pair(slope, intercept);
}

absl::StatusOr<std::pair<double, double>> FitGrowingLine(
    const std::vector<double>& x, const std::vector<double>& t, bool* noisy) {
  absl::StatusOr<std::pair<double, double>> fit = FitRelativeLine(x, t);
  if (fit.ok() && fit->first > 0) return *fit;
  std::optional<size_t> largest;
  for (size_t i = 0; i < x.size() && i < t.size(); ++i) {
    if (t[i] > 0 && x[i] > 0 && (!largest.has_value() || x[i] > x[*largest])) {
      largest = i;
    }
  }
  if (!largest.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no size of ", x.size(), " gave a positive time to fit a line to"));
  }
  *noisy = true;
  return std::make_pair(t[*largest] / x[*largest], 0.0);
}

namespace {

// Measures `device`'s micro-benchmarks and dispatch chain and fits its
// profile, starting from the executor's nominal one; adds the points and
// notes (named after the device unless it is device 0) to `result`.
absl::StatusOr<simulator::DeviceProfile> FitDevice(
    Executor& executor, const CalibrationOptions& options, int device_index,
    CalibrationResult* result) {
  simulator::DeviceProfile device =
      executor.HostTopology().devices[device_index];
  const bool large = device.kind != simulator::DeviceKind::kCpu;
  RETURN_IF_ERROR(RunBenches(executor, Benches(options.quick, large), options,
                             device_index, result));
  const std::string prefix =
      device_index == 0
          ? ""
          : absl::StrCat(executor.Describe()[device_index].name, " ");
  // Dispatch: the per-op step time of a chain of tiny ops.
  const int chain = options.quick ? 32 : 128;
  ASSIGN_OR_RETURN(graph::Graph chain_graph, ParseHlo(ChainHlo(chain)));
  ASSIGN_OR_RETURN(
      ExecutionResult chain_run,
      Measure(executor, chain_graph, AllOn(chain_graph, device_index), options,
              /*per_node_times=*/false));
  const double launch_s = chain_run.measured_step_time_s / chain;
  result->points.push_back(CalibrationPoint{
      OnDevice(executor, device_index,
               absl::StrCat("chain of ", chain, " negate f32[8]")),
      "dispatch", 0, 0, launch_s, device_index});

  std::vector<double> x, t;
  bool noisy = false;
  ClassSeries(*result, OpCostClass::kDot, true, device_index, &x, &t);
  ASSIGN_OR_RETURN(auto dot_fit, FitGrowingLine(x, t, &noisy));
  if (!(dot_fit.first > 0)) {
    return absl::InternalError(
        absl::StrCat(prefix, "dot time does not grow with FLOPs"));
  }
  device.peak_f32_flops = 1 / dot_fit.first;
  device.peak_f64_flops = device.peak_f32_flops / 2;
  device.peak_f16_flops = 0;
  device.launch_overhead_s = std::min(launch_s, 1.0);
  result->notes.push_back(absl::StrFormat(
      "%sdot: %.3g FLOP/s (the device peak) from %d sizes, intercept %.3g s",
      prefix, device.peak_f32_flops, x.size(), dot_fit.second));
  result->notes.push_back(
      absl::StrFormat("%sdispatch: %.3g s per op (chain of %d tiny ops)",
                      prefix, launch_s, chain));
  // Memory-bound classes: bandwidth from the byte slope.
  double best_bandwidth = 0;
  std::array<double, simulator::kNumOpCostClasses> bandwidth{};
  std::array<double, simulator::kNumOpCostClasses> intercept{};
  for (OpCostClass c : {OpCostClass::kElementwise, OpCostClass::kReduction,
                        OpCostClass::kDataMovement}) {
    x.clear();
    t.clear();
    ClassSeries(*result, c, false, device_index, &x, &t);
    ASSIGN_OR_RETURN(auto fit, FitGrowingLine(x, t, &noisy));
    const int i = static_cast<int>(c);
    bandwidth[i] = fit.first > 0 ? 1 / fit.first : 0;
    intercept[i] = std::max(0.0, fit.second);
    best_bandwidth = std::max(best_bandwidth, bandwidth[i]);
  }
  if (!(best_bandwidth > 0)) {
    return absl::InternalError(
        absl::StrCat(prefix, "memory-bound ops do not grow with bytes"));
  }
  device.memory_bandwidth_bytes_per_s = best_bandwidth;
  for (OpCostClass c : {OpCostClass::kElementwise, OpCostClass::kReduction,
                        OpCostClass::kDataMovement}) {
    const int i = static_cast<int>(c);
    device.op_curves[i] = simulator::OpClassCurve{
        1.0, 0.0, std::clamp(bandwidth[i] / best_bandwidth, 1e-3, 1.0),
        std::min(1.0, launch_s + intercept[i])};
    result->notes.push_back(
        absl::StrFormat("%s%s: %.3g B/s, intercept %.3g s", prefix,
                        std::string(simulator::OpCostClassName(c)),
                        bandwidth[i], intercept[i]));
  }
  // Compute classes: efficiency relative to the dot peak, intercept as the
  // half-efficiency time.
  for (OpCostClass c : {OpCostClass::kDot, OpCostClass::kConvolution}) {
    x.clear();
    t.clear();
    ClassSeries(*result, c, true, device_index, &x, &t);
    ASSIGN_OR_RETURN(auto fit, FitGrowingLine(x, t, &noisy));
    const double efficiency =
        fit.first > 0 ? std::clamp(dot_fit.first / fit.first, 1e-3, 1.0) : 1.0;
    const double half_s = std::clamp(fit.second * efficiency, 0.0, 1.0);
    device.op_curves[static_cast<int>(c)] = simulator::OpClassCurve{
        efficiency, half_s, 1.0, device.launch_overhead_s};
    result->notes.push_back(absl::StrFormat(
        "%s%s: efficiency %.3g of the peak, half-efficiency time %.3g s",
        prefix, std::string(simulator::OpCostClassName(c)), efficiency,
        half_s));
  }
  device.max_efficiency = 1.0;
  if (noisy) {
    result->notes.push_back(absl::StrCat(
        prefix,
        "noisy: a class's times did not grow with size (other load on this "
        "host?); its line goes through its largest size's point: calibrate "
        "again on an idle host"));
  }
  return device;
}

}  // namespace

absl::StatusOr<CalibrationResult> Calibrate(Executor& executor,
                                            const CalibrationOptions& options) {
  CalibrationResult result;
  simulator::Topology topology = executor.HostTopology();
  // The first device of each kind is measured; the others of its kind take
  // its profile.
  std::vector<std::string> measured_names;
  for (int i = 0; i < topology.num_devices(); ++i) {
    const simulator::DeviceKind kind = topology.devices[i].kind;
    bool measured = false;
    for (int j = 0; j < i; ++j) measured |= topology.devices[j].kind == kind;
    if (measured) continue;
    ASSIGN_OR_RETURN(simulator::DeviceProfile device,
                     FitDevice(executor, options, i, &result));
    measured_names.push_back(executor.Describe()[i].name);
    for (simulator::DeviceProfile& d : topology.devices) {
      if (d.kind == kind) d = device;
    }
  }
  if (topology.num_devices() >= 2) {
    RETURN_IF_ERROR(CalibrateLinks(executor, options, &topology, &result));
    RETURN_IF_ERROR(
        CalibrateTransferOverhead(executor, options, &topology, &result));
  }
  RETURN_IF_ERROR(CalibrateFusion(executor, options, &topology, &result));
  topology.name = "calibrated";
  topology.source = absl::StrCat(
      "gopt calibrate: micro-benchmarks through the executor on ",
      absl::StrJoin(measured_names, ", "), " (each for its kind), ",
      topology.num_devices(), " device(s)");
  result.topology = std::move(topology);
  return result;
}

absl::StatusOr<CalibrationResult> CalibratePart(
    Executor& executor, const CalibrationOptions& options,
    absl::string_view part, simulator::Topology base) {
  if (base.num_devices() != executor.HostTopology().num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the topology to update has ", base.num_devices(),
                     " device(s); the executor has ",
                     executor.HostTopology().num_devices()));
  }
  CalibrationResult result;
  if (part == "links") {
    RETURN_IF_ERROR(CalibrateLinks(executor, options, &base, &result));
  } else if (part == "transfer-overhead") {
    RETURN_IF_ERROR(
        CalibrateTransferOverhead(executor, options, &base, &result));
  } else if (part == "fusion") {
    RETURN_IF_ERROR(CalibrateFusion(executor, options, &base, &result));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown calibration part '", part,
                     "'; expected links, transfer-overhead or fusion"));
  }
  base.source = absl::StrCat(base.source, "; ", part,
                             " re-measured by gopt calibrate --only=", part);
  result.topology = std::move(base);
  return result;
}

absl::Status WriteTopologyJson(const simulator::Topology& topology,
                               const std::string& path) {
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  print.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(
      simulator::TopologyToProto(topology), &json, print);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("encoding the topology: ", status.ToString()));
  }
  std::ofstream out(path);
  out << json;
  out.close();
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write the topology to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace gopt::worker
