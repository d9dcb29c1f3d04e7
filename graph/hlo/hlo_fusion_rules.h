#ifndef GOPT_GRAPH_HLO_HLO_FUSION_RULES_H_
#define GOPT_GRAPH_HLO_HLO_FUSION_RULES_H_

// Which fusion groups the HLO exporters (text and HloModuleProto) write as
// fusion instructions, and how: the rules XLA's fusion passes follow, in
// one place for both formats. Pure and thread-safe.

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gopt::graph {

// Why XLA's fusion passes never make instruction `name` (opcode `opcode`;
// `tuple_or_token` when its shape is a tuple or a token) part of a fusion,
// or "" when they can: parameters, control flow, calls, custom calls,
// fusions, collectives and other side effects, tuples and
// get-tuple-elements, asynchronous pairs, batch-norm-training and
// batch-norm-grad (XLA expands them before fusion), and any tuple or token
// shape.
std::string WhyXlaCannotFuse(absl::string_view name, absl::string_view opcode,
                             bool tuple_or_token);

// Why a member with control predecessors cannot be fused (XLA's fusion
// passes leave such instructions alone).
std::string ControlPredecessorsReason(absl::string_view member);

// Why a group whose instruction `user` outside it has a control dependency
// on member `member` cannot be fused.
std::string ControlUserReason(absl::string_view user, absl::string_view member);

// Why a group with instructions in computations `a` and `b` (a call gopt
// inlined into its caller) cannot be fused: XLA fuses within one
// computation.
std::string SpansComputationsReason(absl::string_view a, absl::string_view b);

// Why a group whose dot or convolution `heavy` has element type
// `heavy_type` but whose fusion result (its first output) has `result_type`
// is not written as a fusion: gopt prices a fusion node at its result's
// element type and a group at its heaviest member's, so the file would
// evaluate to another step time than the plan (a bf16 convolution fused
// with a convert to f32 becomes an f32 kernel). Types as HLO text writes
// them ("bf16").
std::string ElementTypeReason(absl::string_view heavy,
                              absl::string_view heavy_type,
                              absl::string_view result_type);

// The warning for fusion group `kernel` (instructions `names`) left as the
// frontend attribute _gopt_kernel because of `why`.
std::string UnfusedGroupWarning(int32_t kernel,
                                absl::Span<const std::string> names,
                                absl::string_view why);

// The fusion_kind XLA gives a fusion whose outputs (the root, or the
// elements of a tuple root) have opcodes `output_opcodes`: "kOutput" when
// one is a dot or a convolution, else "kInput" when one is a reduce, else
// "kLoop".
absl::string_view XlaFusionKind(absl::Span<const std::string> output_opcodes);

// Names not yet used by an instruction or computation of a module, for the
// instructions and computations a fusion rewrite adds.
class FreshHloNames {
 public:
  // Marks `name` as used.
  void Use(absl::string_view name) { used_.insert(std::string(name)); }

  // `base` when unused, else the first unused `base.1`, `base.2`, ...;
  // marks it used.
  std::string Make(absl::string_view base);

 private:
  absl::flat_hash_set<std::string> used_;
};

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_FUSION_RULES_H_
