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
// trajectory's buffers, as the search does). BM_Profile says where the
// incremental runs spend their time; BM_OrderReplay measures the
// order-fixed replay design against the same candidates (see there).
//
//   build/bin/gopt_incremental_benchmark [--benchmark_filter=84699]
//   build/bin/gopt_incremental_benchmark --benchmark_filter=BM_OrderReplay

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/heft_placer.h"
#include "simulator/generators/generators.h"
#include "simulator/simulator.h"
#include "simulator/trajectory.h"

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

// The order-fixed replay study (issue 20, part 1): can a candidate's times
// be recomputed in the base run's orders (per device its kernels, per link
// its transfers) by one linear pass, with the event loop only where an
// order changes? BM_OrderReplay records every candidate (the event loop's
// own orders) and reports:
//  - orders_kept*: the share of candidates whose per-device kernel orders
//    and per-link transfer orders, apart from the changed nodes, are the
//    base's (overall; among those faster than, equal to and slower than the
//    base; among those whose step time changes);
//  - divergence_median: among the others, the median share of the base's
//    units started before the first order difference, and
//    predecessors_changed_median: how many unchanged kernels then follow
//    another kernel on their device than in the base (a cascade, or a local
//    swap);
//  - replay_bit_identical: the share of candidates whose every start, end
//    and step time the linear pass (in the candidate's own orders)
//    reproduces bit for bit, and full_over_replay: full Simulate's time over
//    the pass's (wall clock, same candidates, same run);
//  - suffix_mean: the mean share of the base's units that start at or after
//    the candidate's first changed time (what any exact method recomputes),
//    and projected_speedup: full over (the pass up to the first order
//    difference + the event loop, at Simulate's cost per unit, after it);
//    an upper bound for the design, since verifying the orders, memory and
//    the critical path's causes are left out of the pass's cost, and
//    projected_all_kept: the same were every candidate's orders kept;
//  - lean_bit_identical and full_over_lean_loop: whether LeanLoop (the
//    decisions without memory or causes) gets every step time bit for bit,
//    and full Simulate's time over its loop's: what dropping the
//    bookkeeping alone would gain.

// One run's orders and the linear pass's inputs. Units are nodes (the
// study's plans have no fusion).
struct FixedOrders {
  std::vector<double> duration_s;    // per unit
  std::vector<int32_t> device_prev;  // per unit: previous kernel, or -1
  // Per device its kernels (units of nonzero duration) in start order.
  std::vector<std::vector<int32_t>> kernels;
  // Per link (src * devices + dst) its transfers' (node, output) in
  // creation order; per transfer the previous one on its link, or -1.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> link_transfers;
  std::vector<int32_t> link_prev;
  std::vector<double> bandwidth_bytes_per_s, latency_s;  // per transfer
  std::vector<int64_t> bytes;                            // per transfer
  // Per unit the transfers it starts (CSR), and per in-edge its source: a
  // unit, or ~transfer for an input from another device.
  std::vector<int32_t> sends_offset, sends, in_source;
  // The units in an order that respects data edges, device order and link
  // order (earliest end first, then NodeId): each unit's inputs, device
  // predecessor and link predecessors come before it.
  std::vector<int32_t> process;
};

// The order in which ReplayInOrder visits `run`'s units (see
// FixedOrders::process): Kahn's algorithm over the edges of the graph, the
// device orders and the link orders.
std::vector<int32_t> ProcessingOrder(const graph::Graph& graph,
                                     const Trajectory::Data& run,
                                     const FixedOrders& orders) {
  const int n = graph.num_nodes();
  std::vector<std::vector<int32_t>> next(n);
  std::vector<int32_t> waiting(n, 0);
  auto add = [&](int32_t before, int32_t after) {
    if (before < 0 || before == after) return;
    next[before].push_back(after);
    ++waiting[after];
  };
  for (int v = 0; v < n; ++v) {
    for (const graph::Edge& edge : graph.in_edges(v)) add(edge.src, v);
    add(orders.device_prev[v], v);
  }
  for (size_t t = 0; t < orders.link_prev.size(); ++t) {
    if (orders.link_prev[t] < 0) continue;
    add(run.transfers[orders.link_prev[t]].node, run.transfers[t].node);
  }
  using Key = std::pair<double, int32_t>;  // (end, unit)
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  for (int v = 0; v < n; ++v) {
    if (waiting[v] == 0) heap.push({run.units[v].end, v});
  }
  std::vector<int32_t> process;
  process.reserve(n);
  while (!heap.empty()) {
    const int32_t v = heap.top().second;
    heap.pop();
    process.push_back(v);
    for (const int32_t w : next[v]) {
      if (--waiting[w] == 0) heap.push({run.units[w].end, w});
    }
  }
  return process;
}

