#include "graph/shape_inference.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/tensor_type.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

}  // namespace

bool PartialShape::fully_known() const {
  if (!rank_known) return false;
  for (int64_t dim : dims) {
    if (dim < 0) return false;
  }
  return true;
}

PartialShape PartialShape::Known(std::vector<int64_t> dims) {
  PartialShape shape;
  shape.rank_known = true;
  shape.dims = std::move(dims);
  return shape;
}

PartialShape PartialShape::OfRank(int64_t rank) {
  PartialShape shape;
  shape.rank_known = true;
  shape.dims.assign(static_cast<size_t>(rank), kUnknownDim);
  return shape;
}

std::string PartialShapeString(const PartialShape& shape) {
  if (!shape.rank_known) return "<unknown rank>";
  std::vector<std::string> parts;
  for (int64_t d : shape.dims) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

std::optional<int64_t> KnownNumElements(const PartialShape& shape) {
  if (!shape.fully_known()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shape.dims) {
    if (__builtin_mul_overflow(n, d, &n)) {
      n = std::numeric_limits<int64_t>::max();
    }
  }
  return n;
}

PartialShape MergeShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known) return b;
  if (!b.rank_known) return a;
  if (a.dims.size() != b.dims.size()) return PartialShape::UnknownRank();
  PartialShape out = a;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    if (a.dims[i] < 0) {
      out.dims[i] = b.dims[i];
    } else if (b.dims[i] >= 0 && b.dims[i] != a.dims[i]) {
      out.dims[i] = kUnknownDim;
    }
  }
  return out;
}

absl::StatusOr<PartialShape> BroadcastPartialShapes(const PartialShape& a,
                                                    const PartialShape& b) {
  if (!a.rank_known || !b.rank_known) return PartialShape::UnknownRank();
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  PartialShape out = PartialShape::OfRank(static_cast<int64_t>(rank));
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x =
        i < rank - a.dims.size() ? 1 : a.dims[i - (rank - a.dims.size())];
    const int64_t y =
        i < rank - b.dims.size() ? 1 : b.dims[i - (rank - b.dims.size())];
    if (x >= 0 && y >= 0) {
      if (x != y && x != 1 && y != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shapes ", PartialShapeString(a), " and ", PartialShapeString(b),
            " do not broadcast (dimension ", i, ": ", x, " vs ", y, ")"));
      }
      out.dims[i] = x == 1 ? y : x;
    } else if (x < 0 && y < 0) {
      out.dims[i] = kUnknownDim;
    } else {
      const int64_t known = x < 0 ? y : x;
      out.dims[i] = known == 1 ? kUnknownDim : known;
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  ASSIGN_OR_RETURN(
      PartialShape out,
      BroadcastPartialShapes(PartialShape::Known({a.begin(), a.end()}),
                             PartialShape::Known({b.begin(), b.end()})));
  return std::move(out.dims);
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
  // 128-bit arithmetic: sizes, dilations and paddings come from files.
  using Wide = __int128;
  const Wide dilated_input =
      input == 0 ? 0 : Wide{input - 1} * window.base_dilation + 1;
  const Wide dilated_window =
      Wide{window.size - 1} * window.window_dilation + 1;
  const Wide padded = dilated_input + window.padding_low + window.padding_high;
  if (padded < dilated_window) {
    if (padded >= 0 && input == 0) return 0;
    return absl::InvalidArgumentError(absl::StrCat(
        "window of size ", static_cast<int64_t>(dilated_window),
        " does not fit padded input of size ", static_cast<int64_t>(padded)));
  }
  const Wide out = (padded - dilated_window) / window.stride + 1;
  if (out > kMaxTensorBytes) {
    return absl::InvalidArgumentError("windowed output dimension is too large");
  }
  return static_cast<int64_t>(out);
}

