#ifndef GOPT_GRAPH_HLO_HLO_SCHEDULE_H_
#define GOPT_GRAPH_HLO_HLO_SCHEDULE_H_

// The execution order the HLO exporters write for one computation (as
// HloScheduleProto in a HloModuleProto, as instruction order of an
// is_scheduled module in HLO text). Pure and thread-safe.

#include <cstdint>
#include <vector>

#include "xla/hlo.pb.h"

namespace gopt::graph {

// Orders instructions 0..n-1 of one computation, n = predecessors.size():
// every instruction after its `predecessors` (operands and control
// predecessors, as indices; an index out of range or the instruction
// itself is ignored, a repeated one counts once), and among the
// instructions ready at once the highest `priority` first (one entry per
// instruction; empty = all 0), ties to the lowest index. Instructions of
// equal priority keep their order in the stable topological order (the
// order with all priorities equal, which is the given order when that
// respects the dependencies): gopt's importers number nodes in module
// order and its simulator breaks priority ties by that number, so a module
// written in this order imports to a plan that breaks ties as the original
// did. An instruction marked `fixed` (one entry per instruction; empty =
// none) keeps its place in the stable order: everything before it stays
// before, everything after stays after. The exporters fix `call`s, which
// gopt's importers inline (their instructions become nodes numbered at the
// call's place). Returns fewer than n indices when the dependencies form a
// cycle.
std::vector<int> LinearizeSchedule(
    const std::vector<std::vector<int>>& predecessors,
    const std::vector<int32_t>& priority, const std::vector<bool>& fixed = {});

// The instruction ids of `computation` in execution order
// (LinearizeSchedule over operand_ids and control_predecessor_ids;
// `priority` by instruction index; calls fixed). Ids that are not instructions
// of the computation are no dependencies (the importer rejects such modules).
// Fewer ids than instructions when the dependencies form a cycle.
std::vector<int64_t> ScheduleOfComputation(
    const xla::HloComputationProto& computation,
    const std::vector<int32_t>& priority);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_SCHEDULE_H_
