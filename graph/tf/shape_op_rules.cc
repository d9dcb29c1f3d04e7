// TensorFlow shape rules for ops that compute or change shapes: Shape, Size,
// Reshape, Squeeze, ExpandDims, Transpose, Concat, Pack/Unpack, Split,
// StridedSlice, Slice, Pad, reductions, Fill, BroadcastTo, Tile, Range,
// Gather, Where, OneHot. Integer values fold through them so that shape
// arithmetic (Shape -> StridedSlice -> Pack -> Reshape) resolves.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/tf/shape_rule_util.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {
namespace {

absl::Status ShapeRule(RuleContext& ctx) {
  const DType dtype = AttrOr(ctx, "out_type", DType::kS32);
  for (size_t i = 0; i < ctx.out.size(); ++i) {
    const PartialShape& x =
        ctx.In(std::min<size_t>(i, ctx.in.size() - 1)).shape;
    TensorInfo& out = ctx.out[i];
    out.dtype = dtype;
    if (!x.rank_known) {
      out.shape = PartialShape::OfRank(1);
      continue;
    }
    out.shape = PartialShape::Known({static_cast<int64_t>(x.dims.size())});
    std::vector<int64_t> value;
    for (int64_t d : x.dims) value.push_back(d < 0 ? kUnknownValue : d);
    out.value = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status SizeRule(RuleContext& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "out_type", DType::kS32);
  out.shape = PartialShape::Known({});
  if (ctx.node.op() == "Rank") {
    if (ctx.In(0).shape.rank_known) {
      out.value = std::vector<int64_t>{
          static_cast<int64_t>(ctx.In(0).shape.dims.size())};
    }
    return absl::OkStatus();
  }
  std::optional<int64_t> n = KnownNumElements(ctx.In(0).shape);
  out.value = std::vector<int64_t>{n.has_value() ? *n : kUnknownValue};
  return absl::OkStatus();
}

absl::Status ReshapeRule(RuleContext& ctx) {
  const TensorInfo& target = ctx.In(1);
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  out.value = ctx.In(0).value;
  std::optional<int64_t> length = VectorLength(target);
  if (length.has_value() && *length > kMaxRank) {
    return ctx.Error(absl::StrCat("target shape has ", *length,
                                  " dimensions, more than ", kMaxRank));
  }
  out.shape = ShapeFromValue(target);
  if (!target.value.has_value() || !out.shape.rank_known) {
    if (out.shape.rank_known && out.shape.dims.size() == 1) {
      std::optional<int64_t> n = KnownNumElements(ctx.In(0).shape);
      if (n.has_value()) out.shape.dims[0] = *n;
    }
    return absl::OkStatus();
  }
  int inferred = -1;
  bool unknown = false;
  int64_t product = 1;
  for (size_t i = 0; i < target.value->size(); ++i) {
    const int64_t v = (*target.value)[i];
    if (v == kUnknownValue) {
      unknown = true;
    } else if (v == -1) {
      if (inferred >= 0) return ctx.Error("target shape has two -1 entries");
      inferred = static_cast<int>(i);
    } else if (v < -1) {
      return ctx.Error(absl::StrCat("target shape has size ", v));
    } else {
      product = SatMul(product, v);
    }
  }
  std::optional<int64_t> n = KnownNumElements(ctx.In(0).shape);
  if (unknown || !n.has_value()) {
    // With a single unknown entry the element count still fixes it.
    int missing = -1;
    int count = 0;
    for (size_t i = 0; i < out.shape.dims.size(); ++i) {
      if (out.shape.dims[i] < 0) {
        missing = static_cast<int>(i);
        ++count;
      }
    }
    if (count == 1 && n.has_value() && product > 0 && *n % product == 0) {
      out.shape.dims[missing] = *n / product;
    }
    return absl::OkStatus();
  }
  if (inferred >= 0) {
    if (product == 0 || *n % product != 0) {
      return ctx.Error(absl::StrCat("cannot reshape ", *n, " elements into ",
                                    PartialShapeString(out.shape)));
    }
    out.shape.dims[inferred] = *n / product;
  } else if (product != *n) {
    return ctx.Error(absl::StrCat("cannot reshape ", *n, " elements (",
                                  PartialShapeString(ctx.In(0).shape),
                                  ") into ", PartialShapeString(out.shape)));
  }
  return absl::OkStatus();
}

absl::Status SqueezeRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   IntListAttr(ctx.node, "squeeze_dims", std::nullopt));
  if (axes.empty()) {
    ASSIGN_OR_RETURN(axes, IntListAttr(ctx.node, "axis", std::nullopt));
  }
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  out.value = ctx.In(0).value;
  if (!x.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::vector<bool> drop(x.dims.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x.dims.size(); ++i) {
      if (x.dims[i] < 0) return absl::OkStatus();  // rank unknown
      drop[i] = x.dims[i] == 1;
    }
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return ctx.Error(absl::StrCat("squeeze axis ", axis,
                                    " is out of range for rank ", rank));
    }
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (x.dims[a] > 1 || x.dims[a] == 0) {
      return ctx.Error(absl::StrCat("cannot squeeze dimension ", a, " of ",
                                    PartialShapeString(x)));
    }
    drop[a] = true;
  }
  out.shape = PartialShape::Known({});
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (!drop[i]) out.shape.dims.push_back(x.dims[i]);
  }
  return absl::OkStatus();
}

