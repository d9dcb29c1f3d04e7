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
//   build/bin/gopt_simulator_benchmark [--benchmark_filter=80000]

#include <benchmark/benchmark.h>

#include <random>

#include "absl/strings/str_cat.h"
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

}  // namespace
}  // namespace gopt::simulator

BENCHMARK_MAIN();
