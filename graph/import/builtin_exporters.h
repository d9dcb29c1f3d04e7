#ifndef GOPT_GRAPH_IMPORT_BUILTIN_EXPORTERS_H_
#define GOPT_GRAPH_IMPORT_BUILTIN_EXPORTERS_H_

#include "graph/exporter.h"

namespace gopt::graph {

// Registers every exporter gopt ships, by the importer format it writes:
// gopt, onnx, graphdef, tfjs, hlo (text), hlo-proto; and why tpugraphs
// has none.
//
//   ExporterRegistry exporters;
//   RegisterBuiltinExporters(&exporters);
//   ASSIGN_OR_RETURN(const Exporter* onnx, exporters.Find("onnx"));
void RegisterBuiltinExporters(ExporterRegistry* registry);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_IMPORT_BUILTIN_EXPORTERS_H_
