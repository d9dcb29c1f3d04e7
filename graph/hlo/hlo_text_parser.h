#ifndef GOPT_GRAPH_HLO_HLO_TEXT_PARSER_H_
#define GOPT_GRAPH_HLO_HLO_TEXT_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/hlo/hlo_module.h"

namespace gopt::graph::hlo {

// Parses XLA HLO text (as printed by HloModule::ToString) into an HloModule.
// Both the current syntax (`add(a, b)`) and the older one (operand types
// inline, `f32[2]{0} %a`, and `/*index=N*/` comments) are accepted, with
// tiled layouts, tuples, metadata, sharding, frontend attributes and JSON
// backend configs. Attributes gopt does not model are skipped.
//
// The returned module passes ValidateHloModule. Errors are
// InvalidArgument with a 1-based position: "hlo text line 12 col 40:
// instruction '%add.3' operand 1 '%foo' is not defined in computation
// 'main'" (operand indices are 0-based). Never crashes on any input; nesting
// is bounded by kMaxHloNestingDepth. Thread-safe (no shared state).
absl::StatusOr<HloModule> ParseHloText(absl::string_view text);

// True when `text` starts (after whitespace and comments) with the word
// `HloModule`. Looks only at a prefix.
bool LooksLikeHloText(absl::string_view text);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_TEXT_PARSER_H_
