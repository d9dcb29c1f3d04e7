#include "graph/coverage.h"

#include <vector>

#include "absl/container/flat_hash_set.h"

namespace gopt::graph {
namespace {

bool TypeKnown(const TensorType& type) {
  if (!type.tuple_elements.empty()) {
    for (const TensorType& element : type.tuple_elements) {
      if (!TypeKnown(element)) return false;
    }
    return true;
  }
  return type.dtype != DType::kInvalid;
}

bool ShapesKnown(const Node& node) {
  if (node.shape_assumed) return false;
  for (const TensorType& output : node.outputs) {
    if (!TypeKnown(output)) return false;
  }
  return true;
}

// Counts while nodes and cut loops in `graph` and every graph attached to
// it, visiting each attached graph once (bodies are shared between nodes).
void CountLoops(const Graph& graph, absl::flat_hash_set<const Graph*>* seen,
                GraphCoverage::Count* loops) {
  if (!seen->insert(&graph).second) return;
  for (const Node& node : graph.nodes()) {
    if (node.kind != OpKind::kWhile) continue;
    ++loops->total;
    if (node.attributes.trip_count >= 0) ++loops->count;
  }
  for (const LoopInfo& loop : graph.loops()) {
    ++loops->total;
    if (loop.trip_count >= 0) ++loops->count;
  }
  for (const auto& subgraph : graph.subgraphs()) {
    CountLoops(*subgraph, seen, loops);
  }
}

}  // namespace

GraphCoverage ComputeCoverage(const Graph& graph) {
  GraphCoverage coverage;
  const int64_t nodes = graph.num_nodes();
  coverage.known_shapes.total = nodes;
  coverage.cost_rules.total = nodes;
  coverage.bytes_only.total = nodes;
  for (const Node& node : graph.nodes()) {
    const bool shapes_known = ShapesKnown(node);
    if (shapes_known) ++coverage.known_shapes.count;
    if (node.cost_unknown) {
      ++coverage.bytes_only.count;
    } else {
      ++coverage.cost_rules.count;
    }
    if (!shapes_known || node.cost_unknown) {
      ++coverage.ops_lacking_rules[node.op];
    }
  }
  absl::flat_hash_set<const Graph*> seen;
  CountLoops(graph, &seen, &coverage.known_trip_counts);
  return coverage;
}

}  // namespace gopt::graph
