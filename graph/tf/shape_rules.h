#ifndef GOPT_GRAPH_TF_SHAPE_RULES_H_
#define GOPT_GRAPH_TF_SHAPE_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/shape_inference.h"
#include "graph/tensor_type.h"
#include "graph/tf/attr_util.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// What inference knows about one tensor of a GraphDef: its element type, a
// possibly partial shape (graph/shape_inference.h), for small integer tensors
// their contents (so that shape arithmetic such as Shape -> StridedSlice ->
// Pack -> Reshape folds), and for TensorArray / TensorList handles the shape of
// one element.
struct TensorInfo {
  DType dtype = DType::kInvalid;
  PartialShape shape;
  // Row-major contents, kUnknownValue where unknown; only for tensors with at
  // most kMaxFoldedElements elements.
  std::optional<std::vector<int64_t>> value;
  // The element shape of a TensorArray or TensorList this handle refers to.
  std::optional<PartialShape> element_shape;
};

// Infers the outputs of `node` (exactly `num_outputs` of them) from its data
// inputs. Returns InvalidArgument naming the node when the inputs contradict
// the op (wrong input count, attribute of the wrong length, shapes that do
// not broadcast, a reshape that changes the element count, ...). Dimensions
// that cannot be known (data-dependent sizes, unknown TF.js constants) stay
// kUnknownDim. `*has_rule` is set to false for ops without a shape rule, whose
// outputs are then of unknown rank. Pure and thread-safe.
absl::StatusOr<std::vector<TensorInfo>> InferOutputs(
    const tensorflow::NodeDef& node, absl::Span<const TensorInfo* const> inputs,
    int num_outputs, bool* has_rule);

// The number of outputs `node` has when its op's output count is fixed by
// the op and its attributes (Split: num_split; FusedBatchNormV3: 6; NoOp: 0);
// nullopt for ops whose count is not known here. Error when a count
// attribute is negative or above `max_outputs`.
absl::StatusOr<std::optional<int>> KnownOutputCount(
    const tensorflow::NodeDef& node, int max_outputs);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_SHAPE_RULES_H_
