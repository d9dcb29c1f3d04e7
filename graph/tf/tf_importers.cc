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
#include "graph/status_macros.h"
#include "graph/tf/graphdef_lowering.h"
#include "tensorflow/graph.pb.h"
#include "tensorflow/tfjs_model.pb.h"

namespace gopt::graph {
namespace {

using ::gopt::tensorflow::GraphDef;

// Nesting deeper than this is rejected before any parser recurses.
constexpr int kMaxNesting = 64;

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

// Reads a length-delimited field body.
bool ReadBytes(absl::string_view* data, absl::string_view* bytes) {
  uint64_t length = 0;
  if (!ReadVarint(data, &length) || length > data->size()) return false;
  *bytes = data->substr(0, length);
  data->remove_prefix(length);
  return true;
}

bool IsNodeNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-' ||
         c == '/' || c == '>';
}

// A NodeDef starts with its name (field 1) and op (field 2); TensorFlow op
// names are CamelCase identifiers ("Conv2D", "_FusedConv2D").
bool LooksLikeNodeDef(absl::string_view node) {
  uint64_t tag = 0;
  absl::string_view name, op;
  if (!ReadVarint(&node, &tag) || tag != 0x0a || !ReadBytes(&node, &name) ||
      name.empty() || name.size() > 4096 ||
      !std::all_of(name.begin(), name.end(), IsNodeNameChar)) {
    return false;
  }
  if (!ReadVarint(&node, &tag) || tag != 0x12 || !ReadBytes(&node, &op) ||
      op.empty() || op.size() > 256) {
    return false;
  }
  if (!absl::ascii_isupper(op[0]) && op[0] != '_') return false;
  return std::all_of(op.begin(), op.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// Checks the GraphDef wire layout: only fields 1 (NodeDef), 2 (library),
// 3 (version) and 4 (versions), and a first NodeDef that looks like one.
bool SniffBinaryGraphDef(absl::string_view data) {
  bool saw_node = false;
  for (int fields = 0; fields < 64 && !data.empty(); ++fields) {
    uint64_t tag = 0;
    if (!ReadVarint(&data, &tag)) return false;
    absl::string_view bytes;
    switch (tag) {
      case 0x0a:
        if (!ReadBytes(&data, &bytes)) return false;
        if (!saw_node && !LooksLikeNodeDef(bytes)) return false;
        saw_node = true;
        break;
      case 0x12:
      case 0x22:
        if (!ReadBytes(&data, &bytes)) return false;
        break;
      case 0x18: {
        uint64_t value = 0;
        if (!ReadVarint(&data, &value)) return false;
        break;
      }
      default:
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

absl::Status CheckJsonNesting(absl::string_view json) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNesting) {
        return absl::InvalidArgumentError(absl::StrCat(
            "JSON nests deeper than ", kMaxNesting, " levels at offset ", i));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return absl::OkStatus();
}

class GraphDefImporter final : public Importer {
 public:
  absl::string_view format() const override { return "graphdef"; }

  bool Sniff(absl::string_view contents) const override {
    return SniffTextGraphDef(contents) || SniffBinaryGraphDef(contents);
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    GraphDef graph_def;
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

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    RETURN_IF_ERROR(CheckJsonNesting(contents));
    tensorflow::TfjsModel model;
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
          tf::PartialShape shape,
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