absl::Status ExpandDimsRule(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  out.value = ctx.In(0).value;
  if (!x.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::optional<int64_t> axis = ScalarValue(ctx.In(1));
  if (!axis.has_value()) {
    out.shape = PartialShape::OfRank(rank + 1);
    return absl::OkStatus();
  }
  if (*axis < -rank - 1 || *axis > rank) {
    return ctx.Error(
        absl::StrCat("axis ", *axis, " is out of range for rank ", rank));
  }
  const int64_t a = *axis < 0 ? *axis + rank + 1 : *axis;
  out.shape = x;
  out.shape.dims.insert(out.shape.dims.begin() + a, 1);
  return absl::OkStatus();
}

absl::Status TransposeRule(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  std::optional<std::vector<int64_t>> perm = KnownValues(ctx.In(1));
  if (!x.rank_known) {
    if (perm.has_value() && perm->size() <= kMaxRank) {
      out.shape = PartialShape::OfRank(static_cast<int64_t>(perm->size()));
    }
    return absl::OkStatus();
  }
  if (!perm.has_value()) {
    out.shape = PartialShape::OfRank(static_cast<int64_t>(x.dims.size()));
    return absl::OkStatus();
  }
  absl::StatusOr<PartialShape> shape = TransposePartialShape(x, *perm);
  if (!shape.ok()) return ctx.Annotated(shape.status());
  out.shape = *std::move(shape);
  return absl::OkStatus();
}

// Concatenates `parts` along `axis` (unknown when nullopt).
absl::Status ConcatParts(RuleContext& ctx,
                         const std::vector<const TensorInfo*>& parts,
                         std::optional<int64_t> axis) {
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  int64_t rank = -1;
  for (const TensorInfo* part : parts) {
    if (part->shape.rank_known) {
      rank = static_cast<int64_t>(part->shape.dims.size());
      break;
    }
  }
  if (rank < 0) return absl::OkStatus();
  out.shape = PartialShape::OfRank(rank);
  if (!axis.has_value()) return absl::OkStatus();
  if (*axis < -rank || *axis >= rank) {
    return ctx.Error(
        absl::StrCat("axis ", *axis, " is out of range for rank ", rank));
  }
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  int64_t total = 0;
  for (const TensorInfo* part : parts) {
    const PartialShape& s = part->shape;
    if (!s.rank_known) {
      total = kUnknownDim;
      continue;
    }
    if (static_cast<int64_t>(s.dims.size()) != rank) {
      return ctx.Error(
          absl::StrCat("inputs have ranks ", rank, " and ", s.dims.size()));
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == a) continue;
      if (out.shape.dims[d] < 0) {
        out.shape.dims[d] = s.dims[d];
      } else if (s.dims[d] >= 0 && s.dims[d] != out.shape.dims[d]) {
        return ctx.Error(absl::StrCat("inputs differ in dimension ", d, ": ",
                                      out.shape.dims[d], " vs ", s.dims[d]));
      }
    }
    if (total >= 0) {
      total = s.dims[a] < 0 ? kUnknownDim : SatAdd(total, s.dims[a]);
    }
  }
  out.shape.dims[a] = total;
  if (rank == 1) {
    std::vector<int64_t> value;
    for (const TensorInfo* part : parts) {
      if (!part->value.has_value()) return absl::OkStatus();
      value.insert(value.end(), part->value->begin(), part->value->end());
    }
    if (static_cast<int64_t>(value.size()) <= kMaxFoldedElements) {
      out.value = std::move(value);
    }
  }
  return absl::OkStatus();
}

