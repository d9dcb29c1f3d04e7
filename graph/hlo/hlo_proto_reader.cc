#include "graph/hlo/hlo_proto_reader.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/proto_wire.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

absl::StatusOr<DType> ConvertElementType(int type) {
  switch (type) {
    case xla::PRED:
      return DType::kPred;
    case xla::S4:
      return DType::kS4;
    case xla::S8:
      return DType::kS8;
    case xla::S16:
      return DType::kS16;
    case xla::S32:
      return DType::kS32;
    case xla::S64:
      return DType::kS64;
    case xla::U4:
      return DType::kU4;
    case xla::U8:
      return DType::kU8;
    case xla::U16:
      return DType::kU16;
    case xla::U32:
      return DType::kU32;
    case xla::U64:
      return DType::kU64;
    case xla::F8E4M3FN:
      return DType::kF8E4M3FN;
    case xla::F8E5M2:
      return DType::kF8E5M2;
    case xla::F16:
      return DType::kF16;
    case xla::BF16:
      return DType::kBF16;
    case xla::F32:
      return DType::kF32;
    case xla::F64:
      return DType::kF64;
    case xla::C64:
      return DType::kC64;
    case xla::C128:
      return DType::kC128;
    case xla::TOKEN:
      return DType::kToken;
    case xla::OPAQUE_TYPE:
      return DType::kOpaque;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported element_type ", type));
  }
}

absl::Status ConvertShape(const xla::ShapeProto& proto, int depth,
                          HloShape* shape) {
  if (depth > kMaxHloNestingDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tuple shape nested deeper than ", kMaxHloNestingDepth, " levels"));
  }
  if (proto.element_type() == xla::TUPLE) {
    shape->is_tuple = true;
    shape->tuple_shapes.resize(proto.tuple_shapes_size());
    for (int i = 0; i < proto.tuple_shapes_size(); ++i) {
      absl::Status status = ConvertShape(proto.tuple_shapes(i), depth + 1,
                                         &shape->tuple_shapes[i]);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tuple_shapes[", i, "]: ", status.message()));
      }
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(shape->dtype, ConvertElementType(proto.element_type()));
  shape->dims.assign(proto.dimensions().begin(), proto.dimensions().end());
  for (int64_t dim : proto.layout().minor_to_major()) {
    if (dim < 0 || dim >= static_cast<int64_t>(shape->dims.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout.minor_to_major names dimension ", dim,
                       " of a rank-", shape->dims.size(), " shape"));
    }
    shape->minor_to_major.push_back(static_cast<int32_t>(dim));
  }
  return absl::OkStatus();
}

int64_t OneIfZero(int64_t value) { return value == 0 ? 1 : value; }

