#include "simulator/baselines/baseline_plan.h"

#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {
namespace {

// The placer's placement with every colocation group moved onto one device
// (heuristics place nodes one by one; TF's colocation constraints bind the
// group as a whole).
absl::StatusOr<Placement> PlaceColocated(const Placer& placer,
                                         const BaselineContext& context) {
  ASSIGN_OR_RETURN(Placement placement, placer.PlaceInOrder(context));
  ColocateGroups(context.graph, context.topology, &placement.device);
  return placement;
}

// The priorities of `scheduling` for `placement`: the placer's own order
// for kPlacementOrder, else the registered scheduler's.
absl::StatusOr<std::vector<int32_t>> Schedule(const BaselineRegistry& registry,
                                              absl::string_view scheduling,
                                              const BaselineContext& context,
                                              const Placement& placement) {
  if (scheduling == kPlacementOrder) return placement.priority;
  ASSIGN_OR_RETURN(const Scheduler* scheduler,
                   registry.FindScheduler(scheduling));
  return scheduler->Schedule(context, placement.device);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// The result of one heuristic run, kept for every method that uses it.
template <typename T>
struct Part {
  absl::StatusOr<T> value;
  double seconds = 0;
};

template <typename T, typename Fn>
Part<T> Timed(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<T> value = fn();
  return Part<T>{std::move(value), SecondsSince(start)};
}

absl::Status CheckPart(absl::string_view method, absl::Status found) {
  if (found.ok()) return found;
  return absl::InvalidArgumentError(
      absl::StrCat("method '", method, "': ", found.message()));
}

}  // namespace

std::string BaselineMethod::FullName() const {
  return absl::StrCat(placement, "+", scheduling, "+", fusion, "+", layout);
}

absl::StatusOr<BaselineMethod> ParseBaselineMethod(
    const BaselineRegistry& registry, absl::string_view method) {
  const std::vector<absl::string_view> parts = absl::StrSplit(method, '+');
  if (method.empty() || parts.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "method '", method,
        "': expected PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]], e.g. "
        "'metis+critical-path+greedy'"));
  }
  static constexpr absl::string_view kTasks[] = {"placement", "scheduling",
                                                 "fusion", "layout"};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "method '", method, "': the ", kTasks[i], " part is empty"));
    }
  }
  BaselineMethod parsed;
  parsed.placement = std::string(parts[0]);
  if (parts.size() > 2) parsed.fusion = std::string(parts[2]);
  if (parts.size() > 3) parsed.layout = std::string(parts[3]);
  const absl::StatusOr<const Placer*> placer =
      registry.FindPlacer(parsed.placement);
  RETURN_IF_ERROR(CheckPart(method, placer.status()));
  const bool ordered = (*placer)->AssumesOrder();
  if (parts.size() > 1) {
    parsed.scheduling = std::string(parts[1]);
  } else if (ordered) {
    parsed.scheduling = std::string(kPlacementOrder);
  }
  if (parsed.scheduling == kPlacementOrder) {
    if (!ordered) {
      return absl::InvalidArgumentError(absl::StrCat(
          "method '", method, "': scheduling '", kPlacementOrder,
          "' needs a placement that decides an order (m-etf, m-sct); '",
          parsed.placement, "' does not"));
    }
  } else {
    RETURN_IF_ERROR(
        CheckPart(method, registry.FindScheduler(parsed.scheduling).status()));
  }
  RETURN_IF_ERROR(
      CheckPart(method, registry.FindFuser(parsed.fusion).status()));
  RETURN_IF_ERROR(
      CheckPart(method, registry.FindLayoutAssigner(parsed.layout).status()));
  return parsed;
}

