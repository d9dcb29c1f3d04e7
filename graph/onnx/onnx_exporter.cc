#include "graph/onnx/onnx_exporter.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/decisions.h"
#include "graph/onnx/onnx_source.h"
#include "onnx/onnx.pb.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

using ::google::protobuf::RepeatedPtrField;
using ::gopt::onnx::ModelProto;
using ::gopt::onnx::NodeProto;
using ::gopt::onnx::StringStringEntryProto;

constexpr int64_t kMultiDeviceIrVersion = 11;
constexpr char kConfigurationKey[] = "gopt.configuration";
constexpr char kDeviceKey[] = "gopt.device";
constexpr char kPriorityKey[] = "gopt.priority";
constexpr char kKernelKey[] = "gopt.kernel";

// The decision of one source element, as the ONNX file holds it.
struct OnnxDecision {
  int32_t device = 0;
  int32_t priority = 0;
  int32_t kernel = -1;
};

// Key of an element of the main graph: a node or a tensor (initializer or
// graph input), as the importer's SourceElement names it.
std::pair<std::string, bool> Key(const SourceElement& source) {
  return {source.name, source.is_tensor};
}

// Sets `key` in `props` to `value`, replacing an entry with that key.
void SetProp(RepeatedPtrField<StringStringEntryProto>* props,
             absl::string_view key, std::string value) {
  for (StringStringEntryProto& prop : *props) {
    if (prop.key() == key) {
      prop.set_value(std::move(value));
      return;
    }
  }
  StringStringEntryProto* prop = props->Add();
  prop->set_key(std::string(key));
  prop->set_value(std::move(value));
}

void RemoveProp(RepeatedPtrField<StringStringEntryProto>* props,
                absl::string_view key) {
  for (int i = 0; i < props->size(); ++i) {
    if (props->Get(i).key() == key) {
      props->DeleteSubrange(i, 1);
      return;
    }
  }
}

const std::string* FindProp(
    const RepeatedPtrField<StringStringEntryProto>& props,
    absl::string_view key) {
  for (const StringStringEntryProto& prop : props) {
    if (prop.key() == key) return &prop.value();
  }
  return nullptr;
}

// Writes priority and kernel (and, for tensors, device) of `decision`.
void SetDecisionProps(const OnnxDecision& decision, bool with_device,
                      RepeatedPtrField<StringStringEntryProto>* props) {
  if (with_device) SetProp(props, kDeviceKey, absl::StrCat(decision.device));
  SetProp(props, kPriorityKey, absl::StrCat(decision.priority));
  if (decision.kernel >= 0) {
    SetProp(props, kKernelKey, absl::StrCat(decision.kernel));
  } else {
    RemoveProp(props, kKernelKey);
  }
}

absl::StatusOr<ModelProto> ParseModel(absl::string_view contents) {
  ModelProto model;
  if (contents.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(contents.data(),
                            static_cast<int>(contents.size())) ||
      !model.has_graph()) {
    return absl::InvalidArgumentError(
        "not an ONNX model (ModelProto with a graph)");
  }
  return model;
}

class OnnxExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "onnx"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const override {
    ASSIGN_OR_RETURN(ModelProto model, ParseModel(original));
    ExportResult result;
    absl::flat_hash_map<std::pair<std::string, bool>, OnnxDecision> decisions;
    for (const gopt::v1::NodeDecision& d : DecisionsBySource(
             graph, plan, std::vector<std::string>(options.devices.size()))) {
      decisions[{d.name(), d.is_tensor()}] =
          OnnxDecision{d.device(), d.priority(), d.kernel()};
    }
    int layouts = 0;
    std::string first_layout;
    for (int i = 0; i < plan.layout_size(); ++i) {
      if (plan.layout(i).minor_to_major().empty()) continue;
      if (layouts++ == 0) first_layout = graph.node(i).name;
    }
    if (layouts > 0) {
      result.warnings.push_back(
          absl::StrCat("ONNX cannot express tensor layouts: ", layouts,
                       " layout decision(s) not written (first: node '",
                       first_layout, "')"));
    }

    // The configuration: replaces one of the same name (a re-export).
    const std::string& config_name = options.topology_name;
    gopt::onnx::DeviceConfigurationProto* config = nullptr;
    for (auto& existing : *model.mutable_configuration()) {
      if (existing.name() == config_name) config = &existing;
    }
    if (config == nullptr) config = model.add_configuration();
    config->Clear();
    config->set_name(config_name);
    config->set_num_devices(static_cast<int32_t>(options.devices.size()));
    for (const ExportDevice& device : options.devices) {
      config->add_device(device.name);
    }
    SetProp(model.mutable_metadata_props(), kConfigurationKey, config_name);
    model.set_ir_version(std::max(model.ir_version(), kMultiDeviceIrVersion));

