#include "graph/onnx/onnx_rule_util.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/shape_inference.h"
#include "util/status_macros.h"

namespace gopt::graph::onnx_internal {

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

absl::Status Unknown(absl::string_view what) {
  return absl::UnimplementedError(what);
}

Value MakeValue(DType dtype, Dims dims) {
  Value value;
  value.type = MakeTensorType(dtype, std::move(dims));
  return value;
}

int64_t Product(absl::Span<const int64_t> dims) {
  int64_t product = 1;
  for (int64_t d : dims) product *= d;
  return product;
}

absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b,
                                   absl::string_view what) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result) || result > kMaxTensorBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " overflows (", a, " x ", b, ")"));
  }
  return result;
}

absl::StatusOr<int64_t> CheckedAdd(int64_t a, int64_t b,
                                   absl::string_view what) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result) || result > kMaxTensorBytes ||
      result < -kMaxTensorBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " overflows (", a, " + ", b, ")"));
  }
  return result;
}

absl::Status CheckRange(int64_t value, int64_t low, int64_t high,
                        absl::string_view what) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", value, ", outside [", low, ", ", high, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Dims> ConstInts(const Value* value, absl::string_view role) {
  if (!value->constant.has_value()) {
    return Unknown(absl::StrCat("input '", role,
                                "' is computed at run time, so the output "
                                "shape is unknown at import"));
  }
  Dims out;
  out.reserve(static_cast<size_t>(value->constant->size()));
  for (int64_t i = 0; i < value->constant->size(); ++i) {
    std::optional<int64_t> v = value->constant->IntAt(i);
    if (!v.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", role, "' holds a value outside the int64 range"));
    }
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<std::vector<double>> ConstReals(const Value* value,
                                               absl::string_view role) {
  if (!value->constant.has_value()) {
    return Unknown(absl::StrCat("input '", role,
                                "' is computed at run time, so the output "
                                "shape is unknown at import"));
  }
  std::vector<double> out;
  for (int64_t i = 0; i < value->constant->size(); ++i) {
    out.push_back(value->constant->RealAt(i));
  }
  return out;
}

absl::StatusOr<std::optional<Dims>> IntsFromInputOrAttribute(
    const NodeContext& context, int index, absl::string_view name) {
  if (const Value* value = context.input(index)) {
    ASSIGN_OR_RETURN(Dims dims, ConstInts(value, name));
    return std::optional<Dims>(std::move(dims));
  }
  return context.Ints(name);
}

absl::Status RequireRank(const Value* value, absl::string_view role,
                         int min_rank, int max_rank) {
  const int rank = value->type.rank();
  if (rank < min_rank || (max_rank >= 0 && rank > max_rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", role, "' has type ", value->type.ToString(),
                     "; expected rank ",
                     max_rank == min_rank ? absl::StrCat(min_rank)
                     : max_rank < 0       ? absl::StrCat(">= ", min_rank)
                                    : absl::StrCat(min_rank, "..", max_rank)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Axis(int64_t axis, int64_t rank,
                             absl::string_view what) {
  absl::StatusOr<int64_t> normalized = NormalizeAxis(axis, rank);
  if (!normalized.ok()) return Annotate(normalized.status(), what);
  return *normalized;
}

int64_t BroadcastSource(const Dims& out, const Dims& in, int64_t flat) {
  int64_t source = 0;
  int64_t stride = 1;
  for (int i = static_cast<int>(out.size()) - 1,
           j = static_cast<int>(in.size()) - 1;
       i >= 0; --i, --j) {
    const int64_t coord = flat % out[i];
    flat /= out[i];
    if (j >= 0) {
      if (in[j] != 1) source += coord * stride;
      stride *= in[j];
    }
  }
  return source;
}

bool Foldable(const Value& output) {
  return output.type.num_elements() <= kMaxFoldElements;
}

}  // namespace gopt::graph::onnx_internal
