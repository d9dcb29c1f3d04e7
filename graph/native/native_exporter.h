#ifndef GOPT_GRAPH_NATIVE_NATIVE_EXPORTER_H_
#define GOPT_GRAPH_NATIVE_NATIVE_EXPORTER_H_

#include <memory>

#include "graph/exporter.h"

namespace gopt::graph {

// Writes gopt's decisions into a gopt.v1.Graph file (binary or its JSON
// mapping, as the original was): the plan goes into Graph.plan, every other
// field stays as it was. Reads Graph.plan back.
std::unique_ptr<Exporter> NewGoptExporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_NATIVE_NATIVE_EXPORTER_H_
