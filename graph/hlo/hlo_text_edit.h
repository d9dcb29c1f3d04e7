#ifndef GOPT_GRAPH_HLO_HLO_TEXT_EDIT_H_
#define GOPT_GRAPH_HLO_HLO_TEXT_EDIT_H_

// Line-level editing of HLO text as XLA prints it (one instruction per
// line), for the exporters: they change attributes and shapes of single
// instructions and leave every other byte as it was. All functions are
// pure and thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gopt::graph {

// One instruction line of HLO text: where its computation and name are.
struct InstructionLine {
  size_t line = 0;
  std::string computation;
  std::string name;
};

// Finds the instruction lines of `lines` (one instruction per line, as XLA
// prints modules). InvalidArgument when a computation never closes.
absl::StatusOr<std::vector<InstructionLine>> FindInstructions(
    const std::vector<std::string>& lines);

// Walks `line` from `start`, skipping string literals, and calls
// visit(i, depth) for each character outside strings with the bracket depth
// before it ({, [ and ( open a level, }, ] and ) close one); stops at the
// first index `visit` returns true for and returns it, else line.size().
template <typename Visit>
size_t ScanOutsideStrings(absl::string_view line, size_t start, Visit visit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (visit(i, depth)) return i;
    if (c == '{' || c == '[' || c == '(') {
      ++depth;
    } else if (c == '}' || c == ']' || c == ')') {
      --depth;
    }
  }
  return line.size();
}

// Index just past the value starting at `start` (a balanced {...}, [...],
// (...) group honouring strings, or a bare word).
size_t ValueEnd(absl::string_view line, size_t start);

// Position of attribute `key` ("sharding=") at the top level of an
// instruction line (not inside a string or a bracketed value), or npos.
size_t FindAttribute(absl::string_view line, absl::string_view key);

// Sets attribute `key` (e.g. "sharding=") of `line` to `value`, replacing
// the one it had or appending it.
void SetAttribute(std::string* line, absl::string_view key,
                  absl::string_view value);

// The instruction's array shape: [start, end) of "f32[2,3]{1,0}" after
// " = ", or nullopt for a tuple or token.
std::optional<std::pair<size_t, size_t>> ArrayShape(absl::string_view line);

// `shape` ("f32[2,3]{1,0}") with layout `minor_to_major`; a tuple or token
// shape unchanged.
std::string ShapeWithLayout(absl::string_view shape,
                            const std::vector<int32_t>& minor_to_major);

// Gives the array shape of instruction `line` the layout `minor_to_major`
// (nothing for a tuple or token shape).
void SetArrayLayout(std::string* line,
                    const std::vector<int32_t>& minor_to_major);

// The rank and minor_to_major of an array shape as HLO text writes it.
struct TextArrayLayout {
  int rank = 0;
  std::vector<int32_t> minor_to_major;  // empty: the shape has no layout
};

// The layout of instruction `line`'s array shape ("f32[2,3]{1,0}" and
// "bf16[8,128]{1,0:T(8,128)}" give rank 2 and {1,0}; "f32[2,3]" rank 2 and
// no layout); nullopt for a tuple or token shape or a layout that does not
// parse.
std::optional<TextArrayLayout> ReadArrayLayout(absl::string_view line);

std::vector<std::string> SplitLines(absl::string_view contents);

// The attribute that lists an instruction's control predecessors.
inline constexpr absl::string_view kControlPredecessors =
    "control-predecessors=";

// One instruction line taken apart as views into it (valid while the line
// is neither changed nor freed); positions index the line.
struct LineViews {
  bool is_root = false;
  absl::string_view indent;
  absl::string_view name;
  absl::string_view shape;  // "f32[2,3]{1,0}" or "(f32[], s32[])"
  absl::string_view opcode;
  size_t operands_begin = 0;  // just past '('
  size_t operands_end = 0;    // at the matching ')'
  // Operand names without '%' (none for a constant: its list is a literal).
  std::vector<absl::string_view> operands;
};

// Takes instruction `line` apart without copying; nullopt when it is not
// `[ROOT ]%name = shape opcode(...)...`.
std::optional<LineViews> ParseInstructionViews(absl::string_view line);

// The instructions named by the control-predecessors={...} of `line`.
std::vector<std::string> ControlPredecessors(absl::string_view line);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_TEXT_EDIT_H_
