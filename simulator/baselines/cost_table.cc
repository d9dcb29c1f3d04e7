#include "simulator/baselines/cost_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gopt::simulator::baselines {
using graph::NodeId;
using graph::OpKind;

// The simulator's rule: a free op kind, or an op with no cost at all.
bool IsFreeNode(const graph::Node& node) {
  return graph::IsFreeOpKind(node.kind) ||
         (node.flops == 0 && node.bytes_read == 0 && node.bytes_written == 0 &&
          node.bytes_communicated == 0);
}

CostTable::CostTable(const graph::Graph& graph, const Topology& topology,
                     const OpCostModel& cost_model)
    : graph_(graph), topology_(topology), num_devices_(topology.num_devices()) {
  const int n = graph.num_nodes();
  const int d_count = num_devices_;

  // Constraint classes: which devices each class may use. A class whose
  // required kind is absent from the topology may use every device, as
  // ValidatePlan accepts.
  bool has_cpu = false;
  bool has_accelerator = false;
  for (const DeviceProfile& device : topology.devices) {
    (device.kind == DeviceKind::kCpu ? has_cpu : has_accelerator) = true;
  }
  for (int c = 0; c < 3; ++c) {
    allowed_[c].assign(d_count, 0);
    for (int d = 0; d < d_count; ++d) {
      const bool is_cpu = topology.devices[d].kind == DeviceKind::kCpu;
      bool ok = true;
      if (c == 1 && has_cpu) ok = is_cpu;
      if (c == 2 && has_accelerator) ok = !is_cpu;
      allowed_[c][d] = ok ? 1 : 0;
      if (ok) allowed_list_[c].push_back(d);
    }
  }

  compute_s_.assign(static_cast<size_t>(n) * d_count, 0);
  mean_compute_s_.assign(n, 0);
  free_.assign(n, 0);
  resident_.assign(n, 0);
  output_memory_bytes_.assign(n, 0);
  constraint_class_.assign(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    switch (node.device_constraint) {
      case graph::DeviceConstraint::kAny:
        constraint_class_[id] = 0;
        break;
      case graph::DeviceConstraint::kCpuOnly:
        constraint_class_[id] = 1;
        break;
      case graph::DeviceConstraint::kAcceleratorOnly:
        constraint_class_[id] = 2;
        break;
    }
    free_[id] = IsFreeNode(node) ? 1 : 0;
    resident_[id] =
        node.kind == OpKind::kParameter || node.kind == OpKind::kConstant;
    output_memory_bytes_[id] =
        (free_[id] && !resident_[id]) ? 0 : node.output_bytes();
    if (free_[id]) continue;
    KernelWork work;
    work.kind = node.kind;
    work.flops = node.flops;
    work.bytes = node.bytes_read + node.bytes_written;
    work.dtype = node.outputs.empty() || node.outputs[0].is_tuple()
                     ? graph::DType::kF32
                     : node.outputs[0].dtype;
    double sum = 0;
    const std::vector<int32_t>& allowed = allowed_list_[constraint_class_[id]];
    for (int d = 0; d < d_count; ++d) {
      const double seconds =
          cost_model.KernelSeconds(work, topology.devices[d]);
      compute_s_[static_cast<size_t>(id) * d_count + d] = seconds;
      if (allowed_[constraint_class_[id]][d]) sum += seconds;
    }
    mean_compute_s_[id] = allowed.empty() ? 0 : sum / allowed.size();
  }

  if (d_count >= 2 &&
      topology.links.size() == static_cast<size_t>(d_count) * d_count) {
    double latency = 0;
    double inverse_bandwidth = 0;
    for (int s = 0; s < d_count; ++s) {
      for (int t = 0; t < d_count; ++t) {
        if (s == t) continue;
        const Link& link = topology.link(s, t);
        latency += link.latency_s;
        if (link.bandwidth_bytes_per_s > 0) {
          inverse_bandwidth += 1.0 / link.bandwidth_bytes_per_s;
        }
      }
    }
    const double pairs = static_cast<double>(d_count) * (d_count - 1);
    mean_latency_s_ = latency / pairs;
    mean_inverse_bandwidth_ = inverse_bandwidth / pairs;
  }
}

int32_t CostTable::NearestAllowedDevice(NodeId node, int32_t device) const {
  const std::vector<uint8_t>& allowed = allowed_[constraint_class_[node]];
  for (int step = 0; step < num_devices_; ++step) {
    const int32_t candidate = (device + step) % num_devices_;
    if (allowed[candidate]) return candidate;
  }
  return device;
}

double CostTable::TransferSeconds(int64_t bytes, int src, int dst) const {
  if (src == dst) return 0;
  const Link& link = topology_.link(src, dst);
  const double bandwidth_s =
      link.bandwidth_bytes_per_s > 0
          ? static_cast<double>(bytes) / link.bandwidth_bytes_per_s
          : 0;
  return link.latency_s + bandwidth_s;
}

void AttachFreeSourcesToConsumers(const CostTable& costs,
                                  std::vector<int32_t>* device) {
  const graph::Graph& graph = costs.graph();
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (!costs.IsFreeSource(id) || graph.out_edges(id).empty()) continue;
    const int32_t consumer_device = (*device)[graph.out_edges(id)[0].dst];
    if (costs.Allowed(id, consumer_device)) (*device)[id] = consumer_device;
  }
}

absl::Status CheckTopology(const Topology& topology) {
  const size_t d = static_cast<size_t>(topology.num_devices());
  if (d == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology '", topology.name, "' has no devices"));
  }
  if (topology.links.size() != d * d) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topology '", topology.name, "' has ", topology.links.size(),
        " links; ", d, " devices need ", d * d));
  }
  return absl::OkStatus();
}

absl::Status CheckPlacement(const graph::Graph& graph, int num_devices,
                            const std::vector<int32_t>& device) {
  if (device.size() != static_cast<size_t>(graph.num_nodes())) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement has ", device.size(), " entries; the graph '",
                     graph.name(), "' has ", graph.num_nodes(), " nodes"));
  }
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (device[id] < 0 || device[id] >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "placement puts node '", graph.node(id).name, "' on device ",
          device[id], "; the topology has devices 0..", num_devices - 1));
    }
  }
  return absl::OkStatus();
}

}  // namespace gopt::simulator::baselines
