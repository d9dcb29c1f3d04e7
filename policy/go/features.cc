#include "policy/go/features.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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
using simulator::baselines::CostTable;

constexpr int kNumCategories =
    static_cast<int>(graph::OpCategory::kOpaqueOp) + 1;
constexpr int kMaxDims = 6;
constexpr int kNumConstraints = 3;
constexpr int kNumDeviceKinds = 3;

// Where each node feature sits in a node's row (the order features.h lists).
namespace node_feature {
constexpr int kOpKind = 0;  // one-hot, graph::kNumOpKinds wide
constexpr int kCategory = kOpKind + graph::kNumOpKinds;  // one-hot
constexpr int kDType = kCategory + kNumCategories;       // one-hot
constexpr int kLogFlops = kDType + graph::kNumDTypes;
constexpr int kLogBytesRead = kLogFlops + 1;
constexpr int kLogBytesWritten = kLogBytesRead + 1;
constexpr int kLogOutputBytes = kLogBytesWritten + 1;
constexpr int kLogBytesCommunicated = kLogOutputBytes + 1;
constexpr int kRank = kLogBytesCommunicated + 1;
constexpr int kDims = kRank + 1;  // kMaxDims wide
constexpr int kInDegree = kDims + kMaxDims;
constexpr int kOutDegree = kInDegree + 1;
constexpr int kTopologicalIndex = kOutDegree + 1;
constexpr int kConstraint = kTopologicalIndex + 1;  // one-hot
constexpr int kIsFree = kConstraint + kNumConstraints;
constexpr int kLayoutConfigurable = kIsFree + 1;
constexpr int kCostUnknown = kLayoutConfigurable + 1;
constexpr int kHasSubgraphs = kCostUnknown + 1;
constexpr int kRelativeTime = kHasSubgraphs + 1;
constexpr int kMemoryShare = kRelativeTime + 1;
constexpr int kWorkPosition = kMemoryShare + 1;
constexpr int kMemoryPosition = kWorkPosition + 1;
constexpr int kUpwardRank = kMemoryPosition + 1;
constexpr int kCount = kUpwardRank + 1;
}  // namespace node_feature

// Where each device feature sits in a device's row.
namespace device_feature {
constexpr int kLogPeakF32 = 0;
constexpr int kLogPeakF16 = kLogPeakF32 + 1;
constexpr int kLogBandwidth = kLogPeakF16 + 1;
constexpr int kLogMemory = kLogBandwidth + 1;
constexpr int kLogLaunchOverhead = kLogMemory + 1;
constexpr int kKind = kLogLaunchOverhead + 1;  // one-hot
constexpr int kPosition = kKind + kNumDeviceKinds;
constexpr int kPositionSquared = kPosition + 1;
constexpr int kDeviceCount = kPositionSquared + 1;
constexpr int kMeanLinkBandwidth = kDeviceCount + 1;
constexpr int kMinLinkBandwidth = kMeanLinkBandwidth + 1;
constexpr int kPeakShare = kMinLinkBandwidth + 1;
constexpr int kMemoryRatio = kPeakShare + 1;
constexpr int kCount = kMemoryRatio + 1;
}  // namespace device_feature

// The widths checkpoints were trained with.
static_assert(node_feature::kCount == graph::kNumOpKinds + kNumCategories +
                                          graph::kNumDTypes + 5 + 1 + kMaxDims +
                                          2 + 1 + kNumConstraints + 4 + 5);
static_assert(device_feature::kCount == 5 + 3 + 3 + 2 + 2);

// log(1 + x) scaled so that typical values fall in [0, 2].
float LogScaled(double x, double scale) {
  return static_cast<float>(std::log1p(std::max(x, 0.0)) / scale);
}

// Whole-graph sums the relative node features are measured against, each
// at least a small positive value.
struct GraphTotals {
  double mean_time_s = 0;
  double total_time_s = 0;
  double total_memory_bytes = 0;
  double max_rank_s = 0;
};

