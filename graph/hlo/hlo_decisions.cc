#include "graph/hlo/hlo_decisions.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/decisions.h"
#include "graph/hlo/gopt_export_restore.h"

namespace gopt::graph {

HloDecisions HloDecisionsOf(const Graph& graph, const gopt::v1::Plan& plan) {
  HloDecisions decisions;
  for (const SourceGroup& group : GroupBySource(graph)) {
    const NodeId id = group.nodes[0];
    HloDecision& d = decisions[{group.source.scope, group.source.name}];
    d.device = plan.device_size() > 0 ? plan.device(id) : 0;
    d.priority = plan.priority_size() > 0 ? plan.priority(id) : 0;
    d.kernel = plan.fusion_group_size() > 0 ? plan.fusion_group(id) : -1;
    if (plan.layout_size() > 0) {
      d.layout.assign(plan.layout(id).minor_to_major().begin(),
                      plan.layout(id).minor_to_major().end());
    }
  }
  return decisions;
}

std::vector<int32_t> ExportPositions(const std::vector<int32_t>& marked) {
  std::vector<int32_t> positions = marked;
  if (std::any_of(marked.begin(), marked.end(),
                  [](int32_t position) { return position < 0; })) {
    for (size_t i = 0; i < positions.size(); ++i) {
      positions[i] = static_cast<int32_t>(i);
    }
  }
  return positions;
}

bool MovedByExport(absl::string_view computation,
                   const std::vector<std::string>& names,
                   const HloPositions& positions) {
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = positions.find({std::string(computation), names[i]});
    if (it == positions.end() || it->second != static_cast<int32_t>(i)) {
      return true;
    }
  }
  return false;
}

void RekeyFusedDecisions(const hlo::HloModule& module,
                         HloDecisions* decisions) {
  for (const hlo::GoptFusion& fusion : hlo::FindGoptFusions(module)) {
    const hlo::HloComputation& caller = module.computations[fusion.caller];
    const hlo::HloComputation& fused = module.computations[fusion.fused];
    auto call =
        decisions->find({caller.name, caller.instructions[fusion.fusion].name});
    const int32_t device = call == decisions->end() ? 0 : call->second.device;
    for (size_t m = 0; m < fusion.restored_names.size(); ++m) {
      if (fusion.restored_names[m].empty()) continue;
      auto member = decisions->find({fused.name, fused.instructions[m].name});
      if (member == decisions->end()) continue;
      HloDecision d = std::move(member->second);
      decisions->erase(member);
      d.device = device;
      (*decisions)[{caller.name, fusion.restored_names[m]}] = std::move(d);
    }
  }
}

std::string LayoutAttributeValue(const std::vector<int32_t>& minor_to_major) {
  return absl::StrJoin(minor_to_major, ",");
}

absl::StatusOr<std::vector<int32_t>> ReadLayoutDecision(
    absl::string_view attribute, const std::vector<int32_t>& shape_layout,
    int rank, absl::string_view what) {
  std::vector<int32_t> layout = shape_layout;
  if (layout.empty() && !attribute.empty()) {
    for (absl::string_view piece : absl::StrSplit(attribute, ',')) {
      int32_t dim = -1;
      if (!absl::SimpleAtoi(piece, &dim)) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " frontend attribute ", kHloLayoutAttribute,
            ": expected dimensions like \"1,0\", got \"", attribute, "\""));
      }
      layout.push_back(dim);
    }
  }
  std::vector<int32_t> sorted = layout;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<int>(sorted.size()) == rank;
  for (int i = 0; permutation && i < rank; ++i) permutation = sorted[i] == i;
  if (!permutation) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " layout {", absl::StrJoin(layout, ","),
        "}: expected a permutation of the ", rank, " dimensions of its shape"));
  }
  return layout;
}

gopt::v1::Plan PlanFromHloDecisions(const Graph& graph,
                                    const HloDecisions& decisions,
                                    absl::string_view method) {
  gopt::v1::Plan plan;
  plan.set_method(std::string(method));
  const bool layouts = std::any_of(
      decisions.begin(), decisions.end(),
      [](const auto& entry) { return !entry.second.layout.empty(); });
  for (const Node& node : graph.nodes()) {
    HloDecision d;
    if (auto it = decisions.find({node.source.scope, node.source.name});
        it != decisions.end()) {
      d = it->second;
    }
    plan.add_device(d.device);
    plan.add_priority(d.priority);
    plan.add_fusion_group(d.kernel);
    if (layouts) {
      plan.add_layout()->mutable_minor_to_major()->Add(d.layout.begin(),
                                                       d.layout.end());
    }
  }
  return plan;
}

}  // namespace gopt::graph
