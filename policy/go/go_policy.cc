#include "policy/go/go_policy.h"

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/fine_tuning.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"

namespace gopt::policy {
namespace {

using go::GoModel;

// Simulations run in parallel during zero-shot scoring and fine-tuning.
constexpr int kSimulationThreads = 2;

// A PPO step takes about this many times the zero-shot stage (instance,
// featurization, one forward pass, the sampled plans): it runs two epochs
// of forward and backward passes. Measured on 2 cores: 7x on
// transformer_xl-large (5,454 nodes: 0.145 s and 1.05 s), 5x on gnmt8-80k
// (84,699 nodes: 6.3 s and 32 s).
constexpr double kPpoStepPerZeroShot = 8;

bool Cancelled(const ProposeOptions& options) {
  return options.cancelled != nullptr && options.cancelled->load();
}

class GoPolicy final : public Policy {
 public:
  GoPolicy(PolicyInfo info, std::unique_ptr<GoModel> model)
      : info_(std::move(info)), model_(std::move(model)) {}

  const PolicyInfo& info() const override { return info_; }

  absl::StatusOr<Proposal> Propose(
      const simulator::Simulator& simulator,
      const ProposeOptions& options) const override {
    TaskSet tasks = options.tasks;
    tasks.layout = false;
    if (!tasks.placement && !tasks.scheduling && !tasks.fusion) {
      return absl::InvalidArgumentError(
          "the GO policy decides placement, scheduling and fusion; the "
          "request asks for none of them");
    }
    if (Cancelled(options)) {
      return absl::CancelledError("cancelled before the GO policy started");
    }
    const Clock& clock = *options.clock;
    const absl::Time start = clock.Now();
    simulator::RooflineCostModel cost_model;
    absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
        go::MakeInstanceForSimulator(simulator.graph().name(), simulator,
                                     cost_model, options.base_plan);
    if (!instance.ok()) return instance.status();
    absl::StatusOr<go::ZeroShotResult> zero_shot = go::ZeroShot(
        *model_, **instance, tasks, std::max(options.num_samples, 0),
        options.seed, kSimulationThreads, clock);
    if (!zero_shot.ok()) return zero_shot.status();
    Proposal proposal;
    proposal.inference_s = absl::ToDoubleSeconds(clock.Now() - start);
    go::ScoredPlan best = zero_shot->best;
    if (!best.valid) {
      return absl::InternalError(
          absl::StrCat("the GO policy produced no valid plan for '",
                       simulator.graph().name(), "'"));
    }
    proposal.zero_shot_step_time_s = best.step_time_s;
    proposal.zero_shot_decode = zero_shot->decode;
    if (options.on_progress) {
      options.on_progress({"zero-shot", 0, best.step_time_s});
    }
    if (options.fine_tune_steps > 0 && clock.Now() < options.deadline &&
        !Cancelled(options)) {
      const absl::Time fine_tune_start = clock.Now();
      // A warm start that beats the zero-shot plan becomes the incumbent,
      // and its placement replaces the METIS hint of the placement head's
      // strongest prior (network.h), so that PPO samples around it.
      std::string warm_method;
      if (options.warm_start != nullptr) {
        go::ScoredPlan warm = go::ScorePlan(**instance, *options.warm_start);
        if (go::BetterPlan(warm, best)) {
          warm_method = warm.plan.method;
          if (tasks.placement)
            (*instance)->features.metis_device = warm.plan.device;
          best = std::move(warm);
        }
      }
      const double start_step_time_s = best.step_time_s;
      absl::StatusOr<std::unique_ptr<GoModel>> copy = model_->Clone();
      if (!copy.ok()) return copy.status();
      go::FineTuneOptions fine_tune;
      // From the zero-shot plan, its fusion rule; from a warm start, the
      // one its method names.
      if (warm_method.empty()) fine_tune.fusion_join = zero_shot->fusion_join;
      fine_tune.ppo.tasks = tasks;
      fine_tune.ppo.seed = options.seed;
      fine_tune.ppo.simulation_threads = kSimulationThreads;
      fine_tune.max_steps = options.fine_tune_steps;
      fine_tune.search_simulations_per_step =
          std::max(options.search_simulations_per_step, 0);
      fine_tune.deadline = options.deadline;
      fine_tune.clock = &clock;
      fine_tune.stop_at_step_time_s = options.stop_at_step_time_s;
      fine_tune.first_step_estimate_seconds =
          kPpoStepPerZeroShot * proposal.inference_s;
      fine_tune.cancelled = options.cancelled;
      fine_tune.measured_reward.measure = options.measure_plan;
      fine_tune.measured_reward.max_graph_nodes =
          options.measured_reward_max_graph_nodes;
      fine_tune.measured_reward.max_measurements =
          options.measured_reward_max_measurements;
      fine_tune.on_step = [&](const go::TrainLogRow& row,
                              const go::ScoredPlan& so_far) {
        if (options.on_progress) {
          options.on_progress({"fine-tune", row.step + 1, so_far.step_time_s});
        }
      };
      fine_tune.on_search = [&](int batch, const go::ScoredPlan& so_far) {
        if (options.on_progress) {
          options.on_progress({"search", batch, so_far.step_time_s});
        }
      };
      absl::StatusOr<go::FineTuneResult> tuned =
          go::FineTune(copy->get(), **instance, best, fine_tune);
      if (!tuned.ok()) return tuned.status();
      best = tuned->best;
      if (options.measure_plan) {
        proposal.warnings.push_back(go::MeasuredRewardNote(*tuned));
        // The proposal's step time is the simulator's, as every other
        // method's the engine compares it with.
        best = go::ScorePlan(**instance, std::move(best.plan));
      }
      if (!warm_method.empty()) {
        proposal.warnings.push_back(absl::StrCat(
            "fine-tuning started from the warm-start plan (", warm_method, ", ",
            start_step_time_s * 1e3, " ms), better than zero-shot; ",
            best.step_time_s < start_step_time_s
                ? absl::StrCat("it improved to ", best.step_time_s * 1e3, " ms")
                : std::string("it found nothing faster")));
      }
      if (tuned->ppo_stopped_for_deadline) {
        proposal.warnings.push_back(absl::StrCat(
            "PPO fine-tuning stopped after ", tuned->steps, " of ",
            options.fine_tune_steps,
            " steps: the next step was not expected to finish before the "
            "deadline; the plan search used the time left"));
      }
      proposal.fine_tune_steps_done = tuned->steps;
      proposal.fine_tune_s =
          absl::ToDoubleSeconds(clock.Now() - fine_tune_start);
    }
    if (best.oom) {
      proposal.warnings.push_back(
          "every plan the GO policy found exceeds some device's memory");
    }
    proposal.plan = std::move(best.plan);
    proposal.plan.method = "go";
    proposal.step_time_s = best.step_time_s;
    proposal.oom = best.oom;
    return proposal;
  }

