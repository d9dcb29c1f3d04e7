// Speed of the baseline heuristics on a synthetic 80,000-node layered graph
// on 8 devices (a100x8-nvlink): every placement heuristic, critical-path
// scheduling and greedy fusion. Each placement also reports the simulated
// step time of its plan (counter step_ms; oom = 1 when it does not fit).
//
//   build/bin/gopt_baselines_benchmark --benchmark_min_time=1
//
// The graph has 200 layers of 100 columns; each (layer, column) is a
// weight parameter, a 256x256x256 dot of the column's previous value with
// it, a relu, and an add of the relu with the neighbouring column's
// previous value: 4 nodes, so 80,000 nodes (plus 100 input parameters) and
// 100,000 edges.

#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/baselines/greedy_fusion.h"
#include "simulator/baselines/schedulers.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::simulator::baselines {
namespace {

using graph::DType;
using graph::MakeTensorType;
using graph::Node;
using graph::OpKind;

constexpr int kLayers = 200;
constexpr int kColumns = 100;
constexpr int64_t kSide = 256;

graph::Graph LayeredGraph() {
  graph::GraphBuilder builder("layered-80k", "generated");
  const int64_t elements = kSide * kSide;
  const int64_t bytes = 4 * elements;
  auto add = [&](std::string name, OpKind kind, double flops,
                 std::vector<int> inputs) {
    Node node;
    node.name = std::move(name);
    node.op = std::string(graph::OpKindName(kind));
    node.kind = kind;
    node.outputs = {MakeTensorType(DType::kF32, {kSide, kSide})};
    node.flops = flops;
    node.bytes_read = bytes * static_cast<int64_t>(inputs.size());
    node.bytes_written = kind == OpKind::kParameter ? 0 : bytes;
    const int id = builder.AddNode(std::move(node));
    for (size_t i = 0; i < inputs.size(); ++i) {
      builder.AddEdge(inputs[i], 0, id, static_cast<int32_t>(i));
    }
    return id;
  };
  std::vector<int> previous(kColumns);
  for (int c = 0; c < kColumns; ++c) {
    previous[c] = add(absl::StrCat("input", c), OpKind::kParameter, 0, {});
  }
  std::vector<int> next(kColumns);
  for (int layer = 0; layer < kLayers; ++layer) {
    for (int c = 0; c < kColumns; ++c) {
      const std::string suffix = absl::StrCat(".", layer, ".", c);
      // The first layer's inputs are parameters, so it has only its own
      // nodes' worth of weights; every layer adds 4 nodes per column.
      const int w = add("w" + suffix, OpKind::kParameter, 0, {});
      const int dot = add("dot" + suffix, OpKind::kDot,
                          2.0 * kSide * kSide * kSide, {previous[c], w});
      const int relu = add("relu" + suffix, OpKind::kElementwiseUnary,
                           static_cast<double>(elements), {dot});
      next[c] = add("add" + suffix, OpKind::kElementwiseBinary,
                    static_cast<double>(elements),
                    {relu, previous[(c + 1) % kColumns]});
    }
    previous.swap(next);
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
}

struct Fixture {
  Fixture()
      : graph(LayeredGraph()),
        topology(PresetTopology("a100x8-nvlink").value()) {
    RegisterBuiltinBaselines(&registry);
  }
  graph::Graph graph;
  Topology topology;
  RooflineCostModel cost_model;
  BaselineRegistry registry;
};

Fixture& GetFixture() {
  static Fixture* fixture = new Fixture();
  return *fixture;
}

void BM_Place(benchmark::State& state, std::string placer_name) {
  Fixture& f = GetFixture();
  const Placer* placer = f.registry.FindPlacer(placer_name).value();
  const BaselineContext context{f.graph, f.topology, f.cost_model, 1};
  for (auto _ : state) {
    absl::StatusOr<std::vector<int32_t>> device = placer->Place(context);
    if (!device.ok()) {
      state.SkipWithError(std::string(device.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(device->data());
  }
  Plan plan = DefaultPlan(f.graph);
  plan.device = placer->Place(context).value();
  const SimulationResult result =
      Simulator(f.graph, f.topology, f.cost_model).Simulate(plan).value();
  state.counters["step_ms"] = 1e3 * result.step_time_s;
  state.counters["oom"] = result.oom ? 1 : 0;
  state.counters["nodes"] = f.graph.num_nodes();
  state.counters["devices"] = f.topology.num_devices();
}

void BM_CriticalPathSchedule(benchmark::State& state) {
  Fixture& f = GetFixture();
  const BaselineContext context{f.graph, f.topology, f.cost_model, 1};
  const std::vector<int32_t> device =
      f.registry.FindPlacer("expert").value()->Place(context).value();
  const CriticalPathScheduler scheduler;
  for (auto _ : state) {
    benchmark::DoNotOptimize(scheduler.Schedule(context, device)->data());
  }
}

void BM_GreedyFusion(benchmark::State& state, FusionJoin join) {
  Fixture& f = GetFixture();
  const BaselineContext context{f.graph, f.topology, f.cost_model, 1};
  const std::vector<int32_t> device =
      f.registry.FindPlacer("expert").value()->Place(context).value();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        GreedyFusionGroups(f.graph, device, nullptr, join)->data());
  }
}

}  // namespace
}  // namespace gopt::simulator::baselines

int main(int argc, char** argv) {
  namespace b = gopt::simulator::baselines;
  for (const char* placer : {"single", "round-robin", "random", "expert",
                             "metis", "heft", "m-etf", "m-sct"}) {
    benchmark::RegisterBenchmark(
        (std::string("BM_Place/") + placer).c_str(),
        [placer](benchmark::State& state) { b::BM_Place(state, placer); })
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_CriticalPathSchedule",
                               b::BM_CriticalPathSchedule)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_GreedyFusion", [](benchmark::State& state) {
    b::BM_GreedyFusion(state, b::FusionJoin::kOneProducer);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_GreedyFusion/join", [](benchmark::State&
                                                              state) {
    b::BM_GreedyFusion(state, b::FusionJoin::kAllProducers);
  })->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