// The orders `run` (a recording of a plan without fusion on `setup`'s
// graph) made.
FixedOrders MakeFixedOrders(const Setup& setup, const Trajectory::Data& run) {
  const graph::Graph& graph = setup.graph;
  const int n = graph.num_nodes();
  const int devices = setup.topology.num_devices();
  FixedOrders orders;
  orders.duration_s.resize(n);
  orders.kernels.assign(devices, {});
  for (int u = 0; u < n; ++u) {
    orders.duration_s[u] = run.units[u].duration;
    if (run.units[u].duration > 0) {
      orders.kernels[run.plan.device[u]].push_back(u);
    }
  }
  orders.device_prev.assign(n, -1);
  for (std::vector<int32_t>& kernels : orders.kernels) {
    std::sort(kernels.begin(), kernels.end(), [&](int32_t a, int32_t b) {
      return run.units[a].start < run.units[b].start;
    });
    for (size_t k = 1; k < kernels.size(); ++k) {
      orders.device_prev[kernels[k]] = kernels[k - 1];
    }
  }
  const int transfers = static_cast<int>(run.transfers.size());
  orders.link_transfers.assign(static_cast<size_t>(devices) * devices, {});
  std::vector<int32_t> link_last(static_cast<size_t>(devices) * devices, -1);
  orders.sends_offset.assign(n + 1, 0);
  for (int t = 0; t < transfers; ++t) {
    const internal::Transfer& transfer = run.transfers[t];
    const int link = transfer.src_device * devices + transfer.dst_device;
    orders.link_prev.push_back(link_last[link]);
    link_last[link] = t;
    orders.link_transfers[link].push_back({transfer.node, transfer.output});
    const Link& params =
        setup.topology.link(transfer.src_device, transfer.dst_device);
    orders.bandwidth_bytes_per_s.push_back(params.bandwidth_bytes_per_s);
    orders.latency_s.push_back(params.latency_s);
    orders.bytes.push_back(transfer.bytes);
    ++orders.sends_offset[transfer.node + 1];
  }
  for (int u = 0; u < n; ++u) {
    orders.sends_offset[u + 1] += orders.sends_offset[u];
  }
  std::vector<int32_t> fill(orders.sends_offset.begin(),
                            orders.sends_offset.end() - 1);
  orders.sends.resize(transfers);
  for (int t = 0; t < transfers; ++t) {
    orders.sends[fill[run.transfers[t].node]++] = t;
  }
  orders.in_source.resize(graph.edges().size());
  for (int v = 0; v < n; ++v) {
    const absl::Span<const graph::Edge> in = graph.in_edges(v);
    const int begin = static_cast<int>(in.data() - graph.edges().data());
    for (int k = 0; k < static_cast<int>(in.size()); ++k) {
      const graph::Edge& edge = in[k];
      const bool local =
          edge.control || run.plan.device[edge.src] == run.plan.device[v];
      orders.in_source[begin + k] =
          local ? edge.src : ~run.in_transfer[begin + k];
    }
  }
  orders.process = ProcessingOrder(graph, run, orders);
  return orders;
}

// Per unit and transfer the times of the linear pass.
struct ReplayTimes {
  std::vector<double> start_s, end_s;          // per unit
  std::vector<double> link_free_s, arrival_s;  // per transfer
};

