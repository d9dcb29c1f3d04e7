#include "graph/tf/tf_exporter.h"

#include <queue>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "graph/decisions.h"
#include "nlohmann/json.hpp"
#include "tensorflow/graph.pb.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

using ::gopt::tensorflow::GraphDef;
using ::gopt::tensorflow::NodeDef;

constexpr char kClusterAttr[] = "_XlaCluster";
constexpr char kPriorityAttr[] = "_gopt_priority";
constexpr char kClusterPrefix[] = "gopt_kernel_";
constexpr char kDevicePrefix[] = "/job:localhost/replica:0/task:0/device:";

// One node's decision, by NodeDef name.
struct TfDecision {
  int32_t device = 0;
  int32_t priority = 0;
  int32_t kernel = -1;
};

std::string KindName(absl::string_view kind) {
  if (kind == "gpu") return "GPU";
  if (kind == "tpu") return "TPU";
  return "CPU";
}

// The decisions by NodeDef name, and the control inputs the schedule
// becomes with ScheduleAs::kControlDeps (by NodeDef name, to add).
struct TfAnnotations {
  absl::flat_hash_map<std::string, TfDecision> decisions;
  absl::flat_hash_map<std::string, std::vector<std::string>> control_inputs;
  std::vector<std::string> warnings;
};

// Orders the nodes as a list scheduler would run them: among the nodes
// whose inputs are done, the highest priority first (ties: topological
// order). The result is a topological order.
std::vector<NodeId> PriorityOrder(const Graph& graph,
                                  const gopt::v1::Plan& plan) {
  const int n = graph.num_nodes();
  std::vector<int> waiting(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    waiting[id] = static_cast<int>(graph.in_edges(id).size());
  }
  auto priority = [&](NodeId id) {
    return plan.priority_size() > 0 ? plan.priority(id) : 0;
  };
  auto later = [&](NodeId a, NodeId b) {
    if (priority(a) != priority(b)) return priority(a) < priority(b);
    return a > b;
  };
  std::priority_queue<NodeId, std::vector<NodeId>, decltype(later)> ready(
      later);
  for (NodeId id = 0; id < n; ++id) {
    if (waiting[id] == 0) ready.push(id);
  }
  std::vector<NodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (const Edge& edge : graph.out_edges(id)) {
      if (--waiting[edge.dst] == 0) ready.push(edge.dst);
    }
  }
  return order;
}

TfAnnotations Annotate(const Graph& graph, const gopt::v1::Plan& plan,
                       const ExportOptions& options) {
  TfAnnotations out;
  for (const gopt::v1::NodeDecision& d : DecisionsBySource(
           graph, plan, std::vector<std::string>(options.devices.size()))) {
    out.decisions[d.name()] = TfDecision{d.device(), d.priority(), d.kernel()};
  }
  int layouts = 0;
  for (const auto& layout : plan.layout()) {
    if (!layout.minor_to_major().empty()) ++layouts;
  }
  if (layouts > 0) {
    out.warnings.push_back(absl::StrCat(
        "a GraphDef cannot express tensor layouts (TensorFlow chooses them "
        "in XLA): ",
        layouts, " layout decision(s) not written"));
  }
  if (options.schedule_as != ScheduleAs::kControlDeps) return out;
  if (!graph.loops().empty()) {
    out.warnings.push_back(absl::StrCat(
        "the schedule is written as ", kPriorityAttr,
        " attributes, not control inputs: the graph has TF1 loops, and a "
        "control input may not cross a loop frame"));
    return out;
  }
  std::vector<NodeId> last_on_device(options.devices.size(), -1);
  for (NodeId id : PriorityOrder(graph, plan)) {
    const Node& node = graph.node(id);
    if (node.source.empty()) continue;
    const int device = plan.device_size() > 0 ? plan.device(id) : 0;
    const NodeId previous = last_on_device[device];
    last_on_device[device] = id;
    if (previous < 0) continue;
    bool direct = false;
    for (const Edge& edge : graph.in_edges(id)) direct |= edge.src == previous;
    if (!direct) {
      out.control_inputs[node.source.name].push_back(
          graph.node(previous).source.name);
    }
  }
  return out;
}

// Parses "/job:.../device:GPU:K" (or "/device:GPU:K", "GPU:K") into the
// topology's device index.
absl::StatusOr<int32_t> ParseTfDevice(absl::string_view device,
                                      absl::Span<const ExportDevice> devices,
                                      absl::string_view node) {
  const size_t at = device.rfind("device:");
  absl::string_view spec =
      at == absl::string_view::npos ? device : device.substr(at + 7);
  std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
  int ordinal = 0;
  if (parts.size() == 2 && absl::SimpleAtoi(parts[1], &ordinal)) {
    int seen = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (KindName(devices[i].kind) != parts[0]) continue;
      if (seen++ == ordinal) return static_cast<int32_t>(i);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "node '", node, "' field 'device': '", device,
      "' names no device of the topology (", devices.size(), " device(s))"));
}

