#include "training/go/distillation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/go/network.h"
#include "policy/torch_util.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/greedy_fusion.h"

namespace gopt::policy::go {
namespace {

// What makes two devices interchangeable (CanonicalDevices).
using DeviceSignature =
    std::tuple<int, double, double, double, double, double, int64_t, double,
               double, std::vector<std::pair<double, double>>,
               std::vector<std::pair<double, double>>>;

DeviceSignature Signature(const simulator::Topology& topology, int d) {
  const simulator::DeviceProfile& p = topology.devices[d];
  std::vector<std::pair<double, double>> out;
  std::vector<std::pair<double, double>> in;
  for (int e = 0; e < topology.num_devices(); ++e) {
    if (e == d) continue;
    const simulator::Link& to = topology.link(d, e);
    const simulator::Link& from = topology.link(e, d);
    out.emplace_back(to.bandwidth_bytes_per_s, to.latency_s);
    in.emplace_back(from.bandwidth_bytes_per_s, from.latency_s);
  }
  std::sort(out.begin(), out.end());
  std::sort(in.begin(), in.end());
  return {static_cast<int>(p.kind),
          p.peak_f32_flops,
          p.peak_f16_flops,
          p.peak_f64_flops,
          p.peak_int8_ops,
          p.memory_bandwidth_bytes_per_s,
          p.memory_bytes,
          p.launch_overhead_s,
          p.max_efficiency,
          std::move(out),
          std::move(in)};
}

// Relabels devices of `device` to devices of the same class in `reference`:
// pairs (d, r) by decreasing count of nodes on d in `device` and on r in
// `reference`, each device and label used once; ties to the pair whose
// first common node comes first.
void MatchReference(const std::vector<int32_t>& device,
                    const std::vector<int32_t>& reference,
                    const std::vector<const std::vector<int32_t>*>& class_of,
                    std::vector<int32_t>* relabel) {
  const int num_devices = static_cast<int>(class_of.size());
  std::map<std::pair<int32_t, int32_t>, std::pair<int64_t, int64_t>> pairs;
  for (size_t i = 0; i < device.size(); ++i) {
    const int32_t d = device[i];
    const int32_t r = reference[i];
    if (class_of[d] != class_of[r]) continue;
    auto [it, inserted] =
        pairs.try_emplace({d, r}, 0, -static_cast<int64_t>(i));
    ++it->second.first;
  }
  std::vector<
      std::pair<std::pair<int64_t, int64_t>, std::pair<int32_t, int32_t>>>
      ranked;
  for (const auto& [pair, score] : pairs) ranked.push_back({score, pair});
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<bool> used_label(num_devices, false);
  for (const auto& [score, pair] : ranked) {
    const auto [d, r] = pair;
    if ((*relabel)[d] >= 0 || used_label[r]) continue;
    (*relabel)[d] = r;
    used_label[r] = true;
  }
}

}  // namespace

std::vector<int32_t> DeviceClasses(const simulator::Topology& topology) {
  std::map<DeviceSignature, int32_t> first;
  std::vector<int32_t> representative(topology.num_devices());
  for (int d = 0; d < topology.num_devices(); ++d) {
    representative[d] =
        first.try_emplace(Signature(topology, d), d).first->second;
  }
  return representative;
}

absl::StatusOr<std::vector<int32_t>> CanonicalDevices(
    const graph::Graph& graph, const simulator::Topology& topology,
    const std::vector<int32_t>& device, const std::vector<uint8_t>& allowed,
    const std::vector<int32_t>* reference) {
  const int n = graph.num_nodes();
  const int num_devices = topology.num_devices();
  if (static_cast<int>(device.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement has ", device.size(), " devices for ", n,
                     " nodes of graph '", graph.name(), "'"));
  }
  if (reference != nullptr && static_cast<int>(reference->size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reference placement has ", reference->size(), " devices for ", n,
        " nodes of graph '", graph.name(), "'"));
  }
  for (int i = 0; i < n; ++i) {
    if (reference != nullptr &&
        ((*reference)[i] < 0 || (*reference)[i] >= num_devices)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", i, " of graph '", graph.name(), "' is on device ",
          (*reference)[i], " of ", num_devices, " in the reference placement"));
    }
    if (device[i] < 0 || device[i] >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", i, " of graph '", graph.name(), "' is placed on device ",
          device[i], " of ", num_devices));
    }
  }
  // Classes of interchangeable devices, each in index order.
  const std::vector<int32_t> representative = DeviceClasses(topology);
  std::map<int32_t, std::vector<int32_t>> classes;
  for (int d = 0; d < num_devices; ++d) {
    classes[representative[d]].push_back(d);
  }
  std::vector<const std::vector<int32_t>*> class_of(num_devices);
  for (int d = 0; d < num_devices; ++d) {
    class_of[d] = &classes[representative[d]];
  }
  // Nodes are in topological order: first use = lowest node index.
  std::vector<int32_t> relabel(num_devices, -1);
  // Labels of each class not yet given, in index order.
  std::vector<bool> taken(num_devices, false);
  auto assign = [&](int32_t d) {
    if (relabel[d] >= 0) return;
    for (int32_t label : *class_of[d]) {
      if (taken[label]) continue;
      relabel[d] = label;
      taken[label] = true;
      return;
    }
  };
  if (reference != nullptr) {
    MatchReference(device, *reference, class_of, &relabel);
    for (int d = 0; d < num_devices; ++d) {
      if (relabel[d] >= 0) taken[relabel[d]] = true;
    }
  }
  for (int i = 0; i < n; ++i) assign(device[i]);
  for (int d = 0; d < num_devices; ++d) assign(d);
  std::vector<int32_t> canonical(n);
  for (int i = 0; i < n; ++i) canonical[i] = relabel[device[i]];
  if (allowed.size() == static_cast<size_t>(n) * num_devices) {
    for (int i = 0; i < n; ++i) {
      if (!allowed[static_cast<size_t>(i) * num_devices + canonical[i]]) {
        return device;
      }
    }
  }
  return canonical;
}