// Every unit's start and end and every transfer's arrival in `orders`,
// with the event loop's arithmetic in the event loop's order of operations
// (a unit starts at max(inputs' arrivals, its device predecessor's end); a
// transfer at max(its producer's end, its link predecessor's release));
// returns the step time.
double ReplayInOrder(const graph::Graph& graph, const FixedOrders& orders,
                     ReplayTimes* times) {
  times->start_s.resize(graph.num_nodes());
  times->end_s.resize(graph.num_nodes());
  times->link_free_s.resize(orders.link_prev.size());
  times->arrival_s.resize(orders.link_prev.size());
  const graph::Edge* edges = graph.edges().data();
  double last_end_s = 0;
  double last_arrival_s = -std::numeric_limits<double>::infinity();
  for (const int32_t u : orders.process) {
    const absl::Span<const graph::Edge> in = graph.in_edges(u);
    const int begin = static_cast<int>(in.data() - edges);
    double start_s = 0;
    for (int j = begin; j < begin + static_cast<int>(in.size()); ++j) {
      const int32_t source = orders.in_source[j];
      start_s = std::max(start_s, source >= 0 ? times->end_s[source]
                                              : times->arrival_s[~source]);
    }
    const int32_t prev = orders.device_prev[u];
    if (orders.duration_s[u] > 0 && prev >= 0) {
      start_s = std::max(start_s, times->end_s[prev]);
    }
    const double end_s = start_s + orders.duration_s[u];
    times->start_s[u] = start_s;
    times->end_s[u] = end_s;
    last_end_s = std::max(last_end_s, end_s);
    for (int k = orders.sends_offset[u]; k < orders.sends_offset[u + 1]; ++k) {
      const int32_t t = orders.sends[k];
      const int32_t before = orders.link_prev[t];
      const double sent_s =
          before >= 0 ? std::max(end_s, times->link_free_s[before]) : end_s;
      times->link_free_s[t] = sent_s + static_cast<double>(orders.bytes[t]) /
                                           orders.bandwidth_bytes_per_s[t];
      times->arrival_s[t] = times->link_free_s[t] + orders.latency_s[t];
      last_arrival_s = std::max(last_arrival_s, times->arrival_s[t]);
    }
  }
  return std::max(last_end_s, last_arrival_s);
}

// A candidate's orders against the base's, ignoring the changed nodes:
// whether they are the same, the base time of the first difference, and how
// many unchanged kernels have another device predecessor.
struct OrderComparison {
  bool kept = true;
  double first_difference_s = std::numeric_limits<double>::infinity();
  int predecessors_changed = 0;
};

OrderComparison CompareOrders(const FixedOrders& base,
                              const FixedOrders& candidate,
                              const std::vector<uint8_t>& changed,
                              const Trajectory::Data& base_run) {
  OrderComparison comparison;
  auto differ_at = [&](double time_s) {
    comparison.kept = false;
    comparison.first_difference_s =
        std::min(comparison.first_difference_s, time_s);
  };
  for (size_t d = 0; d < base.kernels.size(); ++d) {
    std::vector<int32_t> a, b;
    for (const int32_t u : base.kernels[d]) {
      if (!changed[u]) a.push_back(u);
    }
    for (const int32_t u : candidate.kernels[d]) {
      if (!changed[u]) b.push_back(u);
    }
    if (a.size() != b.size()) comparison.kept = false;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a[i] == b[i]) continue;
      differ_at(
          std::min(base_run.units[a[i]].start, base_run.units[b[i]].start));
      break;
    }
  }
  for (size_t link = 0; link < base.link_transfers.size(); ++link) {
    std::map<std::pair<int32_t, int32_t>, int> seen;  // 1 base, 2 candidate
    for (const auto& key : base.link_transfers[link]) seen[key] |= 1;
    for (const auto& key : candidate.link_transfers[link]) seen[key] |= 2;
    std::vector<std::pair<int32_t, int32_t>> a, b;
    for (const auto& key : base.link_transfers[link]) {
      if (seen[key] == 3 && !changed[key.first]) a.push_back(key);
    }
    for (const auto& key : candidate.link_transfers[link]) {
      if (seen[key] == 3 && !changed[key.first]) b.push_back(key);
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      differ_at(std::min(base_run.units[a[i].first].end,
                         base_run.units[b[i].first].end));
      break;
    }
  }
  for (size_t u = 0; u < changed.size(); ++u) {
    if (changed[u] || candidate.duration_s[u] == 0) continue;
    const int32_t a = base.device_prev[u];
    const int32_t b = candidate.device_prev[u];
    comparison.predecessors_changed +=
        a != b && !(a >= 0 && changed[a]) && !(b >= 0 && changed[b]);
  }
  return comparison;
}

