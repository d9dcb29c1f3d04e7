#include "policy/go/features.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"
#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/heft_placer.h"
#include "simulator/baselines/metis_placer.h"
#include "simulator/baselines/upward_rank.h"

namespace gopt::policy::go {
namespace {

using graph::Graph;
using graph::NodeId;

constexpr int kNumCategories =
    static_cast<int>(graph::OpCategory::kOpaqueOp) + 1;
constexpr int kMaxDims = 6;
constexpr int kNumConstraints = 3;
// op kind, category, dtype one-hots; 5 log sizes; rank + dims; 2 degrees;
// topological index; constraints; 4 flags; 5 derived values.
constexpr int kNodeFeatures = graph::kNumOpKinds + kNumCategories +
                              graph::kNumDTypes + 5 + 1 + kMaxDims + 2 + 1 +
                              kNumConstraints + 4 + 5;
constexpr int kDeviceFeatures = 5 + 3 + 3 + 2 + 2;

// log(1 + x) scaled so that typical values fall in [0, 2].
float LogScaled(double x, double scale) {
  return static_cast<float>(std::log1p(std::max(x, 0.0)) / scale);
}

// The placement `placer` chooses, or -1 everywhere when it fails: a hint
// the network can do without, not a reason to refuse the graph.
std::vector<int32_t> HeuristicPlacement(
    const simulator::baselines::Placer& placer,
    const simulator::baselines::BaselineContext& context) {
  absl::StatusOr<std::vector<int32_t>> device = placer.Place(context);
  if (!device.ok() ||
      static_cast<int>(device->size()) != context.graph.num_nodes()) {
    return std::vector<int32_t>(context.graph.num_nodes(), -1);
  }
  return *std::move(device);
}

}  // namespace

int NumNodeFeatures() { return kNodeFeatures; }
int NumDeviceFeatures() { return kDeviceFeatures; }

absl::StatusOr<GraphFeatures> Featurize(
    const Graph& graph, const simulator::Topology& topology,
    const simulator::OpCostModel& cost_model) {
  const int n = graph.num_nodes();
  const int d = topology.num_devices();
  if (n == 0) return absl::InvalidArgumentError("graph has no nodes");
  if (d == 0 || d > kMaxDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology '", topology.name, "' has ", d,
                     " devices; the GO policy handles 1..", kMaxDevices));
  }
  const simulator::baselines::CostTable costs(graph, topology, cost_model);
  const std::vector<double> rank = simulator::baselines::MeanUpwardRank(costs);

  GraphFeatures out;
  out.num_nodes = n;
  out.num_devices = d;
  out.node.assign(static_cast<size_t>(n) * kNodeFeatures, 0.0f);
  out.device.assign(static_cast<size_t>(d) * kDeviceFeatures, 0.0f);
  out.allowed.assign(static_cast<size_t>(n) * d, 0);
  out.work_position.assign(n, 0.0f);
  out.upward_rank.assign(n, 0.0f);

  double total_time = 0;
  double total_memory = 0;
  double max_rank = 0;
  for (NodeId id = 0; id < n; ++id) {
    total_time += costs.MeanComputeSeconds(id);
    total_memory += static_cast<double>(graph.node(id).output_bytes());
    max_rank = std::max(max_rank, rank[id]);
  }
  const double mean_time = std::max(total_time / n, 1e-12);
  total_time = std::max(total_time, 1e-12);
  total_memory = std::max(total_memory, 1.0);
  max_rank = std::max(max_rank, 1e-12);

  double time_so_far = 0;
  double memory_so_far = 0;
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    float* f = &out.node[static_cast<size_t>(id) * kNodeFeatures];
    int k = 0;
    f[k + static_cast<int>(node.kind)] = 1;
    k += graph::kNumOpKinds;
    f[k + static_cast<int>(graph::OpKindCategory(node.kind))] = 1;
    k += kNumCategories;
    if (!node.outputs.empty()) {
      f[k + static_cast<int>(node.outputs[0].dtype)] = 1;
    }
    k += graph::kNumDTypes;
    f[k++] = LogScaled(node.flops, 30);
    f[k++] = LogScaled(static_cast<double>(node.bytes_read), 25);
    f[k++] = LogScaled(static_cast<double>(node.bytes_written), 25);
    const int64_t output_bytes = node.output_bytes();
    f[k++] = LogScaled(static_cast<double>(output_bytes), 25);
    f[k++] = LogScaled(static_cast<double>(node.bytes_communicated), 25);
    if (node.outputs.empty()) {
      for (int i = 0; i <= kMaxDims; ++i) f[k + i] = -1;
    } else {
      const graph::TensorType& type = node.outputs[0];
      f[k] = static_cast<float>(type.rank()) / 8.0f;
      for (int i = 0; i < kMaxDims; ++i) {
        f[k + 1 + i] = i < type.rank()
                           ? LogScaled(static_cast<double>(type.dims[i]), 10)
                           : -1.0f;
      }
    }
    k += 1 + kMaxDims;
    f[k++] = LogScaled(graph.in_edges(id).size(), 4);
    f[k++] = LogScaled(graph.out_edges(id).size(), 4);
    f[k++] = n > 1 ? static_cast<float>(id) / (n - 1) : 0.0f;
    f[k + static_cast<int>(node.device_constraint)] = 1;
    k += kNumConstraints;
    f[k++] = costs.IsFree(id) ? 1 : 0;
    f[k++] = node.layout_configurable ? 1 : 0;
    f[k++] = node.cost_unknown ? 1 : 0;
    f[k++] = node.subgraphs.empty() ? 0 : 1;
    const double time = costs.MeanComputeSeconds(id);
    f[k++] = LogScaled(time / mean_time, 5);
    f[k++] = LogScaled(static_cast<double>(output_bytes) / total_memory * n, 5);
    const float work_position =
        static_cast<float>((time_so_far + time / 2) / total_time);
    f[k++] = work_position;
    f[k++] = static_cast<float>(
        (memory_so_far + static_cast<double>(output_bytes) / 2) / total_memory);
    const float upward_rank = static_cast<float>(rank[id] / max_rank);
    f[k++] = upward_rank;
    out.work_position[id] = work_position;
    out.upward_rank[id] = upward_rank;
    time_so_far += time;
    memory_so_far += static_cast<double>(output_bytes);
    for (int dev = 0; dev < d; ++dev) {
      out.allowed[static_cast<size_t>(id) * d + dev] =
          costs.Allowed(id, dev) ? 1 : 0;
    }
  }

  double total_peak = 0;
  for (const simulator::DeviceProfile& device : topology.devices) {
    total_peak += device.peak_f32_flops;
  }
  total_peak = std::max(total_peak, 1.0);
  for (int dev = 0; dev < d; ++dev) {
    const simulator::DeviceProfile& device = topology.devices[dev];
    float* f = &out.device[static_cast<size_t>(dev) * kDeviceFeatures];
    int k = 0;
    f[k++] = LogScaled(device.peak_f32_flops, 40);
    f[k++] = LogScaled(device.PeakFlops(graph::DType::kF16), 40);
    f[k++] = LogScaled(device.memory_bandwidth_bytes_per_s, 30);
    f[k++] = LogScaled(static_cast<double>(device.memory_bytes), 30);
    f[k++] = LogScaled(device.launch_overhead_s * 1e6, 5);
    f[k + static_cast<int>(device.kind)] = 1;
    k += 3;
    const float position = (dev + 0.5f) / d;
    f[k++] = position;
    f[k++] = position * position;
    f[k++] = static_cast<float>(d) / kMaxDevices;
    if (d > 1) {
      double sum_log = 0;
      double min_log = 1e30;
      for (int other = 0; other < d; ++other) {
        if (other == dev) continue;
        const double log_bw =
            std::log1p(topology.link(dev, other).bandwidth_bytes_per_s) / 30;
        sum_log += log_bw;
        min_log = std::min(min_log, log_bw);
      }
      f[k++] = static_cast<float>(sum_log / (d - 1));
      f[k++] = static_cast<float>(min_log);
    } else {
      f[k++] = -1;
      f[k++] = -1;
    }
    f[k++] = static_cast<float>(device.peak_f32_flops / total_peak);
    f[k++] = static_cast<float>(
        std::log(std::max(static_cast<double>(device.memory_bytes), 1.0) /
                 total_memory) /
        5);
  }

  const simulator::baselines::BaselineContext context{graph, topology,
                                                      cost_model, /*seed=*/0};
  // The two hints are independent and take most of the featurization time
  // (about 50 ms each on 80,000 nodes): HEFT runs on a second thread.
  std::thread heft([&out, &context] {
    out.heft_device =
        HeuristicPlacement(simulator::baselines::HeftPlacer(), context);
  });
  out.metis_device =
      HeuristicPlacement(simulator::baselines::MetisPlacer(), context);
  heft.join();

  // Distinct dependencies, grouped by destination (in_edges are).
  out.edge_src.reserve(graph.num_edges());
  out.edge_dst.reserve(graph.num_edges());
  std::vector<NodeId> sources;
  for (NodeId id = 0; id < n; ++id) {
    sources.clear();
    for (const graph::Edge& edge : graph.in_edges(id)) {
      sources.push_back(edge.src);
    }
    std::sort(sources.begin(), sources.end());
    sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
    for (NodeId src : sources) {
      out.edge_src.push_back(src);
      out.edge_dst.push_back(id);
    }
  }
  return out;
}

}  // namespace gopt::policy::go
