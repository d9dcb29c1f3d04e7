#include "graph/tf/tf_importers.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "graph/proto_wire.h"
#include "graph/tf/graphdef_lowering.h"
#include "tensorflow/graph.pb.h"
#include "tensorflow/tfjs_model.pb.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

using ::gopt::tensorflow::GraphDef;
using ::gopt::tensorflow::NodeDef;

// Nesting deeper than this is rejected before any parser recurses.
constexpr int kMaxNesting = 64;

bool IsNodeNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-' ||
         c == '/' || c == '>';
}

// A NodeDef starts with its name (field 1) and op (field 2); TensorFlow op
// names are CamelCase identifiers ("Conv2D", "_FusedConv2D").
bool LooksLikeNodeDef(absl::string_view node) {
  WireField field;
  if (!ReadWireField(&node, &field) || field.number != 1 ||
      field.wire_type != 2) {
    return false;
  }
  const absl::string_view name = field.payload;
  if (name.empty() || name.size() > 4096 ||
      !std::all_of(name.begin(), name.end(), IsNodeNameChar)) {
    return false;
  }
  if (!ReadWireField(&node, &field) || field.number != 2 ||
      field.wire_type != 2) {
    return false;
  }
  const absl::string_view op = field.payload;
  if (op.empty() || op.size() > 256) return false;
  if (!absl::ascii_isupper(op[0]) && op[0] != '_') return false;
  return std::all_of(op.begin(), op.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// Checks the GraphDef wire layout: only fields 1 (NodeDef), 2 (library),
// 3 (version) and 4 (versions), and a first NodeDef that looks like one.
bool SniffBinaryGraphDef(absl::string_view data) {
  bool saw_node = false;
  for (int fields = 0; fields < 64 && !data.empty(); ++fields) {
    WireField field;
    if (!ReadWireField(&data, &field)) return false;
    const bool is_bytes = field.wire_type == 2;
    if (field.number == 1 && is_bytes) {
      if (!saw_node && !LooksLikeNodeDef(field.payload)) return false;
      saw_node = true;
    } else if (!((field.number == 2 || field.number == 4) && is_bytes) &&
               !(field.number == 3 && field.wire_type == 0)) {
      return false;
    }
  }
  return saw_node;
}

absl::string_view SkipSpaceAndComments(absl::string_view text) {
  while (!text.empty()) {
    if (absl::ascii_isspace(text.front())) {
      text.remove_prefix(1);
    } else if (text.front() == '#') {
      const size_t end = text.find('\n');
      text.remove_prefix(end == absl::string_view::npos ? text.size() : end);
    } else {
      break;
    }
  }
  return text;
}

bool SniffTextGraphDef(absl::string_view text) {
  text = SkipSpaceAndComments(text);
  if (!absl::ConsumePrefix(&text, "node")) return false;
  text = absl::StripLeadingAsciiWhitespace(text);
  return absl::StartsWith(text, "{");
}

// Collects the first protobuf text-format error with its position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ",
                            message);
    }
  }
  void AddWarning(int, int, const std::string&) override {}
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

class GraphDefImporter final : public Importer {
 public:
  absl::string_view format() const override { return "graphdef"; }

  bool Sniff(absl::string_view contents) const override {
    return SniffTextGraphDef(contents) || SniffBinaryGraphDef(contents);
  }

  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    ASSIGN_OR_RETURN(
        ParseCost cost,
        SniffTextGraphDef(contents)
            ? TextParseCost(contents, "node {", kImporterBytesPerNode, limits)
            : ProtoParseCost(
                  contents, GraphDef::descriptor(),
                  NodeTypes{{NodeDef::descriptor()}, NodeDef::descriptor()},
                  limits));
    cost.bytes += cost.nodes * kImporterBytesPerNode;
    return cost;
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    google::protobuf::Arena arena(ImportArenaOptions());
    GraphDef& graph_def =
        *google::protobuf::Arena::CreateMessage<GraphDef>(&arena);
    if (SniffTextGraphDef(contents)) {
      google::protobuf::TextFormat::Parser parser;
      FirstErrorCollector errors;
      parser.RecordErrorsTo(&errors);
      parser.AllowUnknownField(true);
      parser.SetRecursionLimit(kMaxNesting);
      if (!parser.ParseFromString(std::string(contents), &graph_def)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "not a valid GraphDef in text format: ", errors.error()));
      }
    } else if (contents.size() > static_cast<size_t>(INT32_MAX) ||
               !graph_def.ParseFromArray(contents.data(),
                                         static_cast<int>(contents.size()))) {
      return absl::InvalidArgumentError(
          "not a valid binary GraphDef (protobuf parsing failed)");
    }
    return tf::LowerGraphDef(graph_def, format(), options, nullptr);
  }
};

class TfjsImporter final : public Importer {
 public:
  absl::string_view format() const override { return "tfjs"; }

  bool Sniff(absl::string_view contents) const override {
    absl::string_view text = absl::StripLeadingAsciiWhitespace(contents);
    return absl::StartsWith(text, "{") &&
           absl::StrContains(text, "\"modelTopology\"");
  }

  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    ASSIGN_OR_RETURN(ParseCost cost, JsonParseCost(contents, "node", limits));
    cost.bytes += cost.nodes * kImporterBytesPerNode;
    return cost;
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    RETURN_IF_ERROR(
        JsonParseCost(contents, "node", ParseCostLimits()).status());
    google::protobuf::Arena arena(ImportArenaOptions());
    tensorflow::TfjsModel& model =
        *google::protobuf::Arena::CreateMessage<tensorflow::TfjsModel>(&arena);
    google::protobuf::util::JsonParseOptions parse_options;
    parse_options.ignore_unknown_fields = true;
    auto status = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(contents.data(), contents.size()), &model,
        parse_options);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "not a valid TF.js model.json: ", status.message().as_string()));
    }
    if (!model.has_model_topology()) {
      return absl::InvalidArgumentError(
          "TF.js model.json has no 'modelTopology'");
    }
    tf::TfjsHints hints;
    for (const auto& group : model.weights_manifest()) {
      for (const auto& weight : group.weights()) {
        if (weight.shape_size() > tf::kMaxRank) {
          return absl::InvalidArgumentError(
              absl::StrCat("weightsManifest entry '", weight.name(),
                           "' has rank ", weight.shape_size()));
        }
        std::vector<int64_t> shape(weight.shape().begin(),
                                   weight.shape().end());
        for (int64_t dim : shape) {
          if (dim < 0 || dim > kMaxTensorBytes) {
            return absl::InvalidArgumentError(
                absl::StrCat("weightsManifest entry '", weight.name(),
                             "' has dimension ", dim));
          }
        }
        hints.weight_shapes[weight.name()] = std::move(shape);
      }
    }
    for (const auto& [key, input] : model.signature().inputs()) {
      absl::string_view name = input.name().empty() ? key : input.name();
      const size_t colon = name.rfind(':');
      if (colon != absl::string_view::npos) name = name.substr(0, colon);
      ASSIGN_OR_RETURN(
          PartialShape shape,
          tf::ShapeFromProto(input.tensor_shape(), name, "signature shape"));
      hints.input_shapes[std::string(name)] = std::move(shape);
    }
    return tf::LowerGraphDef(model.model_topology(), format(), options, &hints);
  }
};

}  // namespace

std::unique_ptr<Importer> NewGraphDefImporter() {
  return std::make_unique<GraphDefImporter>();
}

std::unique_ptr<Importer> NewTfjsImporter() {
  return std::make_unique<TfjsImporter>();
}

}  // namespace gopt::graph