void ConvertAttributes(const xla::HloInstructionProto& proto,
                       HloInstruction* instruction) {
  OpAttributes& attributes = instruction->attributes;
  const std::string& opcode = instruction->opcode;
  attributes.dimensions.assign(proto.dimensions().begin(),
                               proto.dimensions().end());
  for (const xla::WindowDimension& dim : proto.window().dimensions()) {
    WindowDimension window;
    window.size = dim.size();
    window.stride = OneIfZero(dim.stride());
    window.padding_low = dim.padding_low();
    window.padding_high = dim.padding_high();
    window.window_dilation = OneIfZero(dim.window_dilation());
    window.base_dilation = OneIfZero(dim.base_dilation());
    window.reversal = dim.window_reversal();
    attributes.mutable_window()->push_back(window);
  }
  if (opcode == "convolution") {
    const xla::ConvolutionDimensionNumbers& c =
        proto.convolution_dimension_numbers();
    ConvolutionDimensions& dims = *attributes.mutable_convolution();
    attributes.has_convolution_dimensions = true;
    dims.input_batch = c.input_batch_dimension();
    dims.input_feature = c.input_feature_dimension();
    dims.input_spatial.assign(c.input_spatial_dimensions().begin(),
                              c.input_spatial_dimensions().end());
    dims.kernel_input_feature = c.kernel_input_feature_dimension();
    dims.kernel_output_feature = c.kernel_output_feature_dimension();
    dims.kernel_spatial.assign(c.kernel_spatial_dimensions().begin(),
                               c.kernel_spatial_dimensions().end());
    dims.output_batch = c.output_batch_dimension();
    dims.output_feature = c.output_feature_dimension();
    dims.output_spatial.assign(c.output_spatial_dimensions().begin(),
                               c.output_spatial_dimensions().end());
  }
  attributes.feature_group_count = OneIfZero(proto.feature_group_count());
  attributes.batch_group_count = OneIfZero(proto.batch_group_count());
  if (opcode == "dot") {
    const xla::DotDimensionNumbers& d = proto.dot_dimension_numbers();
    attributes.has_dot_dimensions = true;
    attributes.mutable_dot()->lhs_batch.assign(d.lhs_batch_dimensions().begin(),
                                               d.lhs_batch_dimensions().end());
    attributes.mutable_dot()->rhs_batch.assign(d.rhs_batch_dimensions().begin(),
                                               d.rhs_batch_dimensions().end());
    attributes.mutable_dot()->lhs_contracting.assign(
        d.lhs_contracting_dimensions().begin(),
        d.lhs_contracting_dimensions().end());
    attributes.mutable_dot()->rhs_contracting.assign(
        d.rhs_contracting_dimensions().begin(),
        d.rhs_contracting_dimensions().end());
  }
  for (const auto& slice : proto.slice_dimensions()) {
    attributes.mutable_slice_starts()->push_back(slice.start());
    attributes.mutable_slice_limits()->push_back(slice.limit());
    attributes.mutable_slice_strides()->push_back(OneIfZero(slice.stride()));
  }
  attributes.mutable_dynamic_slice_sizes()->assign(
      proto.dynamic_slice_sizes().begin(), proto.dynamic_slice_sizes().end());
  for (const auto& dim : proto.padding_config().dimensions()) {
    PaddingDimension padding;
    padding.low = dim.edge_padding_low();
    padding.high = dim.edge_padding_high();
    padding.interior = dim.interior_padding();
    attributes.mutable_padding()->push_back(padding);
  }
  if (opcode == "parameter") {
    attributes.parameter_number = proto.parameter_number();
  }
  if (opcode == "get-tuple-element") {
    attributes.tuple_index = proto.tuple_index();
  }
  attributes.is_stable = proto.is_stable();
  if (!proto.custom_call_target().empty()) {
    *attributes.mutable_custom_call_target() = proto.custom_call_target();
  }
  if (!proto.comparison_direction().empty()) {
    *attributes.mutable_comparison() = proto.comparison_direction();
  }
  if (!proto.backend_config().empty()) {
    *instruction->backend_config.mutable_get() = proto.backend_config();
  }
  if (!proto.fusion_kind().empty()) {
    *instruction->fusion_kind.mutable_get() = proto.fusion_kind();
  }
}

}  // namespace

