#include "training/go/zero_shot_eval.h"

#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "policy/go/fine_tuning.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/topology.h"
#include "training/go/corpus.h"
#include "util/geometric_mean.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

// The reference plans' step times on one instance (0 when none is usable).
struct References {
  double expert_s = 0;
  double best_baseline_s = 0;
  std::string best_baseline;
};

References ReferenceTimes(
    const TrainingInstance& instance,
    const simulator::baselines::BaselineRegistry& registry, uint64_t seed) {
  simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{
      instance.graph(), instance.simulator->topology(), cost_model, seed};
  simulator::SimulationOptions sim_options;
  sim_options.record_timeline = false;
  References references;
  absl::StatusOr<simulator::Plan> expert =
      simulator::baselines::MakeBaselinePlan(registry, "expert", context);
  if (expert.ok()) {
    auto simulated = instance.simulator->Simulate(*expert, sim_options);
    if (simulated.ok() && !simulated->oom) {
      references.expert_s = simulated->step_time_s;
    }
  }
  simulator::baselines::BestBaselineOptions best_options;
  best_options.methods = simulator::baselines::DefaultBaselineMethods();
  auto best =
      simulator::baselines::BestBaseline(registry, context, best_options);
  if (best.ok()) {
    references.best_baseline_s = best->result.step_time_s;
    references.best_baseline = best->plan.method;
  }
  return references;
}

}  // namespace

absl::StatusOr<nlohmann::json> EvaluateZeroShot(
    const GoModel& model, const std::vector<std::string>& graphs,
    const std::vector<std::string>& topologies, const PpoOptions& ppo,
    std::ostream& out) {
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  nlohmann::json rows = nlohmann::json::array();
  GeometricMean over_expert;
  GeometricMean over_best;
  out << absl::StrFormat("%-40s %-14s %7s %11s %11s %11s %11s\n", "graph",
                         "topology", "nodes", "default ms", "expert ms",
                         "best-bl ms", "go-zs ms");
  for (const std::string& source : graphs) {
    ASSIGN_OR_RETURN(graph::Graph loaded, LoadGraphSource(source));
    auto graph = std::make_shared<const graph::Graph>(std::move(loaded));
    for (const std::string& name : topologies) {
      ASSIGN_OR_RETURN(simulator::Topology topology,
                       simulator::PresetTopology(name));
      ASSIGN_OR_RETURN(
          std::unique_ptr<TrainingInstance> instance,
          MakeTrainingInstance(source, graph,
                               std::make_shared<const simulator::Topology>(
                                   std::move(topology))));
      ASSIGN_OR_RETURN(
          ZeroShotResult zero_shot,
          ZeroShot(model, *instance, ppo.tasks, ppo.samples_per_graph, ppo.seed,
                   ppo.simulation_threads));
      const References references =
          ReferenceTimes(*instance, registry, ppo.seed);
      const ScoredPlan& go_plan = zero_shot.best;
      const bool go_ok = go_plan.valid && !go_plan.oom;
      out << absl::StrFormat(
          "%-40s %-14s %7d %11.4f %11.4f %11.4f %11.4f%s\n", source, name,
          instance->graph().num_nodes(), instance->default_step_time_s * 1e3,
          references.expert_s * 1e3, references.best_baseline_s * 1e3,
          go_plan.step_time_s * 1e3, go_ok ? "" : " (OOM)");
      rows.push_back({{"graph", source},
                      {"topology", name},
                      {"nodes", instance->graph().num_nodes()},
                      {"default_ms", instance->default_step_time_s * 1e3},
                      {"expert_ms", references.expert_s * 1e3},
                      {"best_baseline_ms", references.best_baseline_s * 1e3},
                      {"best_baseline", references.best_baseline},
                      {"go_zero_shot_ms", go_plan.step_time_s * 1e3},
                      {"go_zero_shot_oom", go_plan.oom}});
      if (go_ok && references.expert_s > 0 && references.best_baseline_s > 0) {
        over_expert.Add(go_plan.step_time_s / references.expert_s);
        over_best.Add(go_plan.step_time_s / references.best_baseline_s);
      }
    }
  }
  nlohmann::json summary = {
      {"pairs", over_expert.count()},
      {"geomean_go_zero_shot_over_expert", over_expert.value()},
      {"geomean_go_zero_shot_over_best_baseline", over_best.value()}};
  out << "\n" << summary.dump(2) << "\n";
  return nlohmann::json{{"rows", rows}, {"summary", summary}};
}

}  // namespace gopt::policy::go
