#include "training/cost_model/runtime_model_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "policy/torch_util.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/simulator.h"
#include "worker/measurement.h"

namespace gopt::policy::cost_model {
namespace {

using graph::NodeId;

// One training example: a node's kernel on a device, with the median of
// its measured times over the plans that ran it there.
struct KernelSample {
  simulator::KernelWork work;
  int32_t device = 0;
  std::array<float, simulator::kKernelFeatures> features;
  double log_base_s = 0;
  double log_measured_s = 0;
};

// Median measured kernel time per (graph, node, device) over the plans of
// trained graphs; nodes that are free or did not run as an op are skipped.
absl::StatusOr<std::vector<KernelSample>> KernelSamples(
    const worker::RuntimeDataset& dataset, const simulator::Topology& topology,
    const std::set<std::string>& held_out) {
  std::map<std::tuple<std::string, NodeId, int32_t>, std::vector<double>> times;
  for (const worker::MeasuredPlan& m : dataset.plans) {
    if (held_out.count(m.graph_id) > 0) continue;
    const graph::Graph& g = dataset.graphs.at(m.graph_id);
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      if (m.node_seconds[id] <= 0 ||
          simulator::baselines::IsFreeNode(g.node(id))) {
        continue;
      }
      const int32_t device = m.plan.device[id];
      if (device < 0 || device >= topology.num_devices()) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph '", m.graph_id, "' plan '", m.plan_name,
                         "': node ", id, " on device ", device, "; topology '",
                         topology.name, "' has ", topology.num_devices()));
      }
      times[{m.graph_id, id, device}].push_back(m.node_seconds[id]);
    }
  }
  std::vector<KernelSample> samples;
  samples.reserve(times.size());
  for (const auto& [key, seconds] : times) {
    const auto& [graph_id, id, device] = key;
    const simulator::KernelWork work =
        simulator::NodeKernelWork(dataset.graphs.at(graph_id).node(id));
    const simulator::DeviceProfile& profile = topology.devices[device];
    KernelSample sample;
    sample.work = work;
    sample.device = device;
    sample.features = simulator::KernelFeatures(work, profile);
    sample.log_base_s =
        std::log(std::max(1e-9, simulator::BaseKernelSeconds(work, profile)));
    sample.log_measured_s = std::log(std::max(1e-9, worker::Median(seconds)));
    samples.push_back(sample);
  }
  if (samples.empty()) {
    return absl::InvalidArgumentError(
        "runtime model: no measured kernel to train on (every graph held out, "
        "or no node ran as an op)");
  }
  return samples;
}

struct MlpImpl : torch::nn::Module {
  MlpImpl(int inputs, int hidden)
      : l1(register_module("l1", torch::nn::Linear(inputs, hidden))),
        l2(register_module("l2", torch::nn::Linear(hidden, hidden))),
        l3(register_module("l3", torch::nn::Linear(hidden, 1))) {
    // Start at the roofline (r = 0).
    torch::NoGradGuard no_grad;
    l3->weight.zero_();
    l3->bias.zero_();
  }
  torch::Tensor forward(torch::Tensor x) {
    return l3(torch::relu(l2(torch::relu(l1(x))))).squeeze(-1);
  }
  torch::nn::Linear l1, l2, l3;
};
TORCH_MODULE(Mlp);

simulator::DenseLayer ToLayer(const torch::nn::Linear& linear) {
  simulator::DenseLayer layer;
  const torch::Tensor w = linear->weight.detach().contiguous();
  const torch::Tensor b = linear->bias.detach().contiguous();
  layer.outputs = static_cast<int>(w.size(0));
  layer.inputs = static_cast<int>(w.size(1));
  layer.weights.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
  layer.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
  return layer;
}

double Rms(const std::vector<double>& errors) {
  double sum = 0;
  for (double e : errors) sum += e * e;
  return errors.empty() ? 0 : std::sqrt(sum / errors.size());
}

// Measured plans by graph id (ordered, so every loop over them is
// deterministic).
std::map<std::string, std::vector<const worker::MeasuredPlan*>> PlansByGraph(
    const worker::RuntimeDataset& dataset) {
  std::map<std::string, std::vector<const worker::MeasuredPlan*>> by_graph;
  for (const worker::MeasuredPlan& m : dataset.plans) {
    by_graph[m.graph_id].push_back(&m);
  }
  return by_graph;
}

