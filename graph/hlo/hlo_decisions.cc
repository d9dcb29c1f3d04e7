#include "graph/hlo/hlo_decisions.h"

#include "graph/decisions.h"

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

gopt::v1::Plan PlanFromHloDecisions(const Graph& graph,
                                    const HloDecisions& decisions,
                                    absl::string_view method) {
  gopt::v1::Plan plan;
  plan.set_method(std::string(method));
  for (const Node& node : graph.nodes()) {
    HloDecision d;
    if (auto it = decisions.find({node.source.scope, node.source.name});
        it != decisions.end()) {
      d = it->second;
    }
    plan.add_device(d.device);
    plan.add_priority(d.priority);
    plan.add_fusion_group(d.kernel);
  }
  return plan;
}

}  // namespace gopt::graph
