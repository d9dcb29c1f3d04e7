#include "graph/hlo/hlo_fusion_rules.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/hlo/hlo_decisions.h"

namespace gopt::graph {

std::string WhyXlaCannotFuse(absl::string_view name, absl::string_view opcode,
                             bool tuple_or_token) {
  static const auto* const kNever =
      new absl::flat_hash_set<absl::string_view>{"parameter",
                                                 "while",
                                                 "conditional",
                                                 "call",
                                                 "custom-call",
                                                 "fusion",
                                                 "all-reduce",
                                                 "all-gather",
                                                 "all-to-all",
                                                 "reduce-scatter",
                                                 "collective-permute",
                                                 "collective-broadcast",
                                                 "send",
                                                 "recv",
                                                 "infeed",
                                                 "outfeed",
                                                 "after-all",
                                                 "add-dependency",
                                                 "domain",
                                                 "tuple",
                                                 "get-tuple-element",
                                                 "rng-get-and-update-state",
                                                 "opt-barrier",
                                                 "optimization-barrier"};
  if (opcode == "batch-norm-training" || opcode == "batch-norm-grad") {
    // XLA expands batch norm into reduces and elementwise ops before fusion
    // (BatchNormExpander, on computations no fusion calls) and never fuses
    // the op itself; the expansion's several outputs would leave the group
    // through get-tuple-elements, which gopt keeps outside it.
    return absl::StrCat("'", name, "' is a ", opcode,
                        ", which XLA expands before fusion and never fuses");
  }
  if (kNever->contains(opcode) || absl::EndsWith(opcode, "-start") ||
      absl::EndsWith(opcode, "-done") || absl::EndsWith(opcode, "-update")) {
    return absl::StrCat("'", name, "' is a ", opcode);
  }
  if (tuple_or_token) {
    return absl::StrCat("'", name, "' has a tuple or token shape");
  }
  return "";
}

std::string ControlPredecessorsReason(absl::string_view member) {
  return absl::StrCat("'", member, "' has control predecessors");
}

std::string ControlUserReason(absl::string_view user,
                              absl::string_view member) {
  return absl::StrCat("'", user, "' has a control dependency on member '",
                      member, "'");
}

std::string SpansComputationsReason(absl::string_view a, absl::string_view b) {
  return absl::StrCat("its instructions are in computations '", a, "' and '", b,
                      "' (a call gopt inlined into its caller), and XLA fuses "
                      "within one computation");
}

std::string ElementTypeReason(absl::string_view heavy,
                              absl::string_view heavy_type,
                              absl::string_view result_type) {
  return absl::StrCat(
      "'", heavy, "' computes in ", heavy_type, " but the fusion's result is ",
      result_type,
      ", and gopt prices a fusion at its result's element type (a group at "
      "its dot's or convolution's): as a fusion it would evaluate to another "
      "step time than the plan");
}

std::string UnfusedGroupWarning(int32_t kernel,
                                absl::Span<const std::string> names,
                                absl::string_view why) {
  return absl::StrCat("fusion group ", kernel, " (", absl::StrJoin(names, ", "),
                      ") is written as frontend attribute ",
                      kHloKernelAttribute,
                      " only, not as a fusion instruction: ", why);
}

absl::string_view XlaFusionKind(absl::Span<const std::string> output_opcodes) {
  bool reduce = false;
  for (const std::string& opcode : output_opcodes) {
    if (opcode == "dot" || opcode == "convolution") return "kOutput";
    reduce |= opcode == "reduce";
  }
  return reduce ? "kInput" : "kLoop";
}

std::string FreshHloNames::Make(absl::string_view base) {
  if (used_.insert(std::string(base)).second) return std::string(base);
  for (int i = 1;; ++i) {
    std::string candidate = absl::StrCat(base, ".", i);
    if (used_.insert(candidate).second) return candidate;
  }
}

}  // namespace gopt::graph
