#include "graph/hlo/hlo_proto_fusion.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "graph/hlo/hlo_fusion_rules.h"
#include "graph/hlo/hlo_schedule.h"

namespace gopt::graph {
namespace {

bool IsTupleOrToken(const xla::ShapeProto& shape) {
  return shape.element_type() == xla::TUPLE ||
         shape.element_type() == xla::TOKEN;
}

// One fusion group: its (first member's) computation, kernel and members.
struct ProtoGroup {
  int computation = -1;
  int32_t kernel = -1;
  std::vector<int64_t> ids;
  std::vector<std::string> names;
  std::string spans;  // why it cannot be fused because of where it is
};

// Rewrites one group's instructions in one computation.
class GroupFuser {
 public:
  GroupFuser(xla::HloComputationProto* computation, const ProtoGroup& group,
             FreshHloNames* names, int64_t* next_id, HloDecisions* decisions)
      : computation_(*computation),
        group_(group),
        names_(*names),
        next_id_(*next_id),
        decisions_(*decisions) {}

  // Writes the fused computation into `fused` (its id already set) and
  // the fusion into the computation; or returns why the group stays as it
  // was (nothing changed then).
  std::string Fuse(xla::HloComputationProto* fused);

 private:
  // Finds members, outputs and outside operands; "" or why not fusable.
  std::string Analyze();
  void WriteFusedComputation(xla::HloComputationProto* fused);
  // The fusion and, with several outputs, its get-tuple-elements.
  std::vector<xla::HloInstructionProto> FusionInstructions(
      const xla::HloComputationProto& fused);

  const xla::HloInstructionProto& At(int64_t id) const {
    return computation_.instructions(index_.at(id));
  }

