// Cost model benchmarks (Google Benchmark):
//
//   BM_ScoreLayoutConfigs/hops/batch/hidden/threads/distinct: scoring
//     1,000 random layout configurations of the 11,803-node gnmt4-medium
//     graph pruned to its 1,251 configurable nodes + `hops` hops, `batch`
//     configurations per head pass, GraphSAGE width `hidden`, `threads`
//     LibTorch threads; `distinct` 1 runs the GNN once per distinct node
//     state (the default), 0 the plain pass over every (node,
//     configuration) pair. cpu_s is the process CPU time per iteration.
//
// Large activations make glibc map and unmap fresh pages for every batch
// (page faults were 3/4 of the CPU time); run with
//   MALLOC_MMAP_THRESHOLD_=2000000000 MALLOC_TRIM_THRESHOLD_=4000000000
// to keep freed memory in the heap.
//   BM_TrainStep80k/<segment_size>: 10 training steps (4 configurations
//     each, no pruning) on the 84,699-node gnmt8-80k graph, full graph (0)
//     or Graph Segment Training with segments of that many nodes;
//     train_step_s is the mean step time without graph preparation.
//
// peak_rss_mb is the process's peak resident set, so compare GST and full
// graph in separate runs:
//   cost_model_benchmark --benchmark_filter='TrainStep80k/8000'
//   cost_model_benchmark --benchmark_filter='TrainStep80k/0'

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <chrono>
#include <numeric>
#include <random>
#include <vector>

#include "policy/cost_model/cost_model.h"
#include "policy/cost_model/features.h"
#include "policy/torch_util.h"
#include "simulator/generators/generators.h"
#include "simulator/topology.h"
#include "training/cost_model/dataset.h"

namespace gopt::policy::cost_model {
namespace {

graph::Graph Preset(const char* name) {
  return simulator::generators::GenerateModelGraph(
             simulator::generators::FindGeneratorPreset(name)->options)
      .value();
}

double PeakRssMb() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// `count` random layout assignments of `graph`'s configurable nodes as
// features (each node keeps the default or a random order, 50/50).
std::vector<float> RandomLayoutConfigs(const graph::Graph& graph,
                                       const FeaturizedGraph& featurized,
                                       int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> out;
  std::vector<std::vector<int32_t>> layout(graph.num_nodes());
  for (int c = 0; c < count; ++c) {
    for (int32_t node : featurized.configurable_nodes) {
      layout[node].clear();
      const int rank = graph.node(node).outputs[0].rank();
      if (rank < 2 || rng() % 2 == 0) continue;
      layout[node].resize(rank);
      std::iota(layout[node].begin(), layout[node].end(), 0);
      std::shuffle(layout[node].begin(), layout[node].end(), rng);
    }
    const std::vector<float> f =
        LayoutAssignmentFeatures(graph, featurized, layout);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

void BM_ScoreLayoutConfigs(benchmark::State& state) {
  gopt::policy::SetTorchIntraOpThreads(static_cast<int>(state.range(3)));
  const graph::Graph graph = Preset("gnmt4-medium");
  const FeaturizedGraph featurized = FeaturizeGraph(graph);
  constexpr int kConfigs = 1000;
  const std::vector<float> configs =
      RandomLayoutConfigs(graph, featurized, kConfigs, /*seed=*/1);
  CostModelOptions options;
  options.prune_hops = static_cast<int32_t>(state.range(0));
  options.hidden_dim = static_cast<int32_t>(state.range(2));
  std::unique_ptr<CostModel> model =
      CostModel::Create(options, /*seed=*/1).value();
  std::shared_ptr<const PreparedGraph> prepared =
      model->Prepare(featurized).value();
  ScoreOptions score_options;
  score_options.batch_size = static_cast<int32_t>(state.range(1));
  score_options.distinct_node_states = state.range(4) != 0;
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    std::vector<double> scores =
        model->Score(*prepared, configs, kConfigs, score_options).value();
    benchmark::DoNotOptimize(scores.data());
  }
  state.counters["cpu_s"] =
      (ProcessCpuSeconds() - cpu_start) / state.iterations();
  state.counters["graph_nodes"] = graph.num_nodes();
  state.counters["configurable_nodes"] =
      static_cast<double>(featurized.configurable_nodes.size());
  state.counters["kept_nodes"] = CostModel::PreparedNodes(*prepared);
  state.counters["configs_per_second"] = benchmark::Counter(
      kConfigs, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ScoreLayoutConfigs)
    ->ArgNames({"hops", "batch", "hidden", "threads", "distinct"})
    ->Args({0, 32, 32, 2, 0})
    ->Args({0, 32, 32, 1, 0})
    ->Args({0, 32, 32, 2, 1})
    ->Args({0, 32, 32, 1, 1})
    ->Args({0, 128, 32, 1, 1})
    ->Args({1, 32, 32, 1, 0})
    ->Args({1, 32, 32, 2, 1})
    ->Args({1, 32, 32, 1, 1})
    ->Args({2, 32, 32, 1, 0})
    ->Args({2, 32, 32, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_TrainStep80k(benchmark::State& state) {
  gopt::policy::SetTorchIntraOpThreads(2);
  const graph::Graph graph = Preset("gnmt8-80k");
  const simulator::Topology topology =
      simulator::PresetTopology("v100x4-nvlink").value();
  SimulatorLabelOptions label;
  label.num_configs = 8;
  const ConfigGroup group =
      SimulatorLabelledGroup(graph, topology, label).value();
  CostModelOptions options;
  options.prune_hops = -1;  // the whole graph, as GST is meant for
  options.segment_size = static_cast<int32_t>(state.range(0));
  std::unique_ptr<CostModel> model =
      CostModel::Create(options, /*seed=*/1).value();
  // Preparing the graph (pruning, segmenting, sparse adjacency) happens
  // once per Train call; it is timed separately and taken out of the
  // per-step time.
  const auto prepare_start = std::chrono::steady_clock::now();
  const int segments =
      CostModel::PreparedSegments(*model->Prepare(group.graph).value());
  const double prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    prepare_start)
          .count();
  TrainOptions train;
  train.steps = 10;
  train.configs_per_step = 4;
  train.num_threads = 2;
  double step_seconds = 0;
  for (auto _ : state) {
    TrainReport report = model->Train({group}, train).value();
    step_seconds = (report.wall_seconds - prepare_seconds) / train.steps;
    benchmark::DoNotOptimize(report.final_loss);
  }
  state.counters["graph_nodes"] = graph.num_nodes();
  state.counters["segments"] = segments;
  state.counters["prepare_s"] = prepare_seconds;
  state.counters["train_step_s"] = step_seconds;
  state.counters["peak_rss_mb"] = PeakRssMb();
}
BENCHMARK(BM_TrainStep80k)
    ->Arg(0)
    ->Arg(8000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace gopt::policy::cost_model

BENCHMARK_MAIN();
