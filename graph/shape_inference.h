#ifndef GOPT_GRAPH_SHAPE_INFERENCE_H_
#define GOPT_GRAPH_SHAPE_INFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/op_attributes.h"

namespace gopt::graph {

// Shape rules shared by the importers. All take and return concrete dims and
// return InvalidArgument (describing the mismatch) on contradictory input;
// callers prefix the node and field.

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
