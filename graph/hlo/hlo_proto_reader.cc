#include "graph/hlo/hlo_proto_reader.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/hlo/gopt_export_restore.h"
#include "graph/hlo/hlo_decisions.h"
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

// More devices than any mesh has; the text parser's bound too.
constexpr int64_t kMaxShardingDevices = int64_t{1} << 20;

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// The product of `dims` (each at least 1, the product at most
// kMaxShardingDevices); InvalidArgument naming `field` otherwise.
absl::StatusOr<int64_t> DeviceCount(
    const google::protobuf::RepeatedField<int64_t>& dims,
    absl::string_view field) {
  int64_t count = 1;
  for (int i = 0; i < dims.size(); ++i) {
    if (dims[i] < 1) {
      return FieldError(absl::StrCat(field, "[", i, "]"),
                        absl::StrCat(dims[i], " is not a positive size"));
    }
    count *= dims[i];
    if (count > kMaxShardingDevices) {
      return FieldError(
          field, absl::StrCat("more than ", kMaxShardingDevices, " devices"));
    }
  }
  return count;
}

// The text name of a subgroup kind in `last_tile_dims={...}`.
absl::StatusOr<absl::string_view> SubgroupName(int type,
                                               absl::string_view field) {
  switch (type) {
    case xla::OpSharding::REPLICATED:
      return absl::string_view("replicated");
    case xla::OpSharding::MANUAL:
      return absl::string_view("manual");
    case xla::OpSharding::UNREDUCED:
      return absl::string_view("unreduced");
    default:
      return FieldError(field, absl::StrCat("subgroup type ", type,
                                            " is not REPLICATED, MANUAL or "
                                            "UNREDUCED"));
  }
}

// Appends "devices=[dims]" and the device list (explicit, or the iota form
// `<=[reshape]T(perm)`) of an OTHER sharding, checking that the devices
// fill the tile assignment and lie in [0, device_limit).
absl::Status AppendTileAssignment(const xla::OpSharding& sharding,
                                  int64_t device_limit, absl::string_view field,
                                  std::string* out) {
  const std::string dims_field =
      absl::StrCat(field, ".tile_assignment_dimensions");
  if (sharding.tile_assignment_dimensions().empty()) {
    return FieldError(dims_field, "empty for an OTHER (tiled) sharding");
  }
  ASSIGN_OR_RETURN(
      const int64_t tiles,
      DeviceCount(sharding.tile_assignment_dimensions(), dims_field));
  const std::string dims =
      absl::StrJoin(sharding.tile_assignment_dimensions(), ",");
  absl::StrAppend(out, "devices=[", dims, "]");
  if (device_limit <= 0) device_limit = tiles;
  if (!sharding.iota_reshape_dims().empty()) {
    const std::string reshape_field = absl::StrCat(field, ".iota_reshape_dims");
    if (!sharding.tile_assignment_devices().empty()) {
      return FieldError(reshape_field,
                        "set together with tile_assignment_devices");
    }
    ASSIGN_OR_RETURN(const int64_t devices,
                     DeviceCount(sharding.iota_reshape_dims(), reshape_field));
    if (devices != tiles) {
      return FieldError(reshape_field,
                        absl::StrCat(devices, " devices for the ", tiles,
                                     " tiles of [", dims, "]"));
    }
    if (devices > device_limit) {
      return FieldError(reshape_field, absl::StrCat("device ", devices - 1,
                                                    " is out of range [0, ",
                                                    device_limit, ")"));
    }
    const auto& perm = sharding.iota_transpose_perm();
    const int rank = sharding.iota_reshape_dims_size();
    bool identity = true;
    if (!perm.empty()) {
      std::vector<bool> seen(rank, false);
      for (int i = 0; i < perm.size(); ++i) {
        if (perm.size() != rank || perm[i] < 0 || perm[i] >= rank ||
            seen[perm[i]]) {
          return FieldError(
              absl::StrCat(field, ".iota_transpose_perm"),
              absl::StrCat("[", absl::StrJoin(perm, ","),
                           "] is not a permutation of ", rank, " dimensions"));
        }
        seen[perm[i]] = true;
        identity = identity && perm[i] == i;
      }
    }
    absl::StrAppend(out, "<=[",
                    absl::StrJoin(sharding.iota_reshape_dims(), ","), "]");
    if (!identity) absl::StrAppend(out, "T(", absl::StrJoin(perm, ","), ")");
    return absl::OkStatus();
  }
  const std::string devices_field =
      absl::StrCat(field, ".tile_assignment_devices");
  const auto& devices = sharding.tile_assignment_devices();
  if (devices.size() != tiles) {
    return FieldError(devices_field,
                      absl::StrCat(devices.size(), " devices for the ", tiles,
                                   " tiles of [", dims, "]"));
  }
  absl::flat_hash_set<int64_t> seen;
  for (int i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= device_limit) {
      return FieldError(
          absl::StrCat(devices_field, "[", i, "]"),
          absl::StrCat("device ", devices[i], " is out of range [0, ",
                       device_limit, ")"));
    }
    if (!seen.insert(devices[i]).second) {
      return FieldError(
          absl::StrCat(devices_field, "[", i, "]"),
          absl::StrCat("device ", devices[i], " is listed twice"));
    }
  }
  absl::StrAppend(out, absl::StrJoin(devices, ","));
  return absl::OkStatus();
}

