#ifndef GOPT_GRAPH_ONNX_ONNX_OP_RULES_H_
#define GOPT_GRAPH_ONNX_ONNX_OP_RULES_H_

// Internal to the ONNX importer: per-op-type rules that give an ONNX node
// its canonical kind, its XLA-style attributes, its output types and, for
// shape-computing ops on known small tensors, its output values (constant
// folding). Control flow (If, Loop, Scan) is handled by the importer itself.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/onnx/onnx_tensor.h"
#include "graph/op_attributes.h"
#include "graph/op_kind.h"
#include "onnx/onnx.pb.h"

namespace gopt::graph::onnx_internal {

// The node a rule is applied to: its proto, the opset in force and its
// resolved inputs. Borrowed pointers; lives for one rule call.
class NodeContext {
 public:
  // `inputs` has one entry per NodeProto input; nullptr for an omitted
  // optional input (empty name).
  NodeContext(const gopt::onnx::NodeProto& node, int64_t opset,
              std::vector<const Value*> inputs)
      : node_(node), opset_(opset), inputs_(std::move(inputs)) {}

  const gopt::onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }

  // Input `index`, or nullptr when it is omitted or beyond the list.
  const Value* input(int index) const;
  // Input `index`; InvalidArgument naming `role` when it is missing.
  absl::StatusOr<const Value*> RequiredInput(int index,
                                             absl::string_view role) const;

  // The attribute `name`, or nullptr.
  const gopt::onnx::AttributeProto* FindAttribute(absl::string_view name) const;
  // Typed attribute readers: the default when absent, InvalidArgument when
  // present with another type.
  absl::StatusOr<int64_t> Int(absl::string_view name, int64_t fallback) const;
  absl::StatusOr<float> Float(absl::string_view name, float fallback) const;
  absl::StatusOr<std::string> String(absl::string_view name,
                                     absl::string_view fallback) const;
  // nullopt when absent.
  absl::StatusOr<std::optional<std::vector<int64_t>>> Ints(
      absl::string_view name) const;

 private:
  const gopt::onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<const Value*> inputs_;
};

// What a rule decides about a node.
struct OpInference {
  OpKind kind = OpKind::kOther;
  OpAttributes attributes;
  // The op's outputs in order (type, and contents when folded). Rules
  // produce every output the op can have; the importer keeps as many as the
  // node names.
  std::vector<Value> outputs;
};

// Applies the rule for the node's op type. Errors:
//  - InvalidArgument: the node contradicts itself or its inputs (wrong rank,
//    attribute of the wrong length, mismatched dims); the message names the
//    field but not the node (the caller prefixes it).
//  - Unimplemented: no rule for the op type, or the output shape depends on
//    a value only known at run time (e.g. a Reshape target computed from
//    data); the caller may fall back to declared shapes.
absl::StatusOr<OpInference> InferOp(const NodeContext& context);

}  // namespace gopt::graph::onnx_internal

#endif  // GOPT_GRAPH_ONNX_ONNX_OP_RULES_H_
