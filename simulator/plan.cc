#include "simulator/plan.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/parse_cost.h"
#include "simulator/fusion_rules.h"
#include "util/status_macros.h"

namespace gopt::simulator {

Plan DefaultPlan(const graph::Graph& graph) {
  Plan plan;
  plan.device.assign(graph.num_nodes(), 0);
  plan.method = "single";
  return plan;
}

void KeepDeviceConstraints(const graph::Graph& graph, const Topology& topology,
                           std::vector<int32_t>* device) {
  const auto first = [&](bool cpu) {
    for (int d = 0; d < topology.num_devices(); ++d) {
      if ((topology.devices[d].kind == DeviceKind::kCpu) == cpu) return d;
    }
    return 0;
  };
  const int32_t cpu = first(/*cpu=*/true);
  const int32_t accelerator = first(/*cpu=*/false);
  const auto is_cpu = [&](int32_t d) {
    return d >= 0 && d < topology.num_devices() &&
           topology.devices[d].kind == DeviceKind::kCpu;
  };
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const graph::DeviceConstraint constraint = graph.node(id).device_constraint;
    int32_t& d = (*device)[id];
    if (!is_cpu(d) && constraint == graph::DeviceConstraint::kCpuOnly) {
      d = cpu;
    } else if (is_cpu(d) &&
               constraint == graph::DeviceConstraint::kAcceleratorOnly) {
      d = accelerator;
    }
  }
  ColocateGroups(graph, topology, device);
}

std::vector<std::string> UnmetDeviceConstraints(const graph::Graph& graph,
                                                const Topology& topology) {
  bool has_cpu = false;
  bool has_accelerator = false;
  for (const DeviceProfile& profile : topology.devices) {
    (profile.kind == DeviceKind::kCpu ? has_cpu : has_accelerator) = true;
  }
  std::vector<std::string> warnings;
  for (const auto& [constraint, available, what, missing] :
       {std::tuple{graph::DeviceConstraint::kCpuOnly, has_cpu, "CPU-only",
                   "no CPU device"},
        std::tuple{graph::DeviceConstraint::kAcceleratorOnly, has_accelerator,
                   "accelerator-only", "no accelerator"}}) {
    if (available) continue;
    int64_t count = 0;
    const graph::Node* first = nullptr;
    for (const graph::Node& node : graph.nodes()) {
      if (node.device_constraint != constraint) continue;
      if (first == nullptr) first = &node;
      ++count;
    }
    if (count == 0) continue;
    warnings.push_back(absl::StrCat(
        count, " ", what, " node", count == 1 ? "" : "s", " (first: '",
        first->name, "', ", first->op,
        ") cannot be kept to their device kind: topology '", topology.name,
        "' has ", missing, "; they run where the plan puts them"));
  }
  const int64_t partitions = graph.spmd().num_partitions;
  if (partitions > topology.num_devices()) {
    warnings.push_back(absl::StrCat(
        "the graph is one device's program of an SPMD mesh of ", partitions,
        " devices, but topology '", topology.name, "' has ",
        topology.num_devices(),
        topology.num_devices() > 1
            ? ": collectives are priced on a ring of its devices only"
            : ": collectives are priced without links (kernel time only)"));
  }
  return warnings;
}

Plan DefaultPlan(const graph::Graph& graph, const Topology& topology) {
  Plan plan = DefaultPlan(graph);
  KeepDeviceConstraints(graph, topology, &plan.device);
  return plan;
}