absl::StatusOr<int64_t> PartialWindowedOutputSize(
    int64_t input, const WindowDimension& window) {
  if (input < 0) return kUnknownDim;
  return WindowedOutputSize(input, window);
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

absl::StatusOr<PartialShape> ReducePartialShape(const PartialShape& input,
                                                absl::Span<const int64_t> axes,
                                                bool keep_dims) {
  const int64_t rank = static_cast<int64_t>(input.dims.size());
  std::vector<bool> reduced(input.dims.size(), false);
  for (int64_t axis : axes) {
    ASSIGN_OR_RETURN(int64_t normalized, NormalizeAxis(axis, rank));
    reduced[normalized] = true;
  }
  PartialShape out = PartialShape::Known({});
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.dims.push_back(input.dims[d]);
    } else if (keep_dims) {
      out.dims.push_back(1);
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ReduceOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> axes,
    bool keep_dims) {
  ASSIGN_OR_RETURN(
      PartialShape out,
      ReducePartialShape(PartialShape::Known({input.begin(), input.end()}),
                         axes, keep_dims));
  return std::move(out.dims);
}

absl::StatusOr<PartialShape> TransposePartialShape(
    const PartialShape& input, absl::Span<const int64_t> permutation) {
  const size_t rank = input.dims.size();
  if (permutation.size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "permutation of length ", permutation.size(), " for rank ", rank));
  }
  std::vector<bool> seen(rank, false);
  PartialShape out = PartialShape::OfRank(static_cast<int64_t>(rank));
  for (size_t i = 0; i < permutation.size(); ++i) {
    const int64_t p = permutation[i];
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      return absl::InvalidArgumentError(
          absl::StrCat("[", absl::StrJoin(permutation, ","),
                       "] is not a permutation of 0..", rank - 1));
    }
    seen[p] = true;
    out.dims[i] = input.dims[p];
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> TransposeOutputDims(
    absl::Span<const int64_t> input, absl::Span<const int64_t> permutation) {
  ASSIGN_OR_RETURN(
      PartialShape out,
      TransposePartialShape(PartialShape::Known({input.begin(), input.end()}),
                            permutation));
  return std::move(out.dims);
}

ResolvedSlice ResolveSlice(int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  auto normalize = [dim](int64_t index) {
    return index >= 0 ? index : index < -dim ? -1 : index + dim;
  };
  ResolvedSlice slice;
  int64_t first = normalize(start);
  int64_t last = normalize(end);
  // 128-bit: a step or span near the int64 limits must not overflow.
  using Wide = __int128;
  const Wide stride = step > 0 ? Wide{step} : -Wide{step};
  Wide span = 0;
  if (step > 0) {
    first = std::clamp<int64_t>(first, 0, dim);
    last = std::clamp<int64_t>(last, 0, dim);
    span = Wide{last} - first;
  } else {
    first = std::clamp<int64_t>(first, -1, dim - 1);
    last = std::clamp<int64_t>(last, -1, dim - 1);
    span = Wide{first} - last;
  }
  slice.start = first;
  slice.count =
      span > 0 ? static_cast<int64_t>((span + stride - 1) / stride) : 0;
  return slice;
}

std::optional<int64_t> FoldIntBinary(IntBinaryOp op, int64_t a, int64_t b) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t r;
  switch (op) {
    case IntBinaryOp::kAdd:
      if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
      return r;
    case IntBinaryOp::kSub:
      if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
      return r;
    case IntBinaryOp::kMul:
      if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
      return r;
    case IntBinaryOp::kTruncatingDiv:
    case IntBinaryOp::kFlooringDiv:
      if (b == 0 || (a == kMin && b == -1)) return std::nullopt;
      r = a / b;
      if (op == IntBinaryOp::kFlooringDiv && a % b != 0 &&
          ((a < 0) != (b < 0))) {
        --r;
      }
      return r;
    case IntBinaryOp::kFlooringMod: {
      if (b == 0) return std::nullopt;
      if (b == -1) return 0;
      const int64_t m = a % b;
      return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
    }
    case IntBinaryOp::kMax:
      return std::max(a, b);
    case IntBinaryOp::kMin:
      return std::min(a, b);
  }
  return std::nullopt;
}

}  // namespace gopt::graph