// The share of `run`'s units that start before `time_s`.
double ShareStartedBefore(const Trajectory::Data& run, double time_s) {
  int64_t before = 0;
  for (const internal::UnitState& unit : run.units)
    before += unit.start < time_s;
  return static_cast<double>(before) / static_cast<double>(run.units.size());
}

// A lean event loop for the study: the simulator's scheduling rules (per
// device the ready kernel of highest priority, then lowest NodeId, chosen
// once every event of an instant is processed; free units finish when
// ready; one transfer per output and remote device, FIFO per link) and
// nothing else: no memory, no causes, no critical path. What a loop that
// makes the decisions costs at least, against the linear pass that only
// follows them. Plans without fusion; one per Run call, on the caller's
// thread.
class LeanLoop {
 public:
  LeanLoop(const Setup& setup, const std::vector<double>& duration_s)
      : graph_(setup.graph),
        topology_(setup.topology),
        duration_s_(duration_s),
        devices_(setup.topology.num_devices()) {}

  // Ranks and pending inputs of `plan` (what Simulate's set-up phases
  // compute); then Run simulates it and returns the step time.
  void Prepare(const Plan& plan) {
    const int n = graph_.num_nodes();
    plan_ = &plan;
    unit_of_rank_.resize(n);
    std::iota(unit_of_rank_.begin(), unit_of_rank_.end(), 0);
    std::stable_sort(unit_of_rank_.begin(), unit_of_rank_.end(),
                     [&](int32_t a, int32_t b) {
                       return plan.priority[a] > plan.priority[b];
                     });
    rank_.resize(n);
    for (int r = 0; r < n; ++r) rank_[unit_of_rank_[r]] = r;
    initial_pending_.resize(n);
    for (int v = 0; v < n; ++v) {
      initial_pending_[v] = static_cast<int32_t>(graph_.in_edges(v).size());
    }
  }

  double Run() {
    const int n = graph_.num_nodes();
    pending_ = initial_pending_;
    ready_.resize(devices_);
    for (MinBitTree& queue : ready_) queue.Reset(n);
    busy_.assign(devices_, 0);
    link_free_s_.assign(static_cast<size_t>(devices_) * devices_, 0);
    end_s_.resize(n);
    next_edge_.resize(graph_.num_edges());
    out_base_ = graph_.out_edges(0).data();
    transfers_.clear();
    events_.Clear();
    seq_ = 0;
    last_end_s_ = 0;
    last_arrival_s_ = -std::numeric_limits<double>::infinity();
    for (int v = 0; v < n; ++v) {
      if (pending_[v] == 0) MakeReady(v, 0);
    }
    FinishFree(0);
    Dispatch(0);
    while (!events_.empty()) {
      const Event event = events_.top();
      const double now = event.time;
      events_.Pop();
      if (event.is_transfer()) {
        for (int32_t e = transfers_[event.id()].first_edge; e >= 0;
             e = next_edge_[e]) {
          const graph::NodeId v = out_base_[e].dst;
          if (--pending_[v] == 0) MakeReady(v, now);
        }
      } else {
        Finish(event.id(), now);
      }
      FinishFree(now);
      if (events_.AllLaterThan(now, false)) Dispatch(now);
    }
    return std::max(last_end_s_, last_arrival_s_);
  }

 private:
  // A transfer and the out-edges it carries (a list through next_edge_).
  struct LeanTransfer {
    int32_t output;
    int32_t dst_device;
    int32_t first_edge;
    int32_t last_edge;
  };

  void MakeReady(int32_t v, double now) {
    if (duration_s_[v] == 0) {
      end_s_[v] = now;
      free_.push_back(v);
      return;
    }
    const int32_t device = plan_->device[v];
    ready_[device].Insert(rank_[v]);
    dirty_.push_back(device);
  }

  void FinishFree(double now) {
    while (!free_.empty()) {
      const int32_t v = free_.back();
      free_.pop_back();
      Finish(v, now);
    }
  }

