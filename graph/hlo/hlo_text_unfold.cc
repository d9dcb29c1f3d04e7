#include "graph/hlo/hlo_text_unfold.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "graph/hlo/gopt_export_restore.h"
#include "graph/hlo/hlo_module.h"
#include "graph/hlo/hlo_text_edit.h"
#include "graph/hlo/hlo_text_parser.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

constexpr absl::string_view kFusedPrefix = "gopt_fused_computation";

// The line of each instruction of `module`, by computation and index:
// FindInstructions lists them in the order the parser defines them.
absl::StatusOr<std::vector<std::vector<size_t>>> InstructionLines(
    const hlo::HloModule& module, const std::vector<std::string>& lines) {
  ASSIGN_OR_RETURN(std::vector<InstructionLine> found, FindInstructions(lines));
  absl::flat_hash_map<absl::string_view, int32_t> computation_index;
  for (int32_t c = 0; c < static_cast<int32_t>(module.computations.size());
       ++c) {
    computation_index[module.computations[c].name] = c;
  }
  std::vector<std::vector<size_t>> at(module.computations.size());
  for (const InstructionLine& instruction : found) {
    auto it = computation_index.find(instruction.computation);
    if (it == computation_index.end()) continue;
    const hlo::HloComputation& c = module.computations[it->second];
    std::vector<size_t>& slots = at[it->second];
    if (slots.size() >= c.instructions.size() ||
        c.instructions[slots.size()].name != instruction.name) {
      return absl::FailedPreconditionError(absl::StrCat(
          "computation '", c.name, "': instruction '", instruction.name,
          "' is not where the module defines it (one instruction per line "
          "is needed to unfold gopt's fusions)"));
    }
    slots.push_back(instruction.line);
  }
  return at;
}

// Member `j` of `fusion`'s fused computation as a line of its caller.
absl::StatusOr<std::string> MemberLine(const hlo::HloModule& module,
                                       const hlo::GoptFusion& fusion, int32_t j,
                                       absl::string_view line, bool root) {
  const hlo::HloComputation& fused = module.computations[fusion.fused];
  const hlo::HloComputation& caller = module.computations[fusion.caller];
  const hlo::HloInstruction& call = caller.instructions[fusion.fusion];
  // Each fused instruction's name in the caller.
  auto name_of = [&](int32_t i) -> const std::string& {
    const hlo::HloInstruction& member = fused.instructions[i];
    if (member.opcode == "parameter") {
      return caller
          .instructions[call.operands[member.attributes.parameter_number]]
          .name;
    }
    return fusion.restored_names[i];
  };
  std::optional<LineViews> views = ParseInstructionViews(line);
  if (!views.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("computation '", fused.name, "': line '", line,
                     "' does not parse as an instruction"));
  }
  const hlo::HloInstruction& member = fused.instructions[j];
  std::string operands;
  if (member.opcode == "constant") {
    operands = std::string(line.substr(
        views->operands_begin, views->operands_end - views->operands_begin));
  } else {
    std::vector<std::string> names;
    for (int32_t operand : member.operands) {
      names.push_back(absl::StrCat("%", name_of(operand)));
    }
    operands = absl::StrJoin(names, ", ");
  }
  // From the name's end to the operands: " = shape opcode(".
  const size_t name_end = views->name.data() + views->name.size() - line.data();
  return absl::StrCat("  ", root ? "ROOT " : "", "%", name_of(j),
                      line.substr(name_end, views->operands_begin - name_end),
                      operands, line.substr(views->operands_end));
}

