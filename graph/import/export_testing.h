#ifndef GOPT_GRAPH_IMPORT_EXPORT_TESTING_H_
#define GOPT_GRAPH_IMPORT_EXPORT_TESTING_H_

// Helpers the exporter tests share (export_round_trip_test,
// hlo_export_test). They report mismatches as gtest failures.

#include <string>
#include <vector>

#include "gopt/v1/plan.pb.h"
#include "graph/graph.h"
#include "graph/import/builtin_exporters.h"
#include "graph/import/builtin_importers.h"
#include "xla/hlo.pb.h"

namespace gopt::graph {

// Every built-in importer and exporter, for a test to import and export.
struct BuiltinRegistries {
  BuiltinRegistries() {
    RegisterBuiltinImporters(&importers);
    RegisterBuiltinExporters(&exporters);
  }
  ImporterRegistry importers;
  ExporterRegistry exporters;
};

// A plan over a small HLO module: everything on device 0, the
// instructions named in `fused` in fusion group 0.
gopt::v1::Plan PlanFusing(const Graph& graph,
                          const std::vector<std::string>& fused);

// The sum of the FLOPs of `graph`'s nodes.
double TotalFlops(const Graph& graph);

// Checks the structure of an exported HloModuleProto with fusions: ids
// unique in the module, every fusion's fused computation before its caller
// and called by nothing else, and a schedule for exactly the computations
// no fusion calls, each listing its own instructions (the fusions, not
// their members) once, operands first. Returns the fusion instructions.
std::vector<xla::HloInstructionProto> CheckFusedModule(
    const xla::HloModuleProto& module);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_IMPORT_EXPORT_TESTING_H_