absl::StatusOr<Plan> MakeBaselinePlan(const BaselineRegistry& registry,
                                      absl::string_view method,
                                      const BaselineContext& context) {
  ASSIGN_OR_RETURN(const BaselineMethod parsed,
                   ParseBaselineMethod(registry, method));
  const std::string name = parsed.FullName();
  const Placer* placer = *registry.FindPlacer(parsed.placement);
  const Fuser* fuser = *registry.FindFuser(parsed.fusion);
  const LayoutAssigner* assigner = *registry.FindLayoutAssigner(parsed.layout);
  Plan plan;
  plan.method = name;
  absl::StatusOr<Placement> placement = PlaceColocated(*placer, context);
  if (!placement.ok()) return Annotate(placement.status(), name);
  absl::StatusOr<std::vector<int32_t>> priority =
      Schedule(registry, parsed.scheduling, context, *placement);
  if (!priority.ok()) return Annotate(priority.status(), name);
  plan.device = std::move(placement->device);
  plan.priority = *std::move(priority);
  absl::StatusOr<std::vector<int32_t>> groups =
      fuser->Fuse(context, plan.device);
  if (!groups.ok()) return Annotate(groups.status(), name);
  plan.fusion_group = *std::move(groups);
  absl::StatusOr<std::vector<std::vector<int32_t>>> layout =
      assigner->AssignLayouts(context, plan.device);
  if (!layout.ok()) return Annotate(layout.status(), name);
  plan.layout = *std::move(layout);
  if (absl::Status valid = ValidatePlan(plan, context.graph, context.topology);
      !valid.ok()) {
    return absl::InternalError(
        absl::StrCat(name, " made an invalid plan: ", valid.message()));
  }
  return plan;
}

std::vector<BaselineMethod> BaselineCombinations(
    const BaselineRegistry& registry, const VariedParts& parts) {
  const auto pick = [](std::vector<std::string> names, bool varied) {
    if (!varied) names.resize(1);
    return names;
  };
  std::vector<BaselineMethod> methods;
  for (const std::string& p : pick(registry.PlacerNames(), parts.placement)) {
    std::vector<std::string> schedulings =
        pick(registry.SchedulerNames(), parts.scheduling);
    if (parts.scheduling && (*registry.FindPlacer(p))->AssumesOrder()) {
      schedulings.emplace_back(kPlacementOrder);
    }
    for (const std::string& s : schedulings) {
      for (const std::string& f : pick(registry.FuserNames(), parts.fusion)) {
        for (const std::string& l :
             pick(registry.LayoutAssignerNames(), parts.layout)) {
          methods.push_back(BaselineMethod{p, s, f, l});
        }
      }
    }
  }
  return methods;
}

namespace {

// The methods `options` names, or every registered combination when it
// names none. InvalidArgument for a bad name.
absl::StatusOr<std::vector<BaselineMethod>> MethodsToTry(
    const BaselineRegistry& registry, const BestBaselineOptions& options) {
  std::vector<BaselineMethod> methods;
  if (options.methods.empty()) {
    methods = BaselineCombinations(registry);
  } else {
    for (const std::string& method : options.methods) {
      ASSIGN_OR_RETURN(BaselineMethod parsed,
                       ParseBaselineMethod(registry, method));
      methods.push_back(std::move(parsed));
    }
  }
  return methods;
}

}  // namespace

