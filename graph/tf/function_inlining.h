#ifndef GOPT_GRAPH_TF_FUNCTION_INLINING_H_
#define GOPT_GRAPH_TF_FUNCTION_INLINING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/shape_inference.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// The deepest chain of function calls followed: calls inlined into calls,
// and functional control flow (While / If / Case bodies) nested in bodies.
inline constexpr int kMaxFunctionCallDepth = 32;

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
// node, recursion deeper than kMaxFunctionCallDepth calls, a name
// collision, or more than
// `max_nodes` nodes after inlining (ResourceExhausted). Pure and
// thread-safe.
absl::StatusOr<std::optional<tensorflow::GraphDef>> InlineFunctionCalls(
    const tensorflow::GraphDef& graph_def, int64_t max_nodes);

// One argument of a function lowered on its own (FunctionBodyGraph): its
// element type and shape and, for a small integer tensor whose contents
// are known, its values.
struct FunctionArg {
  tensorflow::DataType dtype = tensorflow::DT_FLOAT;
  PartialShape shape;
  std::optional<std::vector<int64_t>> value;
};

// A library function as a graph of its own (a While body, an If branch).
struct FunctionGraph {
  // The function's body inlined (InlineFunctionCalls): the arguments, then
  // the body's nodes, then the IdentityN `result` over its return values.
  tensorflow::GraphDef graph_def;
  // Node names of the arguments, in order: a Placeholder ("_arg<k>") shaped
  // like the argument, or a Const holding its value when it is known.
  std::vector<std::string> args;
  // The IdentityN whose output k is the function's return value k (named
  // after the function).
  std::string result;
};

// Builds the graph of `function` (a function-valued attribute: the name
// and the attributes it binds) from `library`, called with `args`, by
// inlining one call of it. Errors (InvalidArgument): a function the library
// lacks, an argument count its signature does not take, and every error of
// InlineFunctionCalls; ResourceExhausted past `max_nodes`. Pure and
// thread-safe.
absl::StatusOr<FunctionGraph> FunctionBodyGraph(
    const tensorflow::FunctionDefLibrary& library,
    const tensorflow::NameAttrList& function,
    absl::Span<const FunctionArg> args, int64_t max_nodes);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_FUNCTION_INLINING_H_
