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
#include "graph/hlo/hlo_module.h"

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
// The instruction's index in its computation in the file gopt exported
// from ("7"): written on every instruction whose place an export may change
// (every instruction with a decision, every member moved into a gopt fused
// computation, and in HLO text every instruction of a computation the
// schedule reorders), so that the importers give back the original
// instructions in the original order (hlo::RestoreGoptExport).
inline constexpr absl::string_view kHloOrderAttribute = "_gopt_order";

// (computation name, instruction name) -> the instruction's index in its
// computation in the file an export is written from (_gopt_order).
using HloPositions =
    absl::flat_hash_map<std::pair<std::string, std::string>, int32_t>;

// The positions an export records for the instructions of one computation
// listed in file order, `marked[i]` being the _gopt_order instruction i
// already carries or -1: those marks when every instruction carries one (a
// gopt export exported again: its import restored that order, the order
// the graph's nodes are in), else the file order 0..n-1.
std::vector<int32_t> ExportPositions(const std::vector<int32_t>& marked);

// True when `names` (one computation's instructions as the export lists
// them) are not each at their position in `positions`: the export moved
// them, so every one of them must carry _gopt_order.
bool MovedByExport(absl::string_view computation,
                   const std::vector<std::string>& names,
                   const HloPositions& positions);

// Re-keys the decisions read from the instructions of the fused
// computations of gopt fusions that hlo::RestoreGoptExport unfolds
// (hlo::FindGoptFusions of `module`, the export as read) by the caller and
// the name each instruction gets back there, with the fusion's device (the
// members carry no placement of their own): the nodes the import makes of
// them then find their decisions. A member without a decision gets none.
void RekeyFusedDecisions(const hlo::HloModule& module, HloDecisions* decisions);

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
