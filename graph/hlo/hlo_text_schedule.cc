#include "graph/hlo/hlo_text_schedule.h"

#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "graph/hlo/hlo_schedule.h"
#include "graph/hlo/hlo_text_edit.h"

namespace gopt::graph {
namespace {

constexpr absl::string_view kScheduled = "is_scheduled=";

// Sets is_scheduled=true on the `HloModule name, ...` line of `lines`.
void MarkScheduled(std::vector<std::string>* lines) {
  for (std::string& line : *lines) {
    if (!absl::StartsWith(line, "HloModule ")) continue;
    if (FindAttribute(line, kScheduled) != absl::string_view::npos) {
      SetAttribute(&line, kScheduled, "true");
      return;
    }
    size_t end = std::string("HloModule ").size();
    while (end < line.size() && line[end] != ',' && line[end] != ' ') ++end;
    line.insert(end, absl::StrCat(", ", kScheduled, "true"));
    return;
  }
}

// The computations that fusion instructions of `lines` call.
absl::flat_hash_set<std::string> FusedComputations(
    const std::vector<std::string>& lines,
    const std::vector<InstructionLine>& instructions) {
  constexpr absl::string_view kCalls = "calls=";
  absl::flat_hash_set<std::string> fused;
  for (const InstructionLine& instruction : instructions) {
    const std::string& line = lines[instruction.line];
    // Most lines call nothing: look for calls= before parsing the line.
    const size_t at = FindAttribute(line, kCalls);
    if (at == absl::string_view::npos) continue;
    std::optional<LineParts> parts = ParseInstructionLine(line);
    if (!parts.has_value() || parts->opcode != "fusion") continue;
    const size_t start = at + kCalls.size();
    absl::string_view callee =
        absl::string_view(line).substr(start, ValueEnd(line, start) - start);
    absl::ConsumePrefix(&callee, "%");
    fused.insert(std::string(callee));
  }
  return fused;
}

}  // namespace

bool OrderComputationLines(const std::vector<size_t>& slots,
                           const std::vector<int32_t>& priority,
                           std::vector<std::string>* lines) {
  const size_t n = slots.size();
  std::vector<LineParts> parts;
  parts.reserve(n);
  absl::flat_hash_map<std::string, int> index;
  for (size_t i = 0; i < n; ++i) {
    std::optional<LineParts> parsed = ParseInstructionLine((*lines)[slots[i]]);
    if (!parsed.has_value()) return false;
    index[parsed->name] = static_cast<int>(i);
    parts.push_back(std::move(*parsed));
  }
  std::vector<std::vector<int>> predecessors(n);
  std::vector<bool> fixed(n, false);
  for (size_t i = 0; i < n; ++i) {
    fixed[i] = parts[i].opcode == "call";
    std::vector<std::string> uses = std::move(parts[i].operands);
    for (std::string& name : ControlPredecessors((*lines)[slots[i]])) {
      uses.push_back(std::move(name));
    }
    for (const std::string& name : uses) {
      if (auto it = index.find(name); it != index.end()) {
        predecessors[i].push_back(it->second);
      }
    }
  }
  const std::vector<int> order =
      LinearizeSchedule(predecessors, priority, fixed);
  if (order.size() != n) return false;
  std::vector<std::string> ordered;
  ordered.reserve(n);
  for (int i : order) ordered.push_back(std::move((*lines)[slots[i]]));
  for (size_t i = 0; i < n; ++i) (*lines)[slots[i]] = std::move(ordered[i]);
  return true;
}

std::vector<std::string> WriteTextSchedule(const HloDecisions& decisions,
                                           std::vector<std::string>* lines) {
  std::vector<std::string> warnings;
  MarkScheduled(lines);
  absl::StatusOr<std::vector<InstructionLine>> instructions =
      FindInstructions(*lines);
  if (!instructions.ok()) {
    warnings.push_back(absl::StrCat("the schedule is not written as order: ",
                                    instructions.status().message()));
    return warnings;
  }
  const absl::flat_hash_set<std::string> fused =
      FusedComputations(*lines, *instructions);
  // Slots and priorities per computation, in module order.
  std::vector<std::string> computations;
  absl::flat_hash_map<std::string,
                      std::pair<std::vector<size_t>, std::vector<int32_t>>>
      slots;
  for (const InstructionLine& instruction : *instructions) {
    if (fused.contains(instruction.computation)) continue;
    auto [it, added] = slots.try_emplace(instruction.computation);
    if (added) computations.push_back(instruction.computation);
    auto decision = decisions.find({instruction.computation, instruction.name});
    it->second.first.push_back(instruction.line);
    it->second.second.push_back(
        decision == decisions.end() ? 0 : decision->second.priority);
  }
  for (const std::string& computation : computations) {
    const auto& [computation_slots, priority] = slots.at(computation);
    if (!OrderComputationLines(computation_slots, priority, lines)) {
      warnings.push_back(absl::StrCat(
          "computation '", computation,
          "' keeps its instruction order (a line does not parse as an "
          "instruction, or its dependencies form a cycle): its schedule is "
          "the frontend attribute ",
          kHloPriorityAttribute, " only"));
    }
  }
  return warnings;
}

}  // namespace gopt::graph
