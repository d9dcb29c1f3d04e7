#ifndef GOPT_GRAPH_ONNX_ONNX_GRAPH_IMPORTER_H_
#define GOPT_GRAPH_ONNX_ONNX_GRAPH_IMPORTER_H_

// Internal to the ONNX importer: the importer of one GraphProto, shared by
// onnx_importer.cc (values, nodes, order, the model) and
// onnx_control_flow.cc (If, Loop and Scan bodies). Not for other callers.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/importer.h"
#include "graph/onnx/onnx_op_rules.h"
#include "graph/op_catalog.h"
#include "onnx/onnx.pb.h"

namespace gopt::graph::onnx_internal {

using ::gopt::onnx::AttributeProto;
using ::gopt::onnx::GraphProto;
using ::gopt::onnx::ModelProto;
using ::gopt::onnx::NodeProto;
using ::gopt::onnx::TypeProto;
using ::gopt::onnx::ValueInfoProto;

// Nesting depth of If/Loop/Scan bodies accepted; real models nest 2-3 deep.
inline constexpr int kMaxSubgraphDepth = 16;
// Largest Loop trip count taken from a constant M. Exporters write
// INT64_MAX for "until the condition fails", which is not a trip count.
inline constexpr int64_t kMaxTripCount = int64_t{1} << 31;
inline constexpr int64_t kMinTestedOpset = 9;
inline constexpr int64_t kMaxTestedOpset = 18;

// State shared by a model's main graph and all of its subgraphs.
struct ImportState {
  const ImportOptions* options = nullptr;
  int64_t opset = 0;
  absl::flat_hash_set<std::string> warned_symbols;
  // Symbols that took ImportOptions::default_symbolic_dim, quoted, in order.
  std::vector<std::string> defaulted_symbols;
  std::vector<std::string> warnings;
  int64_t total_nodes = 0;
};

// A node's name and op type as error messages show them.
inline std::string NodeLabel(absl::string_view name, absl::string_view op) {
  return absl::StrCat("node '", name, "' (", op, ")");
}

// One imported control-flow body: its frozen graph, outputs and the names
// of enclosing values it reads.
struct ControlFlowBody {
  std::shared_ptr<const Graph> graph;
  std::vector<Value> outputs;
  std::vector<std::string> captured;
};

// What importing an If, Loop or Scan yields before it becomes a node.
struct ControlFlowParts {
  OpKind kind = OpKind::kOther;
  std::vector<ControlFlowBody> bodies;
  std::vector<Value> outputs;
  OpCost cost;
  // Set for loops (Loop: the folded trip count or -1; Scan: the sequence).
  std::optional<int64_t> trip_count;
};

// Imports one GraphProto (the model's main graph or a control-flow body)
// into a GraphBuilder. Not thread-safe; one per graph per import.
class GraphImporter {
 public:
  GraphImporter(ImportState* state, const GraphProto& proto,
                GraphImporter* parent, int depth, std::string name)
      : state_(state),
        proto_(proto),
        parent_(parent),
        depth_(depth),
        builder_(std::move(name), "onnx") {}

  // Imports the graph. `formal_inputs` gives the types of a Loop/Scan body's
  // inputs by position (the graph's declared input types are then ignored);
  // nullptr for the main graph, whose inputs carry their own types.
  absl::Status Import(const std::vector<TensorType>* formal_inputs);

  // Freezes the graph; call once after Import.
  absl::StatusOr<Graph> Build();

  // The graph's outputs in order, after Import.
  const std::vector<Value>& outputs() const { return outputs_; }
  // Names of enclosing-graph values the graph reads, in first-use order.
  const std::vector<std::string>& captured() const { return captured_; }

 private:
  void Warn(std::string warning) {
    state_->warnings.push_back(std::move(warning));
  }
  absl::Status CountNode();
  std::string UniqueName(absl::string_view wanted);

  // The value named `name` here or, captured, in an enclosing graph.
  absl::StatusOr<const Value*> Resolve(const std::string& name);
  bool CanResolve(const std::string& name) const;

  // The concrete type of a declared ValueInfo; nullopt when it declares no
  // tensor type or no shape. Symbolic and unknown dims get their values here
  // (with warnings).
  absl::StatusOr<std::optional<TensorType>> DeclaredType(
      const ValueInfoProto& info);
  // Checks `inferred` against the declaration of tensor `name`, if any.
  absl::Status CheckDeclared(const std::string& name,
                             const TensorType& inferred,
                             absl::string_view where) const;

  absl::Status AddInputsAndInitializers(
      const std::vector<TensorType>* formal_inputs);
  absl::StatusOr<std::vector<int>> TopologicalOrder();
  absl::Status ImportNode(const NodeProto& node, int index);
  // If, Loop and Scan: the op's bodies become subgraphs of one node.
  absl::Status ImportControlFlow(const NodeProto& node, const std::string& name,
                                 const std::vector<const Value*>& inputs);
  // Imports body `graph` (attribute `role` of node `name`) as a child graph;
  // `formal` gives its input types by position (nullptr: declared types).
  absl::StatusOr<ControlFlowBody> ImportBody(
      const GraphProto& graph, const std::string& name, absl::string_view role,
      const std::vector<TensorType>* formal);
  // One function per control-flow op: bodies, outputs and cost of the node.
  absl::StatusOr<ControlFlowParts> ImportIf(
      const NodeProto& node, const std::string& name,
      const std::vector<const Value*>& inputs);
  absl::StatusOr<ControlFlowParts> ImportLoop(
      const NodeProto& node, const std::string& name,
      const std::vector<const Value*>& inputs);
  absl::StatusOr<ControlFlowParts> ImportScan(
      const NodeProto& node, const std::string& name,
      const std::vector<const Value*>& inputs);
  // The outputs of an If whose condition is not folded: the branches'
  // types, or where they differ the declared (else the larger) type.
  absl::StatusOr<std::vector<Value>> MergeBranchOutputs(
      const NodeProto& node, const std::string& name,
      const ControlFlowBody& then_body, const ControlFlowBody& else_body);
  // Adds the control-flow node made of `parts`, its input and captured
  // edges, and its output values.
  absl::Status AddControlFlowNode(const NodeProto& node,
                                  const std::string& name,
                                  const std::vector<const Value*>& inputs,
                                  ControlFlowParts parts);
  // Runs the node's rule again with its run-time integer inputs replaced by
  // bounded stand-ins (onnx_runtime_bounds.h), warning with `label`, what
  // was assumed and `why` the value was unknown; nullopt when no input can
  // be bounded or the rule still fails.
  absl::StatusOr<std::optional<OpInference>> InferWithBoundedInputs(
      const NodeProto& proto, const std::string& label,
      const std::vector<const Value*>& inputs, const absl::Status& why);
  absl::StatusOr<std::vector<TensorType>> DeclaredOutputTypes(
      const NodeProto& node);
  int AddValueNode(Node node, const std::string& tensor, Value value);

  ImportState* state_;
  const GraphProto& proto_;
  GraphImporter* parent_;
  int depth_;
  GraphBuilder builder_;
  // Values by tensor name; node_hash_map keeps Value pointers stable.
  absl::node_hash_map<std::string, Value> values_;
  absl::flat_hash_map<std::string, const ValueInfoProto*> declared_;
  absl::flat_hash_set<std::string> node_names_;
  std::vector<std::string> captured_;
  std::vector<Value> outputs_;
  int64_t next_parameter_ = 0;
};

}  // namespace gopt::graph::onnx_internal

#endif  // GOPT_GRAPH_ONNX_ONNX_GRAPH_IMPORTER_H_