// The step time `topology` predicts for each plan; InvalidArgument naming
// graph and plan when the simulator rejects one.
absl::StatusOr<std::vector<double>> PredictStepTimes(
    const std::string& graph_id, const graph::Graph& graph,
    const simulator::Topology& topology,
    const std::vector<const worker::MeasuredPlan*>& plans) {
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator simulator(graph, topology, cost_model);
  simulator::SimulationOptions options;
  options.record_timeline = false;
  std::vector<double> out;
  for (const worker::MeasuredPlan* m : plans) {
    absl::StatusOr<simulator::SimulationResult> result =
        simulator.Simulate(m->plan, options);
    if (!result.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph '", graph_id, "' plan '", m->plan_name,
                       "': ", result.status().message()));
    }
    out.push_back(result->step_time_s);
  }
  return out;
}

// The measured medians, or (fastest) each plan's fastest run: the figure
// least disturbed by other load, which the cross-device fit learns from.
std::vector<double> MeasuredStepTimes(
    const std::vector<const worker::MeasuredPlan*>& plans,
    bool fastest = false) {
  std::vector<double> out;
  for (const worker::MeasuredPlan* m : plans) {
    out.push_back(fastest && m->measured_min_step_s > 0 ? m->measured_min_step_s
                                                        : m->measured_step_s);
  }
  return out;
}

// Cross-device costs learned from the measured step times: every link's
// latency scaled and a device overhead per transfer added, by the grid
// point whose predictions on the trained graphs rank plans best and miss
// their step times least (mean of 1 - Spearman + mean |log(p / m)|). The
// kernels keep the learned model's times. Returns the topology with the
// chosen links and the objective before and after.
absl::StatusOr<simulator::Topology> FitCrossDeviceCosts(
    const worker::RuntimeDataset& dataset, const simulator::Topology& learned,
    const std::set<std::string>& held_out, std::string* note) {
  const auto by_graph = PlansByGraph(dataset);
  auto objective = [&](const simulator::Topology& t) -> absl::StatusOr<double> {
    double sum = 0;
    int graphs = 0;
    for (const auto& [graph_id, plans] : by_graph) {
      if (held_out.count(graph_id) > 0) continue;
      absl::StatusOr<std::vector<double>> predicted =
          PredictStepTimes(graph_id, dataset.graphs.at(graph_id), t, plans);
      if (!predicted.ok()) return predicted.status();
      const std::vector<double> measured =
          MeasuredStepTimes(plans, /*fastest=*/true);
      double log_error = 0;
      for (size_t i = 0; i < measured.size(); ++i) {
        log_error += std::abs(std::log(std::max(1e-12, (*predicted)[i]) /
                                       std::max(1e-12, measured[i])));
      }
      sum += 1 - worker::SpearmanRho(*predicted, measured) +
             log_error / std::max<size_t>(1, measured.size());
      ++graphs;
    }
    return graphs > 0 ? sum / graphs : 0.0;
  };
  absl::StatusOr<double> before = objective(learned);
  if (!before.ok()) return before.status();
  simulator::Topology best = learned;
  double best_objective = *before;
  double best_latency_s = 0, best_overhead_s = 0, best_bandwidth = 0;
  // Additive: the calibrated link latency and transfer overhead come from
  // micro-benchmarks, and a plan's many small transfers cost more (thread
  // hand-offs between executors) than a benchmark's few large ones. The
  // bandwidth: the calibrated one (0 below) or a lower one, as a noisy
  // calibration can fit an impossible bandwidth.
  for (double bandwidth : {0.0, 10e9, 5e9, 2e9, 1e9}) {
    for (double latency_s : {0.0, 10e-6, 30e-6, 100e-6, 300e-6}) {
      for (double overhead_s :
           {0.0, 10e-6, 20e-6, 40e-6, 80e-6, 160e-6, 320e-6}) {
        simulator::Topology t = learned;
        for (simulator::Link& link : t.links) {
          link.latency_s += latency_s;
          link.device_overhead_s += overhead_s;
          if (bandwidth > 0) {
            link.bandwidth_bytes_per_s =
                std::min(link.bandwidth_bytes_per_s, bandwidth);
          }
        }
        absl::StatusOr<double> value = objective(t);
        if (!value.ok()) return value.status();
        if (*value < best_objective - 1e-12) {
          best_objective = *value;
          best = std::move(t);
          best_latency_s = latency_s;
          best_overhead_s = overhead_s;
          best_bandwidth = bandwidth;
        }
      }
    }
  }
  *note = absl::StrCat(
      "cross-device costs: link latency +", best_latency_s * 1e6,
      " us, bandwidth ",
      best_bandwidth > 0
          ? absl::StrCat("at most ", best_bandwidth / 1e9, " GB/s")
          : std::string("as calibrated"),
      ", +", best_overhead_s * 1e6, " us device time per transfer (objective ",
      *before, " -> ", best_objective, ")");
  return best;
}

}  // namespace

