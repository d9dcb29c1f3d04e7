#ifndef GOPT_GRAPH_FINGERPRINT_H_
#define GOPT_GRAPH_FINGERPRINT_H_

#include <string>

#include "graph/graph.h"

namespace gopt::graph {

// Version of what GraphFingerprint hashes; part of every fingerprint, so a
// change to the recipe never matches a fingerprint made by the old one.
inline constexpr int kGraphFingerprintVersion = 2;

// A stable digest of everything in `graph` that changes what a plan costs,
// and nothing else: "g2-" followed by 64 hex digits (SHA-256 of the fields
// below, integers as varints).
//
// Hashed, in node (topological) order: each node's canonical op kind and
// source op, output tensor types (dtype, dims, layout, tuple elements),
// FLOPs, bytes read/written/communicated, cost_unknown, device constraint,
// layout-configurable flag, colocation group index, the attributes that
// enter the op catalog's costs and the fusion rules (dimensions, dot and
// convolution dimension numbers, windows, group counts, collective group
// size, trip count, root), and its in-edges (source index and output, input
// slot, control); then the loops' trip counts, the SPMD partition count and
// each subgraph's fields.
//
// Not hashed: node, graph, loop-frame and colocation-group names, the
// source format and the import warnings. So a re-export of a model with
// renamed nodes has the same fingerprint; a change of one shape, dtype,
// edge or cost-changing attribute gives another. Since plans are indexed
// by node position, two graphs with one fingerprint take the same plans.
//
// Deterministic across processes, hosts and builds. O(nodes + edges).
std::string GraphFingerprint(const Graph& graph);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_FINGERPRINT_H_
