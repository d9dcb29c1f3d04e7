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
// Groups the cycle check visits before it refuses a join.
constexpr int kMaxVisits = 512;

bool IsHeavy(OpKind kind) { return FusionRoleOf(kind) == FusionRole::kHeavy; }

bool IsCheapConsumer(OpKind kind) {
  return FusionRoleOf(kind) == FusionRole::kCheap;
}

bool EndsFusion(OpKind kind) {
  return kind == OpKind::kReduce || kind == OpKind::kReduceWindow;
}

// The groups being built, as a union-find over nodes: each root keeps its
// group's members, its first (smallest) member and its dot or
// convolution.
class GroupSet {
 public:
  explicit GroupSet(const graph::Graph& graph)
      : graph_(graph),
        parent_(graph.num_nodes()),
        members_(graph.num_nodes()),
        first_(graph.num_nodes()),
        heavy_(graph.num_nodes(), 0),
        seen_(graph.num_nodes(), 0),
        expanded_(graph.num_nodes(), 0) {
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      parent_[v] = v;
      members_[v] = {v};
      first_[v] = v;
      heavy_[v] = IsHeavy(graph.node(v).kind) ? v : -1;
    }
  }

  NodeId Find(NodeId v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }
  bool Alone(NodeId root) const { return members_[root].size() == 1; }
  NodeId First(NodeId root) const { return first_[root]; }

  // Whether the groups rooted at `a` and `b` together keep the greedy
  // shape: at most one dot or convolution, and it their first member (a
  // library call with cheap consumers fused after it, nothing before).
  bool KeepsShape(NodeId a, NodeId b) const {
    if (heavy_[a] >= 0 && heavy_[b] >= 0) return false;
    const NodeId heavy = std::max(heavy_[a], heavy_[b]);
    return heavy < 0 || heavy == std::min(First(a), First(b));
  }

  // Joins the groups rooted at `a` and `b`; returns the new root.
  NodeId Merge(NodeId a, NodeId b) {
    if (members_[a].size() < members_[b].size()) std::swap(a, b);
    parent_[b] = a;
    members_[a].insert(members_[a].end(), members_[b].begin(),
                       members_[b].end());
    std::vector<NodeId>().swap(members_[b]);
    first_[a] = std::min(first_[a], first_[b]);
    heavy_[a] = std::max(heavy_[a], heavy_[b]);
    return a;
  }

  // Whether joining the groups rooted at `a` and `b` would close a cycle
  // between groups: a path from one to the other through a third group.
  // Every group holds only nodes up to `limit` (the consumer being placed,
  // visited in topological order); nodes after it are alone and lead only
  // to later nodes, so the search never follows them. True also when the
  // search expands kMaxVisits groups (sound, not complete). NodeIds cannot
  // prune the search otherwise: a group's outputs wait for all its inputs,
  // so an edge out of a group may leave from a member before the one it
  // was reached at.
  bool WouldCycle(NodeId a, NodeId b, NodeId limit) {
    if (++epoch_ == 0) {
      std::fill(seen_.begin(), seen_.end(), 0);
      std::fill(expanded_.begin(), expanded_.end(), 0);
      epoch_ = 1;
    }
    stack_.clear();
    // Pushes the consumers of group `root` that lie in a third group;
    // returns whether a third group `root` feeds a or b.
    auto push_consumers = [&](NodeId root) {
      for (NodeId m : members_[root]) {
        for (const Edge& edge : graph_.out_edges(m)) {
          const NodeId w = edge.dst;
          if (w > limit || seen_[w] == epoch_) continue;
          const NodeId group = Find(w);
          if (group == a || group == b) {
            if (root != a && root != b) return true;
            continue;  // inside the joined group, or the join's own edge
          }
          seen_[w] = epoch_;
          stack_.push_back(w);
        }
      }
      return false;
    };
    push_consumers(a);
    push_consumers(b);
    int visits = 0;
    while (!stack_.empty()) {
      const NodeId root = Find(stack_.back());
      stack_.pop_back();
      if (expanded_[root] == epoch_) continue;
      expanded_[root] = epoch_;
      if (++visits > kMaxVisits) return true;
      if (push_consumers(root)) return true;
    }
    return false;
  }

 private:
  const graph::Graph& graph_;
  std::vector<NodeId> parent_;
  std::vector<std::vector<NodeId>> members_;  // by root
  std::vector<NodeId> first_;                 // smallest member, by root
  std::vector<NodeId> heavy_;  // the group's dot or convolution, else -1
  std::vector<uint32_t> seen_;      // node pushed in this search
  std::vector<uint32_t> expanded_;  // group expanded in this search
  uint32_t epoch_ = 0;
  std::vector<NodeId> stack_;
};

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
  GroupSet groups(graph);
  // The producers a node may fuse into, best first:
  // (-priority, -bytes, producer).
  std::vector<std::tuple<int32_t, int64_t, NodeId>> producers;
  for (NodeId v = 0; v < n; ++v) {
    const graph::Node& node = graph.node(v);
    if (!IsCheapConsumer(node.kind) || priority(v) <= 0) continue;
    producers.clear();
    bool remote_input = false;
    for (const Edge& edge : graph.in_edges(v)) {
      const NodeId p = edge.src;
      if (!edge.control && device[p] != device[v]) remote_input = true;
      if (edge.control || device[p] != device[v] || priority(p) <= 0) continue;
      const OpKind kind = graph.node(p).kind;
      if (EndsFusion(kind)) continue;
      // A node alone can start a group only if it does real work.
      if (groups.Alone(groups.Find(p)) &&
          (is_free[p] || !(IsCheapConsumer(kind) || IsHeavy(kind)))) {
        continue;
      }
      producers.emplace_back(-priority(p), -graph.EdgeBytes(edge), p);
    }
    // A kernel starts once all its inputs have arrived: joining a group
    // would hold the group's work back until the transfer lands.
    if (remote_input) continue;
    std::sort(producers.begin(), producers.end());
    const int tries =
        std::min<int>(kMaxProducersTried, static_cast<int>(producers.size()));
    for (int t = 0; t < tries; ++t) {
      const NodeId mine = groups.Find(v);
      const NodeId group = groups.Find(std::get<2>(producers[t]));
      if (group == mine || !groups.KeepsShape(mine, group) ||
          groups.WouldCycle(mine, group, v)) {
        continue;
      }
      groups.Merge(mine, group);
    }
  }
  std::vector<int32_t> group_id(n, -1);
  std::vector<int32_t> fusion_group(n, -1);
  int32_t next = 0;
  for (NodeId v = 0; v < n; ++v) {
    const NodeId root = groups.Find(v);
    if (groups.Alone(root)) continue;
    if (group_id[root] < 0) group_id[root] = next++;
    fusion_group[v] = group_id[root];
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
