#include "graph/importer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/status_macros.h"

namespace gopt::graph {

void ImporterRegistry::Register(std::unique_ptr<Importer> importer) {
  importers_.push_back(std::move(importer));
}

absl::StatusOr<const Importer*> ImporterRegistry::Find(
    absl::string_view format) const {
  for (const auto& importer : importers_) {
    if (importer->format() == format) return importer.get();
  }
  return absl::NotFoundError(absl::StrCat("unknown format '", format,
                                          "'; known formats: auto, ",
                                          absl::StrJoin(formats(), ", ")));
}

absl::StatusOr<const Importer*> ImporterRegistry::Detect(
    absl::string_view contents) const {
  if (contents.empty()) {
    return absl::InvalidArgumentError("file is empty");
  }
  for (const auto& importer : importers_) {
    if (importer->Sniff(contents)) return importer.get();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "not a recognised graph format (tried ", absl::StrJoin(formats(), ", "),
      "); pass --format to choose one"));
}

absl::StatusOr<const Importer*> ImporterRegistry::Resolve(
    absl::string_view contents, absl::string_view format,
    const ImportOptions& options, std::string* context) const {
  absl::StatusOr<const Importer*> importer =
      format == "auto" ? Detect(contents) : Find(format);
  if (!importer.ok()) return Annotate(importer.status(), options.source_name);
  *context =
      absl::StrCat(options.source_name, " (", (*importer)->format(), ")");
  // An empty message is a valid protobuf of every binary format; it is
  // still never a graph.
  if (contents.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(*context, ": file is empty"));
  }
  return importer;
}

absl::StatusOr<ParseCost> ImporterRegistry::EstimateCost(
    absl::string_view contents, absl::string_view format,
    const ImportOptions& options) const {
  std::string context;
  ASSIGN_OR_RETURN(const Importer* importer,
                   Resolve(contents, format, options, &context));
  ParseCostLimits limits;
  limits.max_depth = kMaxImportNesting;
  limits.max_nodes =
      options.limits.max_nodes >
              std::numeric_limits<int64_t>::max() / kWireNodesPerGraphNode
          ? std::numeric_limits<int64_t>::max()
          : options.limits.max_nodes * kWireNodesPerGraphNode;
  absl::StatusOr<ParseCost> cost = importer->EstimateCost(contents, limits);
  if (absl::IsResourceExhausted(cost.status())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        context, ": ", cost.status().message(), " (", kWireNodesPerGraphNode,
        " x the ", options.limits.max_nodes,
        " graph nodes allowed, for subgraph and fused bodies)"));
  }
  if (!cost.ok()) return Annotate(cost.status(), context);
  return cost;
}

absl::StatusOr<Graph> ImporterRegistry::Import(
    absl::string_view contents, absl::string_view format,
    const ImportOptions& options) const {
  return Import(contents, format, options,
                [](const ParseCost&) { return absl::OkStatus(); });
}

absl::StatusOr<Graph> ImporterRegistry::Import(
    absl::string_view contents, absl::string_view format,
    const ImportOptions& options,
    absl::FunctionRef<absl::Status(const ParseCost&)> admit) const {
  ASSIGN_OR_RETURN(const ParseCost cost,
                   EstimateCost(contents, format, options));
  RETURN_IF_ERROR(admit(cost));
  std::string context;
  ASSIGN_OR_RETURN(const Importer* importer,
                   Resolve(contents, format, options, &context));
  absl::StatusOr<Graph> graph = importer->Import(contents, options);
  if (!graph.ok()) return Annotate(graph.status(), context);
  if (graph->num_nodes() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": the graph has no nodes"));
  }
  return graph;
}

absl::StatusOr<Graph> ImporterRegistry::ImportFile(
    const std::string& path, absl::string_view format,
    ImportOptions options) const {
  ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  if (options.source_name == ImportOptions().source_name) {
    options.source_name = path;
  }
  return Import(contents, format, options);
}

std::vector<std::string> ImporterRegistry::formats() const {
  std::vector<std::string> names;
  for (const auto& importer : importers_) {
    names.emplace_back(importer->format());
  }
  return names;
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::error_code error_code;
  if (std::filesystem::is_directory(path, error_code)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory, not a graph file"));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    const std::string reason = std::strerror(error);
    if (error == EACCES) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": ", reason));
    }
    return absl::NotFoundError(absl::StrCat(path, ": ", reason));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) {
    return absl::InternalError(absl::StrCat(path, ": read error"));
  }
  return contents.str();
}

}  // namespace gopt::graph
