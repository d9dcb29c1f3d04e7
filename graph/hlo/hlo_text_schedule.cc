#include "graph/hlo/hlo_text_schedule.h"

#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "graph/hlo/hlo_decisions.h"
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
    std::optional<LineViews> parts = ParseInstructionViews(line);
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

std::optional<std::vector<int>> OrderComputationLines(
    const std::vector<size_t>& slots, const std::vector<int32_t>& priority,
    std::vector<std::string>* lines) {
  const size_t n = slots.size();
  // Views into the lines, which stay unchanged until the lines move below.
  std::vector<LineViews> parts;
  parts.reserve(n);
  absl::flat_hash_map<absl::string_view, int> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::optional<LineViews> parsed = ParseInstructionViews((*lines)[slots[i]]);
    if (!parsed.has_value()) return std::nullopt;
    index[parsed->name] = static_cast<int>(i);
    parts.push_back(std::move(*parsed));
  }
  std::vector<std::vector<int>> predecessors(n);
  std::vector<bool> fixed(n, false);
  for (size_t i = 0; i < n; ++i) {
    fixed[i] = parts[i].opcode == "call";
    for (absl::string_view name : parts[i].operands) {
      if (auto it = index.find(name); it != index.end()) {
        predecessors[i].push_back(it->second);
      }
    }
    for (const std::string& name : ControlPredecessors((*lines)[slots[i]])) {
      if (auto it = index.find(name); it != index.end()) {
        predecessors[i].push_back(it->second);
      }
    }
  }
  std::vector<int> order = LinearizeSchedule(predecessors, priority, fixed);
  if (order.size() != n) return std::nullopt;
  std::vector<std::string> ordered;
  ordered.reserve(n);
  for (int i : order) ordered.push_back(std::move((*lines)[slots[i]]));
  for (size_t i = 0; i < n; ++i) (*lines)[slots[i]] = std::move(ordered[i]);
  return order;
}

std::vector<std::string> WriteTextSchedule(
    const std::vector<int32_t>& priority,
    std::vector<InstructionLine>* instructions, std::vector<std::string>* lines,
    std::vector<size_t>* moved_from) {
  std::vector<std::string> warnings;
  moved_from->resize(instructions->size());
  for (size_t e = 0; e < moved_from->size(); ++e) (*moved_from)[e] = e;
  MarkScheduled(lines);
  const absl::flat_hash_set<std::string> fused =
      FusedComputations(*lines, *instructions);
  // Per computation, in module order: its entries of `instructions`, their
  // lines and their priorities.
  struct Computation {
    std::vector<size_t> entries;
    std::vector<size_t> slots;
    std::vector<int32_t> priority;
  };
  std::vector<Computation> computations;
  for (size_t e = 0; e < instructions->size(); ++e) {
    const InstructionLine& instruction = (*instructions)[e];
    if (fused.contains(instruction.computation)) continue;
    if (e == 0 ||
        instruction.computation != (*instructions)[e - 1].computation) {
      computations.emplace_back();
    }
    Computation& c = computations.back();
    c.entries.push_back(e);
    c.slots.push_back(instruction.line);
    c.priority.push_back(priority[e]);
  }
  for (const Computation& c : computations) {
    std::optional<std::vector<int>> order =
        OrderComputationLines(c.slots, c.priority, lines);
    if (!order.has_value()) {
      warnings.push_back(absl::StrCat(
          "computation '", (*instructions)[c.entries[0]].computation,
          "' keeps its instruction order (a line does not parse as an "
          "instruction, or its dependencies form a cycle): its schedule is "
          "the frontend attribute ",
          kHloPriorityAttribute, " only"));
      continue;
    }
    // The entries follow their lines: slot k now holds entry order[k]'s.
    std::vector<InstructionLine> moved;
    moved.reserve(order->size());
    for (int i : *order) {
      moved.push_back(std::move((*instructions)[c.entries[i]]));
    }
    for (size_t k = 0; k < moved.size(); ++k) {
      moved[k].line = c.slots[k];
      (*instructions)[c.entries[k]] = std::move(moved[k]);
      (*moved_from)[c.entries[k]] = c.entries[(*order)[k]];
    }
  }
  return warnings;
}

}  // namespace gopt::graph
