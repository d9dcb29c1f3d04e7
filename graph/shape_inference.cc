#include "graph/shape_inference.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::graph {
namespace {

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", DimsString(a), " and ", DimsString(b),
          " do not broadcast (dimension ", i, ": ", x, " vs ", y, ")"));
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> DotOutputDims(
    absl::Span<const int64_t> lhs, absl::Span<const int64_t> rhs,
    const DotDimensions& dims) {
  const int64_t lhs_rank = static_cast<int64_t>(lhs.size());
  const int64_t rhs_rank = static_cast<int64_t>(rhs.size());
  auto in_range = [](absl::Span<const int64_t> list, int64_t rank) {
    return std::all_of(list.begin(), list.end(),
                       [rank](int64_t d) { return d >= 0 && d < rank; });
  };
  if (!in_range(dims.lhs_batch, lhs_rank) ||
      !in_range(dims.lhs_contracting, lhs_rank) ||
      !in_range(dims.rhs_batch, rhs_rank) ||
      !in_range(dims.rhs_contracting, rhs_rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dot dimension numbers out of range for ", DimsString(lhs),
                     " x ", DimsString(rhs)));
  }
  if (dims.lhs_batch.size() != dims.rhs_batch.size() ||
      dims.lhs_contracting.size() != dims.rhs_contracting.size()) {
    return absl::InvalidArgumentError(
        "dot has different numbers of lhs and rhs batch/contracting dims");
  }
  for (size_t i = 0; i < dims.lhs_contracting.size(); ++i) {
    if (lhs[dims.lhs_contracting[i]] != rhs[dims.rhs_contracting[i]]) {
      return absl::InvalidArgumentError(
          absl::StrCat("dot contracts lhs dimension ", dims.lhs_contracting[i],
                       " (size ", lhs[dims.lhs_contracting[i]],
                       ") with rhs dimension ", dims.rhs_contracting[i],
                       " (size ", rhs[dims.rhs_contracting[i]], ")"));
    }
  }
  std::vector<int64_t> out;
  for (int64_t d : dims.lhs_batch) out.push_back(lhs[d]);
  auto is_listed = [](absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                      int64_t d) {
    return std::find(a.begin(), a.end(), d) != a.end() ||
           std::find(b.begin(), b.end(), d) != b.end();
  };
  for (int64_t d = 0; d < lhs_rank; ++d) {
    if (!is_listed(dims.lhs_batch, dims.lhs_contracting, d))
      out.push_back(lhs[d]);
  }
  for (int64_t d = 0; d < rhs_rank; ++d) {
    if (!is_listed(dims.rhs_batch, dims.rhs_contracting, d))
      out.push_back(rhs[d]);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> MatMulOutputDims(
    absl::Span<const int64_t> lhs, absl::Span<const int64_t> rhs) {
  if (lhs.empty() || rhs.empty()) {
    return absl::InvalidArgumentError("matmul operands must have rank >= 1");
  }
  std::vector<int64_t> a(lhs.begin(), lhs.end());
  std::vector<int64_t> b(rhs.begin(), rhs.end());
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  if (a.back() != b[b.size() - 2]) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul inner dimensions differ: ", DimsString(lhs), " x ",
                     DimsString(rhs)));
  }
  std::vector<int64_t> a_batch(a.begin(), a.end() - 2);
  std::vector<int64_t> b_batch(b.begin(), b.end() - 2);
  auto batch = BroadcastDims(a_batch, b_batch);
  if (!batch.ok()) return batch.status();
  std::vector<int64_t> out = *batch;
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  return out;
}

absl::StatusOr<int64_t> WindowedOutputSize(int64_t input,
                                           const WindowDimension& window) {
  if (window.stride <= 0 || window.window_dilation <= 0 ||
      window.base_dilation <= 0 || window.size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window size, stride and dilations must be positive (size ",
        window.size, ", stride ", window.stride, ")"));
  }
  if (input < 0) {
    return absl::InvalidArgumentError("negative windowed input size");
  }
  const int64_t dilated_input =
      input == 0 ? 0 : (input - 1) * window.base_dilation + 1;
  const int64_t dilated_window = (window.size - 1) * window.window_dilation + 1;
  const int64_t padded =
      dilated_input + window.padding_low + window.padding_high;
  if (padded < dilated_window) {
    if (padded >= 0 && input == 0) return 0;
    return absl::InvalidArgumentError(
        absl::StrCat("window of size ", dilated_window,
                     " does not fit padded input of size ", padded));
  }
  return (padded - dilated_window) / window.stride + 1;
}

