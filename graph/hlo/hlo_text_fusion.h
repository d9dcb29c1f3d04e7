#ifndef GOPT_GRAPH_HLO_HLO_TEXT_FUSION_H_
#define GOPT_GRAPH_HLO_HLO_TEXT_FUSION_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/hlo/hlo_decisions.h"
#include "graph/hlo/hlo_text_edit.h"

namespace gopt::graph {

// An instruction WriteFusionInstructions moved into a fused computation:
// its computation and name before, and its decision.
struct HloFusedMember {
  std::string computation;
  std::string name;
  HloDecision decision;
};

// HLO text with gopt's fusion groups written as fusion instructions.
struct HloTextFusion {
  std::vector<std::string> lines;
  int fusions = 0;  // fusion instructions written
  // (fused computation, name there) -> the member written there (for a
  // batch-norm-inference, the add its expansion ends in).
  absl::flat_hash_map<std::pair<std::string, std::string>, HloFusedMember>
      members;
  // One per group that stays unfused in the text, naming its kernel, its
  // computation and why.
  std::vector<std::string> warnings;
};

// Writes every fusion group (HloDecision::kernel) of two or more
// instructions of one computation of `lines` (HLO text, located by
// `instructions`) the way XLA's fusion passes do:
// - a fused computation `%gopt_fused_computation.K` before the
//   computation, with one parameter per distinct operand from outside the
//   group (in order of first use) and the members, their operands
//   renamed to those parameters;
// - in place of the members, `fusion(operands), kind=kLoop, calls=...`
//   (kInput when a reduce is an output, kOutput when a dot or convolution
//   is). With one output the fusion instruction takes that member's name,
//   so users, ROOT and the caller's names stay as they were (the member is
//   renamed `NAME.fused` inside). With several, the fused root is a tuple,
//   the fusion is `%gopt_fusion.K`, and each output keeps its name as a
//   get-tuple-element of it; these instructions' decisions are added to
//   `decisions` (the get-tuple-elements unfused), and the members' are in
//   HloTextFusion::members.
// Members keep their metadata and their own attributes; layout decisions
// are applied inside too. A batch-norm-inference member is written as the
// ops XLA's BatchNormExpander makes of it before fusion (a scale and a
// shift per feature, broadcast, multiply, add; the add keeps its name),
// since XLA never fuses a batch norm itself. The computation's lines are
// reordered only where a user preceded a member the fusion now follows (a
// stable topological order). A group that XLA cannot fuse this way
// (parameters, tuple shapes, batch-norm-training and batch-norm-grad,
// control dependencies, calls, collectives and other side effects) is left
// as it was, with a warning.
HloTextFusion WriteFusionInstructions(
    std::vector<std::string> lines,
    const std::vector<InstructionLine>& instructions, HloDecisions* decisions);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_TEXT_FUSION_H_
