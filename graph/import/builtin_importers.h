#ifndef GOPT_GRAPH_IMPORT_BUILTIN_IMPORTERS_H_
#define GOPT_GRAPH_IMPORT_BUILTIN_IMPORTERS_H_

#include "graph/importer.h"

namespace gopt::graph {

// Registers every importer gopt ships, in sniffing order (most specific
// binary formats first, permissive text formats last):
// gopt, tpugraphs, hlo-proto, onnx, graphdef, tfjs, hlo.
//
//   ImporterRegistry registry;
//   RegisterBuiltinImporters(&registry);
//   ASSIGN_OR_RETURN(Graph graph, registry.ImportFile(path, "auto", {}));
void RegisterBuiltinImporters(ImporterRegistry* registry);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_IMPORT_BUILTIN_IMPORTERS_H_