absl::StatusOr<BestBaselineResult> BestBaseline(
    const BaselineRegistry& registry, const BaselineContext& context,
    const BestBaselineOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<BaselineMethod> methods,
                   MethodsToTry(registry, options));

  const Simulator simulator(context.graph, context.topology,
                            context.cost_model);
  SimulationOptions quick;
  quick.record_timeline = false;
  // Each heuristic runs once per placement; keys are "placement" or
  // "placement|other".
  std::map<std::string, Part<Placement>> placements;
  std::map<std::string, Part<std::vector<int32_t>>> schedules;
  std::map<std::string, Part<std::vector<int32_t>>> fusions;
  std::map<std::string, Part<std::vector<std::vector<int32_t>>>> layouts;
  // Plans already simulated, per placement, for identical-plan reuse.
  struct Simulated {
    Plan plan;
    BaselineTrial trial;
  };
  std::map<std::string, std::vector<Simulated>> simulated;

  BestBaselineResult best;
  int best_index = -1;
  for (const BaselineMethod& method : methods) {
    if (options.check_stop) RETURN_IF_ERROR(options.check_stop());
    BaselineTrial trial;
    trial.method = method.FullName();
    auto [placed, new_placement] = placements.try_emplace(method.placement);
    if (new_placement) {
      const Placer* placer = *registry.FindPlacer(method.placement);
      placed->second =
          Timed<Placement>([&] { return PlaceColocated(*placer, context); });
    }
    trial.method_seconds = placed->second.seconds;
    if (!placed->second.value.ok()) {
      trial.error = std::string(placed->second.value.status().message());
      best.trials.push_back(std::move(trial));
      continue;
    }
    const Placement& placement = *placed->second.value;
    const std::vector<int32_t>& device = placement.device;
    const std::string prefix = method.placement + "|";

    auto [scheduled, new_schedule] =
        schedules.try_emplace(prefix + method.scheduling);
    if (new_schedule) {
      scheduled->second = Timed<std::vector<int32_t>>([&] {
        return Schedule(registry, method.scheduling, context, placement);
      });
    }
    auto [fused, new_fusion] = fusions.try_emplace(prefix + method.fusion);
    if (new_fusion) {
      const Fuser* fuser = *registry.FindFuser(method.fusion);
      fused->second = Timed<std::vector<int32_t>>(
          [&] { return fuser->Fuse(context, device); });
    }
    auto [laid_out, new_layout] = layouts.try_emplace(prefix + method.layout);
    if (new_layout) {
      const LayoutAssigner* assigner =
          *registry.FindLayoutAssigner(method.layout);
      laid_out->second = Timed<std::vector<std::vector<int32_t>>>(
          [&] { return assigner->AssignLayouts(context, device); });
    }
    trial.method_seconds += scheduled->second.seconds + fused->second.seconds +
                            laid_out->second.seconds;
    for (const absl::Status& status :
         {scheduled->second.value.status(), fused->second.value.status(),
          laid_out->second.value.status()}) {
      if (!status.ok() && trial.error.empty()) {
        trial.error = std::string(status.message());
      }
    }
    if (!trial.error.empty()) {
      best.trials.push_back(std::move(trial));
      continue;
    }

    Plan plan;
    plan.method = trial.method;
    plan.device = device;
    plan.priority = *scheduled->second.value;
    plan.fusion_group = *fused->second.value;
    plan.layout = *laid_out->second.value;
    std::vector<Simulated>& seen = simulated[method.placement];
    const Simulated* same = nullptr;
    for (const Simulated& s : seen) {
      if (s.plan.priority == plan.priority &&
          s.plan.fusion_group == plan.fusion_group &&
          s.plan.layout == plan.layout) {
        same = &s;
        break;
      }
    }
    if (same != nullptr) {
      trial.valid = same->trial.valid;
      trial.error = same->trial.error;
      trial.step_time_s = same->trial.step_time_s;
      trial.oom = same->trial.oom;
      trial.simulation_seconds = same->trial.simulation_seconds;
    } else {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<SimulationResult> result = simulator.Simulate(plan, quick);
      trial.simulation_seconds = SecondsSince(start);
      if (result.ok()) {
        trial.valid = true;
        trial.step_time_s = result->step_time_s;
        trial.oom = result->oom;
      } else {
        trial.error = std::string(result.status().message());
      }
      seen.push_back(Simulated{plan, trial});
    }
    if (trial.valid && !trial.oom &&
        (best_index < 0 ||
         trial.step_time_s < best.trials[best_index].step_time_s)) {
      best_index = static_cast<int>(best.trials.size());
      best.plan = std::move(plan);
    }
    best.trials.push_back(std::move(trial));
  }

  if (best_index < 0) {
    int oom = 0;
    int failed = 0;
    std::string first_error;
    for (const BaselineTrial& trial : best.trials) {
      if (trial.valid) {
        ++oom;
      } else {
        ++failed;
        if (first_error.empty()) {
          first_error = absl::StrCat(trial.method, ": ", trial.error);
        }
      }
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "no baseline method gives a plan that fits in memory on topology '",
        context.topology.name, "' for graph '", context.graph.name(), "' (",
        best.trials.size(), " tried: ", oom, " out of memory, ", failed,
        " failed",
        failed > 0 ? absl::StrCat("; first failure: ", first_error)
                   : std::string(),
        ")"));
  }
  ASSIGN_OR_RETURN(best.result, simulator.Simulate(best.plan));
  return best;
}

std::vector<std::string> DefaultBaselineMethods() {
  std::vector<std::string> methods = {"single", "single+fifo+greedy",
                                      "round-robin", "random"};
  const char* const placements[] = {"expert", "metis", "heft", "m-etf",
                                    "m-sct"};
  for (const char* placement : placements) {
    methods.push_back(placement);
    methods.push_back(absl::StrCat(placement, "+critical-path+greedy"));
  }
  // The same fused plans grouped by greedy-join (fewer, bigger kernels:
  // better on one device, sometimes worse across several).
  methods.push_back("single+fifo+greedy-join");
  for (const char* placement : placements) {
    methods.push_back(absl::StrCat(placement, "+critical-path+greedy-join"));
  }
  return methods;
}

}  // namespace gopt::simulator::baselines
