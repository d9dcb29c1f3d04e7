#include "graph/hlo/hlo_text_fusion.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "graph/hlo/hlo_fusion_rules.h"
#include "graph/hlo/hlo_text_schedule.h"

namespace gopt::graph {
namespace {

// Why XLA cannot make `parts` part of a fusion, or "" when it can.
std::string Unfusable(const LineViews& parts) {
  return WhyXlaCannotFuse(parts.name, parts.opcode,
                          absl::StartsWith(parts.shape, "(") ||
                              absl::StartsWith(parts.shape, "token"));
}

// `text` (the attributes after an instruction's operands) without
// attribute `key` ("epsilon=") and the comma before it.
std::string WithoutAttribute(std::string text, absl::string_view key) {
  const size_t at = FindAttribute(text, key);
  if (at == absl::string_view::npos) return text;
  size_t begin = at;
  while (begin > 0 && text[begin - 1] == ' ') --begin;
  if (begin > 0 && text[begin - 1] == ',') --begin;
  text.erase(begin, ValueEnd(text, at + key.size()) - begin);
  return text;
}

// The value of attribute `key` ("epsilon=") of `line`, or "".
std::string AttributeValue(absl::string_view line, absl::string_view key) {
  const size_t at = FindAttribute(line, key);
  if (at == absl::string_view::npos) return "";
  const size_t start = at + key.size();
  return std::string(line.substr(start, ValueEnd(line, start) - start));
}

// Names not yet used by an instruction or computation of the module.
class FreshNames : public FreshHloNames {
 public:
  explicit FreshNames(const std::vector<InstructionLine>& instructions) {
    for (const InstructionLine& instruction : instructions) {
      Use(instruction.name);
      Use(instruction.computation);
    }
  }
};

// The lines that stand for batch-norm-inference `member` (instruction line
// `line`) in a fused computation: the ops XLA's BatchNormExpander rewrites
// it into before fusion (a batch norm itself never sits in a fusion): per
// feature, scale * rsqrt(variance + epsilon) and offset - mean * that,
// broadcast along the feature dimension, then operand * scale + shift.
// `operands`: its five operands as named inside the fused computation
// ("%param_0.4"); `name`: its own name there, which the last line (the
// add, with the member's metadata and other attributes) takes; `shape`:
// its decided shape; `feature_shape`: its scale operand's.
std::vector<std::string> ExpandBatchNormInference(
    const LineViews& member, absl::string_view line,
    const std::vector<std::string>& operands, const std::string& name,
    const std::string& shape, absl::string_view feature_shape, bool root,
    FreshNames* names) {
  const std::string type = shape.substr(0, shape.find('['));
  const std::string epsilon = AttributeValue(line, "epsilon=");
  const std::string feature = AttributeValue(line, "feature_index=");
  std::string attributes = std::string(line.substr(member.operands_end + 1));
  attributes = WithoutAttribute(std::move(attributes), "epsilon=");
  attributes = WithoutAttribute(std::move(attributes), "feature_index=");
  std::vector<std::string> lines;
  auto emit = [&](absl::string_view suffix, absl::string_view result_shape,
                  absl::string_view rest) {
    const std::string inner = names->Make(absl::StrCat(name, suffix));
    lines.push_back(absl::StrCat("  %", inner, " = ", result_shape, " ", rest));
    return "%" + inner;
  };
  const std::string eps =
      emit(".epsilon", type + "[]", absl::StrCat("constant(", epsilon, ")"));
  const std::string eps_features =
      emit(".epsilon_broadcast", feature_shape,
           absl::StrCat("broadcast(", eps, "), dimensions={}"));
  const std::string variance =
      emit(".variance_epsilon", feature_shape,
           absl::StrCat("add(", operands[4], ", ", eps_features, ")"));
  const std::string rsqrt =
      emit(".rsqrt", feature_shape, absl::StrCat("rsqrt(", variance, ")"));
  const std::string scale =
      emit(".scale", feature_shape,
           absl::StrCat("multiply(", operands[1], ", ", rsqrt, ")"));
  const std::string mean_scale =
      emit(".mean_scale", feature_shape,
           absl::StrCat("multiply(", operands[3], ", ", scale, ")"));
  const std::string shift =
      emit(".shift", feature_shape,
           absl::StrCat("subtract(", operands[2], ", ", mean_scale, ")"));
  const std::string scales =
      emit(".scale_broadcast", shape,
           absl::StrCat("broadcast(", scale, "), dimensions={", feature, "}"));
  const std::string shifts =
      emit(".shift_broadcast", shape,
           absl::StrCat("broadcast(", shift, "), dimensions={", feature, "}"));
  const std::string scaled =
      emit(".scaled", shape,
           absl::StrCat("multiply(", operands[0], ", ", scales, ")"));
  lines.push_back(absl::StrCat("  ", root ? "ROOT " : "", "%", name, " = ",
                               shape, " add(", scaled, ", ", shifts, ")",
                               attributes));
  return lines;
}

// One fusion group: its (first member's) computation, kernel and members
// (indices into the instruction list, in line order).
struct Group {
  std::string computation;
  int32_t kernel = -1;
  std::vector<size_t> members;
};

// A group's members as lines, which of them are used outside it, and the
// operands it takes from outside.
struct GroupAnalysis {
  std::vector<const LineViews*> members;
  absl::flat_hash_map<std::string, size_t> member_of;  // name -> position
  std::vector<const LineViews*> outputs;
  std::vector<std::string> externals;  // in order of first use
  // Every instruction of the computation by name.
  absl::flat_hash_map<std::string, const LineViews*> defined;
};

// The rewrite of one group: the fused computation's lines (inserted before
// its computation) and what replaces each member line.
struct GroupRewrite {
  std::string fused_name;
  std::vector<std::string> fused_computation;
  absl::flat_hash_map<size_t, std::vector<std::string>> replace;  // by line
  // By name in the fused computation.
  std::vector<std::pair<std::string, HloFusedMember>> members;
};

class Fuser {
 public:
  Fuser(const std::vector<std::string>& lines,
        const std::vector<InstructionLine>& instructions,
        HloDecisions* decisions)
      : lines_(lines),
        instructions_(instructions),
        decisions_(decisions),
        names_(instructions) {
    parts_.reserve(instructions.size());
    for (size_t i = 0; i < instructions.size(); ++i) {
      parts_.push_back(ParseInstructionViews(lines[instructions[i].line]));
      body_[instructions[i].computation].push_back(i);
    }
  }

