#include "graph/hlo/gopt_export_restore.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/hlo/hlo_decisions.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

constexpr absl::string_view kFusedComputationPrefix = "gopt_fused_computation";

// "computation 'c' instruction 'i' frontend attribute _gopt_order".
std::string OrderAttributeOf(const HloComputation& computation,
                             const HloInstruction& instruction) {
  return absl::StrCat("computation '", computation.name, "' instruction '",
                      instruction.name, "' frontend attribute ",
                      kHloOrderAttribute);
}

// The number of instructions calling each computation.
std::vector<int32_t> CallerCounts(const HloModule& module) {
  std::vector<int32_t> callers(module.computations.size(), 0);
  for (const HloComputation& computation : module.computations) {
    for (const HloInstruction& instruction : computation.instructions) {
      for (int32_t callee : instruction.called_computations) ++callers[callee];
    }
  }
  return callers;
}

// Finds the get-tuple-elements of a multi-output fusion and names the
// outputs after them. False when they are not exactly one per output and
// the fusion's only users.
bool NameOutputsAfterElements(const HloComputation& caller,
                              const HloComputation& fused, GoptFusion* found) {
  const HloInstruction& root = fused.instructions[fused.root];
  const size_t outputs = root.operands.size();
  std::vector<int32_t> elements(outputs, -1);
  for (int32_t i = 0; i < static_cast<int32_t>(caller.instructions.size());
       ++i) {
    const HloInstruction& user = caller.instructions[i];
    if (std::find(user.operands.begin(), user.operands.end(), found->fusion) ==
        user.operands.end()) {
      continue;
    }
    const int64_t index = user.attributes.tuple_index;
    if (user.opcode != "get-tuple-element" || user.operands.size() != 1 ||
        index < 0 || static_cast<size_t>(index) >= outputs ||
        elements[index] >= 0) {
      return false;
    }
    elements[index] = i;
  }
  for (size_t j = 0; j < outputs; ++j) {
    const int32_t member = root.operands[j];
    // Each output a positioned member (not a parameter), named once.
    if (elements[j] < 0 || found->restored_names[member].empty() ||
        found->replaces[member] >= 0) {
      return false;
    }
    found->restored_names[member] = caller.instructions[elements[j]].name;
    found->replaces[member] = elements[j];
  }
  return true;
}

// The unfolding of `fusion` (instruction `index` of computation `caller`),
// or nullopt when it is not a gopt fusion that unfolds exactly.
std::optional<GoptFusion> MatchGoptFusion(const HloModule& module,
                                          int32_t caller, int32_t index,
                                          const std::vector<int32_t>& callers) {
  const HloInstruction& fusion =
      module.computations[caller].instructions[index];
  if (fusion.opcode != "fusion" || fusion.called_computations.size() != 1) {
    return std::nullopt;
  }
  const int32_t callee = fusion.called_computations[0];
  const HloComputation& fused = module.computations[callee];
  if (callee == caller || callee == module.entry || callers[callee] != 1 ||
      !absl::StartsWith(fused.name, kFusedComputationPrefix)) {
    return std::nullopt;
  }
  GoptFusion found;
  found.caller = caller;
  found.fusion = index;
  found.fused = callee;
  const size_t n = fused.instructions.size();
  found.restored_names.resize(n);
  found.replaces.assign(n, -1);
  const HloInstruction& root = fused.instructions[fused.root];
  const bool tuple_root = root.opcode == "tuple" && root.export_position < 0;
  std::vector<bool> parameter_seen(fusion.operands.size(), false);
  size_t parameters = 0;
  for (size_t i = 0; i < n; ++i) {
    const HloInstruction& member = fused.instructions[i];
    if (member.opcode == "parameter") {
      const int64_t number = member.attributes.parameter_number;
      if (number < 0 || static_cast<size_t>(number) >= parameter_seen.size() ||
          parameter_seen[number]) {
        return std::nullopt;
      }
      parameter_seen[number] = true;
      ++parameters;
      continue;
    }
    if (tuple_root && static_cast<int32_t>(i) == fused.root) continue;
    // The exporter writes no fusion inside a fused computation, and no
    // member reads the tuple root it adds.
    if (member.export_position < 0 || member.opcode == "fusion" ||
        (tuple_root && std::find(member.operands.begin(), member.operands.end(),
                                 fused.root) != member.operands.end())) {
      return std::nullopt;
    }
    found.restored_names[i] = member.name;
  }
  if (parameters != fusion.operands.size()) return std::nullopt;
  const HloComputation& calling = module.computations[caller];
  if (tuple_root) {
    if (calling.root == index ||
        !NameOutputsAfterElements(calling, fused, &found)) {
      return std::nullopt;
    }
  } else {
    if (root.opcode == "parameter") return std::nullopt;
    found.restored_names[fused.root] = fusion.name;
    found.replaces[fused.root] = index;
  }
  return found;
}