    gopt::onnx::GraphProto* main = model.mutable_graph();
    // An initializer may also be listed as a graph input: one element.
    absl::flat_hash_set<std::pair<std::string, bool>> written;
    for (NodeProto& node : *main->mutable_node()) {
      auto it = decisions.find(Key({"", OnnxSourceName(node), false}));
      if (it == decisions.end()) continue;
      written.insert(it->first);
      const OnnxDecision& decision = it->second;
      gopt::onnx::NodeDeviceConfigurationProto* placement = nullptr;
      for (auto& existing : *node.mutable_device_configurations()) {
        if (existing.configuration_id() == config_name) placement = &existing;
      }
      if (placement == nullptr) placement = node.add_device_configurations();
      placement->Clear();
      placement->set_configuration_id(config_name);
      for (const std::string& output : node.output()) {
        if (output.empty()) continue;
        gopt::onnx::ShardingSpecProto* spec = placement->add_sharding_spec();
        spec->set_tensor_name(output);
        spec->add_device(decision.device);
      }
      SetDecisionProps(decision, /*with_device=*/false,
                       node.mutable_metadata_props());
    }
    for (auto& init : *main->mutable_initializer()) {
      auto it = decisions.find(Key({"", init.name(), true}));
      if (it == decisions.end()) continue;
      written.insert(it->first);
      SetDecisionProps(it->second, /*with_device=*/true,
                       init.mutable_metadata_props());
    }
    for (auto& input : *main->mutable_input()) {
      auto it = decisions.find(Key({"", input.name(), true}));
      if (it == decisions.end()) continue;
      written.insert(it->first);
      SetDecisionProps(it->second, /*with_device=*/true,
                       input.mutable_metadata_props());
    }
    if (written.size() != decisions.size()) {
      result.warnings.push_back(absl::StrCat(
          decisions.size() - written.size(),
          " decision(s) name elements the model's main graph does not have "
          "(sparse initializers carry no metadata) and were not written"));
    }
    result.contents = model.SerializeAsString();
    return result;
  }

  absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const override {
    ASSIGN_OR_RETURN(ModelProto model, ParseModel(contents));
    const std::string* config_name =
        FindProp(model.metadata_props(), kConfigurationKey);
    if (config_name == nullptr) return std::nullopt;
    const gopt::onnx::DeviceConfigurationProto* config = nullptr;
    for (const auto& existing : model.configuration()) {
      if (existing.name() == *config_name) config = &existing;
    }
    if (config == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metadata_props '", kConfigurationKey, "' names configuration '",
          *config_name, "', which ModelProto.configuration does not have"));
    }
    if (!devices.empty() &&
        static_cast<size_t>(config->device_size()) != devices.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "configuration '", *config_name, "' has ", config->device_size(),
          " devices; the topology has ", devices.size()));
    }
    absl::flat_hash_map<std::pair<std::string, bool>, OnnxDecision> decisions;
    auto read_props = [&](const RepeatedPtrField<StringStringEntryProto>& props,
                          const std::string& what,
                          OnnxDecision* decision) -> absl::Status {
      if (const std::string* v = FindProp(props, kPriorityKey)) {
        ASSIGN_OR_RETURN(
            decision->priority,
            ParseDecisionInt(*v, absl::StrCat(what, " ", kPriorityKey)));
      }
      if (const std::string* v = FindProp(props, kKernelKey)) {
        ASSIGN_OR_RETURN(
            decision->kernel,
            ParseDecisionInt(*v, absl::StrCat(what, " ", kKernelKey)));
      }
      if (const std::string* v = FindProp(props, kDeviceKey)) {
        ASSIGN_OR_RETURN(
            decision->device,
            ParseDecisionInt(*v, absl::StrCat(what, " ", kDeviceKey)));
      }
      if (decision->device < 0 || decision->device >= config->device_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": device ", decision->device,
                         " is not in configuration '", *config_name, "'"));
      }
      return absl::OkStatus();
    };
    for (const NodeProto& node : model.graph().node()) {
      const std::string what =
          absl::StrCat("node '", OnnxSourceName(node), "'");
      OnnxDecision decision;
      for (const auto& placement : node.device_configurations()) {
        if (placement.configuration_id() != *config_name) continue;
        if (placement.sharding_spec_size() > 0 &&
            placement.sharding_spec(0).device_size() > 0) {
          decision.device =
              static_cast<int32_t>(placement.sharding_spec(0).device(0));
        }
      }
      RETURN_IF_ERROR(read_props(node.metadata_props(), what, &decision));
      decisions[{OnnxSourceName(node), false}] = decision;
    }
    for (const auto& init : model.graph().initializer()) {
      OnnxDecision decision;
      RETURN_IF_ERROR(read_props(
          init.metadata_props(),
          absl::StrCat("initializer '", init.name(), "'"), &decision));
      decisions[{init.name(), true}] = decision;
    }
    for (const auto& input : model.graph().input()) {
      OnnxDecision decision;
      RETURN_IF_ERROR(read_props(
          input.metadata_props(),
          absl::StrCat("graph input '", input.name(), "'"), &decision));
      decisions.try_emplace({input.name(), true}, decision);
    }
    gopt::v1::Plan plan;
    plan.set_method("embedded:onnx");
    for (const Node& node : graph.nodes()) {
      OnnxDecision decision;
      if (auto it = decisions.find(Key(node.source)); it != decisions.end()) {
        decision = it->second;
      }
      plan.add_device(decision.device);
      plan.add_priority(decision.priority);
      plan.add_fusion_group(decision.kernel);
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Exporter> NewOnnxExporter() {
  return std::make_unique<OnnxExporter>();
}

}  // namespace gopt::graph
