// Generation time of every preset: `gopt_generators_benchmark` prints the time
// to build each preset's graph (and its node count as a counter), e.g.
//   build/bin/gopt_generators_benchmark --benchmark_filter=gnmt8-80k
#include <string>

#include "benchmark/benchmark.h"
#include "simulator/generators/generators.h"

namespace gopt::simulator::generators {
namespace {

void BM_GeneratePreset(benchmark::State& state, const GeneratorPreset& preset) {
  int nodes = 0;
  for (auto _ : state) {
    absl::StatusOr<graph::Graph> graph = GenerateModelGraph(preset.options);
    if (!graph.ok()) {
      state.SkipWithError(std::string(graph.status().message()).c_str());
      return;
    }
    nodes = graph->num_nodes();
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["nodes"] = nodes;
  state.counters["nodes_per_s"] =
      benchmark::Counter(nodes, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace
}  // namespace gopt::simulator::generators

int main(int argc, char** argv) {
  using gopt::simulator::generators::BM_GeneratePreset;
  using gopt::simulator::generators::GeneratorPresets;
  for (const auto& preset : GeneratorPresets()) {
    benchmark::RegisterBenchmark(preset.name.c_str(), BM_GeneratePreset, preset)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
