#include "client/apply.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/decisions.h"
#include "graph/import/builtin_importers.h"
#include "nlohmann/json.hpp"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"

namespace gopt::client {
namespace {

// The file at `path` as the importers see it, and its graph.
struct ImportedFile {
  engine::SourceFile file;
  graph::Graph graph;
};

absl::StatusOr<ImportedFile> ImportFile(const std::string& path,
                                        const GraphReadOptions& read) {
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  ImportedFile imported;
  ASSIGN_OR_RETURN(imported.file.contents, graph::ReadFileToString(path));
  if (read.format.empty() || read.format == "auto") {
    ASSIGN_OR_RETURN(const graph::Importer* importer,
                     importers.Detect(imported.file.contents));
    imported.file.format = std::string(importer->format());
  } else {
    imported.file.format = read.format;
  }
  graph::ImportOptions import = read.import;
  import.source_name = path;
  ASSIGN_OR_RETURN(
      imported.graph,
      importers.Import(imported.file.contents, imported.file.format, import));
  return imported;
}

}  // namespace

absl::Status RunApply(const ApplyOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(const simulator::Plan plan,
                   simulator::LoadPlan(options.plan_path));
  ASSIGN_OR_RETURN(const simulator::Topology topology,
                   simulator::LoadTopology(options.topology));
  ASSIGN_OR_RETURN(const graph::ScheduleAs schedule_as,
                   engine::ParseScheduleAs(options.schedule_as));
  ASSIGN_OR_RETURN(ImportedFile imported,
                   ImportFile(options.path, options.read));
  ASSIGN_OR_RETURN(
      graph::ExportResult exported,
      engine::ApplyPlan(imported.file, imported.graph,
                        simulator::PlanToProto(plan), topology, schedule_as));
  RETURN_IF_ERROR(WriteFileBytes(options.write_path, exported.contents));
  if (options.json) {
    nlohmann::ordered_json report = {{"path", options.write_path},
                                     {"format", imported.file.format},
                                     {"bytes", exported.contents.size()},
                                     {"warnings", exported.warnings}};
    out << report.dump(2) << "\n";
    return absl::OkStatus();
  }
  out << "wrote " << options.write_path << " (" << imported.file.format << ", "
      << exported.contents.size() << " bytes) with the plan's decisions for "
      << imported.graph.num_nodes() << " nodes on " << topology.name << "\n";
  for (const std::string& warning : exported.warnings) {
    out << "warning: " << warning << "\n";
  }
  return absl::OkStatus();
}

absl::StatusOr<gopt::v1::Plan> EmbeddedPlanOf(const std::string& path,
                                              const GraphReadOptions& read,
                                              const std::string& topology) {
  ASSIGN_OR_RETURN(ImportedFile imported, ImportFile(path, read));
  ASSIGN_OR_RETURN(const simulator::Topology loaded,
                   simulator::LoadTopology(topology));
  ASSIGN_OR_RETURN(
      std::optional<gopt::v1::Plan> plan,
      engine::ReadEmbeddedPlan(imported.file, imported.graph, loaded));
  if (!plan.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        path, " carries no plan (write one with `gopt optimize FILE ",
        "--write=OUT` or `gopt apply`), and no --plan was given"));
  }
  return *std::move(plan);
}

}  // namespace gopt::client
