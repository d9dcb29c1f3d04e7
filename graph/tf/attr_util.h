#ifndef GOPT_GRAPH_TF_ATTR_UTIL_H_
#define GOPT_GRAPH_TF_ATTR_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/shape_inference.h"
#include "graph/tensor_type.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// Readers for NodeDef attributes and TensorProto contents. Every error is
// InvalidArgument and names the node and the attribute ("node 'conv1' attr
// 'strides' has 3 values, expected 4"). All functions are pure and
// thread-safe.

// The largest rank accepted anywhere in a GraphDef.
inline constexpr int kMaxRank = 32;
// Integer tensors with at most this many elements have their values folded
// (shape arithmetic); larger ones never are, so no allocation follows a size
// read from the file.
inline constexpr int64_t kMaxFoldedElements = 1024;

// Maps a TensorFlow element type onto gopt's (reference types map like
// their value types; resource and variant handles map to kOpaque). Returns
// kInvalid for DT_INVALID and unknown values.
DType DTypeFromTf(int tf_dtype);

// True when `node` has attribute `name`.
bool HasAttr(const tensorflow::NodeDef& node, absl::string_view name);

// The integer attribute `name`, or `default_value` when absent. Error when
// present with another type.
absl::StatusOr<int64_t> IntAttr(const tensorflow::NodeDef& node,
                                absl::string_view name, int64_t default_value);

// The boolean attribute `name`, or `default_value` when absent.
absl::StatusOr<bool> BoolAttr(const tensorflow::NodeDef& node,
                              absl::string_view name, bool default_value);

// The string attribute `name`, or `default_value` when absent.
absl::StatusOr<std::string> StringAttr(const tensorflow::NodeDef& node,
                                       absl::string_view name,
                                       absl::string_view default_value);

// The type attribute `name` mapped with DTypeFromTf, or nullopt when absent.
absl::StatusOr<std::optional<DType>> TypeAttr(const tensorflow::NodeDef& node,
                                              absl::string_view name);

// The list-of-int attribute `name`. When `expected_size` is not nullopt the
// list must have exactly that many values; an absent attribute yields
// `default_value` (which then need not have the expected size).
absl::StatusOr<std::vector<int64_t>> IntListAttr(
    const tensorflow::NodeDef& node, absl::string_view name,
    std::optional<size_t> expected_size,
    std::vector<int64_t> default_value = {});

// The 8 paddings (low, high per NHWC/NCHW dimension) of a convolution or
// pool whose `padding` attribute is `padding`: attr 'explicit_paddings' when
// `padding` is "EXPLICIT" (then required, with exactly 8 values), else 8
// zeros. InvalidArgument names the node and the attribute.
absl::StatusOr<std::vector<int64_t>> ExplicitPaddingsAttr(
    const tensorflow::NodeDef& node, absl::string_view padding);

// The list-of-string attribute `name` (empty when absent).
absl::StatusOr<std::vector<std::string>> StringListAttr(
    const tensorflow::NodeDef& node, absl::string_view name);

// Converts a TensorShapeProto; `field` names it in errors. Rejects ranks
// above kMaxRank and sizes below -1.
absl::StatusOr<PartialShape> ShapeFromProto(
    const tensorflow::TensorShapeProto& proto, absl::string_view node_name,
    absl::string_view field);

// The shape attribute `name` (unknown rank when absent).
absl::StatusOr<PartialShape> ShapeAttr(const tensorflow::NodeDef& node,
                                       absl::string_view name);

// The shapes in the `_output_shapes` attribute, or an empty vector when the
// node has none.
absl::StatusOr<std::vector<PartialShape>> OutputShapesAttr(
    const tensorflow::NodeDef& node);

// The integer contents of `tensor` whose shape has `num_elements` elements,
// or nullopt when the tensor is not an integer or boolean tensor, has more
// than kMaxFoldedElements elements, or carries no values (TF.js weights).
// Typed value lists shorter than the shape repeat their last value, as
// TensorFlow does.
std::optional<std::vector<int64_t>> IntTensorValues(
    const tensorflow::TensorProto& tensor, int64_t num_elements);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_ATTR_UTIL_H_
