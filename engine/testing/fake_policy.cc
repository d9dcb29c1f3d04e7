#include "engine/testing/fake_policy.h"

#include <memory>

#include "absl/time/clock.h"
#include "engine/policy_registry.h"
#include "policy/card.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/op_cost_model.h"

namespace gopt::engine::testing {

FakePolicy::FakePolicy(const FakePolicyOptions& options) : options_(options) {
  info_.name = options.name;
  info_.version = options.version;
  info_.kind = options.kind;
  info_.tasks = options.tasks;
  info_.directory = options.directory;
  info_.card = options.card;
}

absl::StatusOr<policy::Proposal> FakePolicy::Propose(
    const simulator::Simulator& simulator,
    const policy::ProposeOptions& options) const {
  if (options_.seen_fine_tune_steps != nullptr) {
    *options_.seen_fine_tune_steps = options.fine_tune_steps;
  }
  if (options_.seen_deadline != nullptr) {
    *options_.seen_deadline = options.deadline;
  }
  if (options_.started != nullptr && !options_.started->HasBeenNotified()) {
    options_.started->Notify();
  }
  if (options_.method.empty()) {
    while (true) {
      if (options.cancelled != nullptr && options.cancelled->load()) {
        return absl::CancelledError("fake policy: cancelled");
      }
      if (options.clock->Now() >= options.deadline) {
        return absl::DeadlineExceededError("fake policy: deadline");
      }
      if (options_.release != nullptr &&
          options_.release->WaitForNotificationWithTimeout(
              absl::Milliseconds(5))) {
        return absl::InternalError("fake policy: released without a plan");
      }
      if (options_.release == nullptr) {
        options.clock->SleepFor(absl::Milliseconds(5));
      }
    }
  }
  options.clock->SleepFor(options_.delay);
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{
      simulator.graph(), simulator.topology(), cost_model, options.seed};
  absl::StatusOr<simulator::Plan> plan = simulator::baselines::MakeBaselinePlan(
      registry, options_.method, context);
  if (!plan.ok()) return plan.status();
  plan->method = options_.name;
  absl::StatusOr<simulator::SimulationResult> result = simulator.Simulate(
      *plan, simulator::SimulationOptions{/*record_timeline=*/false});
  if (!result.ok()) return result.status();
  policy::Proposal proposal;
  proposal.plan = *std::move(plan);
  proposal.step_time_s = result->step_time_s;
  proposal.oom = result->oom;
  proposal.zero_shot_step_time_s = result->step_time_s;
  if (options.on_progress) {
    options.on_progress(
        policy::ProposeProgress{"zero-shot", 0, result->step_time_s});
  }
  return proposal;
}

policy::PolicyFactory FakePolicyFactory() {
  return [](const std::string& directory, const nlohmann::json& card)
             -> absl::StatusOr<std::unique_ptr<policy::Policy>> {
    absl::StatusOr<policy::PolicyCard> fields = policy::ParseCard(card);
    if (!fields.ok()) return fields.status();
    FakePolicyOptions options;
    options.name = fields->name;
    options.version = fields->version;
    options.kind = fields->kind;
    if (fields->tasks.has_value()) {
      options.tasks = policy::TaskSet{false, false, false, false};
      for (const std::string& task : *fields->tasks) {
        absl::Status added = AddTaskByName(task, &options.tasks);
        if (!added.ok()) return added;
      }
    }
    options.method = policy::CardText(card, "method", "");
    if (policy::CardFlag(card, "fail_to_load")) {
      return absl::InvalidArgumentError("fake policy: checkpoint is corrupt");
    }
    options.directory = directory;
    options.card = card;
    return std::unique_ptr<policy::Policy>(
        std::make_unique<FakePolicy>(options));
  };
}

}  // namespace gopt::engine::testing
