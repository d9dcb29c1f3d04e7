// Candidate evaluations per second for the plan search's own moves, full
// simulation against incremental (Simulator::SimulateCandidate), on the
// same candidates in the same run: gnmt training-step graphs of 10,018
// nodes (4 layers, 27 steps) and 84,699 nodes (preset gnmt8-80k) on
// v100x4-nvlink, from the HEFT plan. A move is what PlanSearch proposes: a
// window of 1-8 consecutive nodes of the base's critical path, either run
// first (priorities raised above all) or moved to another device (drawn
// uniformly, or a path neighbour's). 256 candidates per graph, seed 7;
// BM_Incremental stops a candidate once it is certainly slower than the
// base (the search's cutoff), BM_IncrementalExact never stops early, and
// BM_Record is what adopting a new incumbent costs (recycling the old
// trajectory's buffers, as the search does).
//
//   build/bin/gopt_incremental_benchmark [--benchmark_filter=84699]

#include <benchmark/benchmark.h>

#include <limits>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/heft_placer.h"
#include "simulator/generators/generators.h"
#include "simulator/simulator.h"

namespace gopt::simulator {
namespace {

constexpr int kCandidates = 256;

// A graph, its simulator, the HEFT base plan recorded, and the candidates.
struct Setup {
  graph::Graph graph;
  Topology topology;
  RooflineCostModel cost_model;
  std::unique_ptr<Simulator> simulator;
  std::unique_ptr<Trajectory> base;
  std::vector<Plan> candidates;
};

// A move of PlanSearch::Propose (no fusion groups here, so a node moves
// alone).
Plan ProposeMove(const Plan& base, const std::vector<graph::NodeId>& path,
                 int devices, int32_t top_priority, std::mt19937_64& rng) {
  Plan plan = base;
  const int begin = static_cast<int>(rng() % path.size());
  const int end = std::min<int>(path.size(), begin + 1 + rng() % 8);
  if (rng() % 2 == 0) {
    for (int i = begin; i < end; ++i) {
      plan.priority[path[i]] = top_priority + (end - i);
    }
    return plan;
  }
  const int32_t current = plan.device[path[begin]];
  int32_t target = static_cast<int32_t>(rng() % (devices - 1));
  if (target >= current) ++target;
  if (rng() % 2 == 1 && begin > 0 && plan.device[path[begin - 1]] != current) {
    target = plan.device[path[begin - 1]];
  }
  for (int i = begin; i < end; ++i) plan.device[path[i]] = target;
  return plan;
}

const Setup& GetSetup(int nodes) {
  static auto* setups = new std::map<int, std::unique_ptr<Setup>>;
  std::unique_ptr<Setup>& setup = (*setups)[nodes];
  if (setup != nullptr) return *setup;
  setup = std::make_unique<Setup>();
  generators::GeneratorOptions options;
  if (nodes == 10018) {
    options.family = "gnmt";
    options.layers = 4;
    options.seq = 27;
  } else {
    options = generators::FindGeneratorPreset("gnmt8-80k")->options;
  }
  setup->graph = generators::GenerateModelGraph(options).value();
  setup->topology = PresetTopology("v100x4-nvlink").value();
  setup->simulator = std::make_unique<Simulator>(setup->graph, setup->topology,
                                                 setup->cost_model);
  Plan plan = DefaultPlan(setup->graph);
  plan.device = baselines::HeftPlacer()
                    .Place(baselines::BaselineContext{
                        setup->graph, setup->topology, setup->cost_model, 0})
                    .value();
  plan.priority.assign(setup->graph.num_nodes(), 0);
  SimulationOptions no_timeline;
  no_timeline.record_timeline = false;
  setup->base = setup->simulator->Record(plan, no_timeline).value();
  std::mt19937_64 rng(7);
  for (int c = 0; c < kCandidates; ++c) {
    setup->candidates.push_back(
        ProposeMove(plan, setup->base->result().critical_path,
                    setup->topology.num_devices(), 1, rng));
  }
  return *setup;
}

void SetCounters(benchmark::State& state, const Setup& setup) {
  state.counters["candidates_per_s"] =
      benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["nodes"] = setup.graph.num_nodes();
  state.counters["base_step_ms"] = setup.base->result().step_time_s * 1e3;
}

void BM_Full(benchmark::State& state) {
  const Setup& setup = GetSetup(static_cast<int>(state.range(0)));
  SimulationOptions options;
  options.record_timeline = false;
  int c = 0;
  for (auto _ : state) {
    const Plan& plan = setup.candidates[c++ % kCandidates];
    benchmark::DoNotOptimize(
        setup.simulator->Simulate(plan, options)->step_time_s);
  }
  SetCounters(state, setup);
}

void BM_Incremental(benchmark::State& state, bool cutoff) {
  const Setup& setup = GetSetup(static_cast<int>(state.range(0)));
  SimulationOptions options;
  options.record_timeline = false;
  const double cutoff_s = cutoff ? setup.base->result().step_time_s
                                 : std::numeric_limits<double>::infinity();
  int c = 0;
  int64_t stopped = 0;
  int64_t resumed = 0;
  int64_t rejoined = 0;
  int64_t events = 0;
  for (auto _ : state) {
    const Plan& plan = setup.candidates[c++ % kCandidates];
    const CandidateResult result =
        setup.simulator->SimulateCandidate(*setup.base, plan, options, cutoff_s)
            .value();
    stopped += result.slower_than_cutoff;
    resumed += result.incremental;
    rejoined += result.rejoined_base;
    events += result.events_simulated;
    benchmark::DoNotOptimize(result.result.step_time_s);
  }
  SetCounters(state, setup);
  const double runs = static_cast<double>(state.iterations());
  state.counters["stopped_early"] = static_cast<double>(stopped) / runs;
  state.counters["resumed"] = static_cast<double>(resumed) / runs;
  state.counters["rejoined"] = static_cast<double>(rejoined) / runs;
  state.counters["events_share"] =
      static_cast<double>(events) / runs /
      static_cast<double>(setup.base->num_events());
}

void BM_Record(benchmark::State& state) {
  const Setup& setup = GetSetup(static_cast<int>(state.range(0)));
  SimulationOptions options;
  options.record_timeline = false;
  std::unique_ptr<Trajectory> recycled;
  for (auto _ : state) {
    recycled = setup.simulator
                   ->Record(setup.base->plan(), options, std::move(recycled))
                   .value();
  }
  state.counters["checkpoints"] = setup.base->num_checkpoints();
}

BENCHMARK(BM_Full)->Arg(10018)->Arg(84699)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Incremental, cutoff, true)
    ->Arg(10018)
    ->Arg(84699)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Incremental, exact, false)
    ->Arg(10018)
    ->Arg(84699)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Record)->Arg(10018)->Arg(84699)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gopt::simulator

BENCHMARK_MAIN();