  xla::HloComputationProto& computation_;
  const ProtoGroup& group_;
  FreshHloNames& names_;
  int64_t& next_id_;
  HloDecisions& decisions_;
  absl::flat_hash_map<int64_t, int> index_;  // id -> instruction index
  absl::flat_hash_set<int64_t> in_group_;
  std::vector<int> members_;      // instruction indices, in module order
  std::vector<int64_t> outputs_;  // member ids used outside, in order
  std::vector<int64_t> externals_;
  xla::ShapeProto root_shape_;
};

std::string GroupFuser::Analyze() {
  const int n = computation_.instructions_size();
  for (int i = 0; i < n; ++i) index_[computation_.instructions(i).id()] = i;
  in_group_.insert(group_.ids.begin(), group_.ids.end());
  for (int i = 0; i < n; ++i) {
    if (in_group_.contains(computation_.instructions(i).id())) {
      members_.push_back(i);
    }
  }
  if (members_.size() != in_group_.size()) {
    return "its instruction ids are not all instructions of one computation";
  }
  for (int m : members_) {
    const xla::HloInstructionProto& member = computation_.instructions(m);
    std::string why = WhyXlaCannotFuse(member.name(), member.opcode(),
                                       IsTupleOrToken(member.shape()));
    if (!why.empty()) return why;
    if (member.opcode() == "batch-norm-inference") {
      return absl::StrCat(
          "'", member.name(),
          "' is a batch-norm-inference, which XLA expands before fusion; "
          "the hlo-proto export does not write that expansion (it needs "
          "constant literals, which gopt's copy of the proto does not carry)");
    }
    if (member.control_predecessor_ids_size() > 0) {
      return ControlPredecessorsReason(member.name());
    }
  }
  absl::flat_hash_set<int64_t> used_outside;
  if (in_group_.contains(computation_.root_id())) {
    used_outside.insert(computation_.root_id());
  }
  for (const xla::HloInstructionProto& user : computation_.instructions()) {
    if (in_group_.contains(user.id())) continue;
    for (int64_t id : user.operand_ids()) {
      if (in_group_.contains(id)) used_outside.insert(id);
    }
    for (int64_t id : user.control_predecessor_ids()) {
      if (in_group_.contains(id)) {
        return ControlUserReason(user.name(), At(id).name());
      }
    }
  }
  for (int m : members_) {
    const int64_t id = computation_.instructions(m).id();
    if (used_outside.contains(id)) outputs_.push_back(id);
  }
  if (outputs_.empty()) {
    outputs_.push_back(computation_.instructions(members_.back()).id());
  }
  const xla::HloInstructionProto& result = At(outputs_[0]);
  for (int m : members_) {
    const xla::HloInstructionProto& member = computation_.instructions(m);
    if ((member.opcode() == "dot" || member.opcode() == "convolution") &&
        member.shape().element_type() != result.shape().element_type()) {
      return ElementTypeReason(member.name(),
                               absl::AsciiStrToLower(xla::PrimitiveType_Name(
                                   member.shape().element_type())),
                               absl::AsciiStrToLower(xla::PrimitiveType_Name(
                                   result.shape().element_type())));
    }
  }
  for (int m : members_) {
    const xla::HloInstructionProto& member = computation_.instructions(m);
    for (int64_t id : member.operand_ids()) {
      if (in_group_.contains(id) ||
          std::find(externals_.begin(), externals_.end(), id) !=
              externals_.end()) {
        continue;
      }
      if (!index_.contains(id)) {
        return absl::StrCat("operand id ", id, " of '", member.name(),
                            "' is not an instruction of the computation");
      }
      externals_.push_back(id);
    }
  }
  return "";
}

void GroupFuser::WriteFusedComputation(xla::HloComputationProto* fused) {
  const std::string suffix = absl::StrCat(".", group_.kernel);
  // Outside id -> the id it has inside the fused computation.
  absl::flat_hash_map<int64_t, int64_t> inner;
  xla::ProgramShapeProto& program = *fused->mutable_program_shape();
  for (size_t p = 0; p < externals_.size(); ++p) {
    xla::HloInstructionProto& parameter = *fused->add_instructions();
    parameter.set_name(names_.Make(absl::StrCat("param_", p, suffix)));
    parameter.set_opcode("parameter");
    parameter.set_id(next_id_++);
    parameter.set_parameter_number(static_cast<int64_t>(p));
    *parameter.mutable_shape() = At(externals_[p]).shape();
    inner[externals_[p]] = parameter.id();
    *program.add_parameters() = parameter.shape();
    program.add_parameter_names(parameter.name());
  }
  // An output keeps its id and name outside (as the fusion or a
  // get-tuple-element); its copy inside gets new ones.
  for (int64_t id : outputs_) inner[id] = next_id_++;
  for (int m : members_) {
    xla::HloInstructionProto& member = *fused->add_instructions();
    member = computation_.instructions(m);
    if (auto it = inner.find(member.id()); it != inner.end()) {
      member.set_id(it->second);
      member.set_name(names_.Make(absl::StrCat(member.name(), ".fused")));
    }
    for (int64_t& operand : *member.mutable_operand_ids()) {
      if (auto it = inner.find(operand); it != inner.end()) {
        operand = it->second;
      }
    }
  }
  if (outputs_.size() == 1) {
    fused->set_root_id(inner.at(outputs_[0]));
    root_shape_ = At(outputs_[0]).shape();
  } else {
    xla::HloInstructionProto& tuple = *fused->add_instructions();
    tuple.set_name(names_.Make(absl::StrCat("gopt_tuple", suffix)));
    tuple.set_opcode("tuple");
    tuple.set_id(next_id_++);
    tuple.mutable_shape()->set_element_type(xla::TUPLE);
    for (int64_t id : outputs_) {
      *tuple.mutable_shape()->add_tuple_shapes() = At(id).shape();
      tuple.add_operand_ids(inner.at(id));
    }
    fused->set_root_id(tuple.id());
    root_shape_ = tuple.shape();
  }
  *program.mutable_result() = root_shape_;
}

std::vector<xla::HloInstructionProto> GroupFuser::FusionInstructions(
    const xla::HloComputationProto& fused) {
  const xla::HloInstructionProto& first = At(outputs_[0]);
  std::vector<std::string> opcodes;
  for (int64_t id : outputs_) opcodes.push_back(At(id).opcode());
  std::vector<xla::HloInstructionProto> written(1);
  xla::HloInstructionProto& fusion = written[0];
  fusion.set_opcode("fusion");
  fusion.set_fusion_kind(std::string(XlaFusionKind(opcodes)));
  fusion.mutable_operand_ids()->Assign(externals_.begin(), externals_.end());
  fusion.add_called_computation_ids(fused.id());
  *fusion.mutable_shape() = root_shape_;
  if (first.has_metadata()) *fusion.mutable_metadata() = first.metadata();
  if (first.has_sharding()) *fusion.mutable_sharding() = first.sharding();
  if (first.has_frontend_attributes()) {
    *fusion.mutable_frontend_attributes() = first.frontend_attributes();
  }
  if (outputs_.size() == 1) {
    fusion.set_name(first.name());
    fusion.set_id(first.id());
    return written;
  }
  // The position is the first output's, which its get-tuple-element takes.
  fusion.mutable_frontend_attributes()->mutable_map()->erase(
      std::string(kHloOrderAttribute));
  fusion.set_name(names_.Make(absl::StrCat("gopt_fusion.", group_.kernel)));
  fusion.set_id(next_id_++);
  const std::string& computation = computation_.name();
  if (auto it = decisions_.find({computation, first.name()});
      it != decisions_.end()) {
    decisions_[{computation, fusion.name()}] = it->second;
  }
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const xla::HloInstructionProto& output = At(outputs_[j]);
    xla::HloInstructionProto element;
    element.set_name(output.name());
    element.set_id(output.id());
    element.set_opcode("get-tuple-element");
    *element.mutable_shape() = output.shape();
    element.set_tuple_index(static_cast<int64_t>(j));
    element.add_operand_ids(written[0].id());
    if (auto it = decisions_.find({computation, output.name()});
        it != decisions_.end()) {
      it->second.kernel = -1;
    }
    written.push_back(std::move(element));
  }
  return written;
}

std::string GroupFuser::Fuse(xla::HloComputationProto* fused) {
  if (std::string why = Analyze(); !why.empty()) return why;
  WriteFusedComputation(fused);
  std::vector<xla::HloInstructionProto> fusion = FusionInstructions(*fused);
  // The fusion takes the last member's place; then a stable topological
  // order puts it before users that came between the members.
  xla::HloComputationProto rewritten = computation_;
  rewritten.clear_instructions();
  for (int i = 0; i < computation_.instructions_size(); ++i) {
    if (i == members_.back()) {
      for (xla::HloInstructionProto& instruction : fusion) {
        *rewritten.add_instructions() = std::move(instruction);
      }
    } else if (!in_group_.contains(computation_.instructions(i).id())) {
      *rewritten.add_instructions() = computation_.instructions(i);
    }
  }
  absl::flat_hash_map<int64_t, int> index;
  for (int i = 0; i < rewritten.instructions_size(); ++i) {
    index[rewritten.instructions(i).id()] = i;
  }
  computation_.clear_instructions();
  for (int64_t id : ScheduleOfComputation(rewritten, {})) {
    *computation_.add_instructions() =
        std::move(*rewritten.mutable_instructions(index.at(id)));
  }
  return "";
}

}  // namespace