absl::StatusOr<int32_t> ParseCluster(absl::string_view cluster,
                                     absl::string_view node) {
  int32_t kernel = 0;
  if (!absl::ConsumePrefix(&cluster, kClusterPrefix) ||
      !absl::SimpleAtoi(cluster, &kernel) || kernel < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node, "' attr ", kClusterAttr, ": '", cluster,
                     "' is not a cluster gopt wrote (", kClusterPrefix, "K)"));
  }
  return kernel;
}

// Builds the plan for `graph` from decisions by NodeDef name; nullopt when
// no node carries any.
std::optional<gopt::v1::Plan> PlanFrom(
    const Graph& graph,
    const absl::flat_hash_map<std::string, TfDecision>& decisions,
    absl::string_view method) {
  if (decisions.empty()) return std::nullopt;
  gopt::v1::Plan plan;
  plan.set_method(std::string(method));
  for (const Node& node : graph.nodes()) {
    TfDecision decision;
    if (auto it = decisions.find(node.source.name); it != decisions.end()) {
      decision = it->second;
    }
    plan.add_device(decision.device);
    plan.add_priority(decision.priority);
    plan.add_fusion_group(decision.kernel);
  }
  return plan;
}

class GraphDefExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "graphdef"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const override {
    GraphDef graph_def;
    bool text = false;
    ASSIGN_OR_RETURN(graph_def, Parse(original, &text));
    TfAnnotations annotations = Annotate(graph, plan, options);
    for (NodeDef& node : *graph_def.mutable_node()) {
      auto it = annotations.decisions.find(node.name());
      if (it == annotations.decisions.end()) continue;
      const TfDecision& d = it->second;
      node.set_device(TfDeviceString(options.devices, d.device));
      auto& attrs = *node.mutable_attr();
      if (d.kernel >= 0) {
        attrs[std::string(kClusterAttr)].set_s(
            absl::StrCat(kClusterPrefix, d.kernel));
      } else {
        attrs.erase(std::string(kClusterAttr));
      }
      attrs[std::string(kPriorityAttr)].set_i(d.priority);
      if (auto c = annotations.control_inputs.find(node.name());
          c != annotations.control_inputs.end()) {
        for (const std::string& input : c->second) {
          node.add_input(absl::StrCat("^", input));
        }
      }
    }
    ExportResult result;
    result.warnings = std::move(annotations.warnings);
    if (text) {
      google::protobuf::TextFormat::PrintToString(graph_def, &result.contents);
    } else {
      result.contents = SerializeDeterministically(graph_def);
    }
    return result;
  }

  absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const override {
    bool text = false;
    ASSIGN_OR_RETURN(GraphDef graph_def, Parse(contents, &text));
    absl::flat_hash_map<std::string, TfDecision> decisions;
    for (const NodeDef& node : graph_def.node()) {
      // A device the file had before gopt wrote into it is not a decision.
      if (node.attr().count(std::string(kPriorityAttr)) == 0) continue;
      TfDecision& d = decisions[node.name()];
      ASSIGN_OR_RETURN(d.device,
                       ParseTfDevice(node.device(), devices, node.name()));
      if (auto it = node.attr().find(std::string(kClusterAttr));
          it != node.attr().end()) {
        ASSIGN_OR_RETURN(d.kernel, ParseCluster(it->second.s(), node.name()));
      }
      if (auto it = node.attr().find(std::string(kPriorityAttr));
          it != node.attr().end()) {
        d.priority = static_cast<int32_t>(it->second.i());
      }
    }
    return PlanFrom(graph, decisions, "embedded:graphdef");
  }

 private:
  static absl::StatusOr<GraphDef> Parse(absl::string_view contents,
                                        bool* text) {
    GraphDef graph_def;
    if (contents.size() <= static_cast<size_t>(INT32_MAX) &&
        graph_def.ParseFromArray(contents.data(),
                                 static_cast<int>(contents.size()))) {
      *text = false;
      return graph_def;
    }
    google::protobuf::TextFormat::Parser parser;
    if (!parser.ParseFromString(std::string(contents), &graph_def)) {
      return absl::InvalidArgumentError(
          "not a binary GraphDef, nor a text GraphDef whose every field "
          "gopt's schema declares (one it does not would be lost on export)");
    }
    *text = true;
    return graph_def;
  }
};

using Json = nlohmann::ordered_json;

class TfjsExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "tfjs"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const override {
    ASSIGN_OR_RETURN(Json model, Parse(original));
    TfAnnotations annotations = Annotate(graph, plan, options);
    for (Json& node : model["modelTopology"]["node"]) {
      if (!node.is_object() || !node.contains("name") ||
          !node["name"].is_string()) {
        continue;
      }
      const std::string name = node["name"].get<std::string>();
      auto it = annotations.decisions.find(name);
      if (it == annotations.decisions.end()) continue;
      const TfDecision& d = it->second;
      node["device"] = TfDeviceString(options.devices, d.device);
      Json& attrs = node["attr"];
      if (!attrs.is_object()) attrs = Json::object();
      if (d.kernel >= 0) {
        // The protobuf JSON mapping writes bytes as base64 and int64 as a
        // string; TF.js reads attributes that way.
        attrs[kClusterAttr] = {
            {"s", absl::Base64Escape(absl::StrCat(kClusterPrefix, d.kernel))}};
      } else {
        attrs.erase(kClusterAttr);
      }
      attrs[kPriorityAttr] = {{"i", absl::StrCat(d.priority)}};
      if (auto c = annotations.control_inputs.find(name);
          c != annotations.control_inputs.end()) {
        Json& inputs = node["input"];
        if (!inputs.is_array()) inputs = Json::array();
        for (const std::string& input : c->second) {
          inputs.push_back(absl::StrCat("^", input));
        }
      }
    }
    ExportResult result;
    result.warnings = std::move(annotations.warnings);
    result.contents = model.dump();
    return result;
  }

  absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const override {
    ASSIGN_OR_RETURN(Json model, Parse(contents));
    absl::flat_hash_map<std::string, TfDecision> decisions;
    for (const Json& node : model["modelTopology"]["node"]) {
      if (!node.is_object() || !node.contains("device") ||
          !node["device"].is_string() || !node.contains("name") ||
          !node["name"].is_string() || !node.contains("attr") ||
          !node["attr"].is_object() || !node["attr"].contains(kPriorityAttr)) {
        continue;  // not a decision gopt wrote
      }
      const std::string name = node["name"].get<std::string>();
      TfDecision& d = decisions[name];
      ASSIGN_OR_RETURN(
          d.device,
          ParseTfDevice(node["device"].get<std::string>(), devices, name));
      const Json& attrs = node["attr"];
      if (attrs.contains(kClusterAttr)) {
        std::string cluster;
        const Json& s = attrs[kClusterAttr].value("s", Json(""));
        if (!s.is_string() ||
            !absl::Base64Unescape(s.get<std::string>(), &cluster)) {
          return absl::InvalidArgumentError(
              absl::StrCat("node '", name, "' attr ", kClusterAttr,
                           ": 's' is not base64 text"));
        }
        ASSIGN_OR_RETURN(d.kernel, ParseCluster(cluster, name));
      }
      if (attrs.contains(kPriorityAttr)) {
        const Json& i = attrs[kPriorityAttr].value("i", Json("0"));
        int32_t priority = 0;
        if (!i.is_string() ||
            !absl::SimpleAtoi(i.get<std::string>(), &priority)) {
          return absl::InvalidArgumentError(
              absl::StrCat("node '", name, "' attr ", kPriorityAttr,
                           ": 'i' is not an integer string"));
        }
        d.priority = priority;
      }
    }
    return PlanFrom(graph, decisions, "embedded:tfjs");
  }

 private:
  static absl::StatusOr<Json> Parse(absl::string_view contents) {
    Json model = Json::parse(contents.begin(), contents.end(), nullptr,
                             /*allow_exceptions=*/false);
    if (model.is_discarded() || !model.is_object() ||
        !model.contains("modelTopology") ||
        !model["modelTopology"].is_object() ||
        !model["modelTopology"].contains("node") ||
        !model["modelTopology"]["node"].is_array()) {
      return absl::InvalidArgumentError(
          "not a TF.js graph model (JSON with modelTopology.node)");
    }
    return model;
  }
};

}  // namespace

std::string TfDeviceString(absl::Span<const ExportDevice> devices, int index) {
  const std::string kind = KindName(devices[index].kind);
  int ordinal = 0;
  for (int i = 0; i < index; ++i) {
    if (KindName(devices[i].kind) == kind) ++ordinal;
  }
  return absl::StrCat(kDevicePrefix, kind, ":", ordinal);
}

std::unique_ptr<Exporter> NewGraphDefExporter() {
  return std::make_unique<GraphDefExporter>();
}

std::unique_ptr<Exporter> NewTfjsExporter() {
  return std::make_unique<TfjsExporter>();
}

}  // namespace gopt::graph