// Removes the computation blocks named in `dropped` from `lines`: the
// header line through its closing `}` and one empty line after it.
std::vector<std::string> WithoutComputations(
    std::vector<std::string> lines,
    const absl::flat_hash_set<std::string>& dropped) {
  std::vector<std::string> kept;
  kept.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::string_view header = lines[i];
    absl::ConsumePrefix(&header, "%");
    const size_t end = header.find_first_of(" ({");
    if (!absl::EndsWith(lines[i], "{") ||
        !dropped.contains(header.substr(0, end))) {
      kept.push_back(std::move(lines[i]));
      continue;
    }
    while (i < lines.size() && lines[i] != "}") ++i;
    if (i + 1 < lines.size() && lines[i + 1].empty()) ++i;
  }
  return kept;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> UnfoldGoptFusionText(
    absl::string_view contents) {
  std::vector<std::string> lines = SplitLines(contents);
  if (!absl::StrContains(contents, kFusedPrefix)) return lines;
  ASSIGN_OR_RETURN(const hlo::HloModule module, hlo::ParseHloText(contents));
  const std::vector<hlo::GoptFusion> fusions = hlo::FindGoptFusions(module);
  absl::flat_hash_set<std::string> dropped;
  for (const hlo::GoptFusion& fusion : fusions) {
    dropped.insert(module.computations[fusion.fused].name);
  }
  for (const hlo::HloComputation& computation : module.computations) {
    if (absl::StartsWith(computation.name, kFusedPrefix) &&
        !dropped.contains(computation.name)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fused computation '", computation.name,
          "' of an earlier gopt export does not unfold exactly (edited, or "
          "holding a batch-norm-inference expansion); export into the "
          "original file instead"));
    }
  }
  ASSIGN_OR_RETURN(const std::vector<std::vector<size_t>> at,
                   InstructionLines(module, lines));
  // By caller line: the member lines that take its place, with their
  // _gopt_order (none for a get-tuple-element the members replace).
  absl::flat_hash_map<size_t, std::vector<std::pair<int32_t, std::string>>>
      replaced;
  for (const hlo::GoptFusion& fusion : fusions) {
    const hlo::HloComputation& fused = module.computations[fusion.fused];
    const hlo::HloComputation& caller = module.computations[fusion.caller];
    std::vector<std::pair<int32_t, std::string>> members;
    for (int32_t j = 0; j < static_cast<int32_t>(fused.instructions.size());
         ++j) {
      if (fusion.restored_names[j].empty()) continue;
      const int32_t replaces = fusion.replaces[j];
      if (replaces >= 0 && replaces != fusion.fusion) {
        replaced[at[fusion.caller][replaces]].clear();
      }
      ASSIGN_OR_RETURN(
          std::string line,
          MemberLine(module, fusion, j, lines[at[fusion.fused][j]],
                     /*root=*/replaces >= 0 && replaces == caller.root));
      members.emplace_back(fused.instructions[j].export_position,
                           std::move(line));
    }
    replaced[at[fusion.caller][fusion.fusion]] = std::move(members);
  }
  // Each kept computation's instruction lines, unfolded, with the
  // positions they had in the file the export was written from.
  std::vector<std::vector<std::pair<int32_t, std::string>>> computations(
      module.computations.size());
  absl::flat_hash_map<size_t, int32_t> first_line_of;
  for (int32_t c = 0; c < static_cast<int32_t>(module.computations.size());
       ++c) {
    if (dropped.contains(module.computations[c].name) || at[c].empty()) {
      continue;
    }
    first_line_of[at[c][0]] = c;
    for (size_t i = 0; i < at[c].size(); ++i) {
      const int32_t position =
          module.computations[c].instructions[i].export_position;
      auto it = replaced.find(at[c][i]);
      if (it == replaced.end()) {
        computations[c].emplace_back(position, std::move(lines[at[c][i]]));
        continue;
      }
      for (auto& member : it->second) {
        computations[c].push_back(std::move(member));
      }
    }
  }
  // A computation whose lines all carry _gopt_order goes back to that order
  // (as hlo::RestoreGoptExport does), so that exporting again starts from
  // the file the first export started from.
  for (auto& entries : computations) {
    if (std::all_of(entries.begin(), entries.end(),
                    [](const auto& entry) { return entry.first >= 0; })) {
      std::stable_sort(
          entries.begin(), entries.end(),
          [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
  absl::flat_hash_set<size_t> instruction_lines;
  for (int32_t c = 0; c < static_cast<int32_t>(module.computations.size());
       ++c) {
    if (!dropped.contains(module.computations[c].name)) {
      instruction_lines.insert(at[c].begin(), at[c].end());
    }
  }
  std::vector<std::string> unfolded;
  unfolded.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto first = first_line_of.find(i); first != first_line_of.end()) {
      for (auto& [position, line] : computations[first->second]) {
        unfolded.push_back(std::move(line));
      }
    } else if (!instruction_lines.contains(i)) {
      unfolded.push_back(std::move(lines[i]));
    }
  }
  return WithoutComputations(std::move(unfolded), dropped);
}

}  // namespace gopt::graph
