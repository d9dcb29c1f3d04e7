#include "simulator/baselines/greedy_fusion.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
// Groups kAllProducers' cycle check expands before it refuses a join.
constexpr int kMaxVisits = 64;

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
  // `device`: the placement; `is_free`: IsFreeNode per node.
  // `keep_members`: kAllProducers' bookkeeping (member lists, the cycle
  // search's marks, which groups exchange data with another device), which
  // WouldCycle, ReduceBetween and Remote read.
  GroupSet(const graph::Graph& graph, const std::vector<int32_t>& device,
           const std::vector<uint8_t>& is_free, bool keep_members)
      : graph_(graph),
        keep_members_(keep_members),
        parent_(graph.num_nodes()),
        size_(graph.num_nodes(), 1),
        members_(keep_members ? graph.num_nodes() : 0),
        first_(graph.num_nodes()),
        heavy_(graph.num_nodes(), 0),
        statistics_(graph.num_nodes(), 0),
        source_(graph.num_nodes(), 0),
        seen_(keep_members ? graph.num_nodes() : 0, 0),
        expanded_(keep_members ? graph.num_nodes() : 0, 0),
        remote_(keep_members ? graph.num_nodes() : 0, 0) {
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      parent_[v] = v;
      first_[v] = v;
      heavy_[v] = IsHeavy(graph.node(v).kind) ? v : -1;
      statistics_[v] = ComputesStatistics(graph, v);
      source_[v] = is_free[v] && graph.in_edges(v).empty();
      if (!keep_members) continue;
      for (const Edge& edge : graph.out_edges(v)) {
        if (edge.control || device[edge.dst] == device[v]) continue;
        remote_[v] = 1;
        remote_[edge.dst] = 1;
      }
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

  // The members of the group rooted at `root` (keep_members only; a node
  // alone is its own parent).
  absl::Span<const NodeId> Members(NodeId root) const {
    return Alone(root) ? absl::MakeConstSpan(&parent_[root], 1)
                       : absl::MakeConstSpan(members_[root]);
  }
  NodeId First(NodeId root) const { return first_[root]; }
  // Whether a member of the group rooted at `root` exchanges data with
  // another device (keep_members only).
  bool Remote(NodeId root) const { return remote_[root]; }

  // Whether the groups rooted at `a` and `b` together keep the greedy
  // shape: at most one dot or convolution, and it their first member (a
  // library call with cheap consumers fused after it, nothing before), and
  // no node that computes statistics beside it.
  bool KeepsShape(NodeId a, NodeId b) const {
    if (heavy_[a] >= 0 && heavy_[b] >= 0) return false;
    if ((heavy_[a] >= 0 && statistics_[b]) ||
        (heavy_[b] >= 0 && statistics_[a])) {
      return false;
    }
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
    if (keep_members_) remote_[a] |= remote_[b];
    first_[a] = std::min(first_[a], first_[b]);
    heavy_[a] = std::max(heavy_[a], heavy_[b]);
    statistics_[a] |= statistics_[b];
    return a;
  }

  // kOneProducer's cycle rule for node `v`, alone, joining the group rooted
  // at `group`: every other input of v is in the group, is a free node
  // without inputs (a parameter, a constant) or comes before the group's
  // first member. Every edge entering a group from outside then starts
  // before the group's first member, so following edges between groups
  // always moves to a later first member: no cycle can close (sound, not
  // complete).
  bool InputsPrecede(NodeId v, NodeId group) {
    for (const Edge& edge : graph_.in_edges(v)) {
      const NodeId q = edge.src;
      if (q >= first_[group] && !source_[q] && Find(q) != group) return false;
    }
    return true;
  }

  // Whether joining the groups rooted at `a` and `b` would close a cycle
  // between groups: a path from one to the other through a third group
  // (kAllProducers: exact where InputsPrecede is sound but refuses more).
  // Every group holds only nodes up to `limit` (the consumer being placed,
  // visited in topological order); nodes after it are alone and lead only
  // to later nodes, so the search never follows them. NodeIds cannot prune
  // it otherwise: a group's outputs wait for all its inputs, so an edge out
  // of a group may leave from a member before the one it was reached at.
  // True also when the search expands kMaxVisits groups (sound, not
  // complete). Needs keep_members.
  bool WouldCycle(NodeId a, NodeId b, NodeId limit) {
    if (Alone(a) && OnlyInputsFrom(a, b)) return false;
    if (++epoch_ == 0) {
      std::fill(seen_.begin(), seen_.end(), 0);
      std::fill(expanded_.begin(), expanded_.end(), 0);
      epoch_ = 1;
    }
    stack_.clear();
    // Pushes the consumers of group `root` that lie in a third group;
    // returns whether `root`, a third group, feeds a or b.
    auto push_consumers = [&](NodeId root) {
      for (NodeId m : Members(root)) {
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

  // Whether an edge between the groups rooted at `a` and `b` leaves a
  // reduce or reduce-window: joining them would put the reduce's consumer
  // in its kernel, where a reduce ends a fusion. Needs keep_members.
  // When `a` is the consumer being placed, alone, only its own inputs can
  // come from b (b's members all come before it).
  bool ReduceBetween(NodeId a, NodeId b) {
    const bool both = !Alone(a);
    for (const auto& [part, other] : {std::pair(a, b), std::pair(b, a)}) {
      if (part == b && !both) break;
      for (NodeId m : Members(part)) {
        for (const Edge& edge : graph_.in_edges(m)) {
          if (EndsFusion(graph_.node(edge.src).kind) &&
              Find(edge.src) == other) {
            return true;
          }
        }
      }
    }
    return false;
  }

 private:
  // Whether every input of the node alone at `v` lies in group `b` or is a
  // node without inputs: then no path leads from b to v through a third
  // group (the common case, a chain growing by one node).
  bool OnlyInputsFrom(NodeId v, NodeId b) {
    for (const Edge& edge : graph_.in_edges(v)) {
      if (!graph_.in_edges(edge.src).empty() && Find(edge.src) != b) {
        return false;
      }
    }
    return true;
  }

  const graph::Graph& graph_;
  const bool keep_members_;
  std::vector<NodeId> parent_;
  std::vector<int32_t> size_;  // by root
  // With keep_members_, by root: the members of a group of two or more
  // (empty for a node alone, so that most nodes cost no allocation).
  std::vector<std::vector<NodeId>> members_;
  std::vector<NodeId> first_;  // smallest member, by root
  std::vector<NodeId> heavy_;  // the group's dot or convolution, else -1
  // By root: the group holds a node that computes statistics.
  std::vector<uint8_t> statistics_;
  std::vector<uint8_t> source_;  // a free node without inputs
  // WouldCycle's marks (keep_members only), epoch-stamped.
  std::vector<uint32_t> seen_;      // node pushed in this search
  std::vector<uint32_t> expanded_;  // group expanded in this search
  uint32_t epoch_ = 0;
  std::vector<NodeId> stack_;
  std::vector<uint8_t> remote_;  // by root; keep_members only
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
  GroupSet groups(graph, device, is_free, /*keep_members=*/join_all);
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
    // kAllProducers: joining one producer's group can let another join (a
    // path through a third group that has joined no longer closes a
    // cycle): pass over them until none joins.
    for (bool joined = true; joined;) {
      joined = false;
      for (int t = 0; t < tries; ++t) {
        const NodeId mine = groups.Find(v);
        const NodeId group = groups.Find(std::get<2>(producers[t]));
        if (group == mine || !groups.KeepsShape(mine, group) ||
            (!groups.Alone(mine) &&
             (groups.Remote(mine) || groups.Remote(group))) ||
            (join_all ? groups.WouldCycle(mine, group, v) ||
                            groups.ReduceBetween(mine, group)
                      : !groups.InputsPrecede(mine, group))) {
          continue;
        }
        if (!join_all) {
          groups.Merge(mine, group);
          break;  // the first producer that qualifies
        }
        groups.Merge(mine, group);
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

FusionJoin FusionJoinOfMethod(absl::string_view method) {
  const std::vector<absl::string_view> parts = absl::StrSplit(method, '+');
  return parts.size() >= 3 && parts[2] == "greedy-join"
             ? FusionJoin::kAllProducers
             : FusionJoin::kOneProducer;
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