absl::StatusOr<HloModule> HloModuleFromProto(const xla::HloModuleProto& proto) {
  HloModule module;
  module.name = proto.name();
  absl::flat_hash_map<int64_t, int32_t> computation_by_id;
  for (int c = 0; c < proto.computations_size(); ++c) {
    const xla::HloComputationProto& computation = proto.computations(c);
    if (!computation_by_id.emplace(computation.id(), c).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("computation '", computation.name(), "' id ",
                       computation.id(), " is used twice"));
    }
  }
  module.computations.resize(proto.computations_size());
  for (int c = 0; c < proto.computations_size(); ++c) {
    const xla::HloComputationProto& computation_proto = proto.computations(c);
    HloComputation& computation = module.computations[c];
    computation.name = computation_proto.name();
    computation.id = computation_proto.id();
    absl::flat_hash_map<int64_t, int32_t> instruction_by_id;
    instruction_by_id.reserve(computation_proto.instructions_size());
    for (int i = 0; i < computation_proto.instructions_size(); ++i) {
      const xla::HloInstructionProto& instruction =
          computation_proto.instructions(i);
      if (!instruction_by_id.emplace(instruction.id(), i).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "computation '", computation.name, "' instruction '",
            instruction.name(), "' id: ", instruction.id(), " is used twice"));
      }
    }
    computation.instructions.resize(computation_proto.instructions_size());
    for (int i = 0; i < computation_proto.instructions_size(); ++i) {
      const xla::HloInstructionProto& instruction_proto =
          computation_proto.instructions(i);
      HloInstruction& instruction = computation.instructions[i];
      auto error = [&](absl::string_view field, absl::string_view what) {
        return absl::InvalidArgumentError(
            absl::StrCat("computation '", computation.name, "' instruction '",
                         instruction_proto.name(), "' ", field, ": ", what));
      };
      instruction.name = instruction_proto.name();
      instruction.opcode = instruction_proto.opcode();
      instruction.id = instruction_proto.id();
      if (instruction.name.empty()) {
        return error("name", "is empty");
      }
      if (instruction.opcode.empty()) return error("opcode", "is empty");
      absl::Status status =
          ConvertShape(instruction_proto.shape(), 0, &instruction.shape);
      if (!status.ok()) return error("shape", status.message());
      for (int k = 0; k < instruction_proto.operand_ids_size(); ++k) {
        auto it = instruction_by_id.find(instruction_proto.operand_ids(k));
        if (it == instruction_by_id.end()) {
          return error(absl::StrCat("operand_ids[", k, "]"),
                       absl::StrCat("id ", instruction_proto.operand_ids(k),
                                    " is not an instruction of this "
                                    "computation"));
        }
        instruction.operands.push_back(it->second);
      }
      for (int k = 0; k < instruction_proto.called_computation_ids_size();
           ++k) {
        auto it =
            computation_by_id.find(instruction_proto.called_computation_ids(k));
        if (it == computation_by_id.end()) {
          return error(
              absl::StrCat("called_computation_ids[", k, "]"),
              absl::StrCat("id ", instruction_proto.called_computation_ids(k),
                           " is not a computation of this module"));
        }
        instruction.called_computations.push_back(it->second);
      }
      ConvertAttributes(instruction_proto, &instruction);
    }
    auto root = instruction_by_id.find(computation_proto.root_id());
    if (root == instruction_by_id.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("computation '", computation.name, "' root_id ",
                       computation_proto.root_id(),
                       " is not an instruction of this computation"));
    }
    computation.root = root->second;
  }
  if (module.computations.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("module '", module.name, "' has no computations"));
  }
  auto entry = computation_by_id.find(proto.entry_computation_id());
  if (entry != computation_by_id.end() &&
      (proto.entry_computation_name().empty() ||
       module.computations[entry->second].name ==
           proto.entry_computation_name())) {
    module.entry = entry->second;
  } else {
    for (size_t c = 0; c < module.computations.size(); ++c) {
      if (module.computations[c].name == proto.entry_computation_name()) {
        module.entry = static_cast<int32_t>(c);
      }
    }
    if (module.entry < 0) {
      module.entry = static_cast<int32_t>(module.computations.size()) - 1;
    }
  }
  RETURN_IF_ERROR(ValidateHloModule(module));
  return module;
}

absl::StatusOr<HloModule> ParseHloModuleProto(absl::string_view bytes) {
  google::protobuf::Arena arena(ImportArenaOptions());
  xla::HloModuleProto& proto =
      *google::protobuf::Arena::CreateMessage<xla::HloModuleProto>(&arena);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        "not a valid serialized xla.HloModuleProto");
  }
  return HloModuleFromProto(proto);
}

NodeTypes InstructionNodes() {
  const google::protobuf::Descriptor* instruction =
      xla::HloInstructionProto::descriptor();
  return NodeTypes{{instruction}, instruction};
}

absl::StatusOr<ParseCost> HloModuleProtoParseCost(
    absl::string_view bytes, const ParseCostLimits& limits) {
  ASSIGN_OR_RETURN(ParseCost cost,
                   ProtoParseCost(bytes, xla::HloModuleProto::descriptor(),
                                  InstructionNodes(), limits));
  cost.bytes += cost.nodes * kImporterBytesPerNode;
  return cost;
}

bool LooksLikeHloModuleProto(absl::string_view bytes) {
  WireField field;
  if (!ReadWireField(&bytes, &field) || field.number != 1 ||
      field.wire_type != 2 || !IsPrintableName(field.payload)) {
    return false;
  }
  // Walk a few top-level fields until the first computation.
  for (int i = 0; i < 8 && !bytes.empty(); ++i) {
    if (!ReadWireField(&bytes, &field)) return false;
    if (field.number == 3 && field.wire_type == 2) {
      absl::string_view computation = field.payload;
      WireField name;
      return ReadWireField(&computation, &name) && name.number == 1 &&
             name.wire_type == 2 && IsPrintableName(name.payload);
    }
    if (field.number == 2 && field.wire_type != 2) return false;
  }
  return false;
}

}  // namespace gopt::graph::hlo