// Whether the names `fusion` restores are free in its caller: no
// instruction the unfolding keeps has one, nor did an earlier unfolding of
// the same caller (`taken`, which gets these names).
bool NamesAreFree(const GoptFusion& fusion,
                  const absl::flat_hash_set<absl::string_view>& kept,
                  absl::flat_hash_set<std::string>* taken) {
  std::vector<absl::string_view> names;
  for (const std::string& name : fusion.restored_names) {
    if (name.empty()) continue;
    if (kept.contains(name) || taken->contains(name)) return false;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    return false;
  }
  for (absl::string_view name : names) taken->emplace(name);
  return true;
}

// Unfolds `fusions` (all of one caller, in instruction order) into it.
void UnfoldInto(HloModule* module, const std::vector<GoptFusion>& fusions) {
  HloComputation& caller = module->computations[fusions[0].caller];
  const int32_t n = static_cast<int32_t>(caller.instructions.size());
  // What each fusion and get-tuple-element it replaces is, by instruction.
  std::vector<const GoptFusion*> fusion_at(n, nullptr);
  std::vector<bool> removed(n, false);
  for (const GoptFusion& fusion : fusions) {
    fusion_at[fusion.fusion] = &fusion;
    removed[fusion.fusion] = true;
    for (int32_t replaced : fusion.replaces) {
      if (replaced >= 0) removed[replaced] = true;
    }
  }
  // New indices: the members at their fusion's place, the rest in order.
  std::vector<int32_t> new_index(n, -1);
  std::vector<std::vector<int32_t>> member_index(fusions.size());
  int32_t next = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (const GoptFusion* fusion = fusion_at[i]; fusion != nullptr) {
      std::vector<int32_t>& members = member_index[fusion - fusions.data()];
      members.assign(fusion->restored_names.size(), -1);
      for (size_t m = 0; m < members.size(); ++m) {
        if (fusion->restored_names[m].empty()) continue;
        members[m] = next++;
        if (fusion->replaces[m] >= 0)
          new_index[fusion->replaces[m]] = members[m];
      }
    }
    if (!removed[i]) new_index[i] = next++;
  }
  std::vector<HloInstruction> instructions(next);
  for (int32_t i = 0; i < n; ++i) {
    if (const GoptFusion* fusion = fusion_at[i]; fusion != nullptr) {
      const std::vector<int32_t>& members =
          member_index[fusion - fusions.data()];
      const HloInstruction& call = caller.instructions[i];
      HloComputation& fused = module->computations[fusion->fused];
      // Where each fused instruction's value is in the caller now.
      std::vector<int32_t> value_at = members;
      for (size_t m = 0; m < members.size(); ++m) {
        const HloInstruction& parameter = fused.instructions[m];
        if (parameter.opcode == "parameter") {
          value_at[m] =
              new_index[call.operands[parameter.attributes.parameter_number]];
        }
      }
      for (size_t m = 0; m < members.size(); ++m) {
        if (members[m] < 0) continue;
        HloInstruction member = std::move(fused.instructions[m]);
        for (int32_t& operand : member.operands) operand = value_at[operand];
        member.name = fusion->restored_names[m];
        if (fusion->replaces[m] >= 0) {
          member.id = caller.instructions[fusion->replaces[m]].id;
        }
        instructions[members[m]] = std::move(member);
      }
    }
    if (removed[i]) continue;
    HloInstruction& kept = caller.instructions[i];
    for (int32_t& operand : kept.operands) operand = new_index[operand];
    instructions[new_index[i]] = std::move(kept);
  }
  caller.root = new_index[caller.root];
  caller.instructions = std::move(instructions);
}

