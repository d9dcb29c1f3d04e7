#ifndef GOPT_GRAPH_TF_GRAPHDEF_LOWERING_H_
#define GOPT_GRAPH_TF_GRAPHDEF_LOWERING_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/importer.h"
#include "graph/tf/attr_util.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// What a TF.js model.json knows beside its GraphDef: weight shapes from the
// weightsManifest (the GraphDef's Const nodes carry no values there) and
// input shapes from the signature.
struct TfjsHints {
  // Shape of each weight, by Const node name.
  absl::flat_hash_map<std::string, std::vector<int64_t>> weight_shapes;
  // Shape of each graph input, by Placeholder node name.
  absl::flat_hash_map<std::string, PartialShape> input_shapes;
};

// Lowers a GraphDef into a Graph named options.source_name with the given
// format ("graphdef" or "tfjs"). `hints` may be null.
//
// - Calls of functions in the GraphDef's library (StatefulPartitionedCall,
//   PartitionedCall) are inlined first (function_inlining.h).
// - Inputs "name", "name:k" and "^name" become data and control edges; a
//   node's output count comes from its op (Split: num_split, FusedBatchNormV3:
//   6, ...) or, for unknown ops, from the highest output its consumers read.
// - TF1 while loops: each NextIteration -> Merge back edge is cut and one
//   LoopInfo is recorded per frame, with the trip count found from a
//   constant bound of the loop condition (Less(i, n), LessEqual, and
//   LogicalAnd of several), else -1 with a warning. Body nodes keep the cost
//   of one iteration; the frame's Merge nodes carry trip_count. Any other
//   cycle is an error naming its nodes.
// - Output shapes: `_output_shapes` when present, else the op's shape rule
//   (constant-folding small integer tensors), with TF.js hints. Unknown
//   dimensions of graph inputs (Placeholder, IteratorGetNext: an unknown
//   batch) take options.default_symbolic_dim before inference runs on, with
//   one warning naming them; dimensions that stay unknown further down take
//   it too, with a warning naming the nodes. A tensor assigned into a
//   variable (Assign with validate_shape, e.g. a saver's RestoreV2 output)
//   takes the variable's shape.
// - Variable initializers of TF1 training graphs: a node that reads no graph
//   input, variable or loop frame (transitively, through data inputs) and
//   whose data all ends in the value input of an Assign / AssignVariableOp
//   (the random or constant initial values the init op assigns once) is
//   costed at zero FLOPs (its bytes stay), with one warning giving the count
//   and the FLOPs left out, so that the graph's FLOPs are one step's. Not
//   applied inside function bodies.
// - Kinds, attributes (XLA conventions) and costs via ComputeOpCost; host-only
//   ops (audio/image decoding, strings) are kCpuOnly; `_class` "loc:@x"
//   attributes become colocation groups named after x.
//
// Errors: InvalidArgument naming the node and field (a dangling input, a bad
// attribute, contradictory shapes, a cycle outside loops, a tensor too large
// to be real); ResourceExhausted when the graph exceeds options.limits.
// Thread-safe (no shared state).
absl::StatusOr<Graph> LowerGraphDef(const tensorflow::GraphDef& graph_def,
                                    absl::string_view format,
                                    const ImportOptions& options,
                                    const TfjsHints* hints);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_GRAPHDEF_LOWERING_H_
