#ifndef GOPT_GRAPH_NATIVE_NATIVE_IMPORTER_H_
#define GOPT_GRAPH_NATIVE_NATIVE_IMPORTER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/importer.h"

namespace gopt::graph {

// The importer for gopt's own format (format name "gopt"): a serialized
// gopt.v1.Graph, either binary protobuf or its JSON mapping (sniffed by a
// leading '{'). Stateless and thread-safe.
std::unique_ptr<Importer> NewGoptImporter();

// Serializes `graph` as a gopt.v1.Graph: JSON (pretty, field names as in the
// .proto) when `json` is true, else binary. Internal on serializer failure.
absl::StatusOr<std::string> SerializeGraph(const Graph& graph, bool json);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_NATIVE_NATIVE_IMPORTER_H_
