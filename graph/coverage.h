#ifndef GOPT_GRAPH_COVERAGE_H_
#define GOPT_GRAPH_COVERAGE_H_

#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace gopt::graph {

// How much of a graph gopt understands, from the Graph IR alone (any source
// format): how many nodes have shapes derived from the model (not assumed),
// how many are costed by a rule (not by bytes only), and how many loops have
// a known trip count. A value type.
struct GraphCoverage {
  // A count out of a total, with the share it is (1 when the total is 0:
  // nothing was left uncovered).
  struct Count {
    int64_t count = 0;
    int64_t total = 0;
    double share() const {
      return total == 0
                 ? 1.0
                 : static_cast<double>(count) / static_cast<double>(total);
    }
  };

  // Top-level nodes whose every output type is known: a valid element type
  // and no Node::shape_assumed.
  Count known_shapes;
  // Top-level nodes costed by a rule (Node::cost_unknown is false).
  Count cost_rules;
  // Top-level nodes costed by their bytes only (Node::cost_unknown).
  Count bytes_only;
  // Loops anywhere in the graph (attached bodies included, each attached
  // graph once): while nodes (Node::attributes.trip_count, -1 = unknown) and
  // cut loop back edges (LoopInfo::trip_count).
  Count known_trip_counts;
  // Source op names (Node::op) of top-level nodes without a cost rule or
  // with an assumed shape, and how many nodes each has.
  std::map<std::string, int64_t> ops_lacking_rules;
};

// Computes the coverage of `graph`. Pure; thread-safe.
GraphCoverage ComputeCoverage(const Graph& graph);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_COVERAGE_H_
