#ifndef GOPT_GRAPH_NATIVE_GRAPH_PROTO_H_
#define GOPT_GRAPH_NATIVE_GRAPH_PROTO_H_

#include "absl/status/statusor.h"
#include "gopt/v1/graph.pb.h"
#include "graph/graph.h"

namespace gopt::graph {

// Converts a Graph to its wire form. Lossless: GraphFromProto of the result
// compares equal (CompareGraphs) to `graph`.
gopt::v1::Graph GraphToProto(const Graph& graph);

// Builds a Graph from its wire form. When proto.compute_costs() is set every
// node's costs are recomputed by the op catalog from kind, attributes and
// shapes; otherwise the costs in the message are used as given (and must be
// finite and non-negative). Errors are InvalidArgument naming the node and
// field: unknown kind, input naming a missing node, subgraph index out of
// range, negative cost, invalid shape, cycle. Subgraphs nest at most 32 deep.
absl::StatusOr<Graph> GraphFromProto(const gopt::v1::Graph& proto,
                                     const GraphLimits& limits);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_NATIVE_GRAPH_PROTO_H_