// The batch-norm-inference that the HLO text export wrote, inside a gopt
// fused computation, as XLA's BatchNormExpander would (ExpandBatchNormInference
// in hlo_text_fusion.cc): ten instructions without _gopt_order that only
// feed `add`, which carries the batch norm's name and _gopt_order:
//   add(multiply(x, broadcast(s)), broadcast(subtract(offset,
//       multiply(mean, s))))
//   with s = multiply(scale, rsqrt(add(variance, broadcast(constant)))).
struct BatchNormExpansion {
  int32_t add = -1;
  // x, scale, offset, mean, variance: the batch norm's operands.
  std::vector<int32_t> operands;
  std::vector<int32_t> helpers;
};

// The expansion ending in instruction `add` of `c`, or nullopt. `uses`
// counts each instruction's operand uses (the root's once more).
std::optional<BatchNormExpansion> MatchBatchNormExpansion(
    const HloComputation& c, int32_t add, const std::vector<int32_t>& uses) {
  BatchNormExpansion expansion;
  bool ok = true;
  // Operand `k` of `user`, a helper with `opcode`, `arity` operands and
  // `users` uses; -1 when it is not.
  auto helper = [&](int32_t user, size_t k, absl::string_view opcode,
                    size_t arity, int32_t users) {
    const HloInstruction& u = c.instructions[user];
    if (!ok || k >= u.operands.size()) {
      ok = false;
      return int32_t{-1};
    }
    const int32_t i = u.operands[k];
    const HloInstruction& h = c.instructions[i];
    if (h.opcode != opcode || h.operands.size() != arity ||
        h.export_position >= 0 || uses[i] != users) {
      ok = false;
      return int32_t{-1};
    }
    expansion.helpers.push_back(i);
    return i;
  };
  auto operand = [&](int32_t user, size_t k) {
    return ok && k < c.instructions[user].operands.size()
               ? c.instructions[user].operands[k]
               : -1;
  };
  const HloInstruction& last = c.instructions[add];
  if (last.opcode != "add" || last.export_position < 0 ||
      last.operands.size() != 2) {
    return std::nullopt;
  }
  const int32_t scaled = helper(add, 0, "multiply", 2, 1);
  const int32_t scales = helper(scaled, 1, "broadcast", 1, 1);
  const int32_t shifts = helper(add, 1, "broadcast", 1, 1);
  const int32_t shift = helper(shifts, 0, "subtract", 2, 1);
  const int32_t mean_scale = helper(shift, 1, "multiply", 2, 1);
  const int32_t scale = helper(scales, 0, "multiply", 2, 2);
  const int32_t rsqrt = helper(scale, 1, "rsqrt", 1, 1);
  const int32_t variance = helper(rsqrt, 0, "add", 2, 1);
  const int32_t epsilon = helper(variance, 1, "broadcast", 1, 1);
  helper(epsilon, 0, "constant", 0, 1);
  if (!ok || operand(mean_scale, 1) != scale) return std::nullopt;
  expansion.add = add;
  expansion.operands = {operand(scaled, 0), operand(scale, 0),
                        operand(shift, 0), operand(mean_scale, 0),
                        operand(variance, 0)};
  return expansion;
}

// Drops the computations marked in `dropped` (nothing calls them any
// more), re-indexing calls and the entry.
void DropComputations(HloModule* module, const std::vector<bool>& dropped) {
  std::vector<int32_t> new_index(module->computations.size(), -1);
  std::vector<HloComputation> kept;
  for (size_t c = 0; c < module->computations.size(); ++c) {
    if (dropped[c]) continue;
    new_index[c] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(module->computations[c]));
  }
  for (HloComputation& computation : kept) {
    for (HloInstruction& instruction : computation.instructions) {
      for (int32_t& callee : instruction.called_computations) {
        callee = new_index[callee];
      }
    }
  }
  module->entry = new_index[module->entry];
  module->computations = std::move(kept);
}