namespace {

// Per dependency of `instance`'s features, the weight of its co-location
// label (DistillTarget::co_location_weight): 0 when either end is a
// free node (simulator/baselines IsFreeNode: the co-location decode puts those
// beside their neighbours, and searched targets scatter them at no cost),
// else 1 + ln(1 + bytes / 64 KiB) over the bytes its edges carry.
std::vector<float> CoLocationLabelWeights(const TrainingInstance& instance) {
  const GraphFeatures& features = instance.features;
  const graph::Graph& graph = instance.graph();
  std::vector<float> weight(features.edge_src.size(), 0.0f);
  for (size_t e = 0; e < weight.size(); ++e) {
    const graph::NodeId src = static_cast<graph::NodeId>(features.edge_src[e]);
    const graph::NodeId dst = static_cast<graph::NodeId>(features.edge_dst[e]);
    if (simulator::baselines::IsFreeNode(graph.node(src)) ||
        simulator::baselines::IsFreeNode(graph.node(dst))) {
      continue;
    }
    double bytes = 0;
    for (const graph::Edge& edge : graph.in_edges(dst)) {
      if (edge.src == src) bytes += static_cast<double>(graph.EdgeBytes(edge));
    }
    weight[e] = static_cast<float>(1.0 + std::log1p(bytes / 65536.0));
  }
  return weight;
}

}  // namespace