absl::Status ConcatV2Rule(RuleContext& ctx) {
  std::vector<const TensorInfo*> parts(ctx.in.begin(), ctx.in.end() - 1);
  return ConcatParts(ctx, parts, ScalarValue(ctx.In(ctx.in.size() - 1)));
}

absl::Status ConcatV1Rule(RuleContext& ctx) {
  std::vector<const TensorInfo*> parts(ctx.in.begin() + 1, ctx.in.end());
  return ConcatParts(ctx, parts, ScalarValue(ctx.In(0)));
}

absl::Status PackRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node, "axis", 0));
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  PartialShape element = PartialShape::UnknownRank();
  for (const TensorInfo* part : ctx.in) {
    if (!part->shape.rank_known) continue;
    if (!element.rank_known) {
      element = part->shape;
      continue;
    }
    if (part->shape.dims.size() != element.dims.size()) {
      return ctx.Error("inputs have different ranks");
    }
    element = MergeShapes(element, part->shape);
  }
  if (!element.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(element.dims.size()) + 1;
  if (axis < -rank || axis >= rank) {
    return ctx.Error(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  out.shape = element;
  out.shape.dims.insert(out.shape.dims.begin() + a, ctx.num_inputs());
  if (a == 0) {
    std::vector<int64_t> value;
    for (const TensorInfo* part : ctx.in) {
      std::optional<int64_t> n = KnownNumElements(part->shape);
      if (part->value.has_value()) {
        value.insert(value.end(), part->value->begin(), part->value->end());
      } else if (n.has_value() && *n <= kMaxFoldedElements) {
        value.insert(value.end(), *n, kUnknownValue);
      } else {
        return absl::OkStatus();
      }
      if (static_cast<int64_t>(value.size()) > kMaxFoldedElements) {
        return absl::OkStatus();
      }
    }
    out.value = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status UnpackRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node, "axis", 0));
  const PartialShape& x = ctx.In(0).shape;
  const DType dtype = DefaultDType(ctx);
  if (!x.rank_known) {
    SetAll(ctx, dtype, PartialShape::UnknownRank());
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (axis < -rank || axis >= rank) {
    return ctx.Error(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (x.dims[a] >= 0 && x.dims[a] != static_cast<int64_t>(ctx.out.size())) {
    return ctx.Error(absl::StrCat("unpacks dimension ", a, " of size ",
                                  x.dims[a], " into ", ctx.out.size(),
                                  " outputs"));
  }
  PartialShape element = x;
  element.dims.erase(element.dims.begin() + a);
  SetAll(ctx, dtype, element);
  if (rank == 1 && ctx.In(0).value.has_value() &&
      ctx.In(0).value->size() == ctx.out.size()) {
    for (size_t i = 0; i < ctx.out.size(); ++i) {
      ctx.out[i].value = std::vector<int64_t>{(*ctx.In(0).value)[i]};
    }
  }
  return absl::OkStatus();
}

absl::Status SplitRule(RuleContext& ctx) {
  const bool split_v = ctx.node.op() == "SplitV";
  const TensorInfo& x = ctx.In(split_v ? 0 : 1);
  std::optional<int64_t> axis = ScalarValue(ctx.In(split_v ? 2 : 0));
  const DType dtype = DefaultDType(ctx);
  for (TensorInfo& out : ctx.out) out.dtype = dtype;
  if (!x.shape.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.shape.dims.size());
  if (!axis.has_value()) {
    SetAll(ctx, dtype, PartialShape::OfRank(rank));
    return absl::OkStatus();
  }
  if (*axis < -rank || *axis >= rank) {
    return ctx.Error(
        absl::StrCat("split axis ", *axis, " is out of range for rank ", rank));
  }
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  const int64_t size = x.shape.dims[a];
  const int64_t n = static_cast<int64_t>(ctx.out.size());
  std::vector<int64_t> sizes(n, kUnknownDim);
  if (split_v) {
    std::optional<std::vector<int64_t>> given = KnownValues(ctx.In(1));
    if (given.has_value() && static_cast<int64_t>(given->size()) == n) {
      int64_t known = 0;
      int inferred = -1;
      for (int64_t i = 0; i < n; ++i) {
        if ((*given)[i] < 0) {
          inferred = static_cast<int>(i);
        } else {
          sizes[i] = (*given)[i];
          known = SatAdd(known, (*given)[i]);
        }
      }
      if (inferred >= 0 && size >= 0 && size >= known) {
        sizes[inferred] = size - known;
      }
    }
  } else if (size >= 0) {
    if (n == 0 || size % n != 0) {
      return ctx.Error(absl::StrCat("dimension ", a, " of size ", size,
                                    " does not split into ", n, " parts"));
    }
    std::fill(sizes.begin(), sizes.end(), size / n);
  }
  for (int64_t i = 0; i < n; ++i) {
    ctx.out[i].shape = x.shape;
    ctx.out[i].shape.dims[a] = sizes[i];
  }
  return absl::OkStatus();
}

// Resolves one StridedSlice dimension; a masked bound is open.
int64_t SliceLength(int64_t dim, int64_t begin, int64_t end, int64_t stride,
                    bool begin_masked, bool end_masked) {
  constexpr int64_t kOpenHigh = std::numeric_limits<int64_t>::max();
  constexpr int64_t kOpenLow = std::numeric_limits<int64_t>::min();
  const int64_t first = !begin_masked ? begin : stride > 0 ? 0 : kOpenHigh;
  const int64_t last = !end_masked ? end : stride > 0 ? kOpenHigh : kOpenLow;
  return ResolveSlice(dim, first, last, stride).count;
}

absl::Status StridedSliceRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t begin_mask, IntAttr(ctx.node, "begin_mask", 0));
  ASSIGN_OR_RETURN(int64_t end_mask, IntAttr(ctx.node, "end_mask", 0));
  ASSIGN_OR_RETURN(int64_t ellipsis_mask,
                   IntAttr(ctx.node, "ellipsis_mask", 0));
  ASSIGN_OR_RETURN(int64_t new_axis_mask,
                   IntAttr(ctx.node, "new_axis_mask", 0));
  ASSIGN_OR_RETURN(int64_t shrink_mask,
                   IntAttr(ctx.node, "shrink_axis_mask", 0));
  const TensorInfo& x = ctx.In(0);
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  std::optional<int64_t> spec_length = VectorLength(ctx.In(1));
  if (!spec_length.has_value() || *spec_length > kMaxRank) {
    return absl::OkStatus();
  }
  const int64_t n = *spec_length;
  auto bit = [](int64_t mask, int64_t i) { return ((mask >> i) & 1) != 0; };
  auto spec_value = [&](int input, int64_t i) -> int64_t {
    const TensorInfo& t = ctx.In(input);
    if (!t.value.has_value() || static_cast<int64_t>(t.value->size()) != n) {
      return kUnknownValue;
    }
    return (*t.value)[i];
  };
  if (!x.shape.rank_known) {
    // Without the input rank only the pure shape-vector case is resolvable.
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x.shape.dims.size());
  int64_t sparse_non_new = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!bit(new_axis_mask, i) && !bit(ellipsis_mask, i)) ++sparse_non_new;
  }
  out.shape = PartialShape::Known({});
  std::vector<int64_t> value_begin, value_stride;
  std::vector<bool> value_ok;
  int64_t dim = 0;
  bool foldable = rank == 1 && x.value.has_value();
  int64_t fold_begin = 0, fold_len = 0, fold_stride = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (bit(ellipsis_mask, i)) {
      const int64_t covered = rank - sparse_non_new;
      for (int64_t k = 0; k < covered && dim < rank; ++k, ++dim) {
        out.shape.dims.push_back(x.shape.dims[dim]);
      }
      foldable = false;
      continue;
    }
    if (bit(new_axis_mask, i)) {
      out.shape.dims.push_back(1);
      foldable = false;
      continue;
    }
    if (dim >= rank) {
      return ctx.Error(absl::StrCat("slice spec of length ", n,
                                    " is longer than the input rank ", rank));
    }
    const int64_t size = x.shape.dims[dim];
    const int64_t b = spec_value(1, i);
    const int64_t e = spec_value(2, i);
    const int64_t s = ctx.num_inputs() > 3 ? spec_value(3, i) : 1;
    if (s == 0) return ctx.Error("slice stride 0");
    if (bit(shrink_mask, i)) {
      if (size >= 0 && b != kUnknownValue && (b >= size || b < -size)) {
        return ctx.Error(absl::StrCat("index ", b,
                                      " is out of range for "
                                      "dimension of size ",
                                      size));
      }
      if (foldable && b != kUnknownValue && size >= 0) {
        fold_begin = b < 0 ? b + size : b;
        fold_len = 1;
      } else {
        foldable = false;
      }
      ++dim;
      continue;
    }
    int64_t length = kUnknownDim;
    const bool bm = bit(begin_mask, i);
    const bool em = bit(end_mask, i);
    if (size >= 0 && s == kUnknownValue && bm && em) {
      // A full-range slice with an unknown (TF.js) stride: assume unit
      // stride, as the converters emit for x[:, ::-1] / x[None, ...].
      length = size;
      foldable = false;
    } else if (size >= 0 && s != kUnknownValue && (bm || b != kUnknownValue) &&
               (em || e != kUnknownValue)) {
      length = SliceLength(size, b, e, s, bm, em);
      if (foldable && s > 0) {
        int64_t start = bm ? 0 : (b < 0 ? b + size : b);
        fold_begin = std::clamp<int64_t>(start, 0, size);
        fold_len = length;
        fold_stride = s;
      } else {
        foldable = false;
      }
    } else {
      foldable = false;
    }
    out.shape.dims.push_back(length);
    ++dim;
  }
  for (; dim < rank; ++dim) out.shape.dims.push_back(x.shape.dims[dim]);
  if (foldable && n == 1) {
    std::vector<int64_t> value;
    for (int64_t k = 0; k < fold_len; ++k) {
      const int64_t index = fold_begin + k * fold_stride;
      if (index < 0 || index >= static_cast<int64_t>(x.value->size())) {
        return absl::OkStatus();
      }
      value.push_back((*x.value)[index]);
    }
    out.value = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status SliceRule(RuleContext& ctx) {
  const TensorInfo& x = ctx.In(0);
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  if (!x.shape.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.shape.dims.size());
  out.shape = PartialShape::OfRank(rank);
  const auto& begin = ctx.In(1).value;
  const auto& size = ctx.In(2).value;
  if (!begin.has_value() || !size.has_value()) return absl::OkStatus();
  if (static_cast<int64_t>(begin->size()) != rank ||
      static_cast<int64_t>(size->size()) != rank) {
    return ctx.Error(
        absl::StrCat("begin and size must have ", rank, " values"));
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t b = (*begin)[d];
    const int64_t s = (*size)[d];
    const int64_t dim = x.shape.dims[d];
    if (s == kUnknownValue) continue;
    if (s == -1) {
      if (b != kUnknownValue && dim >= 0) {
        if (b < 0 || b > dim) {
          return ctx.Error(absl::StrCat("begin ", b, " outside dimension ", d,
                                        " of size ", dim));
        }
        out.shape.dims[d] = dim - b;
      }
    } else if (s < -1) {
      return ctx.Error(absl::StrCat("size ", s, " in dimension ", d));
    } else {
      if (dim >= 0 && b != kUnknownValue && (b < 0 || SatAdd(b, s) > dim)) {
        return ctx.Error(absl::StrCat("slice [", b, ", ", b, "+", s,
                                      ") outside dimension ", d, " of size ",
                                      dim));
      }
      out.shape.dims[d] = s;
    }
  }
  if (rank == 1 && x.value.has_value() && out.shape.fully_known() &&
      (*begin)[0] != kUnknownValue) {
    const int64_t b = (*begin)[0];
    const int64_t len = out.shape.dims[0];
    if (b >= 0 && b + len <= static_cast<int64_t>(x.value->size())) {
      out.value = std::vector<int64_t>(x.value->begin() + b,
                                       x.value->begin() + b + len);
    }
  }
  return absl::OkStatus();
}

// The start of a rule whose output has input 0's dtype and rank, with dims
// computed per dimension from the folded values of input 1 (Pad, Tile):
// sets the dtype, and the rank when known. Returns those values when the
// rank and the values are known, else null (the dims stay unknown).
const std::vector<int64_t>* SameRankOutputValues(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  if (!x.rank_known) return nullptr;
  out.shape = PartialShape::OfRank(static_cast<int64_t>(x.dims.size()));
  const std::optional<std::vector<int64_t>>& values = ctx.In(1).value;
  return values.has_value() ? &*values : nullptr;
}

absl::Status PadRule(RuleContext& ctx) {
  const std::vector<int64_t>* pads = SameRankOutputValues(ctx);
  if (pads == nullptr) return absl::OkStatus();
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (static_cast<int64_t>(pads->size()) != 2 * rank) {
    return ctx.Error(absl::StrCat("paddings have ", pads->size(),
                                  " values, expected ", 2 * rank));
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t lo = (*pads)[2 * d];
    const int64_t hi = (*pads)[2 * d + 1];
    if (x.dims[d] < 0 || lo == kUnknownValue || hi == kUnknownValue) continue;
    if (lo < 0 || hi < 0) {
      return ctx.Error(absl::StrCat("negative padding in dimension ", d));
    }
    out.shape.dims[d] = SatAdd(SatAdd(x.dims[d], lo), hi);
  }
  return absl::OkStatus();
}

absl::Status ReduceRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(bool keep_dims, BoolAttr(ctx.node, "keep_dims", false));
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  const std::string& op = ctx.node.op();
  out.dtype = op == "ArgMax" || op == "ArgMin"
                  ? AttrOr(ctx, "output_type", DType::kS64)
                  : DefaultDType(ctx);
  if (op == "All" || op == "Any") out.dtype = DType::kPred;
  if (!x.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::optional<std::vector<int64_t>> axes = KnownValues(ctx.In(1));
  if (!axes.has_value()) {
    std::optional<int64_t> count = VectorLength(ctx.In(1));
    if (keep_dims) {
      out.shape = PartialShape::OfRank(rank);
    } else if (count.has_value() && *count <= rank &&
               (ctx.In(1).shape.dims.empty() || *count <= 1)) {
      out.shape = PartialShape::OfRank(rank - *count);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<PartialShape> shape = ReducePartialShape(x, *axes, keep_dims);
  if (!shape.ok()) {
    return ctx.Error(absl::StrCat("reduction ", shape.status().message()));
  }
  out.shape = *std::move(shape);
  if (op == "Prod" && rank == 1 && !keep_dims && ctx.In(0).value.has_value()) {
    int64_t product = 1;
    for (int64_t v : *ctx.In(0).value) {
      if (v == kUnknownValue) return absl::OkStatus();
      product = SatMul(product, v);
    }
    out.value = std::vector<int64_t>{product};
  }
  return absl::OkStatus();
}

absl::Status FillRule(RuleContext& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "T", ctx.In(1).dtype);
  out.shape = ShapeFromValue(ctx.In(0));
  std::optional<int64_t> n = KnownNumElements(out.shape);
  if (n.has_value() && *n <= kMaxFoldedElements) {
    std::optional<int64_t> v = ScalarValue(ctx.In(1));
    out.value = std::vector<int64_t>(*n, v.has_value() ? *v : kUnknownValue);
  }
  return absl::OkStatus();
}

absl::Status BroadcastToRule(RuleContext& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  out.shape = ShapeFromValue(ctx.In(1));
  if (out.shape.rank_known) {
    auto merged = BroadcastPartialShapes(ctx.In(0).shape, out.shape);
    if (merged.ok() && merged->rank_known &&
        merged->dims.size() == out.shape.dims.size()) {
      out.shape = *merged;
    }
  }
  return absl::OkStatus();
}

absl::Status TileRule(RuleContext& ctx) {
  const std::vector<int64_t>* multiples = SameRankOutputValues(ctx);
  if (multiples == nullptr) return absl::OkStatus();
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (static_cast<int64_t>(multiples->size()) != rank) {
    return ctx.Error(absl::StrCat("multiples have ", multiples->size(),
                                  " values for rank ", rank));
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t m = (*multiples)[d];
    if (m == kUnknownValue || x.dims[d] < 0) continue;
    if (m < 0) return ctx.Error(absl::StrCat("negative multiple ", m));
    out.shape.dims[d] = SatMul(x.dims[d], m);
  }
  return absl::OkStatus();
}

absl::Status RangeRule(RuleContext& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "Tidx", DType::kS32);
  out.shape = PartialShape::OfRank(1);
  std::optional<int64_t> start = ScalarValue(ctx.In(0));
  std::optional<int64_t> limit = ScalarValue(ctx.In(1));
  std::optional<int64_t> delta = ScalarValue(ctx.In(2));
  if (!start || !limit || !delta) return absl::OkStatus();
  if (*delta == 0) return ctx.Error("delta is 0");
  const __int128 span = static_cast<__int128>(*limit) - *start;
  __int128 count = 0;
  if ((*delta > 0 && span > 0) || (*delta < 0 && span < 0)) {
    const __int128 d = *delta > 0 ? *delta : -static_cast<__int128>(*delta);
    const __int128 s = span > 0 ? span : -span;
    count = (s + d - 1) / d;
  }
  if (count > kMaxTensorBytes) {
    return ctx.Error("range has too many elements");
  }
  out.shape.dims[0] = static_cast<int64_t>(count);
  if (count <= kMaxFoldedElements) {
    std::vector<int64_t> value;
    for (int64_t i = 0; i < count; ++i) value.push_back(*start + i * *delta);
    out.value = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status GatherRule(RuleContext& ctx) {
  const TensorInfo& params = ctx.In(0);
  const TensorInfo& indices = ctx.In(1);
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "Tparams", DefaultDType(ctx));
  std::optional<int64_t> axis = int64_t{0};
  if (ctx.node.op() == "GatherV2") axis = ScalarValue(ctx.In(2));
  ASSIGN_OR_RETURN(int64_t batch_dims, IntAttr(ctx.node, "batch_dims", 0));
  if (!params.shape.rank_known || !indices.shape.rank_known ||
      !axis.has_value()) {
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(params.shape.dims.size());
  const int64_t irank = static_cast<int64_t>(indices.shape.dims.size());
  if (*axis < -rank || *axis >= rank) {
    return ctx.Error(
        absl::StrCat("axis ", *axis, " is out of range for rank ", rank));
  }
  if (batch_dims < 0) batch_dims += irank;
  if (batch_dims < 0 || batch_dims > irank) {
    return ctx.Error(absl::StrCat("batch_dims out of range"));
  }
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  out.shape = PartialShape::Known({});
  for (int64_t d = 0; d < a; ++d)
    out.shape.dims.push_back(params.shape.dims[d]);
  for (int64_t d = batch_dims; d < irank; ++d) {
    out.shape.dims.push_back(indices.shape.dims[d]);
  }
  for (int64_t d = a + 1; d < rank; ++d) {
    out.shape.dims.push_back(params.shape.dims[d]);
  }
  if (static_cast<int64_t>(out.shape.dims.size()) > kMaxRank) {
    return ctx.Error("output rank too large");
  }
  if (rank == 1 && params.value.has_value() && indices.value.has_value()) {
    std::vector<int64_t> value;
    for (int64_t i : *indices.value) {
      if (i == kUnknownValue || i < 0 ||
          i >= static_cast<int64_t>(params.value->size())) {
        value.push_back(kUnknownValue);
      } else {
        value.push_back((*params.value)[i]);
      }
    }
    out.value = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status GatherNdRule(RuleContext& ctx) {
  const PartialShape& params = ctx.In(0).shape;
  const PartialShape& indices = ctx.In(1).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "Tparams", DefaultDType(ctx));
  if (!params.rank_known || !indices.rank_known || indices.dims.empty() ||
      indices.dims.back() < 0) {
    return absl::OkStatus();
  }
  const int64_t depth = indices.dims.back();
  if (depth > static_cast<int64_t>(params.dims.size())) {
    return ctx.Error(absl::StrCat("indices of depth ", depth,
                                  " into params of rank ", params.dims.size()));
  }
  out.shape = PartialShape::Known(
      std::vector<int64_t>(indices.dims.begin(), indices.dims.end() - 1));
  for (size_t d = depth; d < params.dims.size(); ++d) {
    out.shape.dims.push_back(params.dims[d]);
  }
  if (out.shape.dims.size() > kMaxRank) {
    return ctx.Error("output rank too large");
  }
  return absl::OkStatus();
}

absl::Status WhereRule(RuleContext& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = DType::kS64;
  if (ctx.num_inputs() > 1) {
    auto shape = BroadcastPartialShapes(ctx.In(1).shape, ctx.In(2).shape);
    if (!shape.ok()) return ctx.Annotated(shape.status());
    out.dtype = DefaultDType(ctx);
    out.shape = *shape;
    return absl::OkStatus();
  }
  const PartialShape& x = ctx.In(0).shape;
  out.shape = PartialShape::Known(
      {kUnknownDim,
       x.rank_known ? static_cast<int64_t>(x.dims.size()) : kUnknownDim});
  return absl::OkStatus();
}

absl::Status OneHotRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node, "axis", -1));
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "T", ctx.In(2).dtype);
  if (!x.rank_known || x.dims.size() >= kMaxRank) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.dims.size()) + 1;
  if (axis < -1 || axis >= rank) {
    return ctx.Error(absl::StrCat("axis ", axis, " out of range"));
  }
  std::optional<int64_t> depth = ScalarValue(ctx.In(1));
  out.shape = x;
  out.shape.dims.insert(out.shape.dims.begin() + (axis < 0 ? rank - 1 : axis),
                        depth.has_value() ? *depth : kUnknownDim);
  return absl::OkStatus();
}