// Appends XLA's text spelling of `sharding` (what `sharding={...}` says in
// HLO text, which is how HloInstruction keeps it) to `out`. Devices are
// partition ids: below `num_partitions` when the module says how many
// (> 1), else below the tile count. InvalidArgument naming the field
// (`field` is its path, "sharding.tuple_shardings[1]").
absl::Status AppendShardingText(const xla::OpSharding& sharding,
                                int64_t num_partitions, absl::string_view field,
                                int depth, std::string* out) {
  if (depth > kMaxHloNestingDepth) {
    return FieldError(field, absl::StrCat("tuple sharding nested deeper than ",
                                          kMaxHloNestingDepth, " levels"));
  }
  const int64_t device_limit = num_partitions > 1 ? num_partitions : 0;
  switch (sharding.type()) {
    case xla::OpSharding::REPLICATED:
      // An unreduced value (partial sums) has the full shape everywhere,
      // as a replicated one.
    case xla::OpSharding::UNREDUCED:
      absl::StrAppend(out, "{replicated}");
      return absl::OkStatus();
    case xla::OpSharding::MANUAL:
      absl::StrAppend(out, "{manual}");
      return absl::OkStatus();
    case xla::OpSharding::UNKNOWN:
      absl::StrAppend(out, "{unknown}");
      return absl::OkStatus();
    case xla::OpSharding::MAXIMAL: {
      const std::string devices_field =
          absl::StrCat(field, ".tile_assignment_devices");
      if (sharding.tile_assignment_devices().empty()) {
        return FieldError(devices_field, "empty for a MAXIMAL sharding");
      }
      const int64_t device = sharding.tile_assignment_devices(0);
      if (device < 0 || (device_limit > 0 && device >= device_limit) ||
          device >= kMaxShardingDevices) {
        return FieldError(
            absl::StrCat(devices_field, "[0]"),
            absl::StrCat("device ", device, " is out of range [0, ",
                         device_limit > 0 ? device_limit : kMaxShardingDevices,
                         ")"));
      }
      absl::StrAppend(out, "{maximal device=", device, "}");
      return absl::OkStatus();
    }
    case xla::OpSharding::TUPLE:
      absl::StrAppend(out, "{");
      for (int i = 0; i < sharding.tuple_shardings_size(); ++i) {
        if (i > 0) absl::StrAppend(out, ", ");
        RETURN_IF_ERROR(AppendShardingText(
            sharding.tuple_shardings(i), num_partitions,
            absl::StrCat(field, ".tuple_shardings[", i, "]"), depth + 1, out));
      }
      absl::StrAppend(out, "}");
      return absl::OkStatus();
    case xla::OpSharding::OTHER:
      break;
    default:
      return FieldError(
          absl::StrCat(field, ".type"),
          absl::StrCat("unknown sharding type ", sharding.type()));
  }
  absl::StrAppend(out, "{");
  RETURN_IF_ERROR(AppendTileAssignment(sharding, device_limit, field, out));
  const int subgroups = sharding.last_tile_dims_size();
  if (sharding.replicate_on_last_tile_dim() && subgroups > 0) {
    return FieldError(absl::StrCat(field, ".last_tile_dims"),
                      "set together with replicate_on_last_tile_dim");
  }
  const int subgroup_dims =
      sharding.replicate_on_last_tile_dim() ? 1 : subgroups;
  if (subgroup_dims > sharding.tile_assignment_dimensions_size()) {
    return FieldError(absl::StrCat(field, ".last_tile_dims"),
                      absl::StrCat(subgroup_dims, " subgroup dimensions of a ",
                                   sharding.tile_assignment_dimensions_size(),
                                   "-dimensional tile assignment"));
  }
  if (sharding.replicate_on_last_tile_dim()) {
    absl::StrAppend(out, " last_tile_dim_replicate");
  } else if (subgroups > 0) {
    absl::StrAppend(out, " last_tile_dims={");
    for (int i = 0; i < subgroups; ++i) {
      ASSIGN_OR_RETURN(
          absl::string_view name,
          SubgroupName(sharding.last_tile_dims(i),
                       absl::StrCat(field, ".last_tile_dims[", i, "]")));
      absl::StrAppend(out, i > 0 ? ", " : "", name);
    }
    absl::StrAppend(out, "}");
  }
  absl::StrAppend(out, "}");
  return absl::OkStatus();
}