  void Dispatch(double now) {
    for (const int32_t device : dirty_) {
      if (busy_[device] || ready_[device].empty()) continue;
      const int32_t u = unit_of_rank_[ready_[device].PopMin()];
      busy_[device] = 1;
      end_s_[u] = now + duration_s_[u];
      events_.Push(Event::Make(end_s_[u], seq_++, u, false));
    }
    dirty_.clear();
  }

  void Finish(int32_t u, double now) {
    const int32_t device = plan_->device[u];
    last_end_s_ = std::max(last_end_s_, end_s_[u]);
    const size_t first = transfers_.size();
    for (const graph::Edge& edge : graph_.out_edges(u)) {
      const int32_t dst_device = plan_->device[edge.dst];
      if (edge.control || dst_device == device) {
        if (--pending_[edge.dst] == 0) MakeReady(edge.dst, now);
        continue;
      }
      size_t t = first;
      while (t < transfers_.size() &&
             (transfers_[t].output != edge.src_output ||
              transfers_[t].dst_device != dst_device)) {
        ++t;
      }
      const int32_t e = static_cast<int32_t>(&edge - out_base_);
      if (t == transfers_.size()) {
        Send(edge, device, dst_device, now);
        transfers_[t].first_edge = e;
      } else {
        next_edge_[transfers_[t].last_edge] = e;
      }
      transfers_[t].last_edge = e;
      next_edge_[e] = -1;
    }
    if (duration_s_[u] > 0) {
      busy_[device] = 0;
      dirty_.push_back(device);
    }
  }

  void Send(const graph::Edge& edge, int32_t device, int32_t dst_device,
            double now) {
    const Link& link = topology_.link(device, dst_device);
    double& link_free_s =
        link_free_s_[static_cast<size_t>(device) * devices_ + dst_device];
    const double start_s = std::max(now, link_free_s);
    link_free_s = start_s + static_cast<double>(graph_.EdgeBytes(edge)) /
                                link.bandwidth_bytes_per_s;
    const double arrival_s = link_free_s + link.latency_s;
    last_arrival_s_ = std::max(last_arrival_s_, arrival_s);
    events_.Push(Event::Make(arrival_s, seq_++,
                             static_cast<int32_t>(transfers_.size()), true));
    transfers_.push_back({edge.src_output, dst_device, -1, -1});
  }

