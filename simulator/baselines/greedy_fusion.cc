#include "simulator/baselines/greedy_fusion.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
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

// The groups being built, as a union-find over nodes: each root keeps its
// group's members, its first (smallest) member and its dot or
// convolution.
class GroupSet {
 public:
  // `is_free`: IsFreeNode per node. `keep_members`: whether groups of two
  // or more list their members (InputsPrecede needs them when both parts
  // can be groups: kAllProducers).
  GroupSet(const graph::Graph& graph, const std::vector<uint8_t>& is_free,
           bool keep_members)
      : graph_(graph),
        keep_members_(keep_members),
        parent_(graph.num_nodes()),
        size_(graph.num_nodes(), 1),
        members_(keep_members ? graph.num_nodes() : 0),
        first_(graph.num_nodes()),
        heavy_(graph.num_nodes(), 0),
        source_(graph.num_nodes(), 0) {
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      parent_[v] = v;
      first_[v] = v;
      heavy_[v] = IsHeavy(graph.node(v).kind) ? v : -1;
      source_[v] = is_free[v] && graph.in_edges(v).empty();
    }
  }

  NodeId Find(NodeId v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }
  bool Alone(NodeId root) const { return size_[root] == 1; }
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
    if (size_[a] < size_[b]) std::swap(a, b);
    parent_[b] = a;
    if (keep_members_) {
      if (Alone(a)) members_[a].push_back(a);
      if (Alone(b)) {
        members_[a].push_back(b);
      } else {
        members_[a].insert(members_[a].end(), members_[b].begin(),
                           members_[b].end());
        std::vector<NodeId>().swap(members_[b]);
      }
    }
    size_[a] += size_[b];
    first_[a] = std::min(first_[a], first_[b]);
    heavy_[a] = std::max(heavy_[a], heavy_[b]);
    return a;
  }

  // Whether the groups rooted at `a` and `b` may join and keep the
  // invariant that makes the groups acyclic: every edge entering a group
  // from outside it starts before the group's first member (or at a free
  // node without inputs, such as a parameter). Following edges between
  // groups then always moves to a later first member, so no cycle can
  // close; and a kernel never waits for an input made after its first op
  // could have run. The part whose first member is the joined group's
  // already holds the invariant, so only the other part's inputs are
  // checked: for a consumer joining its producer's group, its own inputs.
  // Without keep_members, that part must be a node alone. With `reduce_ends`, nor may the join put a reduce's consumer in the
  // reduce's kernel (kOneProducer leaves that to its choice of producers).
  bool InputsPrecede(NodeId a, NodeId b, bool reduce_ends) const {
    const NodeId first = std::min(first_[a], first_[b]);
    const NodeId later = first_[a] == first ? b : a;
    const NodeId alone[] = {later};
    const absl::Span<const NodeId> later_members =
        Alone(later) ? absl::Span<const NodeId>(alone)
                     : absl::Span<const NodeId>(members_[later]);
    for (NodeId m : later_members) {
      for (const Edge& edge : graph_.in_edges(m)) {
        const NodeId q = edge.src;
        if (q < first || source_[q]) continue;
        const NodeId group = FindConst(q);
        if (group != a && group != b) return false;
        // A reduce ends a fusion: its consumers stay out of its kernel.
        if (reduce_ends && group != later && EndsFusion(graph_.node(q).kind)) {
          return false;
        }
      }
    }
    return true;
  }

 private:
  NodeId FindConst(NodeId v) const {
    while (parent_[v] != v) v = parent_[v];
    return v;
  }

  const graph::Graph& graph_;
  const bool keep_members_;
  std::vector<NodeId> parent_;
  std::vector<int32_t> size_;  // by root
  // With keep_members_, by root: the members of a group of two or more
  // (empty for a node alone, so that most nodes cost no allocation).
  std::vector<std::vector<NodeId>> members_;
  std::vector<NodeId> first_;                 // smallest member, by root
  std::vector<NodeId> heavy_;  // the group's dot or convolution, else -1
  std::vector<uint8_t> source_;  // a free node without inputs
};

}  // namespace

absl::StatusOr<std::vector<int32_t>> GreedyFusionGroups(
    const graph::Graph& graph, const std::vector<int32_t>& device,
    const std::vector<int32_t>* fusion_priority, FusionJoin join) {
  const bool join_all = join == FusionJoin::kAllProducers;
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
  GroupSet groups(graph, is_free, /*keep_members=*/join_all);
  // By group root: whether a member exchanges data with another device.
  std::vector<uint8_t> remote(join_all ? n : 0, 0);
  for (NodeId v = 0; join_all && v < n; ++v) {
    for (const Edge& edge : graph.out_edges(v)) {
      if (edge.control || device[edge.dst] == device[v]) continue;
      remote[v] = 1;
      remote[edge.dst] = 1;
    }
  }
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
    if (join_all && remote_input) continue;
    std::sort(producers.begin(), producers.end());
    const int tries =
        std::min<int>(kMaxProducersTried, static_cast<int>(producers.size()));
    // Joining one producer's group can let another join (its inputs then
    // precede the joined group): pass over them until none joins.
    for (bool joined = true; joined;) {
      joined = false;
      for (int t = 0; t < tries; ++t) {
        const NodeId mine = groups.Find(v);
        const NodeId group = groups.Find(std::get<2>(producers[t]));
        if (group == mine || !groups.KeepsShape(mine, group) ||
            (!groups.Alone(mine) && (remote[mine] || remote[group])) ||
            !groups.InputsPrecede(mine, group, /*reduce_ends=*/join_all)) {
          continue;
        }
        if (!join_all) {
          groups.Merge(mine, group);
          break;  // the first producer that qualifies
        }
        const uint8_t either = remote[mine] | remote[group];
        remote[groups.Merge(mine, group)] = either;
        joined = true;
      }
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

absl::StatusOr<std::vector<int32_t>> GreedyJoinFuser::Fuse(
    const BaselineContext& context, const std::vector<int32_t>& device) const {
  RETURN_IF_ERROR(
      CheckPlacement(context.graph, context.topology.num_devices(), device));
  return GreedyFusionGroups(context.graph, device, /*fusion_priority=*/nullptr,
                            FusionJoin::kAllProducers);
}

}  // namespace gopt::simulator::baselines