 private:
  const PolicyInfo info_;
  const std::unique_ptr<GoModel> model_;
};

// The GO tasks a card names (other names are ignored); placement,
// scheduling and fusion when it names none.
TaskSet TasksFromCard(const PolicyCard& card) {
  if (!card.tasks.has_value()) return TaskSet{true, true, true, false};
  TaskSet tasks{false, false, false, false};
  for (const std::string& name : *card.tasks) {
    if (name == "placement") tasks.placement = true;
    if (name == "scheduling") tasks.scheduling = true;
    if (name == "fusion") tasks.fusion = true;
  }
  return tasks;
}

}  // namespace

PolicyFactory GoPolicyFactory() {
  return [](const std::string& directory, const nlohmann::json& card)
             -> absl::StatusOr<std::unique_ptr<Policy>> {
    absl::StatusOr<PolicyCard> fields = ParseCard(card);
    if (!fields.ok()) return fields.status();
    if (fields->kind != "go") {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy card in '", directory, "' is not of kind \"go\""));
    }
    absl::StatusOr<std::string> checkpoint =
        VerifiedCheckpointPath(directory, card);
    if (!checkpoint.ok()) return checkpoint.status();
    absl::StatusOr<std::unique_ptr<GoModel>> model = GoModel::Load(*checkpoint);
    if (!model.ok()) return model.status();
    PolicyInfo info;
    info.name = fields->name;
    info.version = fields->version;
    info.kind = "go";
    info.tasks = TasksFromCard(*fields);
    info.directory = directory;
    info.card = card;
    return std::unique_ptr<Policy>(
        new GoPolicy(std::move(info), *std::move(model)));
  };
}

absl::StatusOr<std::unique_ptr<Policy>> LoadGoPolicy(
    const std::string& directory) {
  absl::StatusOr<nlohmann::json> card = ReadCardFile(directory);
  if (!card.ok()) return card.status();
  return GoPolicyFactory()(directory, *card);
}

}  // namespace gopt::policy