absl::Status ValidatePlan(const Plan& plan, const graph::Graph& graph,
                          const Topology& topology) {
  const size_t n = static_cast<size_t>(graph.num_nodes());
  auto check_length = [&](size_t size, absl::string_view field,
                          bool optional) -> absl::Status {
    if (size == n || (optional && size == 0)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "plan field '", field, "' has ", size, " entries; the graph '",
        graph.name(), "' has ", n, " nodes"));
  };
  if (absl::Status s = check_length(plan.device.size(), "device", false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = check_length(plan.priority.size(), "priority", true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          check_length(plan.fusion_group.size(), "fusion_group", true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = check_length(plan.layout.size(), "layout", true);
      !s.ok()) {
    return s;
  }
  bool has_cpu = false;
  bool has_accelerator = false;
  for (const DeviceProfile& device : topology.devices) {
    (device.kind == DeviceKind::kCpu ? has_cpu : has_accelerator) = true;
  }
  const int num_devices = topology.num_devices();
  // Only a topology with both CPUs and accelerators can violate a device
  // constraint; otherwise the loop below need not touch the (large) nodes,
  // which keeps validation cheap inside the simulator's inner loop.
  const bool check_constraints = has_cpu && has_accelerator;
  absl::flat_hash_map<int32_t, int32_t> group_device;
  // Colocation groups are rare (TF graphs only); when there are none the
  // nodes need not be touched.
  const bool check_colocation = !graph.colocation_groups().empty();
  std::vector<graph::NodeId> colocated_with(
      check_colocation ? graph.colocation_groups().size() : 0, -1);
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const int32_t device = plan.device[id];
    if (device < 0 || device >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan places node '", graph.node(id).name, "' on device ", device,
          "; topology '", topology.name, "' has devices 0..", num_devices - 1));
    }
    if (check_constraints) {
      const graph::Node& node = graph.node(id);
      const DeviceKind kind = topology.devices[device].kind;
      if (node.device_constraint == graph::DeviceConstraint::kCpuOnly &&
          kind != DeviceKind::kCpu) {
        return absl::InvalidArgumentError(absl::StrCat(
            "plan places CPU-only node '", node.name, "' (", node.op,
            ") on device ", device, " (", topology.devices[device].name, ")"));
      }
      if (node.device_constraint == graph::DeviceConstraint::kAcceleratorOnly &&
          kind == DeviceKind::kCpu) {
        return absl::InvalidArgumentError(
            absl::StrCat("plan places accelerator-only node '", node.name,
                         "' on CPU device ", device));
      }
    }
    if (check_colocation && graph.node(id).colocation_group >= 0) {
      graph::NodeId& first = colocated_with[graph.node(id).colocation_group];
      if (first < 0) {
        first = id;
      } else if (plan.device[first] != device) {
        return absl::InvalidArgumentError(absl::StrCat(
            "plan splits colocation group '",
            graph.colocation_groups()[graph.node(id).colocation_group],
            "': node '", graph.node(first).name, "' on device ",
            plan.device[first], ", node '", graph.node(id).name, "' on device ",
            device));
      }
    }
    if (!plan.fusion_group.empty() && plan.fusion_group[id] >= 0) {
      auto [it, inserted] = group_device.emplace(plan.fusion_group[id], device);
      if (!inserted && it->second != device) {
        return absl::InvalidArgumentError(
            absl::StrCat("fusion group ", plan.fusion_group[id],
                         " spans devices ", it->second, " and ", device,
                         " (node '", graph.node(id).name, "')"));
      }
    }
    if (!plan.layout.empty() && !plan.layout[id].empty()) {
      const graph::Node& node = graph.node(id);
      graph::TensorType type =
          node.outputs.empty() ? graph::TensorType() : node.outputs[0];
      type.minor_to_major = plan.layout[id];
      if (node.outputs.empty() || type.is_tuple() ||
          !graph::ValidateTensorType(type).ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("plan layout of node '", node.name,
                         "' is not a permutation of its output's dimensions"));
      }
    }
  }
  return CheckFusionRules(graph, plan.fusion_group);
}

void ColocateGroups(const graph::Graph& graph, const Topology& topology,
                    std::vector<int32_t>* device) {
  const std::vector<std::string>& groups = graph.colocation_groups();
  if (groups.empty()) return;
  // The device each group settles on: its anchor's, else its first
  // member's; a member with a device constraint its device breaks wins.
  std::vector<int32_t> group_device(groups.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (std::optional<graph::NodeId> anchor = graph.FindNode(groups[g])) {
      if (graph.node(*anchor).colocation_group == static_cast<int32_t>(g)) {
        group_device[g] = (*device)[*anchor];
      }
    }
  }
  // As in ValidatePlan, constraints bind only when the topology has both
  // CPUs and accelerators.
  bool has_cpu = false;
  bool has_accelerator = false;
  for (const DeviceProfile& profile : topology.devices) {
    (profile.kind == DeviceKind::kCpu ? has_cpu : has_accelerator) = true;
  }
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const int32_t g = graph.node(id).colocation_group;
    if (g < 0) continue;
    if (group_device[g] < 0) group_device[g] = (*device)[id];
    if (!has_cpu || !has_accelerator) continue;
    const graph::DeviceConstraint constraint = graph.node(id).device_constraint;
    const bool on_cpu =
        topology.devices[group_device[g]].kind == DeviceKind::kCpu;
    if ((constraint == graph::DeviceConstraint::kCpuOnly && !on_cpu) ||
        (constraint == graph::DeviceConstraint::kAcceleratorOnly && on_cpu)) {
      group_device[g] = (*device)[id];
    }
  }
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const int32_t g = graph.node(id).colocation_group;
    if (g >= 0) (*device)[id] = group_device[g];
  }
}

}  // namespace gopt::simulator
