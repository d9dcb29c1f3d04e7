#ifndef GOPT_GRAPH_ONNX_ONNX_RULE_UTIL_H_
#define GOPT_GRAPH_ONNX_ONNX_RULE_UTIL_H_

// Internal to the ONNX importer: the helpers every op-family rule file
// (onnx_*_rules.cc) shares, and the table the families register into. All
// functions are pure and thread-safe; errors name the field but not the node
// (the importer prefixes it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/onnx/onnx_op_rules.h"
#include "graph/onnx/onnx_tensor.h"

namespace gopt::graph::onnx_internal {

using Dims = std::vector<int64_t>;

// One op type's rule: fills `result` from the node, or returns the error
// described for InferOp.
using Rule = absl::Status (*)(const NodeContext&, OpInference*);

// Op type -> rule. Each family file adds its ops with one AddXxxRules call.
using RuleTable = absl::flat_hash_map<absl::string_view, Rule>;

// Elementwise ops (unary, binary, Where, Cast, Clip, Identity, same-shape
// ops, random and quantize ops): onnx_elementwise_rules.cc.
void AddElementwiseRules(RuleTable& rules);
// Convolution, matrix products, recurrent cells, normalization, pooling,
// reductions, TopK, Resize, DepthToSpace: onnx_nn_rules.cc.
void AddNeuralNetRules(RuleTable& rules);
// Shape manipulation, indexing and shape-computing ops (Reshape ... Range,
// OneHot, Constant, data-dependent ops): onnx_shape_op_rules.cc.
void AddShapeRules(RuleTable& rules);

// Attribute values that size windows (strides, dilations) and paddings are
// bounded so that window arithmetic on dims below 2^50 cannot overflow.
inline constexpr int64_t kMaxWindowFactor = int64_t{1} << 12;
inline constexpr int64_t kMaxPadding = int64_t{1} << 40;

// "[2,3,4]".
std::string DimsString(absl::Span<const int64_t> dims);

// Unimplemented with `what`: the importer falls back to declared shapes.
absl::Status Unknown(absl::string_view what);

// A value of `dtype` and `dims` with no contents.
Value MakeValue(DType dtype, Dims dims);

// Product of validated dims (each type already passed ValidateTensorType, so
// the product stays below 2^50).
int64_t Product(absl::Span<const int64_t> dims);

// a * b and a + b; InvalidArgument naming `what` when the result overflows
// or leaves [-kMaxTensorBytes, kMaxTensorBytes].
absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b,
                                   absl::string_view what);
absl::StatusOr<int64_t> CheckedAdd(int64_t a, int64_t b,
                                   absl::string_view what);

// InvalidArgument naming `what` unless low <= value <= high.
absl::Status CheckRange(int64_t value, int64_t low, int64_t high,
                        absl::string_view what);

// The folded contents of input `role` as integers (reals truncate).
// Unimplemented ("computed at run time") when the value is not folded;
// InvalidArgument for a real outside the int64 range.
absl::StatusOr<Dims> ConstInts(const Value* value, absl::string_view role);

// The folded contents of input `role` as doubles; Unimplemented when the
// value is not folded.
absl::StatusOr<std::vector<double>> ConstReals(const Value* value,
                                               absl::string_view role);

// Newer opsets pass some lists as inputs that older ones pass as attributes
// (Slice, Pad, Squeeze, Unsqueeze, Split, Reduce*, Clip, TopK). The input
// wins when present, so files whose opset_import is off still import.
absl::StatusOr<std::optional<Dims>> IntsFromInputOrAttribute(
    const NodeContext& context, int index, absl::string_view name);

// InvalidArgument naming `role` unless min_rank <= rank <= max_rank (a
// negative max_rank means no upper bound).
absl::Status RequireRank(const Value* value, absl::string_view role,
                         int min_rank, int max_rank);

// NormalizeAxis with the error prefixed by `what`.
absl::StatusOr<int64_t> Axis(int64_t axis, int64_t rank,
                             absl::string_view what);

// Flat index into a tensor of dims `in` that output element `flat` of the
// broadcast shape `out` reads.
int64_t BroadcastSource(const Dims& out, const Dims& in, int64_t flat);

// True when `output` is small enough to hold folded contents.
bool Foldable(const Value& output);

}  // namespace gopt::graph::onnx_internal

#endif  // GOPT_GRAPH_ONNX_ONNX_RULE_UTIL_H_
