#include "client/bench.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "policy/eval/summary.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/simulator.h"
#include "util/status_macros.h"

namespace gopt::client {
namespace {

using simulator::baselines::BaselineContext;

using policy::eval::IsFineTuneMethod;
using policy::eval::kBestBaseline;

// Runs the GO policy for one go-* method; fills `row->fine_tune_steps` and
// `row->zero_shot_decode`.
absl::StatusOr<simulator::Plan> GoPlan(
    const std::string& method, const simulator::Simulator& sim,
    const BaselineContext& context,
    const simulator::baselines::BaselineRegistry& registry,
    const BenchOptions& options, BenchRow* row) {
  if (options.go_policy == nullptr) {
    return absl::FailedPreconditionError(
        "no GO policy loaded (gopt bench --policy_dir)");
  }
  policy::eval::GoMethodOptions go;
  go.num_samples = options.go_samples;
  go.seed = options.seed;
  go.fine_tune_steps = options.go_fine_tune_steps;
  go.fine_tune_seconds = options.go_fine_tune_seconds;
  go.search_simulations_per_step = options.go_search_simulations_per_step;
  row->fine_tune_steps = 0;
  ASSIGN_OR_RETURN(policy::eval::GoMethodResult result,
                   policy::eval::RunGoMethod(method, *options.go_policy, sim,
                                             context, registry, go));
  row->fine_tune_steps = result.fine_tune_steps;
  if (method == policy::eval::kGoZeroShot) {
    row->zero_shot_decode = result.zero_shot_decode;
  }
  return std::move(result.plan);
}

int64_t MaxPeak(const simulator::SimulationResult& result) {
  int64_t peak = 0;
  for (int64_t bytes : result.peak_memory_bytes) peak = std::max(peak, bytes);
  return peak;
}

// The summary per method (policy/eval/summary.h): valid, non-OOM rows.
std::vector<policy::eval::MethodSummary> Summarise(
    const std::vector<BenchGraphResult>& results) {
  std::vector<policy::eval::MethodOutcome> outcomes;
  for (const BenchGraphResult& graph : results) {
    for (const BenchRow& row : graph.rows) {
      outcomes.push_back({graph.graph, row.method, row.valid && !row.oom,
                          row.step_time_s, row.ratio_to_default,
                          row.ratio_to_lower_bound});
    }
  }
  return policy::eval::SummariseMethods(outcomes);
}

}  // namespace

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
      if (!row.zero_shot_decode.empty()) {
        r["zero_shot_decode"] = row.zero_shot_decode;
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
  json["summary"] = nlohmann::json::array();
  for (const policy::eval::MethodSummary& s : Summarise(results)) {
    if (s.graphs == 0) continue;
    json["summary"].push_back(
        {{"method", s.method},
         {"graphs", s.graphs},
         {"wins", s.wins},
         {"geomean_ratio_to_default", s.geomean_ratio_to_default},
         {"geomean_ratio_to_lower_bound", s.geomean_ratio_to_lower_bound}});
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
      if (!row.zero_shot_decode.empty()) {
        absl::StrAppend(&label, " (", row.zero_shot_decode, ")");
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
  absl::StrAppend(&out,
                  "\nsummary (geometric means over graphs where the "
                  "method's plan is valid and fits memory)\n");
  absl::StrAppend(
      &out, absl::StrFormat("  %-44s %7s %5s %9s %9s\n", "method", "graphs",
                            "wins", "/default", "/bound"));
  for (const policy::eval::MethodSummary& s : Summarise(results)) {
    if (s.graphs == 0) {
      absl::StrAppend(&out, absl::StrFormat("  %-44s %7d\n", s.method, 0));
      continue;
    }
    absl::StrAppend(
        &out, absl::StrFormat("  %-44s %7d %5d %9.3f %9.3f\n", s.method,
                              s.graphs, s.wins, s.geomean_ratio_to_default,
                              s.geomean_ratio_to_lower_bound));
  }
  return out;
}

}  // namespace gopt::client
