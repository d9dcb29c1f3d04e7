#include "graph/hlo/hlo_text_edit.h"

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gopt::graph {
namespace {

// `text` split at the commas outside brackets and strings.
std::vector<absl::string_view> SplitTopLevel(absl::string_view text) {
  std::vector<absl::string_view> pieces;
  size_t start = 0;
  while (true) {
    const size_t comma = ScanOutsideStrings(
        text, start, [&](size_t i, int d) { return d == 0 && text[i] == ','; });
    pieces.push_back(text.substr(start, comma - start));
    if (comma >= text.size()) return pieces;
    start = comma + 1;
  }
}

// The instruction name an operand or control predecessor is written with
// ("%add.3", "f32[2]{0} %add.3", "add.3").
absl::string_view NameOf(absl::string_view piece) {
  piece = absl::StripAsciiWhitespace(piece);
  const size_t space = piece.rfind(' ');
  if (space != absl::string_view::npos) piece = piece.substr(space + 1);
  absl::ConsumePrefix(&piece, "%");
  return piece;
}

}  // namespace

absl::StatusOr<std::vector<InstructionLine>> FindInstructions(
    const std::vector<std::string>& lines) {
  std::vector<InstructionLine> found;
  std::string computation;
  bool inside = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::string_view line = lines[i];
    absl::string_view trimmed = absl::StripAsciiWhitespace(line);
    if (!inside) {
      if (line.empty() || absl::ascii_isspace(line[0]) ||
          absl::StartsWith(line, "HloModule") ||
          !absl::EndsWith(trimmed, "{")) {
        continue;
      }
      absl::string_view header = trimmed;
      absl::ConsumePrefix(&header, "ENTRY ");
      absl::ConsumePrefix(&header, "%");
      const size_t end = header.find_first_of(" ({");
      computation = std::string(header.substr(0, end));
      inside = true;
      continue;
    }
    if (trimmed == "}") {
      inside = false;
      continue;
    }
    absl::string_view rest = trimmed;
    absl::ConsumePrefix(&rest, "ROOT ");
    absl::ConsumePrefix(&rest, "%");
    const size_t eq = rest.find(" = ");
    if (eq == absl::string_view::npos) continue;
    found.push_back({i, computation, std::string(rest.substr(0, eq))});
  }
  if (inside) {
    return absl::InvalidArgumentError(absl::StrCat(
        "computation '", computation, "' is not closed by a '}' line"));
  }
  return found;
}

size_t ValueEnd(absl::string_view line, size_t start) {
  // A closing bracket at depth 1 ends the group (the value ends past it);
  // one at depth 0 belongs to an enclosing value (it ends before it).
  bool past = false;
  const size_t at = ScanOutsideStrings(line, start, [&](size_t i, int depth) {
    const char c = line[i];
    if (c == '}' || c == ']' || c == ')') {
      past = depth == 1;
      return depth <= 1;
    }
    return depth == 0 && (c == ',' || c == ' ');
  });
  return past ? at + 1 : at;
}

size_t FindAttribute(absl::string_view line, absl::string_view key) {
  // Most lines lack most attributes: a plain search (vectorized) rules
  // them out before the scan that steps over strings and brackets.
  if (line.find(key) == absl::string_view::npos) {
    return absl::string_view::npos;
  }
  const size_t at = ScanOutsideStrings(line, 0, [&](size_t i, int depth) {
    return depth == 0 && i > 0 && line[i - 1] == ' ' &&
           line.substr(i, key.size()) == key;
  });
  return at == line.size() ? absl::string_view::npos : at;
}

void SetAttribute(std::string* line, absl::string_view key,
                  absl::string_view value) {
  const size_t at = FindAttribute(*line, key);
  if (at != absl::string_view::npos) {
    const size_t end = ValueEnd(*line, at + key.size());
    line->replace(at + key.size(), end - at - key.size(), std::string(value));
    return;
  }
  while (!line->empty() && absl::ascii_isspace(line->back())) line->pop_back();
  absl::StrAppend(line, ", ", key, value);
}

std::optional<std::pair<size_t, size_t>> ArrayShape(absl::string_view line) {
  const size_t eq = line.find(" = ");
  if (eq == absl::string_view::npos) return std::nullopt;
  const size_t start = eq + 3;
  if (start >= line.size() || line[start] == '(') return std::nullopt;
  const size_t bracket = line.find('[', start);
  const size_t space = line.find(' ', start);
  if (bracket == absl::string_view::npos || bracket > space) {
    return std::nullopt;
  }
  return std::make_pair(start, space);
}

