#include "graph/native/native_importer.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/native/graph_proto.h"
#include "graph/status_macros.h"

namespace gopt::graph {
namespace {

bool LooksLikeJson(absl::string_view contents) {
  absl::string_view stripped = absl::StripLeadingAsciiWhitespace(contents);
  return !stripped.empty() && stripped.front() == '{';
}

bool ReadVarint(absl::string_view* data, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && !data->empty(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(data->front());
    data->remove_prefix(1);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Reads one field; for length-delimited fields `payload` is the bytes.
bool ReadField(absl::string_view* data, uint32_t* number, uint32_t* wire_type,
               absl::string_view* payload) {
  uint64_t tag = 0;
  if (!ReadVarint(data, &tag) || tag >> 3 == 0 || tag >> 3 > (1u << 29)) {
    return false;
  }
  *number = static_cast<uint32_t>(tag >> 3);
  *wire_type = static_cast<uint32_t>(tag & 7);
  uint64_t value = 0;
  switch (*wire_type) {
    case 0:
      return ReadVarint(data, &value);
    case 1:
      if (data->size() < 8) return false;
      data->remove_prefix(8);
      return true;
    case 2:
      if (!ReadVarint(data, &value) || value > data->size()) return false;
      *payload = data->substr(0, value);
      data->remove_prefix(value);
      return true;
    case 5:
      if (data->size() < 4) return false;
      data->remove_prefix(4);
      return true;
    default:
      return false;
  }
}

// gopt.v1.Graph: name 1, source_format 2 (strings), nodes 3 (messages);
// returns the first node's bytes.
bool FirstNodeOfGraph(absl::string_view data, absl::string_view* node) {
  for (int i = 0; i < 4 && !data.empty(); ++i) {
    uint32_t number = 0, wire_type = 0;
    absl::string_view payload;
    if (!ReadField(&data, &number, &wire_type, &payload) || wire_type != 2 ||
        number > 3) {
      return false;
    }
    if (number == 3) {
      *node = payload;
      return true;
    }
  }
  return false;
}

// gopt.v1.Node field 3 is the canonical kind ("dot", "parameter", ...).
bool NodeHasCanonicalKind(absl::string_view node) {
  while (!node.empty()) {
    uint32_t number = 0, wire_type = 0;
    absl::string_view payload;
    if (!ReadField(&node, &number, &wire_type, &payload)) return false;
    if (number == 3) {
      return wire_type == 2 && OpKindFromName(payload).has_value();
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

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    gopt::v1::Graph proto;
    if (LooksLikeJson(contents)) {
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
