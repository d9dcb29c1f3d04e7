// Speed of the GO policy on this host: zero-shot decisions (featurization +
// network + greedy decode of placement, scheduling and fusion) for graphs of
// about 10,000 and 80,000 nodes, and one PPO step on a 3,579-node graph.
//
//   build/bin/gopt_go_benchmark --benchmark_min_time=1
//
// The second argument of the zero-shot benchmark is LibTorch's intra-op
// thread count: inference shares the network's blocks among them; the
// third is 1 for a network with the co-location head (per-edge logits,
// GoModelOptions::co_location_head), 0 without.

#include <benchmark/benchmark.h>
#include <glog/logging.h>

#include <map>
#include <memory>

#include "policy/go/actions.h"
#include "policy/go/co_location_decode.h"
#include "policy/go/features.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/generators/generators.h"
#include "simulator/topology.h"
#include "util/malloc_tuning.h"

namespace gopt::policy::go {
namespace {

// gnmt training-step graphs: 4 layers, 27 steps (10,018 nodes); 8 layers,
// 128 steps (gnmt8-80k, 84,699 nodes); 2 layers, 16 steps (3,579 nodes).
const graph::Graph& BenchGraph(int approx_nodes) {
  static auto* graphs = new std::map<int, graph::Graph>;
  auto it = graphs->find(approx_nodes);
  if (it != graphs->end()) return it->second;
  simulator::generators::GeneratorOptions options;
  options.family = "gnmt";
  if (approx_nodes == 10000) {
    options.layers = 4;
    options.seq = 27;
  } else if (approx_nodes == 80000) {
    options = simulator::generators::FindGeneratorPreset("gnmt8-80k")->options;
  } else {
    options =
        simulator::generators::FindGeneratorPreset("gnmt2-small")->options;
  }
  absl::StatusOr<graph::Graph> graph =
      simulator::generators::GenerateModelGraph(options);
  CHECK(graph.ok()) << graph.status();
  return graphs->emplace(approx_nodes, *std::move(graph)).first->second;
}

// The default architecture, with or without the co-location head.
const GoModel& Model(bool co_location_head = false) {
  auto create = [](bool head) {
    GoModelOptions options;
    options.co_location_head = head;
    return GoModel::Create(options)->release();
  };
  static const GoModel* without_head = create(false);
  static const GoModel* with_head = create(true);
  return co_location_head ? *with_head : *without_head;
}

// Arguments: approximate node count, LibTorch threads, co-location head
// (0 or 1).
void BM_ZeroShotDecisions(benchmark::State& state) {
  SetTorchThreads(static_cast<int>(state.range(1)));
  const graph::Graph& graph = BenchGraph(static_cast<int>(state.range(0)));
  const simulator::Topology topology =
      *simulator::PresetTopology("h100x8-nvlink");
  simulator::RooflineCostModel cost_model;
  const GoModel& model = Model(state.range(2) != 0);
  auto decide = [&] {
    absl::StatusOr<GraphFeatures> features =
        Featurize(graph, topology, cost_model);
    CHECK(features.ok());
    absl::StatusOr<PolicyOutput> output =
        model.Run(*features, TaskSet{true, true, true, false});
    CHECK(output.ok()) << output.status();
    return SampleActions(*output, nullptr);
  };
  // The first call pays LibTorch's one-time operator set-up.
  decide();
  for (auto _ : state) {
    Actions actions = decide();
    benchmark::DoNotOptimize(actions);
  }
  state.counters["nodes"] = graph.num_nodes();
}
BENCHMARK(BM_ZeroShotDecisions)
    ->Args({10000, 1, 0})
    ->Args({10000, 2, 0})
    ->Args({10000, 2, 1})
    ->Args({80000, 1, 0})
    ->Args({80000, 2, 0})
    ->Args({80000, 2, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The co-location decodes ZeroShot adds for a network with a co-location head
// (CoLocationPlacements: three weighted METIS partitions, three component
// placements, two balanced merges and five scheduled component
// placements: three absolute thresholds, two relative), on logits that keep
// two dependencies in three. Argument:
// approximate node count.
void BM_CoLocationPlacements(benchmark::State& state) {
  const graph::Graph& graph = BenchGraph(static_cast<int>(state.range(0)));
  std::unique_ptr<TrainingInstance> instance = *MakeTrainingInstance(
      graph.name(), std::make_shared<const graph::Graph>(graph),
      std::make_shared<const simulator::Topology>(
          *simulator::PresetTopology("h100x8-nvlink")));
  std::vector<float> logits(instance->features.edge_src.size());
  for (size_t e = 0; e < logits.size(); ++e) logits[e] = e % 3 == 0 ? -2 : 2;
  for (auto _ : state) {
    absl::StatusOr<std::vector<std::vector<int32_t>>> placements =
        CoLocationPlacements(*instance, logits);
    CHECK(placements.ok()) << placements.status();
    benchmark::DoNotOptimize(placements);
  }
  state.counters["nodes"] = graph.num_nodes();
}
BENCHMARK(BM_CoLocationPlacements)
    ->Arg(10000)
    ->Arg(80000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Featurize(benchmark::State& state) {
  const graph::Graph& graph = BenchGraph(static_cast<int>(state.range(0)));
  const simulator::Topology topology =
      *simulator::PresetTopology("h100x8-nvlink");
  simulator::RooflineCostModel cost_model;
  for (auto _ : state) {
    benchmark::DoNotOptimize(Featurize(graph, topology, cost_model));
  }
  state.counters["nodes"] = graph.num_nodes();
}
BENCHMARK(BM_Featurize)->Arg(10000)->Arg(80000)->Unit(benchmark::kMillisecond);

// Arguments: samples per step, LibTorch threads.
void BM_PpoStep(benchmark::State& state) {
  SetTorchThreads(static_cast<int>(state.range(1)));
  const graph::Graph& graph = BenchGraph(3000);
  std::unique_ptr<TrainingInstance> instance = *MakeTrainingInstance(
      "gnmt2-small", std::make_shared<const graph::Graph>(graph),
      std::make_shared<const simulator::Topology>(
          *simulator::PresetTopology("v100x4-nvlink")));
  std::unique_ptr<GoModel> model = *Model().Clone();
  PpoOptions options;
  options.samples_per_graph = static_cast<int>(state.range(0));
  PpoTrainer trainer(model.get(), options);
  for (auto _ : state) {
    absl::StatusOr<PpoStepStats> stats = trainer.Step({instance.get()});
    CHECK(stats.ok()) << stats.status();
  }
  state.counters["nodes"] = graph.num_nodes();
}
BENCHMARK(BM_PpoStep)
    ->Args({16, 1})
    ->Args({16, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace gopt::policy::go

int main(int argc, char** argv) {
  gopt::KeepFreedMemory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