absl::StatusOr<std::vector<GraphFidelity>> JudgeRuntimeModel(
    const worker::RuntimeDataset& dataset, const simulator::Topology& learned,
    const simulator::Topology& roofline,
    const std::set<std::string>& held_out) {
  std::vector<GraphFidelity> out;
  for (const auto& [graph_id, plans] : PlansByGraph(dataset)) {
    const graph::Graph& g = dataset.graphs.at(graph_id);
    absl::StatusOr<std::vector<double>> by_model =
        PredictStepTimes(graph_id, g, learned, plans);
    if (!by_model.ok()) return by_model.status();
    absl::StatusOr<std::vector<double>> by_roofline =
        PredictStepTimes(graph_id, g, roofline, plans);
    if (!by_roofline.ok()) return by_roofline.status();
    const std::vector<double> measured = MeasuredStepTimes(plans);
    GraphFidelity f;
    f.graph = graph_id;
    f.held_out = held_out.count(graph_id) > 0;
    f.plans = static_cast<int>(plans.size());
    f.spearman_learned = worker::SpearmanRho(*by_model, measured);
    f.spearman_roofline = worker::SpearmanRho(*by_roofline, measured);
    f.mape_learned = worker::MeanAbsolutePercentageError(*by_model, measured);
    f.mape_roofline =
        worker::MeanAbsolutePercentageError(*by_roofline, measured);
    for (size_t i = 0; i < plans.size(); ++i) {
      f.per_plan.push_back({plans[i]->plan_name, measured[i], (*by_model)[i],
                            (*by_roofline)[i]});
    }
    out.push_back(f);
  }
  return out;
}

absl::StatusOr<RuntimeTrainingResult> TrainRuntimeModel(
    const worker::RuntimeDataset& dataset, const simulator::Topology& topology,
    const RuntimeTrainingOptions& options) {
  simulator::Topology roofline = topology;
  for (simulator::DeviceProfile& device : roofline.devices) {
    device.runtime_model = nullptr;
  }
  roofline.runtime_model_path.clear();
  absl::StatusOr<std::vector<KernelSample>> samples =
      KernelSamples(dataset, roofline, options.held_out);
  if (!samples.ok()) return samples.status();
  const int n = static_cast<int>(samples->size());
  constexpr int kDense = simulator::kDenseKernelFeatures;
  constexpr int kOneHot = graph::kNumOpKinds;
  RuntimeTrainingResult result;
  result.kernel_samples = n;
  simulator::RuntimeModelParams& params = result.params;
  // Standardize the dense features; the one-hot stays as it is.
  params.dense_mean.assign(kDense, 0);
  params.dense_scale.assign(kDense, 0);
  for (const KernelSample& s : *samples) {
    for (int j = 0; j < kDense; ++j)
      params.dense_mean[j] += s.features[kOneHot + j] / n;
  }
  for (const KernelSample& s : *samples) {
    for (int j = 0; j < kDense; ++j) {
      const double d = s.features[kOneHot + j] - params.dense_mean[j];
      params.dense_scale[j] += d * d / n;
    }
  }
  for (float& v : params.dense_scale) v = v > 1e-12 ? std::sqrt(v) : 1.0f;
  std::vector<uint8_t> seen(kOneHot, 0);
  std::vector<float> x(static_cast<size_t>(n) * simulator::kKernelFeatures);
  std::vector<float> y(n);
  double lo = 0, hi = 0;
  for (int i = 0; i < n; ++i) {
    const KernelSample& s = (*samples)[i];
    for (int j = 0; j < simulator::kKernelFeatures; ++j) {
      float v = s.features[j];
      if (j >= kOneHot) {
        v = (v - params.dense_mean[j - kOneHot]) /
            params.dense_scale[j - kOneHot];
      } else if (v != 0) {
        seen[j] = 1;
      }
      x[static_cast<size_t>(i) * simulator::kKernelFeatures + j] = v;
    }
    y[i] = static_cast<float>(s.log_measured_s - s.log_base_s);
    lo = std::min(lo, static_cast<double>(y[i]));
    hi = std::max(hi, static_cast<double>(y[i]));
  }
  for (int k = 0; k < kOneHot; ++k) {
    if (seen[k]) params.known_kinds.push_back(static_cast<graph::OpKind>(k));
  }
  params.min_log_ratio = static_cast<float>(lo);
  params.max_log_ratio = static_cast<float>(hi);
  try {
    Mlp mlp = WithTorchSeed(options.seed, [&] {
      return Mlp(simulator::kKernelFeatures, options.hidden);
    });
    const torch::Tensor features =
        torch::from_blob(x.data(), {n, simulator::kKernelFeatures},
                         torch::kFloat32)
            .clone();
    const torch::Tensor target =
        torch::from_blob(y.data(), {n}, torch::kFloat32).clone();
    torch::optim::Adam adam(mlp->parameters(),
                            torch::optim::AdamOptions(options.learning_rate)
                                .weight_decay(options.weight_decay));
    for (int epoch = 1; epoch <= options.epochs; ++epoch) {
      adam.zero_grad();
      const torch::Tensor loss = torch::smooth_l1_loss(
          mlp->forward(features), target, at::Reduction::Mean, /*beta=*/0.1);
      loss.backward();
      adam.step();
      if (options.progress && (epoch % 50 == 0 || epoch == options.epochs)) {
        options.progress(epoch, loss.item<double>());
      }
    }
    params.layers = {ToLayer(mlp->l1), ToLayer(mlp->l2), ToLayer(mlp->l3)};
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "runtime model training");
  }
  // Kernel errors of the exported model, priced as served (plain C++).
  simulator::Topology learned = roofline;
  const auto model =
      std::make_shared<const simulator::LearnedCostModel>(params);
  for (simulator::DeviceProfile& device : learned.devices) {
    device.runtime_model = model;
  }
  std::vector<double> learned_errors, roofline_errors;
  for (const KernelSample& s : *samples) {
    const simulator::DeviceProfile& profile = learned.devices[s.device];
    learned_errors.push_back(
        std::log(std::max(1e-9, model->KernelSeconds(s.work, profile))) -
        s.log_measured_s);
    roofline_errors.push_back(s.log_base_s - s.log_measured_s);
  }
  result.kernel_log_rmse_learned = Rms(learned_errors);
  result.kernel_log_rmse_roofline = Rms(roofline_errors);
  if (options.fit_cross_device_costs) {
    absl::StatusOr<simulator::Topology> fitted = FitCrossDeviceCosts(
        dataset, learned, options.held_out, &result.cross_device_note);
    if (!fitted.ok()) return fitted.status();
    learned = *std::move(fitted);
  }
  result.topology = learned;
  absl::StatusOr<std::vector<GraphFidelity>> judged =
      JudgeRuntimeModel(dataset, learned, roofline, options.held_out);
  if (!judged.ok()) return judged.status();
  result.per_graph = *std::move(judged);
  return result;
}