// The most instructions computation `c` can have had in the export's
// source: its own, plus those inside the gopt fusions it still calls.
size_t PositionBound(const HloModule& module, const HloComputation& c) {
  size_t bound = c.instructions.size();
  for (const HloInstruction& instruction : c.instructions) {
    if (instruction.opcode != "fusion") continue;
    for (int32_t callee : instruction.called_computations) {
      const HloComputation& fused = module.computations[callee];
      if (absl::StartsWith(fused.name, kFusedComputationPrefix)) {
        bound += fused.instructions.size();
      }
    }
  }
  return bound;
}

// Puts `computation` (every instruction with an export_position) in the
// order of its positions.
absl::Status Reorder(const HloModule& module, HloComputation* computation) {
  const size_t n = computation->instructions.size();
  const size_t bound = PositionBound(module, *computation);
  std::vector<std::pair<int32_t, int32_t>> order;  // (position, index)
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const HloInstruction& instruction = computation->instructions[i];
    if (static_cast<size_t>(instruction.export_position) >= bound) {
      return absl::InvalidArgumentError(absl::StrCat(
          OrderAttributeOf(*computation, instruction), ": ",
          instruction.export_position,
          " is out of range (the computation can have had at most ", bound,
          " instructions)"));
    }
    order.emplace_back(instruction.export_position, static_cast<int32_t>(i));
  }
  std::sort(order.begin(), order.end());
  for (size_t k = 1; k < n; ++k) {
    if (order[k].first == order[k - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat(
          OrderAttributeOf(*computation,
                           computation->instructions[order[k].second]),
          ": ", order[k].first, " is also the position of instruction '",
          computation->instructions[order[k - 1].second].name, "'"));
    }
  }
  std::vector<int32_t> new_index(n);
  for (size_t k = 0; k < n; ++k) {
    new_index[order[k].second] = static_cast<int32_t>(k);
  }
  for (size_t i = 0; i < n; ++i) {
    const HloInstruction& user = computation->instructions[i];
    for (int32_t operand : user.operands) {
      if (new_index[operand] >= new_index[i]) {
        const HloInstruction& read = computation->instructions[operand];
        return absl::InvalidArgumentError(
            absl::StrCat(OrderAttributeOf(*computation, user), ": ",
                         user.export_position, " puts it before its operand '",
                         read.name, "' (", read.export_position, ")"));
      }
    }
  }
  std::vector<HloInstruction> ordered(n);
  for (size_t i = 0; i < n; ++i) {
    HloInstruction& instruction = computation->instructions[i];
    for (int32_t& operand : instruction.operands) {
      operand = new_index[operand];
    }
    ordered[new_index[i]] = std::move(instruction);
  }
  computation->root = new_index[computation->root];
  computation->instructions = std::move(ordered);
  return absl::OkStatus();
}

}  // namespace

void FoldBatchNormExpansions(HloModule* module) {
  for (HloComputation& c : module->computations) {
    if (!absl::StartsWith(c.name, kFusedComputationPrefix)) continue;
    std::vector<int32_t> uses(c.instructions.size(), 0);
    for (const HloInstruction& instruction : c.instructions) {
      for (int32_t operand : instruction.operands) ++uses[operand];
    }
    if (c.root >= 0) ++uses[c.root];
    std::vector<bool> dropped(c.instructions.size(), false);
    bool folded = false;
    for (int32_t i = 0; i < static_cast<int32_t>(c.instructions.size()); ++i) {
      std::optional<BatchNormExpansion> expansion =
          MatchBatchNormExpansion(c, i, uses);
      if (!expansion.has_value()) continue;
      HloInstruction& batch_norm = c.instructions[i];
      batch_norm.opcode = "batch-norm-inference";
      batch_norm.operands = expansion->operands;
      for (int32_t helper : expansion->helpers) dropped[helper] = true;
      folded = true;
    }
    if (!folded) continue;
    std::vector<int32_t> new_index(c.instructions.size(), -1);
    std::vector<HloInstruction> kept;
    for (size_t i = 0; i < c.instructions.size(); ++i) {
      if (dropped[i]) continue;
      new_index[i] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(c.instructions[i]));
    }
    for (HloInstruction& instruction : kept) {
      for (int32_t& operand : instruction.operands) {
        operand = new_index[operand];
      }
    }
    c.root = new_index[c.root];
    c.instructions = std::move(kept);
  }
}

