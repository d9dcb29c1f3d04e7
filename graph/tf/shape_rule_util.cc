#include "graph/tf/shape_rule_util.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::graph::tf {

absl::Status RuleContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name(), "' (", node.op(), "): ", message));
}

absl::Status RuleContext::Annotated(const absl::Status& status) const {
  return status.ok() ? status : Error(status.message());
}

void AddRule(RuleTable& rules, std::initializer_list<const char*> ops,
             int min_inputs, RuleFn fn) {
  for (const char* op : ops) rules[op] = Rule{min_inputs, fn};
}

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max()
                                          : r;
}

int64_t SatMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max()
                                          : r;
}

PartialShape FillUnknownDims(const PartialShape& primary,
                             const PartialShape& secondary) {
  if (!primary.rank_known) return secondary;
  if (!secondary.rank_known || secondary.dims.size() != primary.dims.size()) {
    return primary;
  }
  PartialShape out = primary;
  for (size_t i = 0; i < out.dims.size(); ++i) {
    if (out.dims[i] < 0) out.dims[i] = secondary.dims[i];
  }
  return out;
}

std::optional<std::vector<int64_t>> KnownValues(const TensorInfo& info) {
  if (!info.value.has_value()) return std::nullopt;
  for (int64_t v : *info.value) {
    if (v == kUnknownValue) return std::nullopt;
  }
  return info.value;
}

std::optional<int64_t> ScalarValue(const TensorInfo& info) {
  if (!info.value.has_value() || info.value->size() != 1 ||
      (*info.value)[0] == kUnknownValue) {
    return std::nullopt;
  }
  return (*info.value)[0];
}

std::optional<int64_t> VectorLength(const TensorInfo& info) {
  if (info.value.has_value()) {
    return static_cast<int64_t>(info.value->size());
  }
  if (info.shape.rank_known && info.shape.dims.size() == 1 &&
      info.shape.dims[0] >= 0) {
    return info.shape.dims[0];
  }
  if (info.shape.rank_known && info.shape.dims.empty()) return 1;
  return std::nullopt;
}

DType AttrOr(const RuleContext& ctx, absl::string_view attr, DType fallback) {
  auto type = TypeAttr(ctx.node, attr);
  if (type.ok() && type->has_value() && **type != DType::kInvalid) {
    return **type;
  }
  return fallback;
}

DType DefaultDType(const RuleContext& ctx) {
  DType fallback = ctx.num_inputs() > 0 ? ctx.In(0).dtype : DType::kF32;
  if (fallback == DType::kInvalid) fallback = DType::kF32;
  for (absl::string_view attr : {"T", "dtype"}) {
    DType type = AttrOr(ctx, attr, DType::kInvalid);
    if (type != DType::kInvalid) return type;
  }
  return fallback;
}

void SetAll(RuleContext& ctx, DType dtype, const PartialShape& shape) {
  for (TensorInfo& out : ctx.out) {
    out.dtype = dtype;
    out.shape = shape;
  }
}

PartialShape ShapeFromValue(const TensorInfo& info) {
  std::optional<int64_t> length = VectorLength(info);
  if (!length.has_value()) return PartialShape::UnknownRank();
  if (*length > kMaxRank) return PartialShape::UnknownRank();
  PartialShape shape = PartialShape::OfRank(*length);
  if (info.value.has_value()) {
    for (size_t i = 0; i < info.value->size(); ++i) {
      const int64_t v = (*info.value)[i];
      shape.dims[i] = v == kUnknownValue || v < 0 ? kUnknownDim : v;
    }
  }
  return shape;
}

}  // namespace gopt::graph::tf
