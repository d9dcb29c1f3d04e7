#ifndef GOPT_GRAPH_TF_OP_LOWERING_H_
#define GOPT_GRAPH_TF_OP_LOWERING_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_attributes.h"
#include "graph/op_catalog.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"
#include "graph/tf/shape_rules.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// The canonical kind of a TensorFlow op ("Conv2D" -> kConvolution, "Enter"
// -> kLoopControl); kOther for ops gopt does not know.
OpKind TfOpKind(absl::string_view op);

// True for ops that only a host CPU runs (audio and image decoding, string
// processing).
bool IsHostOnlyOp(absl::string_view op);

// A node translated into gopt's conventions.
struct LoweredOp {
  OpKind kind = OpKind::kOther;
  // XLA conventions: convolutions as NHWC/HWIO (or NCHW) dimension numbers
  // with feature_group_count = input channels for depthwise convolutions,
  // MatMul as a dot with contracting dims, pools as reduce-window, etc.
  OpAttributes attributes;
  // For depthwise convolutions: the filter as XLA sees it, [H, W, 1, C*M]
  // (what the attributes' kernel dimensions refer to and what is costed).
  std::optional<TensorType> kernel_view;
  // Cost only output 0 (FusedBatchNorm's statistics outputs are tiny and not
  // computed at inference).
  bool cost_first_output_only = false;
};

// Translates `node`, given its data inputs (final types and, where folded,
// their values) and its final output types. Errors (InvalidArgument naming
// the node and attribute) for attributes of the wrong length or type.
absl::StatusOr<LoweredOp> LowerOp(
    const tensorflow::NodeDef& node,
    absl::Span<const TensorType* const> input_types,
    absl::Span<const TensorInfo* const> input_infos,
    absl::Span<const TensorType> output_types);

// The cost of a lowered node: ComputeOpCost over its inputs (with the
// kernel view substituted) and outputs. Errors name the node.
absl::StatusOr<OpCost> CostOfLoweredOp(
    const tensorflow::NodeDef& node, const LoweredOp& lowered,
    absl::Span<const TensorType* const> input_types,
    absl::Span<const TensorType> output_types);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_OP_LOWERING_H_