absl::StatusOr<DistillTarget> MakeDistillTarget(
    const TrainingInstance& instance, const simulator::Plan& plan,
    const std::vector<int32_t>* reference) {
  const graph::Graph& graph = instance.graph();
  const size_t n = graph.num_nodes();
  DistillTarget target;
  target.instance = &instance;
  absl::StatusOr<std::vector<int32_t>> device =
      CanonicalDevices(graph, instance.simulator->topology(), plan.device,
                       instance.features.allowed, reference);
  if (!device.ok()) return device.status();
  target.device = *std::move(device);
  target.device_class = DeviceClasses(instance.simulator->topology());
  target.co_location_weight = CoLocationLabelWeights(instance);
  if (!plan.priority.empty()) {
    if (plan.priority.size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan has ", plan.priority.size(), " priorities for ", n,
                       " nodes of graph '", graph.name(), "'"));
    }
    target.priority = plan.priority;
  }
  // Fusible under either grouping rule: the target may come from a plan
  // grouped by greedy-join, and the decode tries both.
  target.fusible.assign(n, 0);
  for (const auto join : {simulator::baselines::FusionJoin::kOneProducer,
                          simulator::baselines::FusionJoin::kAllProducers}) {
    absl::StatusOr<std::vector<int32_t>> eager =
        simulator::baselines::GreedyFusionGroups(graph, plan.device, nullptr,
                                                 join);
    if (!eager.ok()) return eager.status();
    std::map<int32_t, int> eager_size;
    for (int32_t group : *eager) {
      if (group >= 0) ++eager_size[group];
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t group = (*eager)[i];
      if (group >= 0 && eager_size[group] > 1) target.fusible[i] = 1;
    }
  }
  target.fused.assign(n, 0);
  if (!plan.fusion_group.empty()) {
    if (plan.fusion_group.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan has ", plan.fusion_group.size(), " fusion groups for ", n,
          " nodes of graph '", graph.name(), "'"));
    }
    std::map<int32_t, int> size;
    for (int32_t group : plan.fusion_group) {
      if (group >= 0) ++size[group];
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t group = plan.fusion_group[i];
      target.fused[i] = group >= 0 && size[group] > 1 ? 1 : 0;
    }
  }
  return target;
}

