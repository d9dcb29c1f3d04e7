#ifndef GOPT_GRAPH_HLO_HLO_DECISIONS_H_
#define GOPT_GRAPH_HLO_HLO_DECISIONS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gopt/v1/plan.pb.h"
#include "graph/graph.h"

namespace gopt::graph {

// gopt's decision for one HLO instruction, as the HLO exporters (text and
// HloModuleProto) write it and read it back.
struct HloDecision {
  int32_t device = 0;
  int32_t priority = 0;
  int32_t kernel = -1;          // fusion group; -1 = unfused
  std::vector<int32_t> layout;  // minor_to_major; empty = no decision
};

// (computation name, instruction name) -> the instruction's decision.
using HloDecisions =
    absl::flat_hash_map<std::pair<std::string, std::string>, HloDecision>;

// The frontend attributes the HLO exporters write priority and fusion group
// as (XLA carries frontend attributes through its passes unchanged).
inline constexpr absl::string_view kHloPriorityAttribute = "_gopt_priority";
inline constexpr absl::string_view kHloKernelAttribute = "_gopt_kernel";
// Marks an instruction whose shape's layout is gopt's layout decision (the
// value is the layout written, "1,0" for {1,0}); instructions without it
// keep the caller's own layouts, which are no decision.
inline constexpr absl::string_view kHloLayoutAttribute = "_gopt_layout";

// The _gopt_layout value of `minor_to_major` ("1,0").
std::string LayoutAttributeValue(const std::vector<int32_t>& minor_to_major);

// The layout decision of an instruction that carries _gopt_layout
// (`attribute`): the minor_to_major of its array shape (`shape_layout`, what
// the compiler reads), or the attribute's value when the shape has no
// layout. InvalidArgument naming `what` when the attribute does not parse
// or the layout is not a permutation of 0..rank-1.
absl::StatusOr<std::vector<int32_t>> ReadLayoutDecision(
    absl::string_view attribute, const std::vector<int32_t>& shape_layout,
    int rank, absl::string_view what);

// The decision of every instruction that became graph nodes, taken from
// the representative node of its source group. `plan` must fit `graph` and
// be source-consistent (MakePlanSourceConsistent).
HloDecisions HloDecisionsOf(const Graph& graph, const gopt::v1::Plan& plan);

// The plan `decisions` (read back from a module) make for `graph`: nodes
// whose instruction has no decision get device 0, priority 0, unfused and
// no layout. Layouts are in the plan only when a decision has one (every
// node of an instruction takes its layout).
gopt::v1::Plan PlanFromHloDecisions(const Graph& graph,
                                    const HloDecisions& decisions,
                                    absl::string_view method);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_DECISIONS_H_
