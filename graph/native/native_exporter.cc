#include "graph/native/native_exporter.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "gopt/v1/graph.pb.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

bool IsJson(absl::string_view contents) {
  absl::string_view stripped = absl::StripLeadingAsciiWhitespace(contents);
  return !stripped.empty() && stripped.front() == '{';
}

absl::StatusOr<gopt::v1::Graph> Parse(absl::string_view contents) {
  gopt::v1::Graph proto;
  if (IsJson(contents)) {
    const auto status = google::protobuf::util::JsonStringToMessage(
        std::string(contents), &proto);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "not a gopt.v1.Graph in JSON: ", status.message().as_string()));
    }
  } else if (contents.size() > static_cast<size_t>(INT32_MAX) ||
             !proto.ParseFromArray(contents.data(),
                                   static_cast<int>(contents.size()))) {
    return absl::InvalidArgumentError("not a binary gopt.v1.Graph");
  }
  return proto;
}

class GoptExporter final : public Exporter {
 public:
  absl::string_view format() const override { return "gopt"; }

  absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const override {
    ASSIGN_OR_RETURN(gopt::v1::Graph proto, Parse(original));
    if (proto.nodes_size() != graph.num_nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the file has ", proto.nodes_size(),
                       " nodes; the graph has ", graph.num_nodes()));
    }
    // The file's node order may differ from the graph's topological order.
    gopt::v1::Plan* embedded = proto.mutable_plan();
    embedded->Clear();
    embedded->set_method(plan.method());
    const int n = graph.num_nodes();
    for (int i = 0; i < proto.nodes_size(); ++i) {
      std::optional<NodeId> id = graph.FindNode(proto.nodes(i).name());
      if (!id.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", proto.nodes(i).name(), "' is not in the graph"));
      }
      if (plan.device_size() == n) embedded->add_device(plan.device(*id));
      if (plan.priority_size() == n) {
        embedded->add_priority(plan.priority(*id));
      }
      if (plan.fusion_group_size() == n) {
        embedded->add_fusion_group(plan.fusion_group(*id));
      }
      if (plan.layout_size() == n) *embedded->add_layout() = plan.layout(*id);
    }
    ExportResult result;
    if (IsJson(original)) {
      google::protobuf::util::JsonPrintOptions print;
      print.add_whitespace = true;
      const auto status = google::protobuf::util::MessageToJsonString(
          proto, &result.contents, print);
      if (!status.ok()) {
        return absl::InternalError(status.message().as_string());
      }
    } else {
      result.contents = SerializeDeterministically(proto);
    }
    return result;
  }

  absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const override {
    ASSIGN_OR_RETURN(gopt::v1::Graph proto, Parse(contents));
    if (!proto.has_plan()) return std::nullopt;
    const gopt::v1::Plan& embedded = proto.plan();
    const int n = proto.nodes_size();
    gopt::v1::Plan plan;
    plan.set_method(embedded.method());
    const std::pair<const char*, int> lists[] = {
        {"device", embedded.device_size()},
        {"priority", embedded.priority_size()},
        {"fusion_group", embedded.fusion_group_size()},
        {"layout", embedded.layout_size()}};
    for (const auto& [field, size] : lists) {
      if (size != 0 && size != n) {
        return absl::InvalidArgumentError(
            absl::StrCat("Graph.plan.", field, " has ", size,
                         " entries; the graph has ", n, " nodes"));
      }
    }
    // Back from file order to the graph's topological order.
    const int g = graph.num_nodes();
    if (embedded.device_size() > 0) plan.mutable_device()->Resize(g, 0);
    if (embedded.priority_size() > 0) plan.mutable_priority()->Resize(g, 0);
    if (embedded.fusion_group_size() > 0) {
      plan.mutable_fusion_group()->Resize(g, -1);
    }
    for (int i = 0; embedded.layout_size() > 0 && i < g; ++i) {
      plan.add_layout();
    }
    for (int i = 0; i < n; ++i) {
      std::optional<NodeId> id = graph.FindNode(proto.nodes(i).name());
      if (!id.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", proto.nodes(i).name(), "' is not in the graph"));
      }
      if (embedded.device_size() > 0) {
        plan.set_device(*id, embedded.device(i));
      }
      if (embedded.priority_size() > 0) {
        plan.set_priority(*id, embedded.priority(i));
      }
      if (embedded.fusion_group_size() > 0) {
        plan.set_fusion_group(*id, embedded.fusion_group(i));
      }
      if (embedded.layout_size() > 0) {
        *plan.mutable_layout(*id) = embedded.layout(i);
      }
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Exporter> NewGoptExporter() {
  return std::make_unique<GoptExporter>();
}

}  // namespace gopt::graph
