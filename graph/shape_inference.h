#ifndef GOPT_GRAPH_SHAPE_INFERENCE_H_
#define GOPT_GRAPH_SHAPE_INFERENCE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/op_attributes.h"

namespace gopt::graph {

// Shape rules shared by the importers (HLO, ONNX, TensorFlow) and the model
// generators, in two forms: over concrete dims, and over partial shapes
// (unknown dims, unknown rank) for importers that infer before every size is
// known (TensorFlow). The concrete forms are the partial ones applied to
// fully known shapes. Both return InvalidArgument (describing the mismatch)
// on contradictory input; callers prefix the node and field. Every function
// is pure and thread-safe.

// Marks an unknown dimension in partial shapes (TensorFlow's -1).
inline constexpr int64_t kUnknownDim = -1;

// Marks an element of a folded integer value that is not known (a TF.js
// weight, a dimension that is itself unknown).
inline constexpr int64_t kUnknownValue = std::numeric_limits<int64_t>::min();

// A possibly partial shape: rank_known = false means nothing is known;
// otherwise dims holds one entry per dimension, kUnknownDim where unknown.
struct PartialShape {
  bool rank_known = false;
  std::vector<int64_t> dims;

  bool fully_known() const;
  static PartialShape Known(std::vector<int64_t> dims);
  static PartialShape UnknownRank() { return PartialShape(); }
  static PartialShape OfRank(int64_t rank);
};

// "[2,?,4]", or "<unknown rank>".
std::string PartialShapeString(const PartialShape& shape);

// The element count of a fully known shape (saturating at INT64_MAX), else
// nullopt.
std::optional<int64_t> KnownNumElements(const PartialShape& shape);

// Combines two descriptions of the same tensor: dimensions known in one and
// unknown in the other take the known size; sizes that disagree become
// unknown; ranks that disagree give an unknown rank.
PartialShape MergeShapes(const PartialShape& a, const PartialShape& b);

// Multidirectional broadcasting over partial shapes. An unknown size against
// a known size above 1 must broadcast to it, so it takes that size; against
// 1 (or unknown) it stays unknown. Unknown rank when either rank is.
absl::StatusOr<PartialShape> BroadcastPartialShapes(const PartialShape& a,
                                                    const PartialShape& b);

// TransposeOutputDims over a partial shape of known rank.
absl::StatusOr<PartialShape> TransposePartialShape(
    const PartialShape& input, absl::Span<const int64_t> permutation);

// ReduceOutputDims over a partial shape of known rank.
absl::StatusOr<PartialShape> ReducePartialShape(const PartialShape& input,
                                                absl::Span<const int64_t> axes,
                                                bool keep_dims);

// WindowedOutputSize where the input size may be unknown (kUnknownDim in,
// kUnknownDim out).
absl::StatusOr<int64_t> PartialWindowedOutputSize(
    int64_t input, const WindowDimension& window);

// One sliced dimension under NumPy / ONNX Slice / TF StridedSlice rules:
// negative indices count from the end, then bounds clamp into the
// dimension.
struct ResolvedSlice {
  // The first index read: in [0, dim] for a positive step, [-1, dim - 1]
  // for a negative one.
  int64_t start = 0;
  // How many elements the slice reads.
  int64_t count = 0;
};

// Resolves start:end:step over a dimension of size `dim` (>= 0). `step` must
// not be 0. Pass INT64_MAX / INT64_MIN for an open end ("to the end" in the
// step's direction).
ResolvedSlice ResolveSlice(int64_t dim, int64_t start, int64_t end,
                           int64_t step);

// Integer arithmetic on folded values (shape arithmetic), shared by the
// importers' constant folding.
enum class IntBinaryOp {
  kAdd,
  kSub,
  kMul,
  kTruncatingDiv,  // C / ONNX Div / TF Div and TruncateDiv
  kFlooringDiv,    // TF FloorDiv
  kFlooringMod,    // sign of the divisor: ONNX Mod (fmod=0), TF FloorMod
  kMax,
  kMin,
};

// a OP b, or nullopt when the result is undefined or not an int64 (division
// by zero, overflow).
std::optional<int64_t> FoldIntBinary(IntBinaryOp op, int64_t a, int64_t b);

// NumPy/ONNX multidirectional broadcasting: dims align at the right; each
// pair must be equal or contain a 1. Example: [8,1,6] x [7,1] -> [8,7,6].
absl::StatusOr<std::vector<int64_t>> BroadcastDims(absl::Span<const int64_t> a,
                                                   absl::Span<const int64_t> b);

// XLA dot: batch dims, then lhs free dims, then rhs free dims.
absl::StatusOr<std::vector<int64_t>> DotOutputDims(
    absl::Span<const int64_t> lhs, absl::Span<const int64_t> rhs,
    const DotDimensions& dims);

// NumPy matmul (ONNX MatMul, TF BatchMatMul): rank-1 operands are promoted
// and the promoted dim removed again; batch dims broadcast.
absl::StatusOr<std::vector<int64_t>> MatMulOutputDims(
    absl::Span<const int64_t> lhs, absl::Span<const int64_t> rhs);

// Output size of one windowed dimension:
// floor((dilated_input + pad_low + pad_high - dilated_window) / stride) + 1,
// where dilated_input = (input - 1) * base_dilation + 1 and dilated_window =
// (size - 1) * window_dilation + 1. Negative results are an error.
absl::StatusOr<int64_t> WindowedOutputSize(int64_t input,
                                           const WindowDimension& window);

// Full convolution output dims from input and kernel dims, the dimension
// numbers, the window (one entry per spatial dim) and the group counts.
absl::StatusOr<std::vector<int64_t>> ConvolutionOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> kernel,
    const ConvolutionDimensions& dims, absl::Span<const WindowDimension> window,
    int64_t feature_group_count, int64_t batch_group_count);

// Removes (or, with keep_dims, sets to 1) the reduced dimensions. Negative
// axes count from the end (ONNX/TF).
absl::StatusOr<std::vector<int64_t>> ReduceOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> axes,
    bool keep_dims);

// Permutes dims: output[i] = input[permutation[i]].
absl::StatusOr<std::vector<int64_t>> TransposeOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> permutation);

// Normalizes an axis that may be negative (counting from the end) into
// [0, rank). Error when out of range.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_SHAPE_INFERENCE_H_