  const graph::Graph& graph_;
  const Topology& topology_;
  const std::vector<double>& duration_s_;
  const int devices_;
  const Plan* plan_ = nullptr;
  std::vector<int32_t> unit_of_rank_, rank_, initial_pending_, pending_;
  std::vector<MinBitTree> ready_;
  std::vector<uint8_t> busy_;
  std::vector<double> link_free_s_, end_s_;
  std::vector<LeanTransfer> transfers_;
  std::vector<int32_t> next_edge_;  // per out-edge
  const graph::Edge* out_base_ = nullptr;
  std::vector<int32_t> free_, dirty_;
  EventQueue events_;
  int64_t seq_ = 0;
  double last_end_s_ = 0;
  double last_arrival_s_ = 0;
};

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void BM_OrderReplay(benchmark::State& state) {
  const Setup& setup = GetSetup(static_cast<int>(state.range(0)));
  SimulationOptions options;
  options.record_timeline = false;
  const Trajectory::Data& base = setup.base->data();
  const double base_s = base.result.step_time_s;
  const FixedOrders base_orders = MakeFixedOrders(setup, base);
  const int n = setup.graph.num_nodes();
  // Per class (faster than, equal to, slower than the base): candidates,
  // and those whose orders are kept.
  int64_t count[3] = {0, 0, 0};
  int64_t kept[3] = {0, 0, 0};
  int64_t identical = 0;
  double replay_seconds = 0;
  double full_seconds = 0;
  double suffix = 0;        // shares of units, summed
  double replayed = 0;      // by the pass, projected
  double left_to_loop = 0;  // to the event loop, projected
  std::vector<double> divergences, predecessors;
  ReplayTimes times;
  LeanLoop lean(setup, base_orders.duration_s);
  double lean_seconds = 0;
  int64_t lean_identical = 0;
  std::unique_ptr<Trajectory> recorded;
  for (auto _ : state) {
    for (const Plan& plan : setup.candidates) {
      recorded =
          setup.simulator->Record(plan, options, std::move(recorded)).value();
      const Trajectory::Data& run = recorded->data();
      const FixedOrders orders = MakeFixedOrders(setup, run);
      lean.Prepare(plan);
      const auto t0 = std::chrono::steady_clock::now();
      const double replay_s = ReplayInOrder(setup.graph, orders, &times);
      const auto t1 = std::chrono::steady_clock::now();
      const double full_s =
          setup.simulator->Simulate(plan, options)->step_time_s;
      const auto t2 = std::chrono::steady_clock::now();
      const double lean_s = lean.Run();
      const auto t3 = std::chrono::steady_clock::now();
      replay_seconds += std::chrono::duration<double>(t1 - t0).count();
      full_seconds += std::chrono::duration<double>(t2 - t1).count();
      lean_seconds += std::chrono::duration<double>(t3 - t2).count();
      lean_identical += lean_s == full_s;
      bool same = replay_s == full_s;
      double first_change_s = std::numeric_limits<double>::infinity();
      for (int u = 0; u < n; ++u) {
        same = same && times.start_s[u] == run.units[u].start &&
               times.end_s[u] == run.units[u].end;
        if (run.units[u].start != base.units[u].start ||
            run.units[u].end != base.units[u].end) {
          first_change_s = std::min(first_change_s, base.units[u].start);
        }
      }
      identical += same;
      std::vector<uint8_t> changed(n);
      for (int i = 0; i < n; ++i) {
        changed[i] = plan.device[i] != base.plan.device[i] ||
                     plan.priority[i] != base.plan.priority[i];
      }
      const OrderComparison comparison =
          CompareOrders(base_orders, orders, changed, base);
      const int kind = full_s < base_s ? 0 : full_s == base_s ? 1 : 2;
      ++count[kind];
      kept[kind] += comparison.kept;
      const double start = ShareStartedBefore(base, first_change_s);
      const double diverge =
          comparison.kept
              ? 1.0
              : ShareStartedBefore(base, comparison.first_difference_s);
      suffix += 1.0 - start;
      replayed += std::max(0.0, diverge - start);
      left_to_loop += 1.0 - diverge;
      if (!comparison.kept) {
        divergences.push_back(diverge);
        predecessors.push_back(comparison.predecessors_changed);
      }
    }
  }
  const double runs = static_cast<double>(count[0] + count[1] + count[2]);
  const double replay_cost = replay_seconds / full_seconds;
  state.counters["orders_kept"] = (kept[0] + kept[1] + kept[2]) / runs;
  state.counters["orders_kept_faster"] =
      static_cast<double>(kept[0]) / std::max<int64_t>(1, count[0]);
  state.counters["orders_kept_equal"] =
      static_cast<double>(kept[1]) / std::max<int64_t>(1, count[1]);
  state.counters["orders_kept_slower"] =
      static_cast<double>(kept[2]) / std::max<int64_t>(1, count[2]);
  state.counters["orders_kept_changed_step"] =
      static_cast<double>(kept[0] + kept[2]) /
      std::max<int64_t>(1, count[0] + count[2]);
  state.counters["faster_share"] = count[0] / runs;
  state.counters["divergence_median"] = Median(divergences);
  state.counters["predecessors_changed_median"] = Median(predecessors);
  state.counters["replay_bit_identical"] = identical / runs;
  state.counters["full_over_replay"] = full_seconds / replay_seconds;
  state.counters["suffix_mean"] = suffix / runs;
  state.counters["lean_bit_identical"] = lean_identical / runs;
  state.counters["full_over_lean_loop"] = full_seconds / lean_seconds;
  state.counters["projected_speedup"] =
      runs / (replay_cost * replayed + left_to_loop);
  state.counters["projected_all_kept"] = runs / (replay_cost * suffix);
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
BENCHMARK(BM_OrderReplay)
    ->Arg(10018)
    ->Arg(84699)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gopt::simulator

BENCHMARK_MAIN();