namespace {

// Adam's parameter groups: the heuristic priors' scales and gate (names
// containing "prior") at `prior_learning_rate` when it is positive, the
// rest (or everything) at `learning_rate`.
std::vector<torch::optim::OptimizerParamGroup> ParameterGroups(
    GoNetwork& network, double learning_rate, double prior_learning_rate) {
  std::vector<torch::Tensor> priors;
  std::vector<torch::Tensor> rest;
  for (const auto& item : network->named_parameters()) {
    const bool prior = prior_learning_rate > 0 &&
                       item.key().find("prior") != std::string::npos;
    (prior ? priors : rest).push_back(item.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(
      rest, std::make_unique<torch::optim::AdamOptions>(learning_rate));
  if (!priors.empty()) {
    groups.emplace_back(priors, std::make_unique<torch::optim::AdamOptions>(
                                    prior_learning_rate));
  }
  return groups;
}

}  // namespace

class DistillationTrainer::State {
 public:
  State(GoNetwork network, double learning_rate, double prior_learning_rate)
      : network(std::move(network)),
        optimizer(
            ParameterGroups(this->network, learning_rate, prior_learning_rate),
            torch::optim::AdamOptions(learning_rate)) {}
  GoNetwork network;
  torch::optim::Adam optimizer;
};

DistillationTrainer::DistillationTrainer(GoModel* model,
                                         const DistillOptions& options)
    : model_(model),
      options_(options),
      state_(std::make_unique<State>(model->impl().network,
                                     options.learning_rate,
                                     options.prior_learning_rate)) {}

DistillationTrainer::~DistillationTrainer() = default;

namespace {

// Pairwise logistic loss on expected levels: for sampled pairs (i, j) with
// priority[i] > priority[j], softplus(E[j] - E[i]). Zero when no pair
// differs.
torch::Tensor RankingLoss(const torch::Tensor& logp,
                          const std::vector<int32_t>& priority, int pairs,
                          std::mt19937_64* rng) {
  const int64_t n = logp.size(0);
  std::vector<int64_t> high;
  std::vector<int64_t> low;
  for (int p = 0; p < pairs; ++p) {
    const int64_t i = static_cast<int64_t>((*rng)() % n);
    const int64_t j = static_cast<int64_t>((*rng)() % n);
    if (priority[i] == priority[j]) continue;
    high.push_back(priority[i] > priority[j] ? i : j);
    low.push_back(priority[i] > priority[j] ? j : i);
  }
  if (high.empty()) return torch::zeros({}, torch::kFloat32);
  const torch::Tensor levels =
      torch::arange(kPriorityLevels, torch::kFloat32).unsqueeze(0);
  const torch::Tensor expected = (logp.exp() * levels).sum(-1);
  const torch::Tensor hi = expected.index_select(0, torch::tensor(high));
  const torch::Tensor lo = expected.index_select(0, torch::tensor(low));
  return torch::nn::functional::softplus(lo - hi).mean();
}

torch::Tensor LongTensor(const std::vector<int32_t>& values) {
  std::vector<int64_t> wide(values.begin(), values.end());
  return torch::tensor(wide, torch::kInt64);
}

// Added inside the co-location loss's logarithms: a floor that keeps the
// gradient of a saturated probability (unlike a clamp).
constexpr double kLogFloor = 1e-6;

// CoLocationLoss on a [N, D] tensor of log-probabilities, differentiable.
// The caller has checked the sizes.
torch::Tensor CoLocationLossTensor(const torch::Tensor& logp,
                                   const std::vector<int32_t>& device,
                                   const std::vector<int32_t>& device_class,
                                   const std::vector<NodePair>& pairs) {
  std::vector<int64_t> first;
  std::vector<int64_t> second;
  std::vector<uint8_t> same;
  for (const auto& [u, v] : pairs) {
    first.push_back(u);
    second.push_back(v);
    same.push_back(device[u] == device[v] ? 1 : 0);
  }
  // log P(u and v share a device) = logsumexp_d (log p_u(d) + log p_v(d)).
  const torch::Tensor shared = (logp.index_select(0, torch::tensor(first)) +
                                logp.index_select(0, torch::tensor(second)))
                                   .logsumexp(1)
                                   .exp();
  const torch::Tensor is_same = torch::tensor(same).to(torch::kBool);
  const torch::Tensor per_pair = torch::where(
      is_same, -(shared + kLogFloor).log(), -(1 - shared + kLogFloor).log());
  // Same and different pairs weigh half each: dependencies are mostly
  // same-device pairs, and a pooled mean lets "everything on one device"
  // win whenever the network cannot yet tell the parts apart.
  const int64_t num_same = std::count(same.begin(), same.end(), uint8_t{1});
  const int64_t num_apart = static_cast<int64_t>(same.size()) - num_same;
  torch::Tensor loss = per_pair.mean();
  if (num_same > 0 && num_apart > 0) {
    const torch::Tensor same_weight = is_same.to(torch::kFloat32);
    loss = 0.5 * (per_pair * same_weight).sum() / num_same +
           0.5 * (per_pair * (1 - same_weight)).sum() / num_apart;
  }
  const bool one_class =
      std::all_of(device_class.begin(), device_class.end(),
                  [&](int32_t c) { return c == device_class.front(); });
  if (!one_class) {
    // The probability of the target device's class: a masked logsumexp
    // over the devices of that class (the target device is one of them).
    std::vector<int32_t> node_class;
    for (int32_t d : device) node_class.push_back(device_class[d]);
    const torch::Tensor in_class = LongTensor(device_class)
                                       .unsqueeze(0)
                                       .eq(LongTensor(node_class).unsqueeze(1));
    const torch::Tensor class_probability =
        logp.masked_fill(in_class.logical_not(),
                         -std::numeric_limits<float>::infinity())
            .logsumexp(1)
            .exp();
    loss = loss - (class_probability + kLogFloor).log().mean();
  }
  return loss;
}

// The co-location head's loss on one graph (DistillOptions::
// co_location_head_weight): `logits` [E] per dependency edge (`src`, `dst`
// [E] int64), labels from the target placement `device` [N] int64. Sets
// `*accuracy` to the fraction of edges where (logit > 0) matches the label.
// Zero (with accuracy 1) for a graph without edges.
torch::Tensor CoLocationHeadLoss(const torch::Tensor& logits,
                                 const torch::Tensor& src,
                                 const torch::Tensor& dst,
                                 const torch::Tensor& device,
                                 const torch::Tensor& weight,
                                 double* accuracy) {
  const double total = weight.sum().item<double>();
  if (logits.numel() == 0 || total <= 0) {
    *accuracy = 1;
    return logits.sum() * 0;  // keeps the graph: a zero gradient
  }
  const torch::Tensor same =
      device.index_select(0, src).eq(device.index_select(0, dst));
  const torch::Tensor label = same.to(torch::kFloat32);
  const torch::Tensor per_edge =
      weight *
      torch::nn::functional::binary_cross_entropy_with_logits(
          logits, label,
          torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions()
              .reduction(torch::kNone));
  *accuracy = (logits.gt(0).eq(same).to(torch::kFloat32) * weight)
                  .sum()
                  .item<double>() /
              total;
  // Each class weighs half: most dependencies stay on one device, and a
  // pooled mean would be won by "always together".
  const double same_weight = (weight * label).sum().item<double>();
  const double cut_weight = total - same_weight;
  if (same_weight <= 0 || cut_weight <= 0) return per_edge.sum() / total;
  return 0.5 * (per_edge * label).sum() / same_weight +
         0.5 * (per_edge * (1 - label)).sum() / cut_weight;
}

}  // namespace

std::vector<NodePair> CoLocationPairs(const GraphFeatures& features,
                                      int random_pairs, std::mt19937_64* rng) {
  std::vector<NodePair> pairs;
  for (size_t e = 0; e < features.edge_src.size(); ++e) {
    pairs.emplace_back(features.edge_src[e], features.edge_dst[e]);
  }
  const uint64_t n = features.num_nodes;
  if (n < 2) return pairs;
  for (int p = 0; p < random_pairs; ++p) {
    const uint64_t u = (*rng)() % n;
    uint64_t v = (*rng)() % (n - 1);
    if (v >= u) ++v;
    pairs.emplace_back(static_cast<int64_t>(u), static_cast<int64_t>(v));
  }
  return pairs;
}

absl::StatusOr<double> CoLocationLoss(const std::vector<float>& log_probs,
                                      const std::vector<int32_t>& device,
                                      const std::vector<int32_t>& device_class,
                                      const std::vector<NodePair>& pairs) {
  const int64_t n = static_cast<int64_t>(device.size());
  const int64_t d = static_cast<int64_t>(device_class.size());
  if (n == 0 || d == 0 || static_cast<int64_t>(log_probs.size()) != n * d) {
    return absl::InvalidArgumentError(
        absl::StrCat("co-location loss: ", log_probs.size(),
                     " log-probabilities for ", n, " nodes x ", d, " devices"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (device[i] < 0 || device[i] >= d) {
      return absl::InvalidArgumentError(absl::StrCat("co-location loss: node ",
                                                     i, " is on device ",
                                                     device[i], " of ", d));
    }
  }
  for (int64_t c : device_class) {
    if (c < 0 || c >= d) {
      return absl::InvalidArgumentError(absl::StrCat(
          "co-location loss: device class ", c, " of ", d, " devices"));
    }
  }
  if (pairs.empty()) {
    return absl::InvalidArgumentError("co-location loss with no node pair");
  }
  for (const auto& [u, v] : pairs) {
    if (u < 0 || u >= n || v < 0 || v >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("co-location loss: pair (", u, ", ", v,
                       ") names a node outside 0..", n - 1));
    }
  }
  try {
    const torch::Tensor logp =
        torch::tensor(log_probs, torch::kFloat32).reshape({n, d});
    return CoLocationLossTensor(logp, device, device_class, pairs)
        .item<double>();
  } catch (const c10::Error& e) {
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "co-location loss");
  }
}

absl::StatusOr<DistillStats> DistillationTrainer::Step(
    const std::vector<const DistillTarget*>& batch) {
  if (batch.empty()) {
    return absl::InvalidArgumentError("distillation step on an empty batch");
  }
  for (const DistillTarget* target : batch) {
    const size_t n = target->instance->features.num_nodes;
    if (target->device.size() != n || target->fused.size() != n ||
        (!target->priority.empty() && target->priority.size() != n) ||
        (options_.fusion_fusible_only && target->fusible.size() != n) ||
        (options_.placement_loss == PlacementLoss::kCoLocation &&
         static_cast<int>(target->device_class.size()) !=
             target->instance->features.num_devices)) {
      return absl::InvalidArgumentError(
          absl::StrCat("distillation target for '", target->instance->label,
                       "' does not have one entry per node (", n,
                       ") or one device class per device"));
    }
    const size_t edges = target->instance->features.edge_src.size();
    if (options_.tasks.placement && model_->options().co_location_head &&
        target->co_location_weight.size() != edges) {
      return absl::InvalidArgumentError(
          absl::StrCat("distillation target for '", target->instance->label,
                       "' has ", target->co_location_weight.size(),
                       " co-location label weights; its features have ", edges,
                       " dependencies (make targets with MakeDistillTarget)"));
    }
  }
  const TaskSet& tasks = options_.tasks;
  DistillStats stats;
  std::seed_seq seeds{static_cast<uint32_t>(options_.seed),
                      static_cast<uint32_t>(options_.seed >> 32),
                      static_cast<uint32_t>(steps_++)};
  std::mt19937_64 rng(seeds);
  GoNetwork& network = state_->network;
  try {
    network->train();
    state_->optimizer.zero_grad();
    for (const DistillTarget* target : batch) {
      const FeatureTensors inputs = ToTensors(target->instance->features);
      const torch::Tensor device = LongTensor(target->device);
      // Scheduling and fusion condition on the target placement.
      NetworkOutput out = network->forward(
          inputs, tasks, tasks.placement ? torch::Tensor() : device);
      torch::Tensor loss = torch::zeros({}, torch::kFloat32);
      if (tasks.placement) {
        torch::Tensor placement_loss;
        if (options_.placement_loss == PlacementLoss::kCoLocation) {
          placement_loss = CoLocationLossTensor(
              out.placement, target->device, target->device_class,
              CoLocationPairs(target->instance->features,
                              options_.co_location_pairs, &rng));
        } else {
          const torch::Tensor nll =
              -out.placement.gather(1, device.unsqueeze(1)).squeeze(1);
          placement_loss =
              torch::where(torch::isfinite(nll), nll, torch::zeros_like(nll))
                  .mean();
        }
        loss = loss + options_.placement_weight * placement_loss;
        stats.placement_loss += placement_loss.item<double>() / batch.size();
        stats.placement_accuracy += out.placement.argmax(1)
                                        .eq(device)
                                        .to(torch::kFloat32)
                                        .mean()
                                        .item<double>() /
                                    batch.size();
        if (out.co_location.defined()) {
          double accuracy = 0;
          const torch::Tensor head_loss = CoLocationHeadLoss(
              out.co_location, inputs.edge_src, inputs.edge_dst, device,
              torch::tensor(target->co_location_weight, torch::kFloat32),
              &accuracy);
          loss = loss + options_.co_location_head_weight * head_loss;
          stats.co_location_head_loss +=
              head_loss.item<double>() / batch.size();
          stats.co_location_head_accuracy += accuracy / batch.size();
        }
      }
      if (tasks.scheduling && !target->priority.empty()) {
        const torch::Tensor ranking = RankingLoss(
            out.scheduling, target->priority, options_.ranking_pairs, &rng);
        loss = loss + options_.scheduling_weight * ranking;
        stats.scheduling_loss += ranking.item<double>() / batch.size();
      }
      if (tasks.fusion) {
        std::vector<int64_t> level;
        for (uint8_t f : target->fused) {
          level.push_back(f ? kPriorityLevels - 1 : 0);
        }
        const torch::Tensor nll =
            -out.fusion.gather(1, torch::tensor(level).unsqueeze(1)).squeeze(1);
        torch::Tensor fusion_loss = nll.mean();
        if (options_.fusion_fusible_only) {
          // A masked sum keeps the graph (and a zero gradient) when no node
          // can fuse.
          std::vector<float> mask(target->fusible.begin(),
                                  target->fusible.end());
          const double count = std::count(target->fusible.begin(),
                                          target->fusible.end(), uint8_t{1});
          fusion_loss =
              (nll * torch::tensor(mask)).sum() / std::max(count, 1.0);
        }
        loss = loss + options_.fusion_weight * fusion_loss;
        stats.fusion_loss += fusion_loss.item<double>() / batch.size();
      }
      (loss / static_cast<double>(batch.size())).backward();
    }
    absl::Status applied =
        ApplyGradients(network, state_->optimizer, options_.after_backward,
                       options_.max_grad_norm);
    network->eval();
    if (!applied.ok()) return applied;
  } catch (const c10::Error& e) {
    network->eval();
    return TorchErrorToStatus(e, absl::StatusCode::kInternal,
                              "distillation step");
  }
  return stats;
}

}  // namespace gopt::policy::go
