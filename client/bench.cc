#include "client/bench.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graph/status_macros.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/simulator.h"

namespace gopt::client {
namespace {

using simulator::baselines::BaselineContext;

constexpr char kBestBaseline[] = "best-baseline";

bool IsFineTuneMethod(const std::string& method) {
  return method == kGoFineTune || method == kGoFineTuneCold ||
         method == kGoFineTuneOneByOne || method == kGoFineTuneSeparate;
}

constexpr policy::TaskSet kPlacementOnly{true, false, false, false};
constexpr policy::TaskSet kSchedulingOnly{false, true, false, false};
constexpr policy::TaskSet kFusionOnly{false, false, true, false};

// The best of `methods` (BestBaseline), or nothing when none gives a plan
// that fits: fine-tuning then starts from the policy's zero-shot plan.
std::optional<simulator::Plan> BestOf(
    const simulator::baselines::BaselineRegistry& registry,
    const BaselineContext& context, std::vector<std::string> methods) {
  simulator::baselines::BestBaselineOptions best_options;
  best_options.methods = std::move(methods);
  absl::StatusOr<simulator::baselines::BestBaselineResult> best =
      simulator::baselines::BestBaseline(registry, context, best_options);
  if (!best.ok()) return std::nullopt;
  return std::move(best->plan);
}

// Runs the GO policy for one go-* method; fills `row->fine_tune_steps`.
absl::StatusOr<simulator::Plan> GoPlan(
    const std::string& method, const simulator::Simulator& sim,
    const BaselineContext& context,
    const simulator::baselines::BaselineRegistry& registry,
    const BenchOptions& options, BenchRow* row) {
  if (options.go_policy == nullptr) {
    return absl::FailedPreconditionError(
        "no GO policy loaded (gopt bench --policy_dir)");
  }
  policy::ProposeOptions propose;
  propose.num_samples = options.go_samples;
  propose.seed = options.seed;
  const bool one_by_one =
      method == kGoOneByOne || method == kGoFineTuneOneByOne;
  const bool separate = method == kGoSeparate || method == kGoFineTuneSeparate;
  const bool fine_tune = IsFineTuneMethod(method);
  // One task at a time shares the budget equally among the three tasks.
  const int parts = one_by_one || separate ? 3 : 1;
  if (fine_tune) {
    propose.fine_tune_steps = std::max(options.go_fine_tune_steps / parts, 1);
    propose.search_simulations_per_step =
        options.go_search_simulations_per_step;
  }
  const double seconds = options.go_fine_tune_seconds / parts;
  row->fine_tune_steps = 0;
  // One Propose call: `tasks` decided, the rest from `base` (null: the
  // framework defaults), fine-tuning (if any) from `warm_start` (null: the
  // zero-shot plan).
  auto run = [&](const policy::TaskSet& tasks, const simulator::Plan* base,
                 const simulator::Plan* warm_start)
      -> absl::StatusOr<simulator::Plan> {
    propose.tasks = tasks;
    propose.base_plan = base;
    propose.warm_start = nullptr;
    if (fine_tune) {
      propose.warm_start = warm_start;
      propose.deadline = absl::Now() + absl::Seconds(seconds);
    }
    absl::StatusOr<policy::Proposal> proposal =
        options.go_policy->Propose(sim, propose);
    if (!proposal.ok()) return proposal.status();
    row->fine_tune_steps += proposal->fine_tune_steps_done;
    return std::move(proposal->plan);
  };
  auto or_null = [](const std::optional<simulator::Plan>& plan) {
    return plan.has_value() ? &*plan : nullptr;
  };
  if (separate) {  // pl | sch | fu: see kGoFineTuneSeparate
    ASSIGN_OR_RETURN(
        simulator::Plan expert,
        simulator::baselines::MakeBaselinePlan(registry, "expert", context));
    const simulator::Plan defaults = simulator::DefaultPlan(sim.graph());
    // Each task warm-starts from the best baseline for it alone.
    std::optional<simulator::Plan> warm_start;
    if (fine_tune) {
      std::vector<std::string> placements;
      for (const std::string& placer : registry.PlacerNames()) {
        placements.push_back(absl::StrCat(placer, "+fifo"));
      }
      warm_start = BestOf(registry, context, std::move(placements));
    }
    ASSIGN_OR_RETURN(simulator::Plan placed,
                     run(kPlacementOnly, &defaults, or_null(warm_start)));
    if (fine_tune) {
      warm_start =
          BestOf(registry, context, {"expert+fifo", "expert+critical-path"});
    }
    ASSIGN_OR_RETURN(simulator::Plan scheduled,
                     run(kSchedulingOnly, &expert, or_null(warm_start)));
    if (fine_tune) {
      warm_start = BestOf(registry, context, {"expert", "expert+fifo+greedy"});
    }
    ASSIGN_OR_RETURN(simulator::Plan fused,
                     run(kFusionOnly, &expert, or_null(warm_start)));
    return CombineSeparateDecisions(std::move(placed), scheduled, fused);
  }
  std::optional<simulator::Plan> best_baseline;
  if (method == kGoFineTune || method == kGoFineTuneOneByOne) {
    best_baseline = BestOf(registry, context, {});
  }
  if (!one_by_one) {
    return run(policy::TaskSet{}, nullptr, or_null(best_baseline));
  }
  simulator::Plan plan = best_baseline.has_value()
                             ? *std::move(best_baseline)
                             : simulator::DefaultPlan(sim.graph());
  for (const policy::TaskSet& tasks :
       {kPlacementOnly, kSchedulingOnly, kFusionOnly}) {
    ASSIGN_OR_RETURN(plan, run(tasks, &plan, &plan));
  }
  return plan;
}

int64_t MaxPeak(const simulator::SimulationResult& result) {
  int64_t peak = 0;
  for (int64_t bytes : result.peak_memory_bytes) peak = std::max(peak, bytes);
  return peak;
}

// Methods whose summary is reported: valid, non-OOM rows only.
struct Summary {
  double log_ratio_default = 0;
  double log_ratio_bound = 0;
  int graphs = 0;
  int wins = 0;
};

std::map<std::string, Summary> Summarise(
    const std::vector<BenchGraphResult>& results,
    std::vector<std::string>* order) {
  std::map<std::string, Summary> summary;
  for (const BenchGraphResult& graph : results) {
    double best = 0;
    for (const BenchRow& row : graph.rows) {
      if (row.valid && !row.oom && (best == 0 || row.step_time_s < best)) {
        best = row.step_time_s;
      }
    }
    for (const BenchRow& row : graph.rows) {
      if (std::find(order->begin(), order->end(), row.method) == order->end()) {
        order->push_back(row.method);
      }
      if (!row.valid || row.oom) continue;
      Summary& s = summary[row.method];
      s.log_ratio_default += std::log(row.ratio_to_default);
      s.log_ratio_bound += std::log(row.ratio_to_lower_bound);
      ++s.graphs;
      if (row.step_time_s <= best * (1 + 1e-9)) ++s.wins;
    }
  }
  return summary;
}

}  // namespace

simulator::Plan CombineSeparateDecisions(simulator::Plan placed,
                                         const simulator::Plan& scheduled,
                                         const simulator::Plan& fused) {
  simulator::Plan plan = std::move(placed);
  plan.priority = scheduled.priority;
  plan.fusion_group = fused.fusion_group;
  plan.layout.clear();
  absl::flat_hash_map<int32_t, int32_t> group_device;
  absl::flat_hash_set<int32_t> split;
  for (size_t id = 0; id < plan.fusion_group.size(); ++id) {
    const int32_t group = plan.fusion_group[id];
    if (group < 0) continue;
    auto [it, inserted] = group_device.emplace(group, plan.device[id]);
    if (!inserted && it->second != plan.device[id]) split.insert(group);
  }
  for (int32_t& group : plan.fusion_group) {
    if (split.contains(group)) group = -1;
  }
  return plan;
}

bool IsGoMethod(const std::string& method) {
  return method == kGoZeroShot || method == kGoOneByOne ||
         method == kGoSeparate || IsFineTuneMethod(method);
}

absl::StatusOr<BenchGraphResult> BenchGraph(
    const graph::Graph& graph, const std::string& label,
    const simulator::Topology& topology,
    const simulator::baselines::BaselineRegistry& registry,
    const BenchOptions& options) {
  simulator::RooflineCostModel cost_model;
  simulator::Simulator sim(graph, topology, cost_model);
  BenchGraphResult out;
  out.graph = label;
  out.nodes = graph.num_nodes();
  out.lower_bound_s = sim.LowerBound();
  simulator::SimulationOptions sim_options;
  sim_options.record_timeline = false;
  absl::StatusOr<simulator::SimulationResult> baseline =
      sim.Simulate(simulator::DefaultPlan(graph), sim_options);
  if (!baseline.ok()) return baseline.status();
  out.default_step_time_s = baseline->step_time_s;
  out.default_oom = baseline->oom;

  std::vector<std::string> methods = options.methods;
  if (methods.empty()) {
    methods = simulator::baselines::DefaultBaselineMethods();
    methods.push_back(kBestBaseline);
  }
  const BaselineContext context{graph, topology, cost_model, options.seed};
  for (const std::string& method : methods) {
    BenchRow row;
    row.method = method;
    const absl::Time start = absl::Now();
    absl::StatusOr<simulator::Plan> plan;
    if (IsGoMethod(method)) {
      plan = GoPlan(method, sim, context, registry, options, &row);
    } else if (method == kBestBaseline) {
      auto best = simulator::baselines::BestBaseline(registry, context);
      if (best.ok()) {
        row.chosen_method = best->plan.method;
        plan = best->plan;
      } else {
        plan = best.status();
      }
    } else {
      plan = simulator::baselines::MakeBaselinePlan(registry, method, context);
    }
    row.method_seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (!plan.ok()) {
      row.error = std::string(plan.status().message());
      out.rows.push_back(std::move(row));
      continue;
    }
    absl::StatusOr<simulator::SimulationResult> result =
        sim.Simulate(*plan, sim_options);
    if (!result.ok()) {
      row.error = std::string(result.status().message());
      out.rows.push_back(std::move(row));
      continue;
    }
    row.valid = true;
    row.step_time_s = result->step_time_s;
    row.ratio_to_default = result->step_time_s / out.default_step_time_s;
    row.ratio_to_lower_bound =
        out.lower_bound_s > 0 ? result->step_time_s / out.lower_bound_s : 0;
    row.peak_memory_bytes = MaxPeak(*result);
    row.oom = result->oom;
    out.rows.push_back(std::move(row));
  }
  return out;
}

nlohmann::json BenchToJson(const std::string& topology,
                           const std::vector<BenchGraphResult>& results) {
  nlohmann::json json;
  json["topology"] = topology;
  json["graphs"] = nlohmann::json::array();
  json["rows"] = nlohmann::json::array();
  for (const BenchGraphResult& graph : results) {
    json["graphs"].push_back(
        {{"graph", graph.graph},
         {"nodes", graph.nodes},
         {"lower_bound_s", graph.lower_bound_s},
         {"default_step_time_s", graph.default_step_time_s},
         {"default_oom", graph.default_oom}});
    for (const BenchRow& row : graph.rows) {
      nlohmann::json r = {{"graph", graph.graph},
                          {"nodes", graph.nodes},
                          {"method", row.method},
                          {"valid", row.valid},
                          {"method_seconds", row.method_seconds},
                          {"lower_bound_s", graph.lower_bound_s}};
      if (!row.chosen_method.empty()) r["chosen_method"] = row.chosen_method;
      if (IsFineTuneMethod(row.method)) {
        r["fine_tune_steps"] = row.fine_tune_steps;
      }
      if (row.valid) {
        r["step_time_s"] = row.step_time_s;
        r["ratio_to_default"] = row.ratio_to_default;
        r["ratio_to_lower_bound"] = row.ratio_to_lower_bound;
        r["peak_memory_bytes"] = row.peak_memory_bytes;
        r["oom"] = row.oom;
      } else {
        r["error"] = row.error;
      }
      json["rows"].push_back(std::move(r));
    }
  }
  std::vector<std::string> order;
  const std::map<std::string, Summary> summary = Summarise(results, &order);
  json["summary"] = nlohmann::json::array();
  for (const std::string& method : order) {
    auto it = summary.find(method);
    if (it == summary.end()) continue;
    const Summary& s = it->second;
    json["summary"].push_back(
        {{"method", method},
         {"graphs", s.graphs},
         {"wins", s.wins},
         {"geomean_ratio_to_default", std::exp(s.log_ratio_default / s.graphs)},
         {"geomean_ratio_to_lower_bound",
          std::exp(s.log_ratio_bound / s.graphs)}});
  }
  return json;
}

std::string BenchToText(const std::string& topology,
                        const std::vector<BenchGraphResult>& results) {
  std::string out = absl::StrCat("topology ", topology, "\n");
  for (const BenchGraphResult& graph : results) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "\n%s: %d nodes, lower bound %.4g ms, default %.4g ms%s\n",
                  graph.graph, graph.nodes, graph.lower_bound_s * 1e3,
                  graph.default_step_time_s * 1e3,
                  graph.default_oom ? " (OOM)" : ""));
    absl::StrAppend(
        &out, absl::StrFormat("  %-44s %12s %9s %9s %11s %5s %9s\n", "method",
                              "step ms", "/default", "/bound", "peak GiB",
                              "oom", "took s"));
    for (const BenchRow& row : graph.rows) {
      if (!row.valid) {
        absl::StrAppend(&out, absl::StrFormat("  %-44s error: %s\n", row.method,
                                              row.error));
        continue;
      }
      std::string label =
          row.chosen_method.empty()
              ? row.method
              : absl::StrCat(row.method, ": ", row.chosen_method);
      if (IsFineTuneMethod(row.method)) {
        absl::StrAppend(&label, " (", row.fine_tune_steps, " steps)");
      }
      absl::StrAppend(
          &out, absl::StrFormat(
                    "  %-44s %12.4f %9.3f %9.3f %11.3f %5s %9.3f\n", label,
                    row.step_time_s * 1e3, row.ratio_to_default,
                    row.ratio_to_lower_bound,
                    static_cast<double>(row.peak_memory_bytes) / (1 << 30),
                    row.oom ? "OOM" : "", row.method_seconds));
    }
  }
  std::vector<std::string> order;
  const std::map<std::string, Summary> summary = Summarise(results, &order);
  absl::StrAppend(&out,
                  "\nsummary (geometric means over graphs where the "
                  "method's plan is valid and fits memory)\n");
  absl::StrAppend(
      &out, absl::StrFormat("  %-44s %7s %5s %9s %9s\n", "method", "graphs",
                            "wins", "/default", "/bound"));
  for (const std::string& method : order) {
    auto it = summary.find(method);
    if (it == summary.end()) {
      absl::StrAppend(&out, absl::StrFormat("  %-44s %7d\n", method, 0));
      continue;
    }
    const Summary& s = it->second;
    absl::StrAppend(
        &out, absl::StrFormat("  %-44s %7d %5d %9.3f %9.3f\n", method, s.graphs,
                              s.wins, std::exp(s.log_ratio_default / s.graphs),
                              std::exp(s.log_ratio_bound / s.graphs)));
  }
  return out;
}

}  // namespace gopt::client
