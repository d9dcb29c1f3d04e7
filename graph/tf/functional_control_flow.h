#ifndef GOPT_GRAPH_TF_FUNCTIONAL_CONTROL_FLOW_H_
#define GOPT_GRAPH_TF_FUNCTIONAL_CONTROL_FLOW_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_catalog.h"
#include "graph/tf/function_inlining.h"
#include "graph/tf/shape_rules.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// TF2's functional control flow, what tf.function writes for Python loops
// and conditionals: While / StatelessWhile (attrs cond, body, T,
// output_shapes), If / StatelessIf (then_branch, else_branch, Tin, Tout,
// output_shapes) and Case / StatelessCase (branches, Tin, Tout,
// output_shapes). Each such node stays one node whose bodies, functions of
// the GraphDef's library, are lowered into attached subgraphs (as HLO
// while / conditional and ONNX Loop / If are) and give it its cost.

// True for the ops above.
bool IsFunctionalControlFlow(absl::string_view op);

// The number of outputs of functional node `node` with `num_data_inputs`
// data inputs: While: one per input (attr T, when present, must agree);
// If / Case: attr Tout's length. InvalidArgument naming the node and attr
// for a contradiction or a count above `max_outputs`.
absl::StatusOr<int> FunctionalOutputCount(const tensorflow::NodeDef& node,
                                          int num_data_inputs, int max_outputs);

// What the lowering of one GraphDef shares with the lowerings of the
// function bodies it calls, however deeply they nest: the library, the
// functions being lowered (to refuse recursion), the nodes left to lower
// and the bodies already lowered. One per import; not thread-safe.
class FunctionScope {
 public:
  // `library` must outlive the scope. At most `max_nodes` body nodes are
  // lowered in all (bodies reused from the cache count once).
  FunctionScope(const tensorflow::FunctionDefLibrary& library,
                int64_t max_nodes);
  FunctionScope(const FunctionScope&) = delete;
  FunctionScope& operator=(const FunctionScope&) = delete;

  // A body lowered once for a call signature.
  struct Body {
    FunctionGraph function;
    std::shared_ptr<const Graph> graph;
  };

  // Lowers a FunctionGraph into a Graph named after its function (the
  // GraphDef lowering, with this scope for the bodies it calls in turn).
  using Lowerer = std::function<absl::StatusOr<Graph>(
      const tensorflow::GraphDef& graph_def, absl::string_view name,
      FunctionScope* scope)>;

  // The body of `function` called with `args`: from the cache, else built
  // (FunctionBodyGraph) and lowered with `lower`. Errors: those of
  // FunctionBodyGraph and `lower`; InvalidArgument when `function` is being
  // lowered already (recursion) or bodies nest deeper than
  // kMaxFunctionCallDepth; ResourceExhausted past the node budget.
  absl::StatusOr<std::shared_ptr<const Body>> LowerBody(
      const tensorflow::NameAttrList& function,
      absl::Span<const FunctionArg> args, const Lowerer& lower);

  const tensorflow::FunctionDefLibrary& library() const { return library_; }

 private:
  const tensorflow::FunctionDefLibrary& library_;
  int64_t nodes_left_;
  std::vector<std::string> active_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Body>> cache_;
};

// What a functional node lowers to.
struct FunctionalLowering {
  OpKind kind = OpKind::kOther;  // kWhile or kConditional
  std::vector<TensorInfo> outputs;
  // While: body, cond. If: then_branch, else_branch. Case: the branches.
  std::vector<std::shared_ptr<const Graph>> bodies;
  // While: body and cond costs times the trip count (1 when unknown).
  // If / Case: the most expensive branch.
  OpCost cost;
  int64_t trip_count = -1;  // While only; -1 when not derived
  std::vector<std::string> warnings;
};

// Lowers functional node `node` given its data inputs (what inference knows
// of each) and its output count. Output shapes come from attr
// output_shapes where it knows them, else from the bodies' return values.
// A While's trip count is derived when its cond compares a loop variable
// (Less, LessEqual, Greater, GreaterEqual, NotEqual, or a LogicalAnd of
// such) with a constant or with a loop-invariant variable whose initial
// value is known, and its body adds a constant to that variable; otherwise
// the body counts once, with a warning. Errors (InvalidArgument naming the
// node and attr): a missing or malformed function attribute, a function
// the library lacks, an argument or result count the function's signature
// does not match, recursion, and errors lowering the bodies.
absl::StatusOr<FunctionalLowering> LowerFunctionalControlFlow(
    const tensorflow::NodeDef& node, absl::Span<const TensorInfo* const> inputs,
    int num_outputs, FunctionScope* scope, const FunctionScope::Lowerer& lower);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_FUNCTIONAL_CONTROL_FLOW_H_