GraphTotals ComputeTotals(const Graph& graph, const CostTable& costs,
                          const std::vector<double>& rank) {
  const int n = graph.num_nodes();
  double total_time = 0;
  double total_memory = 0;
  double max_rank = 0;
  for (NodeId id = 0; id < n; ++id) {
    total_time += costs.MeanComputeSeconds(id);
    total_memory += static_cast<double>(graph.node(id).output_bytes());
    max_rank = std::max(max_rank, rank[id]);
  }
  GraphTotals totals;
  totals.mean_time_s = std::max(total_time / n, 1e-12);
  totals.total_time_s = std::max(total_time, 1e-12);
  totals.total_memory_bytes = std::max(total_memory, 1.0);
  totals.max_rank_s = std::max(max_rank, 1e-12);
  return totals;
}

// Op kind, category and output dtype one-hots.
void SetOpFeatures(const graph::Node& node, float* f) {
  using namespace node_feature;
  f[kOpKind + static_cast<int>(node.kind)] = 1;
  f[kCategory + static_cast<int>(graph::OpKindCategory(node.kind))] = 1;
  if (!node.outputs.empty()) {
    f[kDType + static_cast<int>(node.outputs[0].dtype)] = 1;
  }
}

// Log FLOPs and bytes; output rank and dims (-1 when absent).
void SetSizeFeatures(const graph::Node& node, float* f) {
  using namespace node_feature;
  f[kLogFlops] = LogScaled(node.flops, 30);
  f[kLogBytesRead] = LogScaled(static_cast<double>(node.bytes_read), 25);
  f[kLogBytesWritten] = LogScaled(static_cast<double>(node.bytes_written), 25);
  f[kLogOutputBytes] = LogScaled(static_cast<double>(node.output_bytes()), 25);
  f[kLogBytesCommunicated] =
      LogScaled(static_cast<double>(node.bytes_communicated), 25);
  if (node.outputs.empty()) {
    f[kRank] = -1;
    for (int i = 0; i < kMaxDims; ++i) f[kDims + i] = -1;
    return;
  }
  const graph::TensorType& type = node.outputs[0];
  f[kRank] = static_cast<float>(type.rank()) / 8.0f;
  for (int i = 0; i < kMaxDims; ++i) {
    f[kDims + i] = i < type.rank()
                       ? LogScaled(static_cast<double>(type.dims[i]), 10)
                       : -1.0f;
  }
}

// Degrees, topological index, device constraint and flags.
void SetStructureFeatures(const Graph& graph, const CostTable& costs, NodeId id,
                          float* f) {
  using namespace node_feature;
  const graph::Node& node = graph.node(id);
  const int n = graph.num_nodes();
  f[kInDegree] = LogScaled(graph.in_edges(id).size(), 4);
  f[kOutDegree] = LogScaled(graph.out_edges(id).size(), 4);
  f[kTopologicalIndex] = n > 1 ? static_cast<float>(id) / (n - 1) : 0.0f;
  f[kConstraint + static_cast<int>(node.device_constraint)] = 1;
  f[kIsFree] = costs.IsFree(id) ? 1 : 0;
  f[kLayoutConfigurable] = node.layout_configurable ? 1 : 0;
  f[kCostUnknown] = node.cost_unknown ? 1 : 0;
  f[kHasSubgraphs] = node.subgraphs.empty() ? 0 : 1;
}

// The node rows, work positions, upward ranks and allowed devices.
void AddNodeFeatures(const Graph& graph, const CostTable& costs,
                     const std::vector<double>& rank, const GraphTotals& totals,
                     GraphFeatures& out) {
  using namespace node_feature;
  const int n = graph.num_nodes();
  const int d = out.num_devices;
  // Running sums along the topological axis.
  double time_so_far = 0;
  double memory_so_far = 0;
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    float* f = &out.node[static_cast<size_t>(id) * kCount];
    SetOpFeatures(node, f);
    SetSizeFeatures(node, f);
    SetStructureFeatures(graph, costs, id, f);
    const double time = costs.MeanComputeSeconds(id);
    const double output_bytes = static_cast<double>(node.output_bytes());
    f[kRelativeTime] = LogScaled(time / totals.mean_time_s, 5);
    f[kMemoryShare] =
        LogScaled(output_bytes / totals.total_memory_bytes * n, 5);
    f[kWorkPosition] =
        static_cast<float>((time_so_far + time / 2) / totals.total_time_s);
    f[kMemoryPosition] = static_cast<float>((memory_so_far + output_bytes / 2) /
                                            totals.total_memory_bytes);
    f[kUpwardRank] = static_cast<float>(rank[id] / totals.max_rank_s);
    out.work_position[id] = f[kWorkPosition];
    out.upward_rank[id] = f[kUpwardRank];
    time_so_far += time;
    memory_so_far += output_bytes;
    for (int dev = 0; dev < d; ++dev) {
      out.allowed[static_cast<size_t>(id) * d + dev] =
          costs.Allowed(id, dev) ? 1 : 0;
    }
  }
}

