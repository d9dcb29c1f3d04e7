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
// instruction; empty = all 0), ties to the lowest index. With all
// priorities equal this is the stable topological order (an order that
// already respects the dependencies comes back unchanged). Returns fewer
// than n indices when the dependencies form a cycle.
std::vector<int> LinearizeSchedule(
    const std::vector<std::vector<int>>& predecessors,
    const std::vector<int32_t>& priority);

// The instruction ids of `computation` in execution order
// (LinearizeSchedule over operand_ids and control_predecessor_ids;
// `priority` by instruction index). Ids that are not instructions of the
// computation are no dependencies (the importer rejects such modules).
// Fewer ids than instructions when the dependencies form a cycle.
std::vector<int64_t> ScheduleOfComputation(
    const xla::HloComputationProto& computation,
    const std::vector<int32_t>& priority);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_SCHEDULE_H_
