#include "graph/hlo/tuning_data.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/hlo/hlo_proto_reader.h"
#include "graph/proto_wire.h"
#include "tpu_graphs/tuning.pb.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

// The payload of `message`'s first field when it is field 1 with bytes.
bool FirstFieldOne(absl::string_view message, absl::string_view* payload) {
  WireField field;
  if (!ReadWireField(&message, &field) || field.number != 1 ||
      field.wire_type != 2) {
    return false;
  }
  *payload = field.payload;
  return true;
}

// An HloModuleProto: a printable name, then a named computation (a bare
// name check would accept a TF NodeDef, which also starts with one).
bool IsHloModuleMessage(absl::string_view message) {
  return LooksLikeHloModuleProto(message);
}

bool IsModuleTuningDataMessage(absl::string_view message) {
  absl::string_view module;
  return FirstFieldOne(message, &module) && IsHloModuleMessage(module);
}

bool IsTuningDataMessage(absl::string_view message) {
  absl::string_view module;
  return FirstFieldOne(message, &module) && IsModuleTuningDataMessage(module);
}

// 6 values (0-padded), sum, product (0 for an absent list).
void AppendBounds(const google::protobuf::RepeatedField<int64_t>& bounds,
                  std::vector<float>* out) {
  double sum = 0;
  double product = bounds.empty() ? 0 : 1;
  for (int i = 0; i < 6; ++i) {
    out->push_back(i < bounds.size() ? static_cast<float>(bounds[i]) : 0.0f);
  }
  for (int64_t bound : bounds) {
    sum += static_cast<double>(bound);
    product *= static_cast<double>(bound);
  }
  out->push_back(static_cast<float>(sum));
  out->push_back(static_cast<float>(product));
}

absl::StatusOr<TuningModule> ReadModule(
    const tpu_graphs::ModuleTuningData& data, int module_index,
    const ImportOptions& options) {
  const std::string where =
      absl::StrCat("module ", module_index, " '", data.module().name(), "'");
  absl::StatusOr<HloModule> module = HloModuleFromProto(data.module());
  if (!module.ok()) return Annotate(module.status(), where);

  // config_index_to_node counts instructions over all computations in order.
  std::vector<HloInstructionRef> flat;
  for (size_t c = 0; c < module->computations.size(); ++c) {
    for (size_t i = 0; i < module->computations[c].instructions.size(); ++i) {
      flat.emplace_back(static_cast<int32_t>(c), static_cast<int32_t>(i));
    }
  }
  HloLoweringOptions lowering;
  lowering.format = "tpugraphs";
  lowering.limits = options.limits;
  lowering.layout_configurable.emplace();
  std::vector<HloInstructionRef> configurable;
  for (int k = 0; k < data.config_index_to_node_size(); ++k) {
    const int64_t index = data.config_index_to_node(k);
    if (index < 0 || index >= static_cast<int64_t>(flat.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " config_index_to_node[", k, "]: ", index,
          " is outside the module's ", flat.size(), " instructions"));
    }
    configurable.push_back(flat[index]);
    lowering.layout_configurable->insert(flat[index]);
  }
  absl::flat_hash_map<HloInstructionRef, HloNodeLocation> locations;
  absl::StatusOr<Graph> graph = LowerHloModule(*module, lowering, &locations);
  if (!graph.ok()) return Annotate(graph.status(), where);

  TuningModule result;
  result.name = data.module().name();
  result.fingerprint = data.fingerprint();
  result.graph = *std::move(graph);
  for (size_t k = 0; k < configurable.size(); ++k) {
    auto it = locations.find(configurable[k]);
    if (it == locations.end()) {
      const HloInstructionRef ref = configurable[k];
      return absl::InvalidArgumentError(absl::StrCat(
          where, " config_index_to_node[", k, "]: instruction '",
          module->computations[ref.first].instructions[ref.second].name,
          "' of computation '", module->computations[ref.first].name,
          "' is not a node of the lowered graph"));
    }
    result.configurable_nodes.push_back(it->second);
  }
  const size_t num_configurable = configurable.size();
  // Both counts come from the file: bound their product before allocating.
  constexpr uint64_t kMaxFeatureValues = uint64_t{1} << 28;
  if (static_cast<uint64_t>(num_configurable) * kLayoutNodeFeatures *
          static_cast<uint64_t>(data.runs_size()) >
      kMaxFeatureValues) {
    return absl::ResourceExhaustedError(absl::StrCat(
        where, ": ", data.runs_size(), " runs x ", num_configurable,
        " configurable nodes exceed 2^28 layout feature values"));
  }
  result.configs.reserve(data.runs_size());
  for (int r = 0; r < data.runs_size(); ++r) {
    const tpu_graphs::ConfigProfile& run = data.runs(r);
    TuningConfig config;
    config.runtime_ns = run.profile().compute_time_ns();
    config.is_default = run.is_default();
    config.error = run.error();
    if (run.has_op_config()) {
      const tpu_graphs::TileSizeConfig& tile =
          run.op_config().tile_size_config();
      config.tile_features.reserve(kTileConfigFeatures);
      AppendBounds(tile.kernel_bounds(), &config.tile_features);
      AppendBounds(tile.output_bounds(), &config.tile_features);
      AppendBounds(tile.input_bounds(), &config.tile_features);
    }
    const auto& nodes = run.module_config().layout_config().nodes();
    if (static_cast<size_t>(nodes.size()) > num_configurable) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " run ", r, " layout_config: ", nodes.size(),
                       " nodes for ", num_configurable, " configurable nodes"));
    }
    config.layout_features.assign(num_configurable * kLayoutNodeFeatures,
                                  -1.0f);
    for (int k = 0; k < nodes.size(); ++k) {
      const auto& tensors = nodes[k].tensors();
      for (int t = 0; t < tensors.size() && t < 3; ++t) {
        const auto& dims = tensors[t].dims();
        for (int d = 0; d < dims.size() && d < 6; ++d) {
          config.layout_features[k * kLayoutNodeFeatures + t * 6 + d] =
              static_cast<float>(dims[d]);
        }
      }
    }
    result.configs.push_back(std::move(config));
  }
  return result;
}

}  // namespace

