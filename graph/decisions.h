#ifndef GOPT_GRAPH_DECISIONS_H_
#define GOPT_GRAPH_DECISIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gopt/v1/plan.pb.h"
#include "graph/graph.h"

namespace gopt::graph {

// The nodes that came from one element of the caller's file, in
// topological order; `nodes[0]` is the element's representative.
struct SourceGroup {
  SourceElement source;
  std::vector<NodeId> nodes;
};

// Groups the nodes of `graph` by source element, groups in the order of
// their first node; nodes without a source element are left out.
std::vector<SourceGroup> GroupBySource(const Graph& graph);

// Checks that `plan` fits `graph` on `num_devices` devices: every non-empty
// list has one entry per node, devices in [0, num_devices), fusion groups
// >= -1, layouts a permutation of the output's dimensions. InvalidArgument
// naming the node and the field ("node 'add.3' (#12): plan.device 4 is out
// of range for 2 devices").
absl::Status CheckPlanFitsGraph(const Graph& graph, const gopt::v1::Plan& plan,
                                int num_devices);

// Makes `plan` expressible per source element: every node of a group takes
// the device, priority and layout of the group's representative, and the
// nodes of a group of more than one node run unfused (one source element
// cannot be one kernel and several). A plan from a format whose elements
// each became one node is left as it is. `plan` must fit `graph`.
void MakePlanSourceConsistent(const Graph& graph, gopt::v1::Plan* plan);

// One decision per source element (GroupBySource order), taken from the
// group's representative: device and its name in `device_names`, priority,
// kernel (fusion group, -1 = unfused) and layout. `plan` must fit `graph`
// (CheckPlanFitsGraph) on device_names.size() devices.
std::vector<gopt::v1::NodeDecision> DecisionsBySource(
    const Graph& graph, const gopt::v1::Plan& plan,
    absl::Span<const std::string> device_names);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_DECISIONS_H_