std::optional<TextArrayLayout> ReadArrayLayout(absl::string_view line) {
  const std::optional<std::pair<size_t, size_t>> at = ArrayShape(line);
  if (!at.has_value()) return std::nullopt;
  absl::string_view shape = line.substr(at->first, at->second - at->first);
  const size_t open = shape.find('[');
  const size_t close = shape.find(']', open);
  if (close == absl::string_view::npos) return std::nullopt;
  TextArrayLayout layout;
  const absl::string_view dims = shape.substr(open + 1, close - open - 1);
  layout.rank =
      dims.empty() ? 0 : 1 + static_cast<int>(absl::c_count(dims, ','));
  absl::string_view rest = shape.substr(close + 1);
  if (!absl::ConsumePrefix(&rest, "{")) return layout;
  rest = rest.substr(0, rest.find_first_of(":}"));
  if (rest.empty()) return layout;
  for (absl::string_view piece : absl::StrSplit(rest, ',')) {
    int32_t dim = -1;
    if (!absl::SimpleAtoi(piece, &dim)) return std::nullopt;
    layout.minor_to_major.push_back(dim);
  }
  return layout;
}

std::vector<std::string> SplitLines(absl::string_view contents) {
  return absl::StrSplit(contents, '\n');
}

std::string ShapeWithLayout(absl::string_view shape,
                            const std::vector<int32_t>& minor_to_major) {
  const size_t close = shape.find(']');
  if (shape.empty() || shape[0] == '(' || close == absl::string_view::npos) {
    return std::string(shape);
  }
  return absl::StrCat(shape.substr(0, close + 1), "{",
                      absl::StrJoin(minor_to_major, ","), "}");
}

void SetArrayLayout(std::string* line,
                    const std::vector<int32_t>& minor_to_major) {
  const std::optional<std::pair<size_t, size_t>> shape = ArrayShape(*line);
  if (!shape.has_value()) return;
  const std::string replaced =
      ShapeWithLayout(absl::string_view(*line).substr(
                          shape->first, shape->second - shape->first),
                      minor_to_major);
  line->replace(shape->first, shape->second - shape->first, replaced);
}

std::optional<LineViews> ParseInstructionViews(absl::string_view line) {
  LineViews parts;
  size_t pos = line.find_first_not_of(" \t");
  if (pos == absl::string_view::npos) return std::nullopt;
  parts.indent = line.substr(0, pos);
  if (line.substr(pos, 5) == "ROOT ") {
    parts.is_root = true;
    pos += 5;
  }
  if (pos < line.size() && line[pos] == '%') ++pos;
  const size_t eq = line.find(" = ", pos);
  if (eq == absl::string_view::npos) return std::nullopt;
  parts.name = line.substr(pos, eq - pos);
  const size_t shape_begin = eq + 3;
  const size_t shape_end = ScanOutsideStrings(
      line, shape_begin,
      [&](size_t i, int depth) { return depth == 0 && line[i] == ' '; });
  if (shape_end >= line.size()) return std::nullopt;
  parts.shape = line.substr(shape_begin, shape_end - shape_begin);
  const size_t open = line.find('(', shape_end);
  if (open == absl::string_view::npos) return std::nullopt;
  parts.opcode =
      absl::StripAsciiWhitespace(line.substr(shape_end, open - shape_end));
  const size_t close = ScanOutsideStrings(
      line, open, [&](size_t i, int d) { return d == 1 && line[i] == ')'; });
  if (close >= line.size()) return std::nullopt;
  parts.operands_begin = open + 1;
  parts.operands_end = close;
  if (parts.opcode == "constant") return parts;
  for (absl::string_view piece :
       SplitTopLevel(line.substr(open + 1, close - open - 1))) {
    if (!absl::StripAsciiWhitespace(piece).empty()) {
      parts.operands.push_back(NameOf(piece));
    }
  }
  return parts;
}

// The instructions named by the control-predecessors={...} of `line`.
std::vector<std::string> ControlPredecessors(absl::string_view line) {
  std::vector<std::string> names;
  const size_t at = FindAttribute(line, kControlPredecessors);
  if (at == absl::string_view::npos) return names;
  const size_t start = at + kControlPredecessors.size();
  absl::string_view value = line.substr(start, ValueEnd(line, start) - start);
  if (!absl::ConsumePrefix(&value, "{") || !absl::ConsumeSuffix(&value, "}")) {
    return names;
  }
  for (absl::string_view piece : SplitTopLevel(value)) {
    if (!absl::StripAsciiWhitespace(piece).empty()) {
      names.emplace_back(NameOf(piece));
    }
  }
  return names;
}

}  // namespace gopt::graph
