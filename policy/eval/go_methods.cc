#include "policy/eval/go_methods.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "util/status_macros.h"

namespace gopt::policy::eval {
namespace {

using simulator::baselines::BaselineContext;
using simulator::baselines::BaselineRegistry;

constexpr TaskSet kPlacementOnly{true, false, false, false};
constexpr TaskSet kSchedulingOnly{false, true, false, false};
constexpr TaskSet kFusionOnly{false, false, true, false};

// The best of `methods` (BestBaseline; empty = every combination), or
// nothing when none gives a plan that fits: fine-tuning then starts from
// the policy's zero-shot plan.
std::optional<simulator::Plan> BestOf(const BaselineRegistry& registry,
                                      const BaselineContext& context,
                                      std::vector<std::string> methods) {
  simulator::baselines::BestBaselineOptions best_options;
  best_options.methods = std::move(methods);
  absl::StatusOr<simulator::baselines::BestBaselineResult> best =
      simulator::baselines::BestBaseline(registry, context, best_options);
  if (!best.ok()) return std::nullopt;
  return std::move(best->plan);
}

const simulator::Plan* OrNull(const std::optional<simulator::Plan>& plan) {
  return plan.has_value() ? &*plan : nullptr;
}

// One protocol run: Propose calls sharing the budget and the step count.
class GoMethodRun {
 public:
  GoMethodRun(const std::string& method, const Policy& policy,
              const simulator::Simulator& sim, const BaselineContext& context,
              const BaselineRegistry& registry, const GoMethodOptions& options)
      : policy_(policy),
        sim_(sim),
        context_(context),
        registry_(registry),
        one_by_one_(method == kGoOneByOne || method == kGoFineTuneOneByOne),
        separate_(method == kGoSeparate || method == kGoFineTuneSeparate),
        fine_tune_(IsFineTuneMethod(method)),
        from_best_baseline_(method == kGoFineTune ||
                            method == kGoFineTuneOneByOne) {
    // One task at a time shares the budget equally among the three tasks.
    const int parts = one_by_one_ || separate_ ? 3 : 1;
    propose_.num_samples = options.num_samples;
    propose_.seed = options.seed;
    if (fine_tune_) {
      propose_.fine_tune_steps = std::max(options.fine_tune_steps / parts, 1);
      propose_.search_simulations_per_step =
          options.search_simulations_per_step;
    }
    seconds_ = options.fine_tune_seconds / parts;
  }

  absl::StatusOr<GoMethodResult> Run() {
    GoMethodResult result;
    if (separate_) {
      ASSIGN_OR_RETURN(result.plan, Separate());
    } else {
      ASSIGN_OR_RETURN(result.plan, Joint());
    }
    result.fine_tune_steps = steps_;
    result.zero_shot_decode = zero_shot_decode_;
    return result;
  }

 private:
  // One Propose call: `tasks` decided, the rest from `base` (null: the
  // framework defaults), fine-tuning (if any) from `warm_start` (null: the
  // zero-shot plan).
  absl::StatusOr<simulator::Plan> Propose(const TaskSet& tasks,
                                          const simulator::Plan* base,
                                          const simulator::Plan* warm_start) {
    propose_.tasks = tasks;
    propose_.base_plan = base;
    propose_.warm_start = nullptr;
    if (fine_tune_) {
      propose_.warm_start = warm_start;
      propose_.deadline = absl::Now() + absl::Seconds(seconds_);
    }
    ASSIGN_OR_RETURN(Proposal proposal, policy_.Propose(sim_, propose_));
    steps_ += proposal.fine_tune_steps_done;
    zero_shot_decode_ = proposal.zero_shot_decode;
    return std::move(proposal.plan);
  }

  // go-zeroshot, go-finetune(-cold), go-*-1by1.
  absl::StatusOr<simulator::Plan> Joint() {
    std::optional<simulator::Plan> best_baseline;
    if (from_best_baseline_) best_baseline = BestOf(registry_, context_, {});
    if (!one_by_one_) {
      return Propose(TaskSet{}, nullptr, OrNull(best_baseline));
    }
    simulator::Plan plan = best_baseline.has_value()
                               ? *std::move(best_baseline)
                               : simulator::DefaultPlan(sim_.graph());
    for (const TaskSet& tasks :
         {kPlacementOnly, kSchedulingOnly, kFusionOnly}) {
      ASSIGN_OR_RETURN(plan, Propose(tasks, &plan, &plan));
    }
    return plan;
  }

  // pl | sch | fu: see kGoFineTuneSeparate. Each task warm-starts from the
  // best baseline for it alone.
  absl::StatusOr<simulator::Plan> Separate() {
    ASSIGN_OR_RETURN(
        simulator::Plan expert,
        simulator::baselines::MakeBaselinePlan(registry_, "expert", context_));
    const simulator::Plan defaults = simulator::DefaultPlan(sim_.graph());
    std::optional<simulator::Plan> warm_start;
    if (fine_tune_) {
      std::vector<std::string> placements;
      for (const std::string& placer : registry_.PlacerNames()) {
        placements.push_back(absl::StrCat(placer, "+fifo"));
      }
      warm_start = BestOf(registry_, context_, std::move(placements));
    }
    ASSIGN_OR_RETURN(simulator::Plan placed,
                     Propose(kPlacementOnly, &defaults, OrNull(warm_start)));
    if (fine_tune_) {
      warm_start =
          BestOf(registry_, context_, {"expert+fifo", "expert+critical-path"});
    }
    ASSIGN_OR_RETURN(simulator::Plan scheduled,
                     Propose(kSchedulingOnly, &expert, OrNull(warm_start)));
    if (fine_tune_) {
      warm_start =
          BestOf(registry_, context_, {"expert", "expert+fifo+greedy"});
    }
    ASSIGN_OR_RETURN(simulator::Plan fused,
                     Propose(kFusionOnly, &expert, OrNull(warm_start)));
    return CombineSeparateDecisions(std::move(placed), scheduled, fused);
  }

  const Policy& policy_;
  const simulator::Simulator& sim_;
  const BaselineContext& context_;
  const BaselineRegistry& registry_;
  const bool one_by_one_;
  const bool separate_;
  const bool fine_tune_;
  const bool from_best_baseline_;
  ProposeOptions propose_;
  double seconds_ = 0;
  int steps_ = 0;
  std::string zero_shot_decode_;
};

}  // namespace

bool IsFineTuneMethod(const std::string& method) {
  return method == kGoFineTune || method == kGoFineTuneCold ||
         method == kGoFineTuneOneByOne || method == kGoFineTuneSeparate;
}

bool IsGoMethod(const std::string& method) {
  return method == kGoZeroShot || method == kGoOneByOne ||
         method == kGoSeparate || IsFineTuneMethod(method);
}

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

absl::StatusOr<GoMethodResult> RunGoMethod(const std::string& method,
                                           const Policy& policy,
                                           const simulator::Simulator& sim,
                                           const BaselineContext& context,
                                           const BaselineRegistry& registry,
                                           const GoMethodOptions& options) {
  if (!IsGoMethod(method)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", method, "' is not a GO protocol"));
  }
  return GoMethodRun(method, policy, sim, context, registry, options).Run();
}

}  // namespace gopt::policy::eval