HloProtoFusion WriteProtoFusions(xla::HloModuleProto* module,
                                 HloDecisions* decisions) {
  HloProtoFusion result;
  FreshHloNames names;
  int64_t next_id = 0;
  int64_t next_computation_id = 0;
  std::vector<ProtoGroup> groups;
  absl::flat_hash_map<int32_t, size_t> group_of;
  for (int c = 0; c < module->computations_size(); ++c) {
    const xla::HloComputationProto& computation = module->computations(c);
    names.Use(computation.name());
    next_computation_id = std::max(next_computation_id, computation.id() + 1);
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      names.Use(instruction.name());
      next_id = std::max(next_id, instruction.id() + 1);
      auto it = decisions->find({computation.name(), instruction.name()});
      if (it == decisions->end() || it->second.kernel < 0) continue;
      auto [at, added] = group_of.try_emplace(it->second.kernel, groups.size());
      if (added) groups.push_back({c, it->second.kernel});
      ProtoGroup& group = groups[at->second];
      group.ids.push_back(instruction.id());
      group.names.push_back(instruction.name());
      if (group.computation != c && group.spans.empty()) {
        group.spans = SpansComputationsReason(
            module->computations(group.computation).name(), computation.name());
      }
    }
  }
  // Fused computations by the index of the computation that calls them.
  std::vector<std::vector<xla::HloComputationProto>> callees(
      module->computations_size());
  for (const ProtoGroup& group : groups) {
    if (group.ids.size() < 2) continue;
    std::string why = group.spans;
    xla::HloComputationProto fused;
    if (why.empty()) {
      fused.set_name(
          names.Make(absl::StrCat("gopt_fused_computation.", group.kernel)));
      fused.set_id(next_computation_id);
      GroupFuser fuser(module->mutable_computations(group.computation), group,
                       &names, &next_id, decisions);
      why = fuser.Fuse(&fused);
    }
    if (!why.empty()) {
      result.warnings.push_back(
          UnfusedGroupWarning(group.kernel, group.names, why));
      continue;
    }
    ++next_computation_id;
    callees[group.computation].push_back(std::move(fused));
    ++result.fusions;
  }
  if (result.fusions == 0) return result;
  google::protobuf::RepeatedPtrField<xla::HloComputationProto> computations;
  computations.Swap(module->mutable_computations());
  for (int c = 0; c < computations.size(); ++c) {
    for (xla::HloComputationProto& fused : callees[c]) {
      *module->add_computations() = std::move(fused);
    }
    *module->add_computations() = std::move(*computations.Mutable(c));
  }
  return result;
}

}  // namespace gopt::graph
