#include "graph/hlo/testing/hlo_module_to_proto.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/hlo/hlo_importers.h"
#include "graph/hlo/hlo_sharding.h"
#include "graph/hlo/hlo_text_parser.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo::testing {
namespace {

absl::StatusOr<xla::PrimitiveType> ElementType(DType dtype) {
  switch (dtype) {
    case DType::kPred:
      return xla::PRED;
    case DType::kS8:
      return xla::S8;
    case DType::kS16:
      return xla::S16;
    case DType::kS32:
      return xla::S32;
    case DType::kS64:
      return xla::S64;
    case DType::kU8:
      return xla::U8;
    case DType::kU16:
      return xla::U16;
    case DType::kU32:
      return xla::U32;
    case DType::kU64:
      return xla::U64;
    case DType::kF16:
      return xla::F16;
    case DType::kBF16:
      return xla::BF16;
    case DType::kF32:
      return xla::F32;
    case DType::kF64:
      return xla::F64;
    case DType::kToken:
      return xla::TOKEN;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("no proto element type for ", DTypeName(dtype)));
  }
}

absl::Status WriteShape(const HloShape& shape, xla::ShapeProto* proto) {
  if (shape.is_tuple) {
    proto->set_element_type(xla::TUPLE);
    for (const HloShape& element : shape.tuple_shapes) {
      RETURN_IF_ERROR(WriteShape(element, proto->add_tuple_shapes()));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(xla::PrimitiveType type, ElementType(shape.dtype));
  proto->set_element_type(type);
  for (int64_t dim : shape.dims) proto->add_dimensions(dim);
  for (int32_t dim : shape.minor_to_major) {
    proto->mutable_layout()->add_minor_to_major(dim);
  }
  return absl::OkStatus();
}

absl::StatusOr<xla::OpSharding::Type> SubgroupType(absl::string_view name) {
  if (name == "replicated") return xla::OpSharding::REPLICATED;
  if (name == "manual") return xla::OpSharding::MANUAL;
  if (name == "unreduced") return xla::OpSharding::UNREDUCED;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown subgroup type '", name, "'"));
}

absl::Status WriteSharding(const HloSharding& sharding,
                           xla::OpSharding* proto) {
  switch (sharding.kind) {
    case HloSharding::Kind::kReplicated:
      proto->set_type(xla::OpSharding::REPLICATED);
      return absl::OkStatus();
    case HloSharding::Kind::kManual:
      proto->set_type(xla::OpSharding::MANUAL);
      return absl::OkStatus();
    case HloSharding::Kind::kUnknown:
      proto->set_type(xla::OpSharding::UNKNOWN);
      return absl::OkStatus();
    case HloSharding::Kind::kMaximal:
      proto->set_type(xla::OpSharding::MAXIMAL);
      proto->add_tile_assignment_dimensions(1);
      proto->add_tile_assignment_devices(sharding.device);
      return absl::OkStatus();
    case HloSharding::Kind::kTuple:
      proto->set_type(xla::OpSharding::TUPLE);
      for (const HloSharding& element : sharding.elements) {
        RETURN_IF_ERROR(WriteSharding(element, proto->add_tuple_shardings()));
      }
      return absl::OkStatus();
    case HloSharding::Kind::kTiled:
      break;
  }
  proto->set_type(xla::OpSharding::OTHER);
  for (int64_t dim : sharding.tile_dims) {
    proto->add_tile_assignment_dimensions(dim);
  }
  bool in_order = true;
  for (size_t i = 0; i < sharding.devices.size(); ++i) {
    in_order = in_order && sharding.devices[i] == static_cast<int64_t>(i);
  }
  if (in_order) {
    proto->add_iota_reshape_dims(static_cast<int64_t>(sharding.devices.size()));
  } else {
    for (int64_t device : sharding.devices) {
      proto->add_tile_assignment_devices(device);
    }
  }
  if (sharding.subgroup_dims > 0 && sharding.subgroup_types.empty()) {
    proto->set_replicate_on_last_tile_dim(true);
  }
  for (const std::string& name : sharding.subgroup_types) {
    ASSIGN_OR_RETURN(xla::OpSharding::Type type, SubgroupType(name));
    proto->add_last_tile_dims(type);
  }
  return absl::OkStatus();
}

// A scalar integer or predicate literal ("4", "true"); other literals are
// not written (the proto reader keeps only these).
void WriteLiteral(const HloInstruction& instruction,
                  xla::LiteralProto* literal) {
  const std::string& text = instruction.literal.get();
  if (!instruction.shape.dims.empty() || text.empty()) return;
  int64_t value = 0;
  switch (instruction.shape.dtype) {
    case DType::kPred:
      literal->add_preds(text == "true");
      return;
    case DType::kS32:
      if (absl::SimpleAtoi(text, &value)) {
        literal->add_s32s(static_cast<int32_t>(value));
      }
      return;
    case DType::kS64:
      if (absl::SimpleAtoi(text, &value)) literal->add_s64s(value);
      return;
    default:
      return;
  }
}

void WriteAttributes(const HloInstruction& instruction,
                     xla::HloInstructionProto* proto) {
  const OpAttributes& attributes = instruction.attributes;
  for (int64_t dim : attributes.dimensions) proto->add_dimensions(dim);
  if (attributes.has_dot_dimensions) {
    xla::DotDimensionNumbers* dot = proto->mutable_dot_dimension_numbers();
    for (int64_t d : attributes.dot().lhs_batch)
      dot->add_lhs_batch_dimensions(d);
    for (int64_t d : attributes.dot().rhs_batch)
      dot->add_rhs_batch_dimensions(d);
    for (int64_t d : attributes.dot().lhs_contracting) {
      dot->add_lhs_contracting_dimensions(d);
    }
    for (int64_t d : attributes.dot().rhs_contracting) {
      dot->add_rhs_contracting_dimensions(d);
    }
  }
  for (size_t i = 0; i < attributes.slice_starts().size(); ++i) {
    xla::HloInstructionProto::SliceDimensions* slice =
        proto->add_slice_dimensions();
    slice->set_start(attributes.slice_starts()[i]);
    slice->set_limit(attributes.slice_limits()[i]);
    slice->set_stride(attributes.slice_strides()[i]);
  }
  for (const PaddingDimension& padding : attributes.padding()) {
    xla::PaddingConfig::PaddingConfigDimension* dim =
        proto->mutable_padding_config()->add_dimensions();
    dim->set_edge_padding_low(padding.low);
    dim->set_edge_padding_high(padding.high);
    dim->set_interior_padding(padding.interior);
  }
  if (instruction.opcode == "parameter") {
    proto->set_parameter_number(attributes.parameter_number);
  }
  if (instruction.opcode == "get-tuple-element") {
    proto->set_tuple_index(attributes.tuple_index);
  }
  proto->set_comparison_direction(attributes.comparison());
  proto->set_custom_call_target(attributes.custom_call_target());
  proto->set_backend_config(instruction.backend_config.get());
  proto->set_fusion_kind(instruction.fusion_kind.get());
  if (attributes.collective_group_size > 0) {
    xla::ReplicaGroup* group = proto->add_replica_groups();
    for (int64_t i = 0; i < attributes.collective_group_size; ++i) {
      group->add_replica_ids(i);
    }
  }
  WriteLiteral(instruction, proto->mutable_literal());
}

}  // namespace

absl::StatusOr<xla::HloModuleProto> HloModuleToProto(const HloModule& module) {
  xla::HloModuleProto proto;
  proto.set_name(module.name);
  if (module.config.num_partitions > 1 || module.config.replica_count > 1) {
    proto.mutable_device_assignment()->set_computation_count(
        static_cast<int32_t>(module.config.num_partitions));
    proto.mutable_device_assignment()->set_replica_count(
        static_cast<int32_t>(module.config.replica_count));
  }
  proto.set_use_auto_spmd_partitioning(
      module.config.use_auto_spmd_partitioning);
  int64_t next_id = 1;
  for (size_t c = 0; c < module.computations.size(); ++c) {
    const HloComputation& computation = module.computations[c];
    xla::HloComputationProto* out = proto.add_computations();
    out->set_name(computation.name);
    out->set_id(static_cast<int64_t>(c) + 1);
    const int64_t first_id = next_id;
    std::vector<int64_t> sequence;
    for (const HloInstruction& instruction : computation.instructions) {
      xla::HloInstructionProto* written = out->add_instructions();
      written->set_name(instruction.name);
      written->set_opcode(instruction.opcode);
      written->set_id(next_id);
      sequence.push_back(next_id++);
      absl::Status status =
          WriteShape(instruction.shape, written->mutable_shape());
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(instruction.name, ": ", status.message()));
      }
      for (int32_t operand : instruction.operands) {
        written->add_operand_ids(first_id + operand);
      }
      for (int32_t called : instruction.called_computations) {
        written->add_called_computation_ids(called + 1);
      }
      WriteAttributes(instruction, written);
      if (!instruction.sharding.get().empty()) {
        absl::StatusOr<HloSharding> sharding =
            ParseHloSharding(instruction.sharding.get());
        if (sharding.ok()) {
          status = WriteSharding(*sharding, written->mutable_sharding());
        }
        if (!sharding.ok() || !status.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              instruction.name, ": ",
              sharding.ok() ? status.message() : sharding.status().message()));
        }
      }
    }
    out->set_root_id(first_id + computation.root);
    if (module.config.is_scheduled) {
      auto& ids = (*proto.mutable_schedule()->mutable_sequences())[out->id()];
      for (int64_t id : sequence) ids.add_instruction_ids(id);
    }
  }
  proto.set_entry_computation_id(module.entry + 1);
  proto.set_entry_computation_name(module.entry_computation().name);
  return proto;
}

absl::StatusOr<Graph> ImportHloTextAsProto(const std::string& text) {
  ASSIGN_OR_RETURN(HloModule module, ParseHloText(text));
  ASSIGN_OR_RETURN(xla::HloModuleProto proto, HloModuleToProto(module));
  return NewHloProtoImporter()->Import(proto.SerializeAsString(),
                                       ImportOptions());
}

}  // namespace gopt::graph::hlo::testing
