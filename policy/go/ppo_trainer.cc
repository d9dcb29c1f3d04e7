#include "policy/go/ppo_trainer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/go/memory_fit.h"
#include "policy/go/network.h"
#include "policy/torch_util.h"

namespace gopt::policy::go {
namespace {

// Placements the memory-fitting decode tries at most (FitToMemory).
constexpr int kMemoryFitAttempts = 4;

torch::Tensor ActionsTensor(const std::vector<Actions>& actions,
                            std::vector<int32_t> Actions::*field, int64_t n) {
  const int64_t k = static_cast<int64_t>(actions.size());
  torch::Tensor out = torch::empty({k, n}, torch::kInt64);
  int64_t* data = out.data_ptr<int64_t>();
  for (int64_t s = 0; s < k; ++s) {
    const std::vector<int32_t>& values = actions[s].*field;
    for (int64_t i = 0; i < n; ++i) data[s * n + i] = values[i];
  }
  return out;
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous();
  return std::vector<float>(c.data_ptr<float>(),
                            c.data_ptr<float>() + c.numel());
}

// Log-probabilities of the sampled actions: [N, A] x [K, N] -> [K, N].
torch::Tensor Chosen(const torch::Tensor& logp, const torch::Tensor& actions) {
  const int64_t k = actions.size(0);
  return logp.unsqueeze(0)
      .expand({k, logp.size(0), logp.size(1)})
      .gather(2, actions.unsqueeze(2))
      .squeeze(2);
}

// Simulates `plan` on the instance; stores the per-device peaks and the
// critical path where asked (left empty for a rejected plan).
ScoredPlan SimulatePlan(const TrainingInstance& instance, simulator::Plan plan,
                        std::vector<int64_t>* peak_bytes,
                        std::vector<graph::NodeId>* critical_path = nullptr) {
  ScoredPlan scored;
  simulator::SimulationOptions options;
  options.record_timeline = false;
  absl::StatusOr<simulator::SimulationResult> result =
      instance.simulator->Simulate(plan, options);
  scored.plan = std::move(plan);
  if (critical_path != nullptr) critical_path->clear();
  if (peak_bytes != nullptr) peak_bytes->clear();
  if (!result.ok()) return scored;
  scored.valid = true;
  scored.step_time_s = result->step_time_s;
  scored.oom = result->oom;
  scored.reward = PlanReward(result->step_time_s, result->oom,
                             instance.default_step_time_s);
  if (critical_path != nullptr) {
    *critical_path = std::move(result->critical_path);
  }
  if (peak_bytes != nullptr) *peak_bytes = std::move(result->peak_memory_bytes);
  return scored;
}

// The memory-fitting decode (ScoreActions): `plain`, the plan of `actions`,
// overflows some device (simulated peaks in `peak_bytes`). PlacementMemoryFit
// moves nodes, and the simulator checks each result:
//  1. nodes leave a device only where the running estimate passes its
//     memory (the smallest change);
//  2. every node follows its inputs (follow_inputs), within the devices'
//     memory: a spread placement overflows by its transfers (received copies
//     held while the link queue drains), which this removes, down to one
//     device when the estimate says the graph fits there;
//  3. and on, up to kMemoryFitAttempts: the same with the budget of every
//     device that still overflowed scaled by memory / simulated peak.
// Returns the first plan that fits, else the best of those seen
// (BetterPlan; `plain` unless one is faster).
ScoredPlan FitToMemory(const TrainingInstance& instance, const Actions& actions,
                       ScoredPlan plain, std::vector<int64_t> peak_bytes) {
  const simulator::Topology& topology = instance.simulator->topology();
  const int num_devices = topology.num_devices();
  const PlacementMemoryFit fit(instance.graph(), num_devices);
  std::vector<int64_t> budget_bytes(num_devices);
  for (int d = 0; d < num_devices; ++d) {
    budget_bytes[d] = topology.devices[d].memory_bytes;
  }
  ScoredPlan best = std::move(plain);
  for (int attempt = 0; attempt < kMemoryFitAttempts; ++attempt) {
    if (attempt >= 2) {
      for (int d = 0; d < num_devices; ++d) {
        const int64_t memory = topology.devices[d].memory_bytes;
        if (peak_bytes[d] <= memory) continue;
        budget_bytes[d] = static_cast<int64_t>(
            static_cast<double>(budget_bytes[d]) * memory / peak_bytes[d]);
      }
    }
    Actions fitted = actions;
    absl::StatusOr<PlacementMemoryFit::FitResult> moved =
        fit.Fit(budget_bytes, instance.features.allowed,
                /*follow_inputs=*/attempt > 0, &fitted.device);
    if (!moved.ok()) break;
    if (moved->moved_nodes == 0) continue;
    absl::StatusOr<simulator::Plan> plan =
        ActionsToPlan(instance.graph(), fitted, instance.base_plan.get());
    if (!plan.ok()) break;
    ScoredPlan scored = SimulatePlan(instance, *std::move(plan), &peak_bytes);
    if (!scored.valid) break;
    const bool fits = !scored.oom;
    if (BetterPlan(scored, best)) best = std::move(scored);
    if (fits) break;
  }
  return best;
}

// What epoch 0 of a step records for one graph.
struct Rollout {
  std::vector<torch::Tensor> actions;   // per decided task: [K, N]
  std::vector<torch::Tensor> old_logp;  // per decided task: [K, N]
  torch::Tensor advantages;             // [K, 1]
};

}  // namespace

double PlanReward(double step_time_s, bool oom, double default_step_time_s) {
  if (oom || !(step_time_s > 0) || !(default_step_time_s > 0)) {
    return kInvalidReward;
  }
  return -std::sqrt(step_time_s / default_step_time_s);
}

namespace {

// Featurizes the instance's graph and simulates its default plan.
absl::Status CompleteInstance(const simulator::OpCostModel& cost_model,
                              TrainingInstance* instance) {
  const simulator::Simulator& sim = *instance->simulator;
  absl::StatusOr<GraphFeatures> features =
      Featurize(sim.graph(), sim.topology(), cost_model);
  if (!features.ok()) return features.status();
  instance->features = *std::move(features);
  simulator::SimulationOptions options;
  options.record_timeline = false;
  absl::StatusOr<simulator::SimulationResult> result =
      sim.Simulate(simulator::DefaultPlan(sim.graph()), options);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(instance->label, ": default plan: ",
                                     result.status().message()));
  }
  instance->default_step_time_s = result->step_time_s;
  instance->default_oom = result->oom;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingInstance>> MakeTrainingInstance(
    std::string label, std::shared_ptr<const graph::Graph> graph,
    std::shared_ptr<const simulator::Topology> topology) {
  auto instance = std::make_unique<TrainingInstance>();
  instance->label = std::move(label);
  instance->owned_graph = std::move(graph);
  instance->owned_topology = std::move(topology);
  instance->owned_cost_model = std::make_unique<simulator::RooflineCostModel>();
  instance->owned_simulator = std::make_unique<simulator::Simulator>(
      *instance->owned_graph, *instance->owned_topology,
      *instance->owned_cost_model);
  instance->simulator = instance->owned_simulator.get();
  absl::Status status =
      CompleteInstance(*instance->owned_cost_model, instance.get());
  if (!status.ok()) return status;
  return instance;
}

absl::StatusOr<std::unique_ptr<TrainingInstance>> MakeInstanceForSimulator(
    std::string label, const simulator::Simulator& simulator,
    const simulator::OpCostModel& cost_model,
    const simulator::Plan* base_plan) {
  auto instance = std::make_unique<TrainingInstance>();
  instance->label = std::move(label);
  instance->simulator = &simulator;
  if (base_plan != nullptr) {
    instance->base_plan = std::make_unique<simulator::Plan>(*base_plan);
  }
  absl::Status status = CompleteInstance(cost_model, instance.get());
  if (!status.ok()) return status;
  return instance;
}

bool BetterPlan(const ScoredPlan& a, const ScoredPlan& b) {
  const bool a_ok = a.valid && !a.oom;
  const bool b_ok = b.valid && !b.oom;
  if (a_ok != b_ok) return a_ok;
  if (a.valid != b.valid) return a.valid;
  return a.step_time_s < b.step_time_s;
}

ScoredPlan ScoreActions(const TrainingInstance& instance,
                        const Actions& actions) {
  absl::StatusOr<simulator::Plan> plan =
      ActionsToPlan(instance.graph(), actions, instance.base_plan.get());
  if (!plan.ok()) return ScoredPlan();
  std::vector<int64_t> peak_bytes;
  ScoredPlan scored = SimulatePlan(instance, *std::move(plan), &peak_bytes);
  if (!scored.valid || !scored.oom || actions.device.empty()) return scored;
  return FitToMemory(instance, actions, std::move(scored), peak_bytes);
}

ScoredPlan ScorePlan(const TrainingInstance& instance, simulator::Plan plan,
                     std::vector<graph::NodeId>* critical_path) {
  return SimulatePlan(instance, std::move(plan), nullptr, critical_path);
}

void RunInParallel(int count, int threads,
                   const std::function<void(int)>& work) {
  std::atomic<int> next{0};
  auto drain = [&] {
    for (int i = next++; i < count; i = next++) work(i);
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < std::min(threads, count); ++t) {
    workers.emplace_back(drain);
  }
  drain();
  for (std::thread& worker : workers) worker.join();
}

std::vector<ScoredPlan> SampleAndScore(const TrainingInstance& instance,
                                       const PolicyOutput& output, int count,
                                       int threads, std::mt19937_64* rng,
                                       std::vector<Actions>* actions) {
  actions->clear();
  for (int s = 0; s < count; ++s) {
    actions->push_back(SampleActions(output, rng));
  }
  std::vector<ScoredPlan> scored(count);
  RunInParallel(count, threads, [&](int s) {
    scored[s] = ScoreActions(instance, (*actions)[s]);
  });
  // The memory-fitting decode may have moved nodes: the actions are those
  // of the plans played.
  for (int s = 0; s < count; ++s) {
    if (scored[s].valid && !(*actions)[s].device.empty()) {
      (*actions)[s].device = scored[s].plan.device;
    }
  }
  return scored;
}

class PpoTrainer::State {
 public:
  explicit State(GoNetwork network, double learning_rate)
      : network(std::move(network)),
        optimizer(this->network->parameters(),
                  torch::optim::AdamOptions(learning_rate)) {}
  GoNetwork network;
  torch::optim::Adam optimizer;
};

PpoTrainer::PpoTrainer(GoModel* model, const PpoOptions& options)
    : model_(model),
      options_(options),
      state_(std::make_unique<State>(model->impl().network,
                                     options.learning_rate)) {}

PpoTrainer::~PpoTrainer() = default;

namespace {

// The log-probabilities of the heads a step trains, with the Actions field
// each head decides, in task order (placement, scheduling, fusion).
struct TrainedHeads {
  std::vector<torch::Tensor> logps;
  std::vector<std::vector<int32_t> Actions::*> fields;
};

TrainedHeads HeadsOf(const NetworkOutput& out, const TaskSet& tasks) {
  TrainedHeads heads;
  if (tasks.placement) {
    heads.logps.push_back(out.placement);
    heads.fields.push_back(&Actions::device);
  }
  if (tasks.scheduling) {
    heads.logps.push_back(out.scheduling);
    heads.fields.push_back(&Actions::priority);
  }
  if (tasks.fusion) {
    heads.logps.push_back(out.fusion);
    heads.fields.push_back(&Actions::fusion_priority);
  }
  return heads;
}

// The network inputs of each instance, and the fixed placement of those
// with a base plan (an undefined tensor for the others).
void PrepareInputs(const std::vector<const TrainingInstance*>& batch,
                   std::vector<FeatureTensors>* inputs,
                   std::vector<torch::Tensor>* fixed) {
  for (const TrainingInstance* instance : batch) {
    inputs->push_back(ToTensors(instance->features));
    torch::Tensor placement;
    if (instance->base_plan != nullptr) {
      std::vector<int64_t> wide(instance->base_plan->device.begin(),
                                instance->base_plan->device.end());
      placement = torch::tensor(wide, torch::kInt64);
    }
    fixed->push_back(placement);
  }
}

// Epoch 0 on one graph: samples options.samples_per_graph plans from the
// network's output, scores them, records the graph's statistics in `stats`
// and the actions, their log-probabilities and normalised advantages in
// `rollout`; `total_samples` counts the samples.
void CollectRollout(const TrainingInstance& instance, const NetworkOutput& out,
                    const TrainedHeads& heads, const PpoOptions& options,
                    std::mt19937_64* rng, PpoStepStats* stats,
                    int64_t* total_samples, Rollout* rollout) {
  const TaskSet& tasks = options.tasks;
  const int k = options.samples_per_graph;
  PolicyOutput sampled;
  sampled.num_nodes = instance.features.num_nodes;
  sampled.num_devices = instance.features.num_devices;
  if (tasks.placement) sampled.placement = ToVector(out.placement);
  if (tasks.scheduling) sampled.scheduling = ToVector(out.scheduling);
  if (tasks.fusion) sampled.fusion = ToVector(out.fusion);
  std::vector<Actions> actions;
  std::vector<ScoredPlan> scored = SampleAndScore(
      instance, sampled, k, options.simulation_threads, rng, &actions);
  PpoGraphStats graph_stats;
  graph_stats.label = instance.label;
  if (options.rescore) options.rescore(instance, &scored);
  std::vector<double> rewards;
  for (ScoredPlan& plan : scored) {
    rewards.push_back(plan.reward);
    graph_stats.mean_reward += plan.reward / k;
    if (!plan.valid || plan.oom) {
      ++stats->invalid_plans;
      continue;
    }
    if (!graph_stats.best.valid ||
        plan.step_time_s < graph_stats.best.step_time_s) {
      graph_stats.best = plan;
    }
  }
  if (!graph_stats.best.valid) graph_stats.best = scored[0];
  graph_stats.sampled = std::move(sampled);
  stats->graphs.push_back(std::move(graph_stats));
  double mean = 0;
  for (double r : rewards) mean += r / k;
  double variance = 0;
  for (double r : rewards) variance += (r - mean) * (r - mean) / k;
  const double std_dev = std::sqrt(variance);
  std::vector<float> advantages;
  for (double r : rewards) {
    stats->mean_reward += r;
    ++*total_samples;
    advantages.push_back(
        std_dev > 1e-8 ? static_cast<float>((r - mean) / std_dev) : 0);
  }
  rollout->advantages = torch::tensor(advantages, torch::kFloat32).unsqueeze(1);
  const int64_t n = instance.features.num_nodes;
  for (size_t t = 0; t < heads.logps.size(); ++t) {
    rollout->actions.push_back(ActionsTensor(actions, heads.fields[t], n));
    rollout->old_logp.push_back(
        Chosen(heads.logps[t].detach(), rollout->actions.back()));
  }
}

// The clipped PPO loss of one graph over every trained head, with the
// entropy bonus. Adds each head's entropy to `entropy_sum` when
// `first_epoch`, and its approximate KL from the rollout to `epoch_kl`.
torch::Tensor PpoLoss(const TrainedHeads& heads, const Rollout& rollout,
                      const PpoOptions& options, bool first_epoch,
                      double* entropy_sum, double* epoch_kl) {
  torch::Tensor loss = torch::zeros({}, torch::kFloat32);
  for (size_t t = 0; t < heads.logps.size(); ++t) {
    const torch::Tensor& logp = heads.logps[t];
    torch::Tensor new_logp = Chosen(logp, rollout.actions[t]);
    torch::Tensor ratio = torch::exp(new_logp - rollout.old_logp[t]);
    torch::Tensor surrogate =
        torch::min(ratio * rollout.advantages,
                   torch::clamp(ratio, 1 - options.clip, 1 + options.clip) *
                       rollout.advantages);
    torch::Tensor entropy = -(logp.exp() * logp).sum(-1).mean();
    loss = loss - surrogate.mean() - options.entropy_coef * entropy;
    if (first_epoch) *entropy_sum += entropy.item<double>();
    *epoch_kl +=
        (rollout.old_logp[t] - new_logp.detach()).mean().item<double>();
  }
  return loss;
}

}  // namespace

absl::StatusOr<PpoStepStats> PpoTrainer::Step(
    const std::vector<const TrainingInstance*>& batch, int first_index) {
  if (batch.empty()) {
    return absl::InvalidArgumentError("PPO step on an empty batch");
  }
  const TaskSet& tasks = options_.tasks;
  if (!tasks.placement && !tasks.scheduling && !tasks.fusion) {
    return absl::InvalidArgumentError("PPO step with no task to decide");
  }
  PpoStepStats stats;
  try {
    GoNetwork& network = state_->network;
    network->train();
    std::vector<Rollout> rollouts(batch.size());
    std::vector<FeatureTensors> inputs;
    std::vector<torch::Tensor> fixed;
    PrepareInputs(batch, &inputs, &fixed);
    double entropy_sum = 0;
    double kl_sum = 0;
    int64_t total_samples = 0;
    for (int epoch = 0; epoch < options_.epochs; ++epoch) {
      state_->optimizer.zero_grad();
      double epoch_kl = 0;
      for (size_t b = 0; b < batch.size(); ++b) {
        NetworkOutput out = network->forward(inputs[b], tasks, fixed[b]);
        const TrainedHeads heads = HeadsOf(out, tasks);
        if (epoch == 0) {
          // One generator per graph, seeded by the graph's index in the
          // whole batch: a graph gets the same samples whichever
          // data-parallel rank takes it.
          std::seed_seq seeds{static_cast<uint32_t>(options_.seed),
                              static_cast<uint32_t>(options_.seed >> 32),
                              static_cast<uint32_t>(steps_),
                              static_cast<uint32_t>(first_index + b)};
          std::mt19937_64 rng(seeds);
          CollectRollout(*batch[b], out, heads, options_, &rng, &stats,
                         &total_samples, &rollouts[b]);
        }
        torch::Tensor loss = PpoLoss(heads, rollouts[b], options_, epoch == 0,
                                     &entropy_sum, &epoch_kl);
        (loss / static_cast<double>(batch.size())).backward();
      }
      absl::Status applied =
          ApplyGradients(network, state_->optimizer, options_.after_backward,
                         options_.max_grad_norm);
      if (!applied.ok()) {
        network->eval();
        return applied;
      }
      kl_sum = epoch_kl;
    }
    network->eval();
    ++steps_;
    stats.mean_reward /= std::max<int64_t>(total_samples, 1);
    stats.entropy = entropy_sum / batch.size();
    stats.kl = kl_sum / batch.size();
  } catch (const c10::Error& e) {
    state_->network->eval();
    return TorchErrorToStatus(e, absl::StatusCode::kInternal, "PPO step");
  }
  return stats;
}

}  // namespace gopt::policy::go