absl::Status IdentityNRule(RuleContext& ctx) {
  for (size_t i = 0; i < ctx.out.size() && i < ctx.in.size(); ++i) {
    ctx.out[i] = ctx.In(i);
  }
  return absl::OkStatus();
}

}  // namespace

void AddShapeRules(RuleTable& rules) {
  AddRule(rules, {"Shape", "ShapeN"}, 1, ShapeRule);
  AddRule(rules, {"Size", "Rank"}, 1, SizeRule);
  AddRule(rules, {"Reshape"}, 2, ReshapeRule);
  AddRule(rules, {"Squeeze"}, 1, SqueezeRule);
  AddRule(rules, {"ExpandDims"}, 2, ExpandDimsRule);
  AddRule(rules, {"Transpose"}, 2, TransposeRule);
  AddRule(rules, {"ConcatV2"}, 2, ConcatV2Rule);
  AddRule(rules, {"Concat"}, 2, ConcatV1Rule);
  AddRule(rules, {"Pack"}, 1, PackRule);
  AddRule(rules, {"Unpack"}, 1, UnpackRule);
  AddRule(rules, {"Split"}, 2, SplitRule);
  AddRule(rules, {"SplitV"}, 3, SplitRule);
  AddRule(rules, {"StridedSlice"}, 3, StridedSliceRule);
  AddRule(rules, {"Slice"}, 3, SliceRule);
  AddRule(rules, {"Pad", "PadV2", "MirrorPad"}, 2, PadRule);
  AddRule(rules,
          {"Mean", "Sum", "Max", "Min", "Prod", "All", "Any", "ArgMax",
           "ArgMin", "EuclideanNorm"},
          2, ReduceRule);
  AddRule(rules, {"Fill"}, 2, FillRule);
  AddRule(rules, {"BroadcastTo"}, 2, BroadcastToRule);
  AddRule(rules, {"Tile"}, 2, TileRule);
  AddRule(rules, {"Range"}, 3, RangeRule);
  AddRule(rules, {"GatherV2"}, 3, GatherRule);
  AddRule(rules, {"Gather"}, 2, GatherRule);
  AddRule(rules, {"GatherNd"}, 2, GatherNdRule);
  AddRule(rules, {"Where"}, 1, WhereRule);
  AddRule(rules, {"OneHot"}, 4, OneHotRule);
  AddRule(rules, {"IdentityN"}, 0, IdentityNRule);
}

}  // namespace gopt::graph::tf
