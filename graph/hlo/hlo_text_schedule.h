#ifndef GOPT_GRAPH_HLO_HLO_TEXT_SCHEDULE_H_
#define GOPT_GRAPH_HLO_HLO_TEXT_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/hlo/hlo_text_edit.h"

namespace gopt::graph {

// Puts the instruction lines `slots` (the line indices of one
// computation's instructions) in LinearizeSchedule order over their
// operands and control predecessors, with `priority` by slot (empty = all
// 0: the stable topological order) and calls fixed. Returns the order (slot
// k now holds the line that was at slot order[k]); nullopt, leaving the
// lines as they were, when one does not parse as an instruction or they
// form a cycle.
std::optional<std::vector<int>> OrderComputationLines(
    const std::vector<size_t>& slots, const std::vector<int32_t>& priority,
    std::vector<std::string>* lines);

// Writes gopt's schedule into HLO text `lines` as XLA reads a scheduled
// module: the `HloModule` line gets `is_scheduled=true` (kept when it had
// it; replacing `false`), and every computation that no fusion calls lists
// its instructions in execution order: LinearizeSchedule with each
// instruction's `priority` (one per entry of `instructions`, the instruction
// lines of `lines` as FindInstructions lists them), the order the
// HloModuleProto export writes as HloScheduleProto. On return
// `instructions` name the reordered lines, and entry k of them is the one
// that was entry (*moved_from)[k]. Returns one warning per computation left
// in its order (a line that does not parse, or a cycle).
std::vector<std::string> WriteTextSchedule(
    const std::vector<int32_t>& priority,
    std::vector<InstructionLine>* instructions, std::vector<std::string>* lines,
    std::vector<size_t>* moved_from);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_TEXT_SCHEDULE_H_
