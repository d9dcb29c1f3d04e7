#include "policy/go/co_location_decode.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/metis_placer.h"
#include "util/status_macros.h"

namespace gopt::policy::go {
namespace {

using graph::NodeId;
using simulator::baselines::CostTable;

// Logits beyond this change a METIS weight by more than e^8 either way;
// clamping keeps every weight finite and the weights' sum in range.
constexpr double kMaxLogit = 8.0;

absl::Status CheckLogits(const TrainingInstance& instance,
                         const std::vector<float>& co_location) {
  if (co_location.size() != instance.features.edge_src.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        instance.label, ": the co-location head gave ", co_location.size(),
        " logits; expected one per dependency (",
        instance.features.edge_src.size(), ")"));
  }
  return absl::OkStatus();
}

// Union-find over node ids with path halving.
class Components {
 public:
  explicit Components(int n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

// What every decode of one instance shares, built once: the instance's
// cost table and its METIS context.
struct Decoder {
  explicit Decoder(const TrainingInstance& instance)
      : instance(instance),
        costs(instance.graph(), instance.simulator->topology(),
              instance.simulator->cost_model()),
        context{instance.graph(), instance.simulator->topology(),
                instance.simulator->cost_model(), /*seed=*/0} {}

  const TrainingInstance& instance;
  const CostTable costs;
  const simulator::baselines::BaselineContext context;
};

// Per dependency (src, dst), its logit clamped to [-kMaxLogit, kMaxLogit].
absl::flat_hash_map<std::pair<NodeId, NodeId>, double> ClampedLogits(
    const GraphFeatures& features, const std::vector<float>& co_location) {
  absl::flat_hash_map<std::pair<NodeId, NodeId>, double> logit;
  logit.reserve(co_location.size());
  for (size_t e = 0; e < co_location.size(); ++e) {
    logit[{static_cast<NodeId>(features.edge_src[e]),
           static_cast<NodeId>(features.edge_dst[e])}] =
        std::clamp(static_cast<double>(co_location[e]), -kMaxLogit, kMaxLogit);
  }
  return logit;
}

absl::StatusOr<std::vector<int32_t>> MetisWithLogits(
    const Decoder& decoder,
    const absl::flat_hash_map<std::pair<NodeId, NodeId>, double>& logit,
    double sharpness) {
  return simulator::baselines::MetisPlaceWeighted(
      decoder.context, decoder.costs,
      [&logit, sharpness](NodeId src, NodeId dst) {
        auto it = logit.find({src, dst});
        return it == logit.end() ? 1.0 : std::exp(sharpness * it->second);
      });
}

// Per component root: the summed kernel seconds of its nodes (mean over
// allowed devices).
std::vector<double> ComponentWork(const CostTable& costs,
                                  Components& components) {
  std::vector<double> work(costs.num_nodes(), 0.0);
  for (NodeId id = 0; id < costs.num_nodes(); ++id) {
    work[components.Find(id)] += costs.MeanComputeSeconds(id);
  }
  return work;
}

// Every node on its component root's device from `root_device` (-1 for
// components without work: these follow the neighbour, in a component
// with a device, they exchange the most bytes with), moved to the nearest
// device its constraint allows.
std::vector<int32_t> PlaceOnRootDevices(
    const CostTable& costs, Components& components,
    const std::vector<int32_t>& root_device) {
  const graph::Graph& graph = costs.graph();
  const int n = graph.num_nodes();
  std::vector<double> pull(n, -1.0);
  std::vector<int32_t> follow(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    const int root = components.Find(id);
    if (root_device[root] >= 0) continue;
    auto consider = [&](NodeId other, double bytes) {
      const int32_t device = root_device[components.Find(other)];
      if (device >= 0 && bytes > pull[root]) {
        pull[root] = bytes;
        follow[root] = device;
      }
    };
    for (const graph::Edge& edge : graph.in_edges(id)) {
      consider(edge.src, static_cast<double>(graph.EdgeBytes(edge)));
    }
    for (const graph::Edge& edge : graph.out_edges(id)) {
      consider(edge.dst, static_cast<double>(graph.EdgeBytes(edge)));
    }
  }
  std::vector<int32_t> device(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    const int root = components.Find(id);
    const int32_t chosen =
        root_device[root] >= 0 ? root_device[root] : follow[root];
    device[id] = costs.NearestAllowedDevice(id, chosen);
  }
  return device;
}

// Places each component of `components` on one device, longest-processing-
// time first (ComponentPlacement's rules).
std::vector<int32_t> AssignComponents(const CostTable& costs,
                                      Components& components) {
  const int n = costs.num_nodes();
  const int num_devices = costs.num_devices();
  const std::vector<double> work = ComponentWork(costs, components);
  // Per component root: its nodes' kernel seconds per device.
  std::vector<double> per_device(static_cast<size_t>(n) * num_devices, 0.0);
  for (NodeId id = 0; id < n; ++id) {
    const size_t row = static_cast<size_t>(components.Find(id)) * num_devices;
    for (int d = 0; d < num_devices; ++d) {
      per_device[row + d] += costs.ComputeSeconds(id, d);
    }
  }
  std::vector<int> roots;
  for (NodeId id = 0; id < n; ++id) {
    if (components.Find(id) == id && work[id] > 0) roots.push_back(id);
  }
  std::stable_sort(roots.begin(), roots.end(),
                   [&work](int a, int b) { return work[a] > work[b]; });
  std::vector<int32_t> root_device(n, -1);
  std::vector<double> load(num_devices, 0.0);
  for (int root : roots) {
    int best = 0;
    for (int d = 1; d < num_devices; ++d) {
      const size_t row = static_cast<size_t>(root) * num_devices;
      if (load[d] + per_device[row + d] < load[best] + per_device[row + best]) {
        best = d;
      }
    }
    load[best] += per_device[static_cast<size_t>(root) * num_devices + best];
    root_device[root] = best;
  }
  return PlaceOnRootDevices(costs, components, root_device);
}

// Places each component of `components` on one device by list scheduling
// in topological order (ScheduledComponentPlacement's rules).
std::vector<int32_t> ScheduleComponents(const CostTable& costs,
                                        Components& components) {
  const graph::Graph& graph = costs.graph();
  const int n = graph.num_nodes();
  const int num_devices = costs.num_devices();
  const std::vector<double> work = ComponentWork(costs, components);
  std::vector<int32_t> root_device(n, -1);
  // Per node: when its output is ready, and on which device (-1: a node of
  // a component without work that no placed input reaches; free to read
  // anywhere).
  std::vector<double> finish(n, 0.0);
  std::vector<int32_t> where(n, -1);
  std::vector<double> device_free(num_devices, 0.0);
  // When `id`'s inputs are all on `device`.
  auto ready_on = [&](NodeId id, int device) {
    double ready = 0;
    for (const graph::Edge& edge : graph.in_edges(id)) {
      const double arrival =
          finish[edge.src] +
          (where[edge.src] < 0
               ? 0.0
               : costs.EdgeTransferSeconds(edge, where[edge.src], device));
      ready = std::max(ready, arrival);
    }
    return ready;
  };
  for (NodeId id = 0; id < n; ++id) {
    const int root = components.Find(id);
    if (work[root] <= 0 || (root_device[root] < 0 && costs.IsFree(id))) {
      // A free node before its component's first kernel (a parameter, a
      // view), or of a component without work: it passes its inputs
      // through, ready when the last arrives, where it came from; its
      // component's first kernel chooses the device.
      for (const graph::Edge& edge : graph.in_edges(id)) {
        if (finish[edge.src] >= finish[id] && where[edge.src] >= 0) {
          finish[id] = finish[edge.src];
          where[id] = where[edge.src];
        }
      }
      continue;
    }
    if (root_device[root] < 0) {
      // The component's first kernel picks its device: earliest finish.
      double best_finish = 0;
      for (int d = 0; d < num_devices; ++d) {
        const int32_t run_on = costs.NearestAllowedDevice(id, d);
        const double end = std::max(device_free[run_on], ready_on(id, run_on)) +
                           costs.ComputeSeconds(id, run_on);
        if (root_device[root] < 0 || end < best_finish) {
          best_finish = end;
          root_device[root] = run_on;
        }
      }
    }
    const int32_t device = costs.NearestAllowedDevice(id, root_device[root]);
    where[id] = device;
    if (costs.IsFree(id)) {  // no kernel: takes no device time
      finish[id] = ready_on(id, device);
      continue;
    }
    finish[id] = std::max(device_free[device], ready_on(id, device)) +
                 costs.ComputeSeconds(id, device);
    device_free[device] = finish[id];
  }
  return PlaceOnRootDevices(costs, components, root_device);
}

std::vector<int32_t> KeptComponents(const Decoder& decoder,
                                    const std::vector<float>& co_location,
                                    double threshold_logit, bool scheduled) {
  const GraphFeatures& features = decoder.instance.features;
  Components components(decoder.costs.num_nodes());
  for (size_t e = 0; e < co_location.size(); ++e) {
    if (co_location[e] > threshold_logit) {
      components.Join(static_cast<int>(features.edge_src[e]),
                      static_cast<int>(features.edge_dst[e]));
    }
  }
  return scheduled ? ScheduleComponents(decoder.costs, components)
                   : AssignComponents(decoder.costs, components);
}

// The logit at or below which the lowest `cut_fraction` (at least one) of
// the dependencies between two kernels fall: the threshold that cuts the
// network's least-kept share of them. +infinity when there are none.
double CutQuantileLogit(const Decoder& decoder,
                        const std::vector<float>& co_location,
                        double cut_fraction) {
  const GraphFeatures& features = decoder.instance.features;
  std::vector<float> kernel_edges;
  for (size_t e = 0; e < co_location.size(); ++e) {
    if (!decoder.costs.IsFree(features.edge_src[e]) &&
        !decoder.costs.IsFree(features.edge_dst[e])) {
      kernel_edges.push_back(co_location[e]);
    }
  }
  if (kernel_edges.empty()) return std::numeric_limits<double>::infinity();
  const size_t cut = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(cut_fraction * kernel_edges.size())), 1,
      kernel_edges.size());
  std::nth_element(kernel_edges.begin(), kernel_edges.begin() + (cut - 1),
                   kernel_edges.end());
  return kernel_edges[cut - 1];
}

