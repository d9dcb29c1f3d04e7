#include "graph/hlo/hlo_exporter.h"

#include <algorithm>
#include <initializer_list>
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
#include "graph/hlo/gopt_export_restore.h"
#include "graph/hlo/hlo_decisions.h"
#include "graph/hlo/hlo_text_edit.h"
#include "graph/hlo/hlo_text_fusion.h"
#include "graph/hlo/hlo_text_parser.h"
#include "graph/hlo/hlo_text_schedule.h"
#include "graph/hlo/hlo_text_unfold.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

constexpr absl::string_view kSharding = "sharding=";
constexpr absl::string_view kFrontend = "frontend_attributes=";
constexpr absl::string_view kPriority = kHloPriorityAttribute;
constexpr absl::string_view kKernel = kHloKernelAttribute;
constexpr absl::string_view kLayout = kHloLayoutAttribute;
constexpr absl::string_view kOrder = kHloOrderAttribute;

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

// The _gopt_order `line` carries, or -1.
int32_t MarkedPosition(absl::string_view line) {
  if (line.find(kOrder) == absl::string_view::npos) return -1;
  for (const auto& [key, value] : FrontendAttributes(line)) {
    int32_t position = -1;
    if (key == kOrder &&
        absl::SimpleAtoi(
            absl::StripPrefix(absl::StripSuffix(value, "\""), "\""),
            &position) &&
        position >= 0) {
      return position;
    }
  }
  return -1;
}

// The position of every instruction of `lines` (ExportPositions per
// computation).
HloPositions OriginalPositions(
    const std::vector<std::string>& lines,
    const std::vector<InstructionLine>& instructions) {
  HloPositions positions;
  for (size_t begin = 0; begin < instructions.size();) {
    size_t end = begin;
    std::vector<int32_t> marked;
    while (end < instructions.size() &&
           instructions[end].computation == instructions[begin].computation) {
      marked.push_back(MarkedPosition(lines[instructions[end].line]));
      ++end;
    }
    const std::vector<int32_t> order = ExportPositions(marked);
    for (size_t i = begin; i < end; ++i) {
      positions[{instructions[i].computation, instructions[i].name}] =
          order[i - begin];
    }
    begin = end;
  }
  return positions;
}

// Sets gopt's frontend attributes `ours` on `line`, replacing the ones it
// had (every key in `replaced`) and keeping the caller's.
void SetGoptAttributes(std::vector<std::pair<std::string, std::string>> ours,
                       std::initializer_list<absl::string_view> replaced,
                       std::string* line) {
  std::vector<std::pair<std::string, std::string>> frontend;
  for (auto& [key, value] : FrontendAttributes(*line)) {
    if (std::find(replaced.begin(), replaced.end(), key) == replaced.end()) {
      frontend.emplace_back(std::move(key), std::move(value));
    }
  }
  for (auto& attribute : ours) frontend.push_back(std::move(attribute));
  SetAttribute(
      line, kFrontend,
      absl::StrCat("{", absl::StrJoin(frontend, ",", absl::PairFormatter("=")),
                   "}"));
}

std::pair<std::string, std::string> Quoted(absl::string_view key,
                                           absl::string_view value) {
  return {std::string(key), absl::StrCat("\"", value, "\"")};
}

// Marks every instruction of each computation of `lines` that the export
// lists out of its original order with its position. Per entry of
// `instructions` (the lines as written): `position`, its original index in
// its computation (-1: none), and `marked`, whether it was given that
// position with its decision.
void MarkMovedInstructions(const std::vector<InstructionLine>& instructions,
                           const std::vector<int32_t>& position,
                           const std::vector<bool>& marked,
                           std::vector<std::string>* lines) {
  for (size_t begin = 0; begin < instructions.size();) {
    size_t end = begin;
    bool moved = false;
    while (end < instructions.size() &&
           instructions[end].computation == instructions[begin].computation) {
      moved |= position[end] != static_cast<int32_t>(end - begin);
      ++end;
    }
    for (size_t i = begin; moved && i < end; ++i) {
      std::string& line = (*lines)[instructions[i].line];
      if (marked[i] || position[i] < 0 || MarkedPosition(line) == position[i]) {
        continue;
      }
      SetGoptAttributes({Quoted(kOrder, absl::StrCat(position[i]))}, {kOrder},
                        &line);
    }
    begin = end;
  }
}

// Puts `values` (one per instruction entry) in the entries' new order:
// entry k takes what entry moved_from[k] had.
template <typename T>
void Permute(const std::vector<size_t>& moved_from, std::vector<T>* values) {
  std::vector<T> permuted;
  permuted.reserve(moved_from.size());
  for (size_t from : moved_from) permuted.push_back((*values)[from]);
  *values = std::move(permuted);
}

class HloTextExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "hlo"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const override {
    // A file gopt exported before holds its fusions: back to their members.
    ASSIGN_OR_RETURN(std::vector<std::string> lines,
                     UnfoldGoptFusionText(original));
    ASSIGN_OR_RETURN(std::vector<InstructionLine> instructions,
                     FindInstructions(lines));
    const HloPositions positions = OriginalPositions(lines, instructions);
    HloDecisions decisions = HloDecisionsOf(graph, plan);
    HloTextFusion fusion =
        WriteFusionInstructions(std::move(lines), instructions, &decisions);
    lines = std::move(fusion.lines);
    if (fusion.fusions > 0) {
      ASSIGN_OR_RETURN(instructions, FindInstructions(lines));
    }
    // An SPMD program's placement is its own shardings (the importer costed
    // it per shard and kept every node on the mesh): they stay as written.
    const bool spmd = graph.spmd().num_partitions > 1;
    // Per entry of `instructions`: its original position (-1: none),
    // whether its decision wrote that position, and its priority.
    const size_t n = instructions.size();
    std::vector<int32_t> position(n, -1);
    std::vector<bool> marked(n, false);
    std::vector<int32_t> priority(n, 0);
    for (size_t e = 0; e < n; ++e) {
      const InstructionLine& instruction = instructions[e];
      std::pair<std::string, std::string> source = {instruction.computation,
                                                    instruction.name};
      if (auto it = positions.find(source); it != positions.end()) {
        position[e] = it->second;
      }
      // A member of a fused computation carries its decision but no
      // placement (the fusion's is the members').
      const HloDecision* d = nullptr;
      int32_t source_position = position[e];
      auto member = fusion.members.find(source);
      if (member != fusion.members.end()) {
        d = &member->second.decision;
        auto it =
            positions.find({member->second.computation, member->second.name});
        source_position = it == positions.end() ? -1 : it->second;
      } else if (auto it = decisions.find(source); it != decisions.end()) {
        d = &it->second;
      } else {
        continue;
      }
      priority[e] = d->priority;
      std::string& line = lines[instruction.line];
      if (!spmd && member == fusion.members.end()) {
        SetAttribute(&line, kSharding,
                     absl::StrCat("{maximal device=", d->device, "}"));
      }
      std::vector<std::pair<std::string, std::string>> ours;
      ours.push_back(Quoted(kPriority, absl::StrCat(d->priority)));
      if (d->kernel >= 0) {
        ours.push_back(Quoted(kKernel, absl::StrCat(d->kernel)));
      }
      const bool layout = !d->layout.empty() && ArrayShape(line).has_value();
      if (layout) {
        ours.push_back(Quoted(kLayout, LayoutAttributeValue(d->layout)));
      }
      if (source_position >= 0) {
        ours.push_back(Quoted(kOrder, absl::StrCat(source_position)));
        marked[e] = true;
      }
      SetGoptAttributes(std::move(ours), {kPriority, kKernel, kLayout, kOrder},
                        &line);
      if (layout) SetArrayLayout(&line, d->layout);
    }
    // A module the importer partitioned is an SPMD program before
    // partitioning: XLA (and gopt's importer) read is_scheduled=true as
    // "already partitioned", so its schedule stays the priority attribute.
    std::vector<std::string> schedule_warnings;
    if (graph.spmd().partitioned_by_importer) {
      schedule_warnings.push_back(absl::StrCat(
          "SPMD module before partitioning: the schedule is written as "
          "frontend attribute ",
          kPriority,
          " only (is_scheduled=true would mark the module as partitioned)"));
    } else {
      std::vector<size_t> moved_from;
      schedule_warnings =
          WriteTextSchedule(priority, &instructions, &lines, &moved_from);
      Permute(moved_from, &position);
      Permute(moved_from, &marked);
    }
    MarkMovedInstructions(instructions, position, marked, &lines);
    ExportResult result;
    result.contents = absl::StrJoin(lines, "\n");
    if (spmd) {
      result.warnings.push_back(absl::StrCat(
          "SPMD module (", graph.spmd().num_partitions,
          " partitions): its shardings are kept as written; gopt's decisions "
          "are the schedule, fusion and layouts of the per-device program"));
    }
    for (auto* warnings : {&fusion.warnings, &schedule_warnings}) {
      for (std::string& warning : *warnings) {
        result.warnings.push_back(std::move(warning));
      }
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
      std::optional<std::string> layout;
      for (const auto& [key, value] : FrontendAttributes(line)) {
        if (key == kLayout) {
          layout = std::string(
              absl::StripPrefix(absl::StripSuffix(value, "\""), "\""));
        }
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
      // An SPMD module's shardings are the module's own (Export keeps them).
      if (at != absl::string_view::npos && graph.spmd().num_partitions <= 1) {
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
      if (layout.has_value()) {
        const std::optional<TextArrayLayout> shape = ReadArrayLayout(line);
        if (!shape.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " frontend attribute ", kLayout,
              ": the instruction's shape is not an array with a layout that "
              "parses"));
        }
        ASSIGN_OR_RETURN(d.layout,
                         ReadLayoutDecision(*layout, shape->minor_to_major,
                                            shape->rank, what));
      }
      decisions[{instruction.computation, instruction.name}] = d;
    }
    if (decisions.empty()) return std::nullopt;
    ASSIGN_OR_RETURN(hlo::HloModule module, hlo::ParseHloText(contents));
    hlo::FoldBatchNormExpansions(&module);
    RekeyFusedDecisions(module, &decisions);
    return PlanFromHloDecisions(graph, decisions, "embedded:hlo");
  }
};

}  // namespace

std::unique_ptr<Exporter> NewHloTextExporter() {
  return std::make_unique<HloTextExporter>();
}

}  // namespace gopt::graph
