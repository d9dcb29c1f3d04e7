#include "training/cost_model/runtime_model_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/cost_model/metrics.h"
#include "policy/torch_util.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/simulator.h"
#include "worker/measurement.h"

namespace gopt::policy::cost_model {
namespace {

using graph::NodeId;

// The kernel a node runs alone, as the simulator prices it.
simulator::KernelWork NodeKernel(const graph::Node& node) {
  simulator::KernelWork work;
  work.flops = node.flops;
  work.bytes = std::max<int64_t>(0, node.bytes_read + node.bytes_written);
  work.dtype = node.outputs.empty() || node.outputs[0].is_tuple()
                   ? graph::DType::kF32
                   : node.outputs[0].dtype;
  work.op_class = simulator::OpCostClassOf(node.kind);
  work.kind = node.kind;
  return work;
}

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
        NodeKernel(dataset.graphs.at(graph_id).node(id));
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

}  // namespace

absl::StatusOr<std::vector<GraphFidelity>> JudgeRuntimeModel(
    const worker::RuntimeDataset& dataset, const simulator::Topology& learned,
    const simulator::Topology& roofline,
    const std::set<std::string>& held_out) {
  std::map<std::string, std::vector<const worker::MeasuredPlan*>> by_graph;
  for (const worker::MeasuredPlan& m : dataset.plans) {
    by_graph[m.graph_id].push_back(&m);
  }
  const simulator::RooflineCostModel cost_model;
  std::vector<GraphFidelity> out;
  for (const auto& [graph_id, plans] : by_graph) {
    const graph::Graph& g = dataset.graphs.at(graph_id);
    const simulator::Simulator with_model(g, learned, cost_model);
    const simulator::Simulator without(g, roofline, cost_model);
    simulator::SimulationOptions options;
    options.record_timeline = false;
    std::vector<double> measured, by_model, by_roofline;
    for (const worker::MeasuredPlan* m : plans) {
      absl::StatusOr<simulator::SimulationResult> a =
          with_model.Simulate(m->plan, options);
      absl::StatusOr<simulator::SimulationResult> b =
          without.Simulate(m->plan, options);
      if (!a.ok() || !b.ok()) {
        const absl::Status& bad = !a.ok() ? a.status() : b.status();
        return absl::InvalidArgumentError(absl::StrCat("graph '", graph_id,
                                                       "' plan '", m->plan_name,
                                                       "': ", bad.message()));
      }
      measured.push_back(m->measured_step_s);
      by_model.push_back(a->step_time_s);
      by_roofline.push_back(b->step_time_s);
    }
    GraphFidelity f;
    f.graph = graph_id;
    f.held_out = held_out.count(graph_id) > 0;
    f.plans = static_cast<int>(plans.size());
    f.spearman_learned = SpearmanRho(by_model, measured);
    f.spearman_roofline = SpearmanRho(by_roofline, measured);
    f.mape_learned = MeanAbsolutePercentageError(by_model, measured);
    f.mape_roofline = MeanAbsolutePercentageError(by_roofline, measured);
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
        options.progress(epoch, loss.item<double>(), 0);
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
  absl::StatusOr<std::vector<GraphFidelity>> judged =
      JudgeRuntimeModel(dataset, learned, roofline, options.held_out);
  if (!judged.ok()) return judged.status();
  result.per_graph = *std::move(judged);
  return result;
}

}  // namespace gopt::policy::cost_model
