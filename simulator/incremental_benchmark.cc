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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
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

// One pass over the candidates (cutoff at the base's step time), each also
// simulated in full: where the runs start (share of the base's events
// skipped), how many stop early and where, how many rejoin the base, how
// the candidates compare with the base, the mean time of each kind of run
// (wall clock, to read, not to assert), and the median relative change of
// the step time among the candidates whose step time differs from the
// base's (and the time of a candidate equal to the base).
void BM_Profile(benchmark::State& state) {
  const Setup& setup = GetSetup(static_cast<int>(state.range(0)));
  SimulationOptions options;
  options.record_timeline = false;
  const double base_s = setup.base->result().step_time_s;
  const double total = static_cast<double>(setup.base->num_events());
  // Kinds of run: 0 from the start, 1 stopped early, 2 rejoined, 3 to the
  // end.
  double seconds[4] = {0, 0, 0, 0};
  int64_t count[4] = {0, 0, 0, 0};
  int64_t skip_bucket[4] = {0, 0, 0, 0};
  double stop_at = 0;
  double full_seconds = 0;
  int64_t faster = 0;
  int64_t equal = 0;
  int64_t stopped = 0;
  double faster_events = 0;  // shares of the base's events, summed
  double changed_events = 0;
  std::vector<double> changes;  // |candidate / base - 1| where not 0
  for (auto _ : state) {
    for (const Plan& plan : setup.candidates) {
      auto t0 = std::chrono::steady_clock::now();
      const double full_s =
          setup.simulator->Simulate(plan, options)->step_time_s;
      auto t1 = std::chrono::steady_clock::now();
      const CandidateResult result =
          setup.simulator->SimulateCandidate(*setup.base, plan, options, base_s)
              .value();
      auto t2 = std::chrono::steady_clock::now();
      full_seconds += std::chrono::duration<double>(t1 - t0).count();
      faster += full_s < base_s;
      // From where it starts, a candidate whose step time differs from the
      // base's can rejoin nowhere: it runs to the end unless it stops.
      const double after =
          1.0 - static_cast<double>(result.events_skipped) / total;
      if (full_s < base_s) faster_events += after;
      if (full_s != base_s) changed_events += after;
      if (full_s != base_s) changes.push_back(std::abs(full_s / base_s - 1));
      equal += full_s == base_s;
      const int kind = !result.incremental         ? 0
                       : result.slower_than_cutoff ? 1
                       : result.rejoined_base      ? 2
                                                   : 3;
      stopped += result.slower_than_cutoff;
      if (result.slower_than_cutoff && !result.incremental) {
        stop_at += static_cast<double>(result.events_simulated) / total;
      } else if (result.slower_than_cutoff) {
        stop_at += static_cast<double>(result.events_skipped +
                                       result.events_simulated) /
                   total;
      }
      seconds[kind] += std::chrono::duration<double>(t2 - t1).count();
      ++count[kind];
      if (result.incremental) {
        const double skipped =
            static_cast<double>(result.events_skipped) / total;
        ++skip_bucket[std::min(3, static_cast<int>(skipped * 4))];
      }
    }
  }
  const double runs = static_cast<double>(state.iterations()) * kCandidates;
  double incremental_seconds = 0;
  for (const double s : seconds) incremental_seconds += s;
  const char* kinds[4] = {"from_start", "stopped", "rejoined", "to_end"};
  for (int k = 0; k < 4; ++k) {
    state.counters[std::string(kinds[k]) + "_share"] = count[k] / runs;
    state.counters[std::string(kinds[k]) + "_ms"] =
        count[k] > 0 ? seconds[k] * 1e3 / count[k] : 0;
  }
  const char* buckets[4] = {"skip_0_25", "skip_25_50", "skip_50_75",
                            "skip_75_100"};
  for (int b = 0; b < 4; ++b)
    state.counters[buckets[b]] = skip_bucket[b] / runs;
  state.counters["stop_point_mean"] = stop_at / std::max<double>(1, stopped);
  state.counters["stopped_share"] = stopped / runs;
  state.counters["faster_than_base"] = faster / runs;
  state.counters["equal_to_base"] = equal / runs;
  state.counters["speedup"] = full_seconds / incremental_seconds;
  // A candidate equal to the base: what the run costs apart from its
  // events (it starts from the last checkpoint).
  const auto unchanged_start = std::chrono::steady_clock::now();
  constexpr int kUnchangedRuns = 16;
  for (int i = 0; i < kUnchangedRuns; ++i) {
    benchmark::DoNotOptimize(setup.simulator
                                 ->SimulateCandidate(*setup.base,
                                                     setup.base->plan(),
                                                     options, base_s)
                                 ->result.step_time_s);
  }
  state.counters["unchanged_ms"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    unchanged_start)
          .count() *
      1e3 / kUnchangedRuns;
  // The most any run from these start points can gain in events simulated:
  // with every slower candidate stopped at once and every unchanged one
  // rejoining at once, and with only the unchanged ones free.
  state.counters["ceiling_slower_free"] = runs / std::max(faster_events, 1e-9);
  state.counters["ceiling_changed_to_end"] =
      runs / std::max(changed_events, 1e-9);
  state.counters["full_ms"] = full_seconds * 1e3 / runs;
  std::sort(changes.begin(), changes.end());
  state.counters["median_change"] =
      changes.empty() ? 0 : changes[changes.size() / 2];
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
BENCHMARK(BM_Profile)
    ->Arg(10018)
    ->Arg(84699)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gopt::simulator

BENCHMARK_MAIN();
