#include "graph/decisions.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace gopt::graph {
namespace {

// Hashable key of a source element.
struct SourceKey {
  absl::string_view scope;
  absl::string_view name;
  bool is_tensor;

  template <typename H>
  friend H AbslHashValue(H h, const SourceKey& key) {
    return H::combine(std::move(h), key.scope, key.name, key.is_tensor);
  }
  bool operator==(const SourceKey& o) const {
    return scope == o.scope && name == o.name && is_tensor == o.is_tensor;
  }
};

std::string NodeLabel(const Graph& graph, NodeId id) {
  return absl::StrCat("node '", graph.node(id).name, "' (#", id, ")");
}

}  // namespace

std::vector<SourceGroup> GroupBySource(const Graph& graph) {
  std::vector<SourceGroup> groups;
  absl::flat_hash_map<SourceKey, size_t> index;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const SourceElement& source = graph.node(id).source;
    if (source.empty()) continue;
    auto [it, inserted] = index.try_emplace(
        SourceKey{source.scope, source.name, source.is_tensor}, groups.size());
    if (inserted) groups.push_back(SourceGroup{source, {}});
    groups[it->second].nodes.push_back(id);
  }
  return groups;
}

absl::Status CheckPlanFitsGraph(const Graph& graph, const gopt::v1::Plan& plan,
                                int num_devices) {
  const int n = graph.num_nodes();
  const std::pair<const char*, int> lists[] = {
      {"device", plan.device_size()},
      {"priority", plan.priority_size()},
      {"fusion_group", plan.fusion_group_size()},
      {"layout", plan.layout_size()}};
  for (const auto& [field, size] : lists) {
    if (size != 0 && size != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan.", field, " has ", size,
                       " entries; the graph has ", n, " nodes"));
    }
  }
  for (NodeId id = 0; id < plan.device_size(); ++id) {
    if (plan.device(id) < 0 || plan.device(id) >= num_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat(NodeLabel(graph, id), ": plan.device ", plan.device(id),
                       " is out of range for ", num_devices, " device(s)"));
    }
  }
  for (NodeId id = 0; id < plan.fusion_group_size(); ++id) {
    if (plan.fusion_group(id) < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat(NodeLabel(graph, id), ": plan.fusion_group ",
                       plan.fusion_group(id), " (expected -1 or a group id)"));
    }
  }
  for (NodeId id = 0; id < plan.layout_size(); ++id) {
    const auto& minor_to_major = plan.layout(id).minor_to_major();
    if (minor_to_major.empty()) continue;
    const Node& node = graph.node(id);
    const size_t rank = node.outputs.empty() ? 0 : node.outputs[0].dims.size();
    std::vector<bool> seen(rank, false);
    bool permutation = static_cast<size_t>(minor_to_major.size()) == rank;
    for (int32_t dim : minor_to_major) {
      if (!permutation) break;
      permutation = dim >= 0 && static_cast<size_t>(dim) < rank && !seen[dim];
      if (permutation) seen[dim] = true;
    }
    if (!permutation) {
      return absl::InvalidArgumentError(absl::StrCat(
          NodeLabel(graph, id), ": plan.layout.minor_to_major is not a ",
          "permutation of the ", rank, " dimensions of output 0"));
    }
  }
  return absl::OkStatus();
}

void MakePlanSourceConsistent(const Graph& graph, gopt::v1::Plan* plan) {
  for (const SourceGroup& group : GroupBySource(graph)) {
    if (group.nodes.size() < 2) continue;
    const NodeId first = group.nodes[0];
    for (NodeId id : group.nodes) {
      if (plan->device_size() > 0) plan->set_device(id, plan->device(first));
      if (plan->priority_size() > 0) {
        plan->set_priority(id, plan->priority(first));
      }
      if (plan->fusion_group_size() > 0) plan->set_fusion_group(id, -1);
      if (plan->layout_size() > 0 && id != first) {
        *plan->mutable_layout(id) = plan->layout(first);
      }
    }
  }
}

std::vector<gopt::v1::NodeDecision> DecisionsBySource(
    const Graph& graph, const gopt::v1::Plan& plan,
    absl::Span<const std::string> device_names) {
  std::vector<gopt::v1::NodeDecision> decisions;
  for (const SourceGroup& group : GroupBySource(graph)) {
    const NodeId id = group.nodes[0];
    gopt::v1::NodeDecision& decision = decisions.emplace_back();
    decision.set_name(group.source.name);
    decision.set_scope(group.source.scope);
    decision.set_is_tensor(group.source.is_tensor);
    const int device = plan.device_size() > 0 ? plan.device(id) : 0;
    decision.set_device(device);
    if (device >= 0 && static_cast<size_t>(device) < device_names.size()) {
      decision.set_device_name(device_names[device]);
    }
    decision.set_priority(plan.priority_size() > 0 ? plan.priority(id) : 0);
    decision.set_kernel(plan.fusion_group_size() > 0 ? plan.fusion_group(id)
                                                     : -1);
    if (plan.layout_size() > 0) {
      *decision.mutable_minor_to_major() = plan.layout(id).minor_to_major();
    }
    decision.set_ir_nodes(static_cast<int32_t>(group.nodes.size()));
  }
  return decisions;
}

}  // namespace gopt::graph