absl::Status WriteRuntimeModel(const RuntimeTrainingResult& trained,
                               const std::string& command,
                               const std::string& data_dir, uint64_t seed,
                               const std::string& path) {
  nlohmann::json card;
  card["command"] = command;
  card["data"] = data_dir;
  card["seed"] = seed;
  card["kernel_samples"] = trained.kernel_samples;
  card["kernel_log_rmse"] = {{"learned", trained.kernel_log_rmse_learned},
                             {"roofline", trained.kernel_log_rmse_roofline}};
  card["cross_device_costs"] = trained.cross_device_note;
  for (const GraphFidelity& f : trained.per_graph) {
    card["graphs"].push_back({{"graph", f.graph},
                              {"held_out", f.held_out},
                              {"plans", f.plans},
                              {"spearman_learned", f.spearman_learned},
                              {"spearman_roofline", f.spearman_roofline},
                              {"mape_learned", f.mape_learned},
                              {"mape_roofline", f.mape_roofline}});
  }
  simulator::RuntimeModelParams params = trained.params;
  params.card_json = card.dump();
  std::ofstream file(path, std::ios::trunc);
  file << simulator::RuntimeModelToJson(params) << "\n";
  if (!file.flush()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write runtime model '", path, "'"));
  }
  return absl::OkStatus();
}

void PrintRuntimeTraining(const RuntimeTrainingResult& trained,
                          std::ostream& out, bool per_plan) {
  out << absl::StrFormat(
      "kernel time error (rms of log predicted/measured, %d kernels): "
      "learned %.3f, roofline %.3f\n",
      trained.kernel_samples, trained.kernel_log_rmse_learned,
      trained.kernel_log_rmse_roofline);
  if (!trained.cross_device_note.empty()) {
    out << trained.cross_device_note << "\n";
  }
  out << absl::StrFormat("%-28s %-9s %5s %8s %8s %9s %9s\n", "graph", "",
                         "plans", "rho lrn", "rho roof", "mape lrn",
                         "mape roof");
  for (const GraphFidelity& f : trained.per_graph) {
    out << absl::StrFormat("%-28s %-9s %5d %8.3f %8.3f %8.1f%% %8.1f%%\n",
                           f.graph, f.held_out ? "held-out" : "trained",
                           f.plans, f.spearman_learned, f.spearman_roofline,
                           f.mape_learned, f.mape_roofline);
    if (!per_plan) continue;
    for (const GraphFidelity::Plan& p : f.per_plan) {
      out << absl::StrFormat(
          "    %-36s measured %9.3f ms  learned %9.3f  roofline %9.3f\n",
          p.name, p.measured_s * 1e3, p.learned_s * 1e3, p.roofline_s * 1e3);
    }
  }
}

}  // namespace gopt::policy::cost_model
