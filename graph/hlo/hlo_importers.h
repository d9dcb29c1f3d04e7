#ifndef GOPT_GRAPH_HLO_HLO_IMPORTERS_H_
#define GOPT_GRAPH_HLO_HLO_IMPORTERS_H_

#include <memory>

#include "graph/importer.h"

namespace gopt::graph {

// Importer for XLA HLO text (format "hlo"): ParseHloText, then
// LowerHloModule (see graph/hlo/hlo_lowering.h for how HLO becomes a Graph).
// Sniff: the text starts, after whitespace and comments, with `HloModule`.
std::unique_ptr<Importer> NewHloTextImporter();

// Importer for a serialized xla.HloModuleProto (format "hlo-proto"). Sniff:
// field 1 is a printable name and a later field 3 (a computation) starts
// with its own name.
std::unique_ptr<Importer> NewHloProtoImporter();

// Importer for TpuGraphs tuning records (format "tpugraphs"): a
// tpu_graphs.ModuleTuningData, or a TuningData with several modules. One
// module gives that module's graph, layout-configurable exactly where
// config_index_to_node says. Several modules give a graph with one node per
// module (op "module", kind call, named after the module with "#<index>"
// appended to repeated names) whose attached subgraph is the module's graph
// and whose cost is that subgraph's; the modules are independent, so the
// graph has no edges. Sniff: the wire structure of those messages, which a
// bare HloModuleProto does not match. ReadTuningData (graph/hlo/
// tuning_data.h) gives the configurations as well.
std::unique_ptr<Importer> NewTpuGraphsImporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_IMPORTERS_H_
