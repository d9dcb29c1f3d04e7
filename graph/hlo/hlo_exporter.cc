#include "graph/hlo/hlo_exporter.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/hlo/hlo_decisions.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

constexpr absl::string_view kSharding = "sharding=";
constexpr absl::string_view kFrontend = "frontend_attributes=";
constexpr absl::string_view kPriority = kHloPriorityAttribute;
constexpr absl::string_view kKernel = kHloKernelAttribute;

// One instruction line of HLO text: where its computation and name are.
struct InstructionLine {
  size_t line = 0;
  std::string computation;
  std::string name;
};

// Finds the instruction lines of `lines` (one instruction per line, as XLA
// prints modules). InvalidArgument when a computation never closes.
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

// Position of attribute `key` ("sharding=") at the top level of an
// instruction line (not inside a string or a bracketed value), or npos.
size_t FindAttribute(absl::string_view line, absl::string_view key) {
  const size_t at = ScanOutsideStrings(line, 0, [&](size_t i, int depth) {
    return depth == 0 && i > 0 && line[i - 1] == ' ' &&
           line.substr(i, key.size()) == key;
  });
  return at == line.size() ? absl::string_view::npos : at;
}

// Sets attribute `key` (e.g. "sharding=") of `line` to `value`, replacing
// the one it had or appending it.
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

// The frontend attributes of `line` as key -> quoted value, in order.
std::vector<std::pair<std::string, std::string>> FrontendAttributes(
    absl::string_view line) {
  std::vector<std::pair<std::string, std::string>> attributes;
  const size_t at = FindAttribute(line, kFrontend);
  if (at == absl::string_view::npos) return attributes;
  const size_t start = at + kFrontend.size();
  absl::string_view body = line.substr(start, ValueEnd(line, start) - start);
  if (!absl::ConsumePrefix(&body, "{") || !absl::ConsumeSuffix(&body, "}")) {
    return attributes;
  }
  size_t i = 0;
  while (i < body.size()) {
    const size_t eq = body.find('=', i);
    if (eq == absl::string_view::npos) break;
    const size_t end = ValueEnd(body, eq + 1);
    attributes.emplace_back(
        std::string(absl::StripAsciiWhitespace(body.substr(i, eq - i))),
        std::string(body.substr(eq + 1, end - eq - 1)));
    i = end + 1;
  }
  return attributes;
}

// The instruction's array shape: [start, end) of "f32[2,3]{1,0}" after
// " = ", or nullopt for a tuple or token.
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

std::vector<std::string> SplitLines(absl::string_view contents) {
  return absl::StrSplit(contents, '\n');
}

class HloTextExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "hlo"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const override {
    std::vector<std::string> lines = SplitLines(original);
    ASSIGN_OR_RETURN(std::vector<InstructionLine> instructions,
                     FindInstructions(lines));
    const HloDecisions decisions = HloDecisionsOf(graph, plan);
    int fused = 0;
    int prioritised = 0;
    for (const InstructionLine& instruction : instructions) {
      auto it = decisions.find({instruction.computation, instruction.name});
      if (it == decisions.end()) continue;
      const HloDecision& d = it->second;
      std::string& line = lines[instruction.line];
      SetAttribute(&line, kSharding,
                   absl::StrCat("{maximal device=", d.device, "}"));
      std::vector<std::pair<std::string, std::string>> frontend;
      for (auto& [key, value] : FrontendAttributes(line)) {
        if (key != kPriority && key != kKernel) {
          frontend.emplace_back(std::move(key), std::move(value));
        }
      }
      frontend.emplace_back(std::string(kPriority),
                            absl::StrCat("\"", d.priority, "\""));
      prioritised += d.priority != 0;
      if (d.kernel >= 0) {
        frontend.emplace_back(std::string(kKernel),
                              absl::StrCat("\"", d.kernel, "\""));
        ++fused;
      }
      SetAttribute(
          &line, kFrontend,
          absl::StrCat("{",
                       absl::StrJoin(frontend, ",", absl::PairFormatter("=")),
                       "}"));
      if (!d.layout.empty()) {
        if (auto shape = ArrayShape(line); shape.has_value()) {
          absl::string_view text = absl::string_view(line).substr(
              shape->first, shape->second - shape->first);
          const size_t close = text.find(']');
          const std::string replaced =
              absl::StrCat(text.substr(0, close + 1), "{",
                           absl::StrJoin(d.layout, ","), "}");
          line.replace(shape->first, shape->second - shape->first, replaced);
        }
      }
    }
    ExportResult result;
    result.contents = absl::StrJoin(lines, "\n");
    if (prioritised > 0) {
      result.warnings.push_back(absl::StrCat(
          "the schedule is written as frontend attribute ", kPriority, " on ",
          prioritised,
          " instruction(s), not yet as is_scheduled instruction order"));
    }
    if (fused > 0) {
      result.warnings.push_back(absl::StrCat(
          "fusion groups are written as frontend attribute ", kKernel, " on ",
          fused,
          " instruction(s), not yet as fusion instructions with fused "
          "computations"));
    }
    return result;
  }

  absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const override {
    const std::vector<std::string> lines = SplitLines(contents);
    ASSIGN_OR_RETURN(std::vector<InstructionLine> instructions,
                     FindInstructions(lines));
    HloDecisions decisions;
    for (const InstructionLine& instruction : instructions) {
      const std::string& line = lines[instruction.line];
      const std::string what =
          absl::StrCat("instruction '", instruction.name, "' of '",
                       instruction.computation, "'");
      HloDecision d;
      bool ours = false;
      for (const auto& [key, value] : FrontendAttributes(line)) {
        if (key != kPriority && key != kKernel) continue;
        ours = true;
        ASSIGN_OR_RETURN(
            const int32_t parsed,
            ParseDecisionInt(
                absl::StripPrefix(absl::StripSuffix(value, "\""), "\""),
                absl::StrCat(what, " frontend attribute ", key)));
        (key == kPriority ? d.priority : d.kernel) = parsed;
      }
      if (!ours) continue;
      const size_t at = FindAttribute(line, kSharding);
      if (at != absl::string_view::npos) {
        const size_t start = at + kSharding.size();
        absl::string_view value = absl::string_view(line).substr(
            start, ValueEnd(line, start) - start);
        if (!absl::ConsumePrefix(&value, "{maximal device=") ||
            !absl::ConsumeSuffix(&value, "}") ||
            !absl::SimpleAtoi(value, &d.device) || d.device < 0 ||
            (!devices.empty() &&
             static_cast<size_t>(d.device) >= devices.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " field 'sharding': expected {maximal device=K} with K < ",
              devices.size()));
        }
      }
      decisions[{instruction.computation, instruction.name}] = d;
    }
    if (decisions.empty()) return std::nullopt;
    return PlanFromHloDecisions(graph, decisions, "embedded:hlo");
  }
};

}  // namespace

std::unique_ptr<Exporter> NewHloTextExporter() {
  return std::make_unique<HloTextExporter>();
}

}  // namespace gopt::graph
