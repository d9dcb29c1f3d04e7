// gopt-train finetune: see training/train_commands.h.

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "policy/go/fine_tuning.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "policy/go/train_log.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "training/commands/common.h"
#include "training/go/corpus.h"
#include "training/train_commands.h"
#include "util/status_macros.h"
#include "worker/executor.h"

namespace gopt::policy {

namespace {

// The limit on one measured plan: gopt-server's (WorkerPoolOptions'
// plan_timeout_seconds default).
constexpr double kPlanTimeoutSeconds = 120;

// The in-process executor fine-tuning measures plans on: this host's CPU
// executors, at least as many as `topology` has devices (InvalidArgument
// naming the topology otherwise).
absl::StatusOr<std::unique_ptr<worker::Executor>> MeasuringExecutor(
    const simulator::Topology& topology, const std::string& topology_name) {
  worker::ExecutorOptions executor_options;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Executor> executor,
                   worker::Executor::Create(executor_options));
  const int devices = executor->HostTopology().num_devices();
  if (topology.num_devices() > devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reward=measured runs plans on this host's ", devices,
                     " CPU executor(s); topology '", topology_name, "' has ",
                     topology.num_devices(),
                     " devices (use cpu-host or a gopt calibrate topology)"));
  }
  return executor;
}

// Measured rewards from `executor` (borrowed; outlives the fine-tuning):
// each plan measured as gopt-server's in-process worker measures it, within
// the server's limit per plan and the fine-tuning's deadline.
go::MeasuredRewardOptions MeasuredReward(worker::Executor& executor,
                                         const graph::Graph& graph,
                                         absl::Time deadline,
                                         int max_measurements) {
  go::MeasuredRewardOptions measured;
  measured.max_graph_nodes = kDefaultMeasuredRewardMaxNodes;
  measured.max_measurements =
      max_measurements > 0 ? max_measurements : kDefaultRewardMeasurements;
  measured.measure =
      [&executor, &graph,
       deadline](const simulator::Plan& plan) -> absl::StatusOr<double> {
    worker::ExecuteOptions execute;
    execute.per_node_times = false;
    execute.timeout_seconds =
        std::clamp(absl::ToDoubleSeconds(deadline - absl::Now()), 1e-3,
                   kPlanTimeoutSeconds);
    ASSIGN_OR_RETURN(worker::ExecutionResult result,
                     executor.Execute(graph, plan, execute));
    return result.measured_step_time_s;
  };
  return measured;
}

}  // namespace

absl::Status RunFinetune(const FinetuneCommandOptions& options,
                         std::ostream& out) {
  go::SetTorchThreads(options.go.torch_threads);
  ASSIGN_OR_RETURN(go::PpoOptions ppo, PpoOptionsOf(options.go));
  ASSIGN_OR_RETURN(std::unique_ptr<go::GoModel> model,
                   LoadPolicyModel(options.policy_dir));
  ASSIGN_OR_RETURN(graph::Graph graph, go::LoadGraphSource(options.graph));
  const std::string& topology_name = options.topologies.front();
  ASSIGN_OR_RETURN(simulator::Topology topology,
                   simulator::LoadTopology(topology_name));
  std::unique_ptr<worker::Executor> executor;
  if (options.reward == "measured") {
    ASSIGN_OR_RETURN(executor, MeasuringExecutor(topology, topology_name));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<go::TrainingInstance> instance,
      go::MakeTrainingInstance(
          options.graph, std::make_shared<const graph::Graph>(std::move(graph)),
          std::make_shared<const simulator::Topology>(std::move(topology))));
  ASSIGN_OR_RETURN(
      go::ZeroShotResult zero_shot,
      go::ZeroShot(*model, *instance, ppo.tasks, ppo.samples_per_graph,
                   ppo.seed, ppo.simulation_threads));
  std::cerr << absl::StrFormat("zero-shot: %.4f ms (default %.4f ms)\n",
                               zero_shot.best.step_time_s * 1e3,
                               instance->default_step_time_s * 1e3);
  std::ofstream csv;
  if (!options.csv.empty()) {
    csv.open(options.csv);
    csv << go::TrainLogHeader() << "\n";
  }
  go::FineTuneOptions fine_tune;
  fine_tune.ppo = ppo;
  fine_tune.fusion_join = zero_shot.fusion_join;
  fine_tune.max_steps = options.max_steps;
  fine_tune.placement_prior_factor =
      static_cast<float>(options.placement_prior_factor);
  fine_tune.search_simulations_per_step = options.search_simulations;
  fine_tune.deadline = absl::Now() + absl::Seconds(options.max_seconds);
  fine_tune.on_step = [&](const go::TrainLogRow& row, const go::ScoredPlan&) {
    if (csv.is_open()) csv << go::TrainLogLine(row) << "\n";
    std::cerr << absl::StrFormat("step %d %.1fs reward %.3f best %.4f ms\n",
                                 row.step, row.seconds, row.reward,
                                 row.best_step_time_s * 1e3);
  };
  if (executor != nullptr) {
    fine_tune.measured_reward =
        MeasuredReward(*executor, instance->graph(), fine_tune.deadline,
                       options.max_reward_measurements);
  }
  ASSIGN_OR_RETURN(
      go::FineTuneResult result,
      go::FineTune(model.get(), *instance, zero_shot.best, fine_tune));
  if (executor != nullptr) out << go::MeasuredRewardNote(result) << "\n";
  out << absl::StrFormat(
      "%s on %s: default %.4f ms, zero-shot %.4f ms, fine-tuned %.4f ms "
      "(%d steps, %.1f s; plan search: %d improvements in %d plans)\n",
      options.graph, topology_name, instance->default_step_time_s * 1e3,
      zero_shot.best.step_time_s * 1e3, result.best.step_time_s * 1e3,
      result.steps, result.seconds, result.search_improvements,
      result.search_simulations);
  return absl::OkStatus();
}

}  // namespace gopt::policy
