#include "simulator/fusion_rules.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace gopt::simulator {
namespace {

using graph::NodeId;
using graph::OpKind;

// The members of one fusion group the rules care about.
struct GroupMembers {
  NodeId first = -1;       // the first member seen
  NodeId heavy = -1;       // its dot or convolution
  NodeId alone = -1;       // a member that never shares a kernel
  NodeId statistics = -1;  // a member that computes statistics
};

// The batch norms that may run in inference mode, by their source op name.
bool IsBatchNormOp(absl::string_view op) {
  static const auto* const kOps = new absl::flat_hash_set<absl::string_view>{
      "BatchNormalization", "FusedBatchNorm", "FusedBatchNormV2",
      "FusedBatchNormV3"};
  return kOps->contains(op);
}

// Whether batch norm `id` (IsBatchNormOp) is in inference mode: given the
// running mean and variance, and none of its statistics outputs read.
bool AppliesGivenStatistics(const graph::Graph& graph, NodeId id) {
  int data_inputs = 0;
  for (const graph::Edge& edge : graph.in_edges(id)) {
    data_inputs += !edge.control;
  }
  if (data_inputs < 5) return false;
  for (const graph::Edge& edge : graph.out_edges(id)) {
    if (!edge.control && edge.src_output != 0) return false;
  }
  return true;
}

// "n12 'dot.4' (dot)".
std::string Describe(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  return absl::StrCat("n", id, " '", node.name, "' (",
                      graph::OpKindName(node.kind), ")");
}

absl::Status Reject(const graph::Graph& graph, int32_t group, NodeId a,
                    NodeId b, absl::string_view holds, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(
      "fusion group ", group, " holds ", holds, ", ", Describe(graph, a),
      " and ", Describe(graph, b), ": ", rule));
}

absl::Status RejectAlone(const graph::Graph& graph, int32_t group, NodeId alone,
                         NodeId other) {
  return Reject(
      graph, group, alone, other, "an op that never shares a kernel",
      absl::StrCat(
          "a ", graph::OpKindName(graph.node(alone).kind),
          " runs as a kernel of its own (only elementwise, reduce, "
          "reduce-window, broadcast, transpose, copy, slice, dynamic-slice, "
          "pad, concatenate, reverse, reshape, bitcast, normalization and "
          "softmax ops join a kernel, with at most one dot or convolution)"));
}

absl::Status RejectStatistics(const graph::Graph& graph, int32_t group,
                              NodeId heavy, NodeId statistics) {
  return Reject(graph, group, heavy, statistics,
                "a dot or convolution and a normalization that computes "
                "statistics",
                "a normalization that computes statistics of its input "
                "(softmax, training batch norm, layer norm, ...) runs in a "
                "kernel of cheap ops, never in a dot's or convolution's; only "
                "an inference batch norm (given mean and variance) folds into "
                "one");
}

}  // namespace

FusionRole FusionRoleOf(graph::OpKind kind) {
  if (kind == OpKind::kDot || kind == OpKind::kConvolution) {
    return FusionRole::kHeavy;
  }
  if (graph::OpKindCategory(kind) == graph::OpCategory::kElementwise) {
    return FusionRole::kCheap;
  }
  switch (kind) {
    case OpKind::kReduce:
    case OpKind::kReduceWindow:
    case OpKind::kBroadcast:
    case OpKind::kTranspose:
    case OpKind::kCopy:
    case OpKind::kSlice:
    case OpKind::kDynamicSlice:
    case OpKind::kPad:
    case OpKind::kConcatenate:
    case OpKind::kReverse:
    case OpKind::kReshape:
    case OpKind::kBitcast:
    case OpKind::kNormalization:
    case OpKind::kSoftmax:
      return FusionRole::kCheap;
    default:
      return FusionRole::kAlone;
  }
}

bool ComputesStatistics(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  if (node.kind == OpKind::kSoftmax) return true;
  if (node.kind != OpKind::kNormalization) return false;
  if (node.op == "batch-norm-inference") return false;
  return !(IsBatchNormOp(node.op) && AppliesGivenStatistics(graph, id));
}

absl::Status CheckFusionRules(const graph::Graph& graph,
                              const std::vector<int32_t>& fusion_group) {
  if (fusion_group.empty()) return absl::OkStatus();
  absl::flat_hash_map<int32_t, GroupMembers> groups;
  const NodeId n = static_cast<NodeId>(fusion_group.size());
  for (NodeId id = 0; id < n; ++id) {
    const int32_t group = fusion_group[id];
    if (group < 0) continue;
    GroupMembers& members = groups[group];
    const FusionRole role = FusionRoleOf(graph.node(id).kind);
    const bool statistics =
        role == FusionRole::kCheap && ComputesStatistics(graph, id);
    if (members.first < 0) {
      members.first = id;
    } else if (role == FusionRole::kAlone) {
      return RejectAlone(graph, group, id, members.first);
    } else if (members.alone >= 0) {
      return RejectAlone(graph, group, members.alone, id);
    } else if (role == FusionRole::kHeavy && members.heavy >= 0) {
      return Reject(graph, group, members.heavy, id, "two dots or convolutions",
                    "a kernel holds at most one dot or convolution");
    } else if (role == FusionRole::kHeavy && members.statistics >= 0) {
      return RejectStatistics(graph, group, id, members.statistics);
    } else if (statistics && members.heavy >= 0) {
      return RejectStatistics(graph, group, members.heavy, id);
    }
    if (role == FusionRole::kHeavy) members.heavy = id;
    if (role == FusionRole::kAlone) members.alone = id;
    if (statistics) members.statistics = id;
  }
  return absl::OkStatus();
}

}  // namespace gopt::simulator