// Devices per group of a collective: the iota form's num_devices_per_group,
// else the size of the first explicit group (collective_device_list, then
// the older replica_groups). 0 when no group is given: every device in one
// group, as `replica_groups={}` in text.
absl::StatusOr<int64_t> CollectiveGroupSize(
    const xla::HloInstructionProto& proto) {
  const xla::CollectiveDeviceListProto& list = proto.collective_device_list();
  const auto& groups = list.replica_groups().empty() ? proto.replica_groups()
                                                     : list.replica_groups();
  const char* field = list.replica_groups().empty()
                          ? "replica_groups"
                          : "collective_device_list.replica_groups";
  for (int g = 0; g < groups.size(); ++g) {
    for (int i = 0; i < groups[g].replica_ids_size(); ++i) {
      const int64_t id = groups[g].replica_ids(i);
      if (id < 0 || id >= kMaxShardingDevices) {
        return FieldError(absl::StrCat(field, "[", g, "].replica_ids[", i, "]"),
                          absl::StrCat("device ", id, " is out of range [0, ",
                                       kMaxShardingDevices, ")"));
      }
    }
  }
  if (list.has_iota_replica_group_list()) {
    const int64_t per_group =
        list.iota_replica_group_list().num_devices_per_group();
    if (per_group < 0 || per_group > kMaxShardingDevices) {
      return FieldError(
          "collective_device_list.iota_replica_group_list."
          "num_devices_per_group",
          absl::StrCat(per_group, " is not a group size"));
    }
    return per_group;
  }
  return groups.empty() ? 0 : groups[0].replica_ids_size();
}

// The text literal of a scalar integer or predicate constant ("4",
// "true"), which is what while-loop trip counts read; empty for other
// constants (their values do not change costs).
std::string ScalarLiteralText(const xla::LiteralProto& literal) {
  if (literal.s32s_size() == 1) return absl::StrCat(literal.s32s(0));
  if (literal.s64s_size() == 1) return absl::StrCat(literal.s64s(0));
  if (literal.u32s_size() == 1) return absl::StrCat(literal.u32s(0));
  if (literal.u64s_size() == 1) return absl::StrCat(literal.u64s(0));
  if (literal.preds_size() == 1) return literal.preds(0) ? "true" : "false";
  return "";
}

// Replica and partition counts, auto-sharding and whether a schedule is
// present: what the text format says on its HloModule line.
absl::Status ConvertConfig(const xla::HloModuleProto& proto,
                           HloModuleConfig* config) {
  const xla::DeviceAssignmentProto& assignment = proto.device_assignment();
  if (assignment.replica_count() < 0) {
    return FieldError(
        "device_assignment.replica_count",
        absl::StrCat(assignment.replica_count(), " is not a count"));
  }
  if (assignment.computation_count() < 0) {
    return FieldError(
        "device_assignment.computation_count",
        absl::StrCat(assignment.computation_count(), " is not a count"));
  }
  config->replica_count = std::max(1, assignment.replica_count());
  config->num_partitions = std::max(1, assignment.computation_count());
  config->use_auto_spmd_partitioning = proto.use_auto_spmd_partitioning();
  config->is_scheduled = !proto.schedule().sequences().empty();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HloModule> HloModuleFromProto(const xla::HloModuleProto& proto) {
  HloModule module;
  module.name = proto.name();
  absl::Status config = ConvertConfig(proto, &module.config);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("module '", module.name, "' ", config.message()));
  }
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
      // For messages that name their field already.
      auto field_error = [&](const absl::Status& status) {
        return absl::InvalidArgumentError(
            absl::StrCat("computation '", computation.name, "' instruction '",
                         instruction_proto.name(), "' ", status.message()));
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
      if (instruction_proto.has_sharding()) {
        status = AppendShardingText(instruction_proto.sharding(),
                                    module.config.num_partitions, "sharding", 0,
                                    instruction.sharding.mutable_get());
        if (!status.ok()) return field_error(status);
      }
      const auto& frontend = instruction_proto.frontend_attributes().map();
      if (auto order = frontend.find(std::string(kHloOrderAttribute));
          order != frontend.end()) {
        absl::StatusOr<int32_t> position = ParseExportPosition(
            order->second,
            absl::StrCat("computation '", computation.name, "' instruction '",
                         instruction_proto.name(), "'"));
        if (!position.ok()) return position.status();
        instruction.export_position = *position;
      }
      absl::StatusOr<int64_t> group_size =
          CollectiveGroupSize(instruction_proto);
      if (!group_size.ok()) return field_error(group_size.status());
      instruction.attributes.collective_group_size = *group_size;
      if (instruction.opcode == "constant") {
        std::string literal = ScalarLiteralText(instruction_proto.literal());
        if (!literal.empty()) *instruction.literal.mutable_get() = literal;
      }
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
