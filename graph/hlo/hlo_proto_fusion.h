#ifndef GOPT_GRAPH_HLO_HLO_PROTO_FUSION_H_
#define GOPT_GRAPH_HLO_HLO_PROTO_FUSION_H_

#include <string>
#include <vector>

#include "graph/hlo/hlo_decisions.h"
#include "xla/hlo.pb.h"

namespace gopt::graph {

// What WriteProtoFusions did.
struct HloProtoFusion {
  int fusions = 0;  // fusion instructions written
  // One per group left unfused, naming its kernel, its instructions and
  // why.
  std::vector<std::string> warnings;
};

// Writes every fusion group (HloDecision::kernel) of two or more
// instructions of one computation of `module` the way XLA's fusion passes
// do, under the rules the HLO text exporter follows (hlo_fusion_rules.h):
// - a fused computation `gopt_fused_computation.K` (new id; placed just
//   before the computation that calls it, as XLA orders callees first)
//   with one parameter per distinct operand from outside the group (in
//   order of first use), the members with their operands renamed to those
//   parameters, and as root the group's output (or a tuple of its outputs);
// - in place of the members, an instruction of opcode "fusion" with
//   fusion_kind kLoop, kInput (a reduce output) or kOutput (a dot or
//   convolution output), operand_ids = the outside operands and
//   called_computation_ids = the fused computation. With one output it
//   takes that member's name and id, so users, the root and the caller's
//   names stay as they were (the member inside becomes `NAME.fused` with a
//   new id). With several, the fusion is `gopt_fusion.K` and each output
//   keeps its name and id as a get-tuple-element of it; these
//   instructions' decisions are added to `decisions` (the
//   get-tuple-elements unfused).
// New instructions and computations get ids unused in the module; the
// computation's instructions are put back in a stable topological order.
// The fusion carries its output member's metadata, sharding and frontend
// attributes. A group the rules exclude, a group with a
// batch-norm-inference (XLA expands it first; the expansion needs constant
// literals, which gopt's copy of the proto does not carry) or a group whose
// instructions are not all found is left as it was, with a warning.
HloProtoFusion WriteProtoFusions(xla::HloModuleProto* module,
                                 HloDecisions* decisions);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_PROTO_FUSION_H_