  // The rewrite of `group`, or the reason it cannot be written.
  std::variant<GroupRewrite, std::string> Rewrite(const Group& group);

 private:
  std::variant<GroupAnalysis, std::string> Analyze(const Group& group);

  const HloDecision* DecisionOf(const std::string& computation,
                                absl::string_view name) const {
    auto it = decisions_->find({computation, std::string(name)});
    return it == decisions_->end() ? nullptr : &it->second;
  }

  // `shape` with the layout decision of instruction `name`, if any.
  std::string DecidedShape(const std::string& computation,
                           const LineViews& parts) const {
    const HloDecision* d = DecisionOf(computation, parts.name);
    return d == nullptr || d->layout.empty()
               ? std::string(parts.shape)
               : ShapeWithLayout(parts.shape, d->layout);
  }

  const std::vector<std::string>& lines_;
  const std::vector<InstructionLine>& instructions_;
  HloDecisions* decisions_;
  FreshNames names_;
  std::vector<std::optional<LineViews>> parts_;
  absl::flat_hash_map<std::string, std::vector<size_t>> body_;
};

std::string FusionKind(const std::vector<const LineViews*>& outputs) {
  std::vector<std::string> opcodes;
  for (const LineViews* out : outputs) opcodes.emplace_back(out->opcode);
  return std::string(XlaFusionKind(opcodes));
}

std::variant<GroupAnalysis, std::string> Fuser::Analyze(const Group& group) {
  GroupAnalysis a;
  const std::string& computation = group.computation;
  for (size_t i : group.members) {
    if (!parts_[i].has_value()) {
      return absl::StrCat("'", instructions_[i].name, "' does not parse");
    }
    if (std::string why = Unfusable(*parts_[i]); !why.empty()) return why;
    const std::string& line = lines_[instructions_[i].line];
    if (parts_[i]->opcode == "batch-norm-inference" &&
        (parts_[i]->operands.size() != 5 ||
         FindAttribute(line, "epsilon=") == absl::string_view::npos ||
         FindAttribute(line, "feature_index=") == absl::string_view::npos)) {
      return absl::StrCat("'", parts_[i]->name,
                          "' is a batch-norm-inference without five operands, "
                          "an epsilon and a feature_index");
    }
    if (FindAttribute(lines_[instructions_[i].line], kControlPredecessors) !=
        absl::string_view::npos) {
      return ControlPredecessorsReason(parts_[i]->name);
    }
    a.member_of[parts_[i]->name] = a.members.size();
    a.members.push_back(&*parts_[i]);
  }
  // Outputs: members used outside the group or the computation's root.
  std::vector<bool> is_output(a.members.size(), false);
  for (size_t i : body_[computation]) {
    if (!parts_[i].has_value()) continue;
    a.defined[parts_[i]->name] = &*parts_[i];
    if (a.member_of.contains(parts_[i]->name)) continue;
    for (absl::string_view operand : parts_[i]->operands) {
      if (auto it = a.member_of.find(operand); it != a.member_of.end()) {
        is_output[it->second] = true;
      }
    }
    for (const std::string& name :
         ControlPredecessors(lines_[instructions_[i].line])) {
      if (a.member_of.contains(name)) {
        return ControlUserReason(parts_[i]->name, name);
      }
    }
  }
  for (size_t m = 0; m < a.members.size(); ++m) {
    if (is_output[m] || a.members[m]->is_root)
      a.outputs.push_back(a.members[m]);
  }
  if (a.outputs.empty()) a.outputs.push_back(a.members.back());
  auto type = [](absl::string_view shape) {
    return shape.substr(0, shape.find('['));
  };
  for (const LineViews* member : a.members) {
    if ((member->opcode == "dot" || member->opcode == "convolution") &&
        type(member->shape) != type(a.outputs[0]->shape)) {
      return ElementTypeReason(member->name, type(member->shape),
                               type(a.outputs[0]->shape));
    }
  }
  for (const LineViews* member : a.members) {
    for (absl::string_view operand : member->operands) {
      if (a.member_of.contains(operand) ||
          std::find(a.externals.begin(), a.externals.end(), operand) !=
              a.externals.end()) {
        continue;
      }
      if (!a.defined.contains(operand)) {
        return absl::StrCat("operand '", operand, "' of '", member->name,
                            "' is not an instruction of the computation");
      }
      a.externals.emplace_back(operand);
    }
  }
  return a;
}

std::variant<GroupRewrite, std::string> Fuser::Rewrite(const Group& group) {
  auto analyzed = Analyze(group);
  if (auto* why = std::get_if<std::string>(&analyzed)) return *why;
  const GroupAnalysis& a = std::get<GroupAnalysis>(analyzed);
  const std::string& computation = group.computation;
  const std::vector<const LineViews*>& members = a.members;
  const std::vector<const LineViews*>& outputs = a.outputs;
  const std::vector<std::string>& externals = a.externals;
  const auto& member_of = a.member_of;
  const auto& defined = a.defined;
  absl::flat_hash_map<std::string, std::string> renamed;  // inside the fusion
  const std::string suffix = absl::StrCat(".", group.kernel);
  for (size_t p = 0; p < externals.size(); ++p) {
    renamed[externals[p]] = names_.Make(absl::StrCat("param_", p, suffix));
  }
  for (const LineViews* out : outputs) {
    renamed[out->name] = names_.Make(absl::StrCat(out->name, ".fused"));
  }
  auto inner = [&](absl::string_view name) {
    auto it = renamed.find(name);
    return it == renamed.end() ? std::string(name) : it->second;
  };
  const bool single = outputs.size() == 1;
  std::vector<std::string> output_shapes;
  for (const LineViews* out : outputs) {
    output_shapes.push_back(DecidedShape(computation, *out));
  }
  const std::string root_shape =
      single ? output_shapes[0]
             : absl::StrCat("(", absl::StrJoin(output_shapes, ", "), ")");

  GroupRewrite rewrite;
  const std::string fused_name =
      names_.Make(absl::StrCat("gopt_fused_computation", suffix));
  rewrite.fused_name = fused_name;
  std::vector<std::string> header_params;
  std::vector<std::string>& body = rewrite.fused_computation;
  body.emplace_back();  // the header, once the parameters are known
  for (size_t p = 0; p < externals.size(); ++p) {
    const absl::string_view shape = defined.at(externals[p])->shape;
    const std::string& param = renamed.at(externals[p]);
    header_params.push_back(absl::StrCat(param, ": ", shape));
    body.push_back(
        absl::StrCat("  %", param, " = ", shape, " parameter(", p, ")"));
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const LineViews& member = *members[m];
    const std::string& line = lines_[instructions_[group.members[m]].line];
    const bool root = single && &member == outputs[0];
    rewrite.members.emplace_back(
        inner(member.name),
        HloFusedMember{computation, std::string(member.name),
                       *DecisionOf(computation, member.name)});
    std::vector<std::string> names;
    for (absl::string_view operand : member.operands) {
      names.push_back("%" + inner(operand));
    }
    if (member.opcode == "batch-norm-inference") {
      for (std::string& expanded : ExpandBatchNormInference(
               member, line, names, inner(member.name),
               DecidedShape(computation, member),
               defined.at(member.operands[1])->shape, root, &names_)) {
        body.push_back(std::move(expanded));
      }
      continue;
    }
    const std::string operands =
        member.opcode == "constant"
            ? line.substr(member.operands_begin,
                          member.operands_end - member.operands_begin)
            : absl::StrJoin(names, ", ");
    body.push_back(
        absl::StrCat("  ", root ? "ROOT " : "", "%", inner(member.name), " = ",
                     DecidedShape(computation, member), " ", member.opcode, "(",
                     operands, ")", line.substr(member.operands_end + 1)));
  }
  std::string fusion_name(outputs[0]->name);
  if (!single) {
    fusion_name = names_.Make(absl::StrCat("gopt_fusion", suffix));
    std::vector<std::string> roots;
    for (const LineViews* out : outputs)
      roots.push_back("%" + inner(out->name));
    body.push_back(absl::StrCat(
        "  ROOT %", names_.Make(absl::StrCat("gopt_tuple", suffix)), " = ",
        root_shape, " tuple(", absl::StrJoin(roots, ", "), ")"));
  }
  body[0] =
      absl::StrCat("%", fused_name, " (", absl::StrJoin(header_params, ", "),
                   ") -> ", root_shape, " {");
  body.push_back("}");
  body.push_back("");

  // The fusion (and its get-tuple-elements) replaces the last member line.
  const size_t last = instructions_[group.members.back()].line;
  const absl::string_view indent = members.back()->indent;
  std::vector<std::string> externals_text;
  for (const std::string& e : externals) externals_text.push_back("%" + e);
  std::string fusion =
      absl::StrCat(indent, single && outputs[0]->is_root ? "ROOT " : "", "%",
                   fusion_name, " = ", single ? outputs[0]->shape : root_shape,
                   " fusion(", absl::StrJoin(externals_text, ", "),
                   "), kind=", FusionKind(outputs), ", calls=%", fused_name);
  const std::string& out_line =
      lines_[instructions_[group.members[member_of.at(outputs[0]->name)]].line];
  if (const size_t at = FindAttribute(out_line, "metadata=");
      at != absl::string_view::npos) {
    absl::StrAppend(&fusion, ", ",
                    out_line.substr(at, ValueEnd(out_line, at + 9) - at));
  }
  std::vector<std::string>& replacement = rewrite.replace[last];
  replacement.push_back(std::move(fusion));
  if (!single) {
    HloDecision fusion_decision = *DecisionOf(computation, outputs[0]->name);
    for (size_t j = 0; j < outputs.size(); ++j) {
      replacement.push_back(
          absl::StrCat(indent, outputs[j]->is_root ? "ROOT " : "", "%",
                       outputs[j]->name, " = ", outputs[j]->shape,
                       " get-tuple-element(%", fusion_name, "), index=", j));
      (*decisions_)[{computation, std::string(outputs[j]->name)}].kernel = -1;
    }
    (*decisions_)[{computation, fusion_name}] = std::move(fusion_decision);
  }
  for (size_t i : group.members) {
    if (instructions_[i].line != last) rewrite.replace[instructions_[i].line];
  }
  return rewrite;
}

// The line where computation `name`'s header is: the unindented line
// ending in '{' before its first instruction.
size_t HeaderLine(const std::vector<std::string>& lines, size_t first) {
  size_t line = first;
  while (line > 0) {
    --line;
    const std::string& text = lines[line];
    if (!text.empty() && !absl::ascii_isspace(text[0]) &&
        absl::EndsWith(absl::StripTrailingAsciiWhitespace(text), "{")) {
      return line;
    }
  }
  return 0;
}

}  // namespace

HloTextFusion WriteFusionInstructions(
    std::vector<std::string> lines,
    const std::vector<InstructionLine>& instructions, HloDecisions* decisions) {
  HloTextFusion result;
  std::vector<Group> groups;
  absl::flat_hash_map<int32_t, size_t> group_of;
  absl::flat_hash_map<std::string, size_t> first_line;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const InstructionLine& instruction = instructions[i];
    first_line.try_emplace(instruction.computation, instruction.line);
    auto it = decisions->find({instruction.computation, instruction.name});
    if (it == decisions->end() || it->second.kernel < 0) continue;
    auto [at, added] = group_of.try_emplace(it->second.kernel, groups.size());
    if (added) groups.push_back({instruction.computation, it->second.kernel});
    groups[at->second].members.push_back(i);
  }
  // Nothing to fuse: keep the lines without taking every one apart.
  if (std::none_of(groups.begin(), groups.end(), [](const Group& group) {
        return group.members.size() >= 2;
      })) {
    result.lines = std::move(lines);
    return result;
  }
  Fuser fuser(lines, instructions, decisions);
  absl::flat_hash_map<size_t, std::vector<std::string>> before;  // by line
  absl::flat_hash_map<size_t, std::vector<std::string>> replace;
  absl::flat_hash_set<std::string> changed;
  for (const Group& group : groups) {
    if (group.members.size() < 2) continue;
    std::vector<std::string> names;
    std::string spans;
    for (size_t i : group.members) {
      names.push_back(instructions[i].name);
      if (instructions[i].computation != group.computation) {
        spans = SpansComputationsReason(group.computation,
                                        instructions[i].computation);
      }
    }
    auto rewrite =
        spans.empty()
            ? fuser.Rewrite(group)
            : std::variant<GroupRewrite, std::string>(std::move(spans));
    if (auto* why = std::get_if<std::string>(&rewrite)) {
      result.warnings.push_back(UnfusedGroupWarning(group.kernel, names, *why));
      continue;
    }
    GroupRewrite& done = std::get<GroupRewrite>(rewrite);
    std::vector<std::string>& header =
        before[HeaderLine(lines, first_line.at(group.computation))];
    header.insert(header.end(), done.fused_computation.begin(),
                  done.fused_computation.end());
    for (auto& [line, replacement] : done.replace) {
      replace[line] = std::move(replacement);
    }
    for (auto& [name, member] : done.members) {
      result.members[{done.fused_name, std::move(name)}] = std::move(member);
    }
    changed.insert(group.computation);
    ++result.fusions;
  }
  if (result.fusions == 0) {
    result.lines = std::move(lines);
    return result;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto it = before.find(i); it != before.end()) {
      for (std::string& line : it->second) result.lines.push_back(line);
    }
    if (auto it = replace.find(i); it != replace.end()) {
      for (std::string& line : it->second) result.lines.push_back(line);
    } else {
      result.lines.push_back(std::move(lines[i]));
    }
  }
  absl::StatusOr<std::vector<InstructionLine>> rewritten =
      FindInstructions(result.lines);
  if (rewritten.ok()) {
    absl::flat_hash_map<std::string, std::vector<size_t>> slots;
    for (const InstructionLine& instruction : *rewritten) {
      if (changed.contains(instruction.computation)) {
        slots[instruction.computation].push_back(instruction.line);
      }
    }
    for (const auto& [computation, computation_slots] : slots) {
      OrderComputationLines(computation_slots, {}, &result.lines);
    }
  }
  return result;
}

}  // namespace gopt::graph
