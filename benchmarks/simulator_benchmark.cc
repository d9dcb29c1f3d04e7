// Simulator speed: one Simulate() call on layered random graphs of 1k to 1M
// nodes on 8 devices (h100x8-nvlink), with a random placement (many
// transfers: the hard case) and a contiguous one. Reports nodes/s and
// events/s (an event is a kernel or a transfer: the event loop's work grows
// with both, and a random placement sends about 1.5 transfers per node); the
// curve over sizes shows the O((N + E) log N) scaling. Times are of warm
// calls, as in training (Simulate reuses its per-thread working memory);
// the first call on a thread also faults that memory in: see it with
// --benchmark_repetitions=3 --benchmark_min_time=0.01 (the first
// repetition's only call is the thread's first).
//
// BM_SimulatePlanSearch compares pricing with the roofline and with a
// learned runtime model (learned_cost_model.h) on the plans of a search.
//
//   build/bin/gopt_simulator_benchmark [--benchmark_filter=80000]
//   build/bin/gopt_simulator_benchmark --benchmark_filter=PlanSearch

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/greedy_fusion.h"
#include "simulator/learned_cost_model.h"
#include "simulator/simulator.h"

namespace gopt::simulator {
namespace {

// `nodes` nodes in layers of 64; each reads two random nodes of the
// previous two layers. Deterministic (seed 1).
graph::Graph LayeredGraph(int nodes) {
  constexpr int kWidth = 64;
  std::mt19937_64 rng(1);
  graph::GraphBuilder builder(absl::StrCat("layered", nodes), "generated");
  for (int i = 0; i < nodes; ++i) {
    graph::Node node;
    node.name = absl::StrCat("n", i);
    node.op = "op";
    node.kind = i < kWidth ? graph::OpKind::kParameter
                           : graph::OpKind::kElementwiseBinary;
    node.outputs = {graph::MakeTensorType(graph::DType::kF32, {4096})};
    if (i >= kWidth) {
      node.flops = static_cast<double>(1'000'000 + rng() % 100'000'000);
      node.bytes_read = 32768;
      node.bytes_written = 16384;
    }
    const int id = builder.AddNode(std::move(node));
    if (i >= kWidth) {
      const int layer_start = (i / kWidth - 1) * kWidth;
      const int span =
          std::min(2 * kWidth, i - std::max(0, layer_start - kWidth));
      const int base = i - span - (i % kWidth);
      for (int input = 0; input < 2; ++input) {
        const int src = std::max(0, base) + static_cast<int>(rng() % span);
        builder.AddEdge(std::min(src, i - 1), 0, id, input);
      }
    }
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
}

void BM_Simulate(benchmark::State& state, bool random_placement) {
  const int nodes = static_cast<int>(state.range(0));
  const graph::Graph graph = LayeredGraph(nodes);
  const Topology topology = PresetTopology("h100x8-nvlink").value();
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  Plan plan = DefaultPlan(graph);
  std::mt19937 rng(2);
  for (int i = 0; i < nodes; ++i) {
    plan.device[i] = random_placement
                         ? static_cast<int>(rng() % 8)
                         : static_cast<int>(int64_t{i} * 8 / nodes);
  }
  SimulationOptions options;
  options.record_timeline = false;
  // Warm up: the first call on a thread sizes Simulate's working memory
  // (page faults); the timed calls reuse it, as training's do.
  const absl::StatusOr<SimulationResult> warm_up =
      simulator.Simulate(plan, options);
  if (!warm_up.ok()) {
    state.SkipWithError("simulation failed");
    return;
  }
  for (auto _ : state) {
    auto result = simulator.Simulate(plan, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result->step_time_s);
  }
  state.counters["nodes_per_s"] =
      benchmark::Counter(static_cast<double>(nodes),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["edges"] = graph.num_edges();
  state.counters["transfers"] = static_cast<double>(warm_up->num_transfers);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(warm_up->num_kernels + warm_up->num_transfers),
      benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Simulate, random_placement, true)
    ->RangeMultiplier(10)
    ->Range(1000, 1'000'000)
    ->Arg(80'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, contiguous_placement, false)
    ->RangeMultiplier(10)
    ->Range(1000, 1'000'000)
    ->Arg(80'000)
    ->Unit(benchmark::kMillisecond);

// A learned runtime model of the shipped shape (two hidden layers of 32)
// with seeded random weights, knowing every op kind: what it costs to
// price with one, whatever it predicts.
std::shared_ptr<const LearnedCostModel> RandomRuntimeModel() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> weight(-0.1f, 0.1f);
  RuntimeModelParams params;
  params.dense_mean.assign(kDenseKernelFeatures, 0);
  params.dense_scale.assign(kDenseKernelFeatures, 1);
  int inputs = kKernelFeatures;
  for (int outputs : {32, 32, 1}) {
    DenseLayer layer;
    layer.inputs = inputs;
    layer.outputs = outputs;
    for (int i = 0; i < inputs * outputs; ++i) {
      layer.weights.push_back(weight(rng));
    }
    layer.bias.assign(outputs, 0);
    params.layers.push_back(layer);
    inputs = outputs;
  }
  for (int k = 0; k < graph::kNumOpKinds; ++k) {
    params.known_kinds.push_back(static_cast<graph::OpKind>(k));
  }
  return std::make_shared<const LearnedCostModel>(params);
}

// What a plan search does: simulate many different plans of one graph
// (10,000 nodes, h100x8-nvlink, whose fusion groups are one kernel each and
// so priced per plan): 16 plans, each a seeded random contiguous placement
// with greedy fusion groups, simulated in turn; with the roofline or a
// learned runtime model (`learned`). Reports simulations/s; the learned
// model's cache of kernel predictions fills in the warm-up round.
void BM_SimulatePlanSearch(benchmark::State& state, bool learned) {
  const graph::Graph graph = LayeredGraph(10'000);
  Topology topology = PresetTopology("h100x8-nvlink").value();
  if (learned) {
    const auto model = RandomRuntimeModel();
    for (DeviceProfile& device : topology.devices) device.runtime_model = model;
  }
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  std::vector<Plan> plans;
  std::mt19937 rng(4);
  for (int p = 0; p < 16; ++p) {
    Plan plan = DefaultPlan(graph);
    const int cut = 1 + static_cast<int>(rng() % 7);
    for (int i = 0; i < graph.num_nodes(); ++i) {
      plan.device[i] =
          static_cast<int>(int64_t{i} * cut / graph.num_nodes() + rng() % 2);
    }
    plan.fusion_group =
        baselines::GreedyFusionGroups(graph, plan.device, nullptr).value();
    plans.push_back(std::move(plan));
  }
  SimulationOptions options;
  options.record_timeline = false;
  for (const Plan& plan : plans) {  // warm up
    if (!simulator.Simulate(plan, options).ok()) {
      state.SkipWithError("simulation failed");
      return;
    }
  }
  size_t next = 0;
  for (auto _ : state) {
    auto result = simulator.Simulate(plans[next], options);
    next = (next + 1) % plans.size();
    benchmark::DoNotOptimize(result->step_time_s);
  }
  state.counters["simulations_per_s"] =
      benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_SimulatePlanSearch, roofline, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulatePlanSearch, learned_runtime_model, true)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gopt::simulator

BENCHMARK_MAIN();