absl::StatusOr<int32_t> ParseExportPosition(absl::string_view value,
                                            absl::string_view what) {
  int64_t position = -1;
  if (!absl::SimpleAtoi(value, &position)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " frontend attribute ", kHloOrderAttribute, ": \"",
                     value.substr(0, 40), "\" is not a number"));
  }
  if (position < 0 || position > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " frontend attribute ", kHloOrderAttribute, ": ",
                     position, " is out of range (an instruction index, 0 to ",
                     std::numeric_limits<int32_t>::max(), ")"));
  }
  return static_cast<int32_t>(position);
}

std::vector<GoptFusion> FindGoptFusions(const HloModule& module) {
  std::vector<GoptFusion> fusions;
  const std::vector<int32_t> callers = CallerCounts(module);
  for (int32_t c = 0; c < static_cast<int32_t>(module.computations.size());
       ++c) {
    const HloComputation& caller = module.computations[c];
    const size_t first = fusions.size();
    for (int32_t i = 0; i < static_cast<int32_t>(caller.instructions.size());
         ++i) {
      if (std::optional<GoptFusion> found =
              MatchGoptFusion(module, c, i, callers)) {
        fusions.push_back(std::move(*found));
      }
    }
    if (fusions.size() == first) continue;
    // The names the unfoldings restore must be free in the caller.
    absl::flat_hash_set<int32_t> replaced;
    for (size_t f = first; f < fusions.size(); ++f) {
      for (int32_t i : fusions[f].replaces) replaced.insert(i);
      replaced.insert(fusions[f].fusion);
    }
    absl::flat_hash_set<absl::string_view> kept;
    for (int32_t i = 0; i < static_cast<int32_t>(caller.instructions.size());
         ++i) {
      if (!replaced.contains(i)) kept.insert(caller.instructions[i].name);
    }
    absl::flat_hash_set<std::string> taken;
    size_t out = first;
    for (size_t f = first; f < fusions.size(); ++f) {
      if (NamesAreFree(fusions[f], kept, &taken)) {
        if (out != f) fusions[out] = std::move(fusions[f]);
        ++out;
      }
    }
    fusions.resize(out);
  }
  return fusions;
}

absl::Status RestoreGoptExport(HloModule* module) {
  FoldBatchNormExpansions(module);
  const std::vector<GoptFusion> fusions = FindGoptFusions(*module);
  if (!fusions.empty()) {
    std::vector<bool> dropped(module->computations.size(), false);
    for (size_t begin = 0; begin < fusions.size();) {
      size_t end = begin;
      while (end < fusions.size() &&
             fusions[end].caller == fusions[begin].caller) {
        dropped[fusions[end].fused] = true;
        ++end;
      }
      UnfoldInto(module, std::vector<GoptFusion>(fusions.begin() + begin,
                                                 fusions.begin() + end));
      begin = end;
    }
    DropComputations(module, dropped);
  }
  for (HloComputation& computation : module->computations) {
    if (computation.instructions.empty() ||
        std::any_of(computation.instructions.begin(),
                    computation.instructions.end(),
                    [](const HloInstruction& instruction) {
                      return instruction.export_position < 0;
                    })) {
      continue;
    }
    RETURN_IF_ERROR(Reorder(*module, &computation));
  }
  return absl::OkStatus();
}

}  // namespace gopt::graph::hlo