absl::StatusOr<std::vector<int64_t>> ConvolutionOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> kernel,
    const ConvolutionDimensions& dims, absl::Span<const WindowDimension> window,
    int64_t feature_group_count, int64_t batch_group_count) {
  const size_t spatial = dims.input_spatial.size();
  if (dims.kernel_spatial.size() != spatial ||
      dims.output_spatial.size() != spatial || window.size() != spatial) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution has ", spatial, " input spatial dims but ",
        dims.kernel_spatial.size(), " kernel, ", dims.output_spatial.size(),
        " output and ", window.size(), " window dims"));
  }
  const size_t rank = spatial + 2;
  if (input.size() != rank || kernel.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("convolution input ", DimsString(input), " and kernel ",
                     DimsString(kernel), " must both have rank ", rank));
  }
  auto check = [rank](int64_t d) {
    return d >= 0 && d < static_cast<int64_t>(rank);
  };
  for (int64_t d :
       {dims.input_batch, dims.input_feature, dims.kernel_input_feature,
        dims.kernel_output_feature, dims.output_batch, dims.output_feature}) {
    if (!check(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "convolution dimension number ", d, " is outside rank ", rank));
    }
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (!check(dims.input_spatial[i]) || !check(dims.kernel_spatial[i]) ||
        !check(dims.output_spatial[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "convolution spatial dimension number is outside rank ", rank));
    }
  }
  if (feature_group_count <= 0 || batch_group_count <= 0) {
    return absl::InvalidArgumentError("group counts must be positive");
  }
  const int64_t in_features = input[dims.input_feature];
  const int64_t kernel_in = kernel[dims.kernel_input_feature];
  if (kernel_in * feature_group_count != in_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution input has ", in_features, " features but kernel expects ",
        kernel_in, " x ", feature_group_count, " groups"));
  }
  std::vector<int64_t> out(rank, 0);
  if (input[dims.input_batch] % batch_group_count != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution batch ", input[dims.input_batch],
        " is not divisible by batch_group_count ", batch_group_count));
  }
  out[dims.output_batch] = input[dims.input_batch] / batch_group_count;
  out[dims.output_feature] = kernel[dims.kernel_output_feature];
  for (size_t i = 0; i < spatial; ++i) {
    WindowDimension w = window[i];
    w.size = kernel[dims.kernel_spatial[i]];
    auto size = WindowedOutputSize(input[dims.input_spatial[i]], w);
    if (!size.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "convolution spatial dimension ", i, ": ", size.status().message()));
    }
    out[dims.output_spatial[i]] = *size;
  }
  return out;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> ReduceOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> axes,
    bool keep_dims) {
  const int64_t rank = static_cast<int64_t>(input.size());
  std::vector<bool> reduced(input.size(), false);
  for (int64_t axis : axes) {
    auto normalized = NormalizeAxis(axis, rank);
    if (!normalized.ok()) return normalized.status();
    reduced[*normalized] = true;
  }
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.push_back(input[d]);
    } else if (keep_dims) {
      out.push_back(1);
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> TransposeOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> permutation) {
  if (permutation.size() != input.size()) {
    return absl::InvalidArgumentError(absl::StrCat("permutation of length ",
                                                   permutation.size(),
                                                   " for rank ", input.size()));
  }
  std::vector<bool> seen(input.size(), false);
  std::vector<int64_t> out(input.size());
  for (size_t i = 0; i < permutation.size(); ++i) {
    const int64_t p = permutation[i];
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p]) {
      return absl::InvalidArgumentError(
          absl::StrCat("[", absl::StrJoin(permutation, ","),
                       "] is not a permutation of 0..", input.size() - 1));
    }
    seen[p] = true;
    out[i] = input[p];
  }
  return out;
}

}  // namespace gopt::graph
