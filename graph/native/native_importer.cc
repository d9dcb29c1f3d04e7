#include "graph/native/native_importer.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/native/graph_proto.h"
#include "graph/proto_wire.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

bool LooksLikeJson(absl::string_view contents) {
  absl::string_view stripped = absl::StripLeadingAsciiWhitespace(contents);
  return !stripped.empty() && stripped.front() == '{';
}

// gopt.v1.Graph: name 1, source_format 2 (strings), nodes 3 (messages);
// returns the first node's bytes.
bool FirstNodeOfGraph(absl::string_view data, absl::string_view* node) {
  for (int i = 0; i < 4 && !data.empty(); ++i) {
    WireField field;
    if (!ReadWireField(&data, &field) || field.wire_type != 2 ||
        field.number > 3) {
      return false;
    }
    if (field.number == 3) {
      *node = field.payload;
      return true;
    }
  }
  return false;
}

// gopt.v1.Node field 3 is the canonical kind ("dot", "parameter", ...).
bool NodeHasCanonicalKind(absl::string_view node) {
  while (!node.empty()) {
    WireField field;
    if (!ReadWireField(&node, &field)) return false;
    if (field.number == 3) {
      return field.wire_type == 2 && OpKindFromName(field.payload).has_value();
    }
  }
  return false;
}

class GoptImporter final : public Importer {
 public:
  absl::string_view format() const override { return "gopt"; }

  bool Sniff(absl::string_view contents) const override {
    if (LooksLikeJson(contents)) {
      // Other JSON formats (TF.js) have their own top-level keys.
      const absl::string_view head = contents.substr(0, 4096);
      return head.find("\"nodes\"") != absl::string_view::npos &&
             head.find("\"modelTopology\"") == absl::string_view::npos;
    }
    // Binary: other protobuf formats share the wire shape of a
    // gopt.v1.Graph, so walk the top-level fields without parsing (a parse
    // of foreign bytes logs UTF-8 complaints) and require the first node to
    // carry a canonical op-kind name.
    absl::string_view node;
    return FirstNodeOfGraph(contents, &node) && NodeHasCanonicalKind(node);
  }

  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    ASSIGN_OR_RETURN(
        ParseCost cost,
        LooksLikeJson(contents)
            ? JsonParseCost(contents, "nodes", limits)
            : ProtoParseCost(contents, gopt::v1::Graph::descriptor(),
                             NodeTypes{{gopt::v1::Node::descriptor()},
                                       gopt::v1::Node::descriptor()},
                             limits));
    cost.bytes += cost.nodes * kImporterBytesPerNode;
    return cost;
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    google::protobuf::Arena arena(ImportArenaOptions());
    gopt::v1::Graph& proto =
        *google::protobuf::Arena::CreateMessage<gopt::v1::Graph>(&arena);
    if (LooksLikeJson(contents)) {
      // protobuf's JSON reader does not stop at a depth limit of its own.
      RETURN_IF_ERROR(
          JsonParseCost(contents, "nodes", ParseCostLimits()).status());
      google::protobuf::util::JsonParseOptions parse_options;
      parse_options.ignore_unknown_fields = false;
      const auto result = google::protobuf::util::JsonStringToMessage(
          std::string(contents), &proto, parse_options);
      if (!result.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "not a gopt.v1.Graph in JSON: ", result.message().as_string()));
      }
    } else if (contents.size() > static_cast<size_t>(INT32_MAX) ||
               !proto.ParseFromArray(contents.data(),
                                     static_cast<int>(contents.size()))) {
      return absl::InvalidArgumentError(
          "not a gopt.v1.Graph binary protobuf (parse failed: truncated or "
          "corrupt)");
    }
    if (proto.name().empty()) proto.set_name(options.source_name);
    return GraphFromProto(proto, options.limits);
  }
};

}  // namespace

std::unique_ptr<Importer> NewGoptImporter() {
  return std::make_unique<GoptImporter>();
}

absl::StatusOr<std::string> SerializeGraph(const Graph& graph, bool json) {
  const gopt::v1::Graph proto = GraphToProto(graph);
  std::string out;
  if (json) {
    google::protobuf::util::JsonPrintOptions print_options;
    print_options.add_whitespace = true;
    print_options.preserve_proto_field_names = true;
    const auto status =
        google::protobuf::util::MessageToJsonString(proto, &out, print_options);
    if (!status.ok()) {
      return absl::InternalError(absl::StrCat("JSON serialization failed: ",
                                              status.message().as_string()));
    }
    return out;
  }
  if (!proto.SerializeToString(&out)) {
    return absl::InternalError("protobuf serialization failed");
  }
  return out;
}

}  // namespace gopt::graph