// The row of device `dev`; `total_peak_flops` is the topology's sum.
void SetDeviceFeatures(const simulator::Topology& topology, int dev,
                       double total_peak_flops, double graph_memory_bytes,
                       float* f) {
  using namespace device_feature;
  const simulator::DeviceProfile& device = topology.devices[dev];
  const int d = topology.num_devices();
  f[kLogPeakF32] = LogScaled(device.peak_f32_flops, 40);
  f[kLogPeakF16] = LogScaled(device.PeakFlops(graph::DType::kF16), 40);
  f[kLogBandwidth] = LogScaled(device.memory_bandwidth_bytes_per_s, 30);
  f[kLogMemory] = LogScaled(static_cast<double>(device.memory_bytes), 30);
  f[kLogLaunchOverhead] = LogScaled(device.launch_overhead_s * 1e6, 5);
  f[kKind + static_cast<int>(device.kind)] = 1;
  const float position = (dev + 0.5f) / d;
  f[kPosition] = position;
  f[kPositionSquared] = position * position;
  f[kDeviceCount] = static_cast<float>(d) / kMaxDevices;
  f[kMeanLinkBandwidth] = -1;
  f[kMinLinkBandwidth] = -1;
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
    f[kMeanLinkBandwidth] = static_cast<float>(sum_log / (d - 1));
    f[kMinLinkBandwidth] = static_cast<float>(min_log);
  }
  f[kPeakShare] = static_cast<float>(device.peak_f32_flops / total_peak_flops);
  f[kMemoryRatio] = static_cast<float>(
      std::log(std::max(static_cast<double>(device.memory_bytes), 1.0) /
               graph_memory_bytes) /
      5);
}

// The device rows; `graph_memory_bytes` is GraphTotals::total_memory_bytes.
void AddDeviceFeatures(const simulator::Topology& topology,
                       double graph_memory_bytes, GraphFeatures& out) {
  double total_peak = 0;
  for (const simulator::DeviceProfile& device : topology.devices) {
    total_peak += device.peak_f32_flops;
  }
  total_peak = std::max(total_peak, 1.0);
  for (int dev = 0; dev < topology.num_devices(); ++dev) {
    SetDeviceFeatures(
        topology, dev, total_peak, graph_memory_bytes,
        &out.device[static_cast<size_t>(dev) * device_feature::kCount]);
  }
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

// Distinct dependencies, grouped by destination (in_edges are).
void AddEdges(const Graph& graph, GraphFeatures& out) {
  out.edge_src.reserve(graph.num_edges());
  out.edge_dst.reserve(graph.num_edges());
  std::vector<NodeId> sources;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
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
}

}  // namespace

int NumNodeFeatures() { return node_feature::kCount; }
int NumDeviceFeatures() { return device_feature::kCount; }

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
  const CostTable costs(graph, topology, cost_model);
  const std::vector<double> rank = simulator::baselines::MeanUpwardRank(costs);

  GraphFeatures out;
  out.num_nodes = n;
  out.num_devices = d;
  out.node.assign(static_cast<size_t>(n) * node_feature::kCount, 0.0f);
  out.device.assign(static_cast<size_t>(d) * device_feature::kCount, 0.0f);
  out.allowed.assign(static_cast<size_t>(n) * d, 0);
  out.work_position.assign(n, 0.0f);
  out.upward_rank.assign(n, 0.0f);
  const GraphTotals totals = ComputeTotals(graph, costs, rank);
  AddNodeFeatures(graph, costs, rank, totals, out);
  AddDeviceFeatures(topology, totals.total_memory_bytes, out);

  const simulator::baselines::BaselineContext context{graph, topology,
                                                      cost_model, /*seed=*/0};
  out.heft_device =
      HeuristicPlacement(simulator::baselines::HeftPlacer(), context);
  out.metis_device =
      HeuristicPlacement(simulator::baselines::MetisPlacer(), context);
  AddEdges(graph, out);
  return out;
}

}  // namespace gopt::policy::go