std::vector<int32_t> BalancedMerge(const Decoder& decoder,
                                   const std::vector<float>& co_location,
                                   double slack) {
  const GraphFeatures& features = decoder.instance.features;
  const CostTable& costs = decoder.costs;
  const int n = costs.num_nodes();
  std::vector<double> work(n);
  double total = 0;
  for (NodeId id = 0; id < n; ++id) {
    total += work[id] = costs.MeanComputeSeconds(id);
  }
  const double cap = total / costs.num_devices() * slack;
  std::vector<size_t> order(co_location.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return co_location[a] > co_location[b];
  });
  Components components(n);
  for (size_t e : order) {
    const int a = components.Find(static_cast<int>(features.edge_src[e]));
    const int b = components.Find(static_cast<int>(features.edge_dst[e]));
    if (a == b || work[a] + work[b] > cap) continue;
    components.Join(a, b);
    work[components.Find(a)] = work[a] + work[b];
  }
  return AssignComponents(costs, components);
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> MetisCoLocationPlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double sharpness) {
  RETURN_IF_ERROR(CheckLogits(instance, co_location));
  return MetisWithLogits(Decoder(instance),
                         ClampedLogits(instance.features, co_location),
                         sharpness);
}

absl::StatusOr<std::vector<int32_t>> ComponentPlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double threshold_logit) {
  RETURN_IF_ERROR(CheckLogits(instance, co_location));
  return KeptComponents(Decoder(instance), co_location, threshold_logit,
                        /*scheduled=*/false);
}

