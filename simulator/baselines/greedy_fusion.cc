#include "simulator/baselines/greedy_fusion.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/fusion_rules.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {
namespace {

using graph::Edge;
using graph::NodeId;
using graph::OpKind;

constexpr int kMaxProducersTried = 8;

bool IsHeavy(OpKind kind) { return FusionRoleOf(kind) == FusionRole::kHeavy; }

bool IsCheapConsumer(OpKind kind) {
  return FusionRoleOf(kind) == FusionRole::kCheap;
}

bool EndsFusion(OpKind kind) {
  return kind == OpKind::kReduce || kind == OpKind::kReduceWindow;
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> GreedyFusionGroups(
    const graph::Graph& graph, const std::vector<int32_t>& device,
    const std::vector<int32_t>* fusion_priority) {
  const int n = graph.num_nodes();
  if (device.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fusion: placement has ", device.size(), " entries; the graph '",
        graph.name(), "' has ", n, " nodes"));
  }
  if (fusion_priority != nullptr &&
      fusion_priority->size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fusion: fusion priority has ", fusion_priority->size(),
        " entries; the graph '", graph.name(), "' has ", n, " nodes"));
  }
  auto priority = [&](NodeId id) {
    return fusion_priority == nullptr ? 1 : (*fusion_priority)[id];
  };
  std::vector<uint8_t> is_free(n);
  for (NodeId id = 0; id < n; ++id) is_free[id] = IsFreeNode(graph.node(id));
  // root[v]: first member of v's group (v itself when alone).
  std::vector<NodeId> root(n);
  std::vector<uint8_t> grouped(n, 0);
  // The producers a node may fuse into, best first:
  // (-priority, -bytes, producer).
  std::vector<std::tuple<int32_t, int64_t, NodeId>> producers;
  for (NodeId v = 0; v < n; ++v) {
    root[v] = v;
    const graph::Node& node = graph.node(v);
    if (!IsCheapConsumer(node.kind) || priority(v) <= 0) continue;
    producers.clear();
    for (const Edge& edge : graph.in_edges(v)) {
      const NodeId p = edge.src;
      if (edge.control || device[p] != device[v] || priority(p) <= 0) continue;
      const OpKind kind = graph.node(p).kind;
      if (EndsFusion(kind)) continue;
      // A node alone can start a group only if it does real work.
      if (root[p] == p &&
          (is_free[p] || !(IsCheapConsumer(kind) || IsHeavy(kind)))) {
        continue;
      }
      producers.emplace_back(-priority(p), -graph.EdgeBytes(edge), p);
    }
    std::sort(producers.begin(), producers.end());
    const int tries =
        std::min<int>(kMaxProducersTried, static_cast<int>(producers.size()));
    for (int t = 0; t < tries; ++t) {
      const NodeId group = root[std::get<2>(producers[t])];
      bool acyclic = true;
      for (const Edge& edge : graph.in_edges(v)) {
        const NodeId q = edge.src;
        if (root[q] == group || q < group ||
            (is_free[q] && graph.in_edges(q).empty())) {
          continue;
        }
        acyclic = false;
        break;
      }
      if (!acyclic) continue;
      root[v] = group;
      grouped[group] = 1;
      grouped[v] = 1;
      break;
    }
  }
  std::vector<int32_t> group_id(n, -1);
  std::vector<int32_t> fusion_group(n, -1);
  int32_t next = 0;
  for (NodeId v = 0; v < n; ++v) {
    if (!grouped[v]) continue;
    if (group_id[root[v]] < 0) group_id[root[v]] = next++;
    fusion_group[v] = group_id[root[v]];
  }
  return fusion_group;
}

absl::StatusOr<std::vector<int32_t>> NoFuser::Fuse(
    const BaselineContext& context, const std::vector<int32_t>& device) const {
  RETURN_IF_ERROR(
      CheckPlacement(context.graph, context.topology.num_devices(), device));
  return std::vector<int32_t>();
}

absl::StatusOr<std::vector<int32_t>> GreedyFuser::Fuse(
    const BaselineContext& context, const std::vector<int32_t>& device) const {
  RETURN_IF_ERROR(
      CheckPlacement(context.graph, context.topology.num_devices(), device));
  return GreedyFusionGroups(context.graph, device, /*fusion_priority=*/nullptr);
}

}  // namespace gopt::simulator::baselines