absl::StatusOr<TuningDataset> ReadTuningData(absl::string_view bytes,
                                             const ImportOptions& options) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("tuning data larger than 2 GiB");
  }
  const int size = static_cast<int>(bytes.size());
  TuningDataset dataset;
  google::protobuf::Arena arena(ImportArenaOptions());
  if (IsTuningDataMessage(bytes)) {
    tpu_graphs::TuningData& data =
        *google::protobuf::Arena::CreateMessage<tpu_graphs::TuningData>(&arena);
    if (!data.ParseFromArray(bytes.data(), size)) {
      return absl::InvalidArgumentError(
          "not a valid serialized tpu_graphs.TuningData");
    }
    for (int m = 0; m < data.modules_size(); ++m) {
      ASSIGN_OR_RETURN(TuningModule module,
                       ReadModule(data.modules(m), m, options));
      dataset.modules.push_back(std::move(module));
    }
    return dataset;
  }
  if (IsModuleTuningDataMessage(bytes)) {
    tpu_graphs::ModuleTuningData& data =
        *google::protobuf::Arena::CreateMessage<tpu_graphs::ModuleTuningData>(
            &arena);
    if (!data.ParseFromArray(bytes.data(), size)) {
      return absl::InvalidArgumentError(
          "not a valid serialized tpu_graphs.ModuleTuningData");
    }
    ASSIGN_OR_RETURN(TuningModule module, ReadModule(data, 0, options));
    dataset.modules.push_back(std::move(module));
    return dataset;
  }
  return absl::InvalidArgumentError(
      "not tpu_graphs tuning data (expected a TuningData or ModuleTuningData "
      "whose module starts with its name)");
}

absl::StatusOr<ParseCost> TuningDataParseCost(absl::string_view bytes,
                                              const ParseCostLimits& limits) {
  const google::protobuf::Descriptor* root =
      IsTuningDataMessage(bytes) ? tpu_graphs::TuningData::descriptor()
                                 : tpu_graphs::ModuleTuningData::descriptor();
  ASSIGN_OR_RETURN(ParseCost cost,
                   ProtoParseCost(bytes, root, InstructionNodes(), limits));
  cost.bytes += cost.nodes * kImporterBytesPerNode;
  return cost;
}

bool LooksLikeTuningData(absl::string_view bytes) {
  return IsTuningDataMessage(bytes) || IsModuleTuningDataMessage(bytes);
}

}  // namespace gopt::graph::hlo