absl::StatusOr<std::vector<int32_t>> ScheduledComponentPlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double threshold_logit) {
  RETURN_IF_ERROR(CheckLogits(instance, co_location));
  return KeptComponents(Decoder(instance), co_location, threshold_logit,
                        /*scheduled=*/true);
}

absl::StatusOr<std::vector<int32_t>> BalancedMergePlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double slack) {
  RETURN_IF_ERROR(CheckLogits(instance, co_location));
  return BalancedMerge(Decoder(instance), co_location, slack);
}

absl::StatusOr<double> CutFractionLogit(const TrainingInstance& instance,
                                        const std::vector<float>& co_location,
                                        double cut_fraction) {
  RETURN_IF_ERROR(CheckLogits(instance, co_location));
  if (!(cut_fraction > 0 && cut_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cut fraction must be in (0, 1], got ", cut_fraction));
  }
  return CutQuantileLogit(Decoder(instance), co_location, cut_fraction);
}

absl::StatusOr<std::vector<std::vector<int32_t>>> CoLocationPlacements(
    const TrainingInstance& instance, const std::vector<float>& co_location) {
  RETURN_IF_ERROR(CheckLogits(instance, co_location));
  std::vector<std::vector<int32_t>> placements;
  auto add = [&placements](std::vector<int32_t> device) {
    if (std::find(placements.begin(), placements.end(), device) ==
        placements.end()) {
      placements.push_back(std::move(device));
    }
  };
  const Decoder decoder(instance);
  const auto logit = ClampedLogits(instance.features, co_location);
  for (double sharpness : kCoLocationSharpness) {
    absl::StatusOr<std::vector<int32_t>> device =
        MetisWithLogits(decoder, logit, sharpness);
    // METIS failing on an odd graph costs its candidates, not the decode
    // (as Featurize's METIS hint does without a partition).
    if (device.ok()) add(*std::move(device));
  }
  for (double threshold : kComponentThresholdLogits) {
    add(KeptComponents(decoder, co_location, threshold, /*scheduled=*/false));
  }
  for (double slack : kBalancedMergeSlack) {
    add(BalancedMerge(decoder, co_location, slack));
  }
  for (double threshold : kComponentThresholdLogits) {
    add(KeptComponents(decoder, co_location, threshold, /*scheduled=*/true));
  }
  for (double fraction : kScheduledCutFractions) {
    add(KeptComponents(decoder, co_location,
                       CutQuantileLogit(decoder, co_location, fraction),
                       /*scheduled=*/true));
  }
  return placements;
}

std::vector<ScoredPlan> ScorePlacements(
    const TrainingInstance& instance, const Actions& actions,
    const std::vector<std::vector<int32_t>>& placements, int threads) {
  std::vector<ScoredPlan> scored(placements.size());
  RunInParallel(static_cast<int>(placements.size()), threads, [&](int i) {
    Actions placed = actions;
    placed.device = placements[i];
    scored[i] = ScoreActions(instance, placed);
  });
  return scored;
}

}  // namespace gopt::policy::go
