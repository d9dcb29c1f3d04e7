#ifndef GOPT_GRAPH_TF_FUNCTION_INLINING_H_
#define GOPT_GRAPH_TF_FUNCTION_INLINING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// Inlines the calls of functions from `graph_def.library` (TF2 graphs: nodes
// StatefulPartitionedCall / PartitionedCall with attr 'f', or a node whose
// op is a library function's name), recursively, so that the lowering sees
// the ops the functions run:
//  - each argument becomes an Identity (IdentityN for list arguments) named
//    "<call>/<arg>" that reads the call's inputs and waits for its control
//    inputs;
//  - each body node becomes "<call>/<node>", its "node:output_arg:index"
//    inputs turned into flat output indices and attrs given as placeholders
//    resolved from the call's attrs;
//  - the call itself becomes an IdentityN named like the call over the
//    function's return values (control returns as control inputs), so the
//    call's consumers are unchanged.
// Returns nullopt when the graph calls no library function. Errors
// (InvalidArgument naming the call and field): an unknown function, an
// argument count that does not match the call, a return naming no body
// node, recursion deeper than 32 calls, a name collision, or more than
// `max_nodes` nodes after inlining (ResourceExhausted). Pure and
// thread-safe.
absl::StatusOr<std::optional<tensorflow::GraphDef>> InlineFunctionCalls(
    const tensorflow::GraphDef& graph_def, int64_t max_nodes);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_FUNCTION_INLINING_H_
