// ONNX rules for shape manipulation and indexing: Reshape, Squeeze, Concat,
// Slice, Gather, Pad, Tile, Expand, Shape, ConstantOfShape, Range, OneHot,
// Constant, and the ops whose output shape depends on data.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/onnx/onnx_rule_util.h"
#include "graph/shape_inference.h"
#include "util/status_macros.h"

namespace gopt::graph::onnx_internal {
namespace {

using ::gopt::onnx::AttributeProto;

// ---------------------------------------------------------------------------
// Shape manipulation.

absl::Status ReshapeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  std::optional<Dims> shape;
  if (const Value* shape_input = context.input(1)) {
    ASSIGN_OR_RETURN(Dims values, ConstInts(shape_input, "shape"));
    shape = std::move(values);
  } else {
    ASSIGN_OR_RETURN(shape, context.Ints("shape"));
  }
  if (!shape.has_value()) {
    return absl::InvalidArgumentError("has no 'shape' input");
  }
  ASSIGN_OR_RETURN(int64_t allow_zero, context.Int("allowzero", 0));
  Dims out = *shape;
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && allow_zero == 0) {
      if (i >= x->type.dims.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("shape ", DimsString(*shape), " copies dimension ", i,
                         " of the rank-", x->type.rank(), " input"));
      }
      out[i] = x->type.dims[i];
    }
    if (out[i] == -1) {
      if (infer_at >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("shape ", DimsString(*shape), " has two -1 entries"));
      }
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", DimsString(*shape), " has negative entry ", out[i]));
    }
    ASSIGN_OR_RETURN(known, CheckedMul(known, out[i], "reshape size"));
  }
  const int64_t total = x->type.num_elements();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot reshape ", x->type.ToString(), " to ", DimsString(*shape)));
    }
    out[infer_at] = total / known;
  } else if (known != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape ", x->type.ToString(), " (", total, " elements) to ",
        DimsString(out), " (", known, " elements)"));
  }
  result->kind = OpKind::kReshape;
  Value value = MakeValue(x->type.dtype, std::move(out));
  value.constant = x->constant;
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status FlattenRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", 1));
  const int64_t rank = x->type.rank();
  if (axis_attr < -rank || axis_attr > rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'axis' is ", axis_attr, " for a rank-", rank, " input"));
  }
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  const auto& d = x->type.dims;
  const Dims out = {Product(absl::MakeConstSpan(d).subspan(0, axis)),
                    Product(absl::MakeConstSpan(d).subspan(axis))};
  result->kind = OpKind::kReshape;
  Value value = MakeValue(x->type.dtype, out);
  value.constant = x->constant;
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status SqueezeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(std::optional<Dims> axes,
                   IntsFromInputOrAttribute(context, 1, "axes"));
  const int64_t rank = x->type.rank();
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes.has_value()) {
    for (int64_t axis_value : *axes) {
      ASSIGN_OR_RETURN(int64_t axis, Axis(axis_value, rank, "axes"));
      if (x->type.dims[axis] != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("squeezes dimension ", axis, " of ",
                         x->type.ToString(), ", which is not 1"));
      }
      drop[axis] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) drop[i] = x->type.dims[i] == 1;
  }
  Dims out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) out.push_back(x->type.dims[i]);
  }
  result->kind = OpKind::kReshape;
  result->attributes.dimensions = axes.value_or(Dims{});
  Value value = MakeValue(x->type.dtype, std::move(out));
  value.constant = x->constant;
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status UnsqueezeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(std::optional<Dims> axes,
                   IntsFromInputOrAttribute(context, 1, "axes"));
  if (!axes.has_value()) {
    return absl::InvalidArgumentError("has no 'axes'");
  }
  const int64_t out_rank = x->type.rank() + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t axis_value : *axes) {
    ASSIGN_OR_RETURN(int64_t axis, Axis(axis_value, out_rank, "axes"));
    if (inserted[axis]) {
      return absl::InvalidArgumentError(
          absl::StrCat("axes list dimension ", axis, " twice"));
    }
    inserted[axis] = true;
  }
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    out.push_back(inserted[i] ? 1 : x->type.dims[next++]);
  }
  result->kind = OpKind::kReshape;
  result->attributes.dimensions = *axes;
  Value value = MakeValue(x->type.dtype, std::move(out));
  value.constant = x->constant;
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status TransposeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(std::optional<Dims> perm, context.Ints("perm"));
  Dims permutation;
  if (perm.has_value()) {
    permutation = *perm;
  } else {
    for (int64_t i = x->type.rank() - 1; i >= 0; --i) permutation.push_back(i);
  }
  absl::StatusOr<Dims> out = TransposeOutputDims(x->type.dims, permutation);
  if (!out.ok()) return Annotate(out.status(), "attribute 'perm'");
  result->kind = OpKind::kTranspose;
  result->attributes.dimensions = permutation;
  Value value = MakeValue(x->type.dtype, *std::move(out));
  if (x->type.rank() <= 1) value.constant = x->constant;
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status ConcatRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* first, context.RequiredInput(0, "inputs"));
  if (context.FindAttribute("axis") == nullptr) {
    return absl::InvalidArgumentError("attribute 'axis' is missing");
  }
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", 0));
  ASSIGN_OR_RETURN(int64_t axis,
                   Axis(axis_attr, first->type.rank(), "attribute 'axis'"));
  Dims out = first->type.dims;
  bool all_constant = true;
  for (int i = 0; i < context.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(const Value* input,
                     context.RequiredInput(i, absl::StrCat("inputs ", i)));
    all_constant = all_constant && input->constant.has_value();
    if (i == 0) continue;
    bool match = input->type.rank() == first->type.rank();
    for (int64_t d = 0; match && d < first->type.rank(); ++d) {
      match = d == axis || input->type.dims[d] == first->type.dims[d];
    }
    if (!match) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " ", input->type.ToString(), " does not match input 0 ",
          first->type.ToString(), " outside axis ", axis));
    }
    ASSIGN_OR_RETURN(out[axis], CheckedAdd(out[axis], input->type.dims[axis],
                                           "concatenated dimension"));
  }
  result->kind = OpKind::kConcatenate;
  result->attributes.dimensions = {axis};
  Value value = MakeValue(first->type.dtype, std::move(out));
  if (all_constant && axis == 0 && Foldable(value)) {
    ConstantData data;
    data.is_real = first->constant->is_real;
    bool ok = true;
    for (int i = 0; i < context.num_inputs() && ok; ++i) {
      const ConstantData& part = *context.input(i)->constant;
      ok = part.is_real == data.is_real;
      data.ints.insert(data.ints.end(), part.ints.begin(), part.ints.end());
      data.reals.insert(data.reals.end(), part.reals.begin(), part.reals.end());
    }
    if (ok) value.constant = std::move(data);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status SplitRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", 0));
  ASSIGN_OR_RETURN(int64_t axis,
                   Axis(axis_attr, x->type.rank(), "attribute 'axis'"));
  ASSIGN_OR_RETURN(std::optional<Dims> split,
                   IntsFromInputOrAttribute(context, 1, "split"));
  const int64_t dim = x->type.dims[axis];
  Dims sizes;
  if (split.has_value()) {
    int64_t total = 0;
    for (int64_t s : *split) {
      RETURN_IF_ERROR(CheckRange(s, 0, dim - total, "split value"));
      total += s;
    }
    if (total != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("split ", DimsString(*split), " sums to ", total,
                       ", dimension ", axis, " has ", dim));
    }
    sizes = *split;
  } else {
    ASSIGN_OR_RETURN(int64_t count,
                     context.Int("num_outputs", context.node().output_size()));
    RETURN_IF_ERROR(CheckRange(count, 1, 1 << 16, "number of outputs"));
    const int64_t chunk = (dim + count - 1) / count;
    for (int64_t i = 0, left = dim; i < count; ++i) {
      sizes.push_back(std::min(chunk, left));
      left -= sizes.back();
    }
  }
  result->kind = OpKind::kSlice;
  result->attributes.dimensions = {axis};
  int64_t offset = 0;
  for (int64_t size : sizes) {
    Dims out = x->type.dims;
    out[axis] = size;
    Value value = MakeValue(x->type.dtype, std::move(out));
    // A split shape vector (Shape -> Split) folds piece by piece.
    if (x->constant.has_value() && x->type.rank() == 1) {
      ConstantData data;
      data.is_real = x->constant->is_real;
      for (int64_t i = 0; i < size; ++i) {
        data.AppendFrom(*x->constant, offset + i);
      }
      value.constant = std::move(data);
    }
    offset += size;
    result->outputs.push_back(std::move(value));
  }
  return absl::OkStatus();
}

absl::Status SliceRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(std::optional<Dims> starts,
                   IntsFromInputOrAttribute(context, 1, "starts"));
  ASSIGN_OR_RETURN(std::optional<Dims> ends,
                   IntsFromInputOrAttribute(context, 2, "ends"));
  ASSIGN_OR_RETURN(std::optional<Dims> axes,
                   IntsFromInputOrAttribute(context, 3, "axes"));
  ASSIGN_OR_RETURN(std::optional<Dims> steps,
                   IntsFromInputOrAttribute(context, 4, "steps"));
  if (!starts.has_value() || !ends.has_value()) {
    return absl::InvalidArgumentError("has no 'starts' or 'ends'");
  }
  const size_t n = starts->size();
  if (ends->size() != n || (axes.has_value() && axes->size() != n) ||
      (steps.has_value() && steps->size() != n)) {
    return absl::InvalidArgumentError(
        "'starts', 'ends', 'axes' and 'steps' differ in length");
  }
  const int64_t rank = x->type.rank();
  OpAttributes& attrs = result->attributes;
  attrs.mutable_slice_starts()->assign(static_cast<size_t>(rank), 0);
  *attrs.mutable_slice_limits() = x->type.dims;
  attrs.mutable_slice_strides()->assign(static_cast<size_t>(rank), 1);
  Dims out = x->type.dims;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  int64_t first_start = 0;
  int64_t first_step = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis_value = axes.has_value() ? (*axes)[i] : int64_t(i);
    ASSIGN_OR_RETURN(int64_t axis, Axis(axis_value, rank, "axes"));
    if (seen[axis]) {
      return absl::InvalidArgumentError(
          absl::StrCat("slices axis ", axis, " twice"));
    }
    seen[axis] = true;
    const int64_t step = steps.has_value() ? (*steps)[i] : 1;
    if (step == 0 || step == std::numeric_limits<int64_t>::min()) {
      return absl::InvalidArgumentError("has an invalid step");
    }
    const int64_t dim = x->type.dims[axis];
    const ResolvedSlice slice =
        ResolveSlice(dim, (*starts)[i], (*ends)[i], step);
    const int64_t start = slice.start;
    const int64_t count = slice.count;
    // A step longer than the dimension takes one element, like dim + 1;
    // bounding it keeps the limit arithmetic below from overflowing.
    const int64_t stride = std::min<int64_t>(step > 0 ? step : -step, dim + 1);
    out[axis] = count;
    if (step > 0) {
      (*attrs.mutable_slice_starts())[axis] = start;
      (*attrs.mutable_slice_limits())[axis] =
          count == 0 ? start : start + (count - 1) * stride + 1;
      (*attrs.mutable_slice_strides())[axis] = stride;
    } else {
      const int64_t low = count == 0 ? 0 : start - (count - 1) * stride;
      (*attrs.mutable_slice_starts())[axis] = low;
      (*attrs.mutable_slice_limits())[axis] = count == 0 ? 0 : start + 1;
      (*attrs.mutable_slice_strides())[axis] = stride;
    }
    first_start = start;
    first_step = step > 0 ? stride : -stride;
  }
  result->kind = OpKind::kSlice;
  Value value = MakeValue(x->type.dtype, std::move(out));
  if (x->constant.has_value() && rank == 1) {
    ConstantData data;
    data.is_real = x->constant->is_real;
    for (int64_t i = 0; i < value.type.dims[0]; ++i) {
      const int64_t at = first_start + i * first_step;
      data.AppendFrom(*x->constant, at);
    }
    value.constant = std::move(data);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status GatherRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* data, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(const Value* indices, context.RequiredInput(1, "indices"));
  RETURN_IF_ERROR(RequireRank(data, "data", 1, -1));
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", 0));
  ASSIGN_OR_RETURN(int64_t axis,
                   Axis(axis_attr, data->type.rank(), "attribute 'axis'"));
  Dims out(data->type.dims.begin(), data->type.dims.begin() + axis);
  out.insert(out.end(), indices->type.dims.begin(), indices->type.dims.end());
  out.insert(out.end(), data->type.dims.begin() + axis + 1,
             data->type.dims.end());
  result->kind = OpKind::kGather;
  result->attributes.dimensions = {axis};
  Value value = MakeValue(data->type.dtype, std::move(out));
  if (data->constant.has_value() && indices->constant.has_value() &&
      data->type.rank() == 1 && Foldable(value)) {
    const int64_t dim = data->type.dims[0];
    ConstantData folded;
    folded.is_real = data->constant->is_real;
    for (int64_t i = 0; i < indices->constant->size(); ++i) {
      std::optional<int64_t> index = indices->constant->IntAt(i);
      if (!index.has_value() || *index < -dim || *index >= dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            "index ", index.value_or(0), " is out of range for dimension ", dim,
            " of input 'data'"));
      }
      const int64_t at = *index < 0 ? *index + dim : *index;
      if (folded.is_real) {
        folded.reals.push_back(data->constant->reals[at]);
      } else {
        folded.ints.push_back(data->constant->ints[at]);
      }
    }
    value.constant = std::move(folded);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status GatherElementsRule(const NodeContext& context,
                                OpInference* result) {
  ASSIGN_OR_RETURN(const Value* data, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(const Value* indices, context.RequiredInput(1, "indices"));
  if (indices->type.rank() != data->type.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 'indices' ", indices->type.ToString(),
        " has a different rank than input 'data' ", data->type.ToString()));
  }
  result->kind = OpKind::kGather;
  result->outputs.push_back(MakeValue(data->type.dtype, indices->type.dims));
  return absl::OkStatus();
}

absl::Status GatherNdRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* data, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(const Value* indices, context.RequiredInput(1, "indices"));
  RETURN_IF_ERROR(RequireRank(indices, "indices", 1, -1));
  ASSIGN_OR_RETURN(int64_t batch_dims, context.Int("batch_dims", 0));
  const int64_t last = indices->type.dims.back();
  if (batch_dims < 0 || batch_dims >= indices->type.rank() || last < 0 ||
      batch_dims + last > data->type.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 'indices' ", indices->type.ToString(), " with batch_dims ",
        batch_dims, " does not index input 'data' ", data->type.ToString()));
  }
  Dims out(indices->type.dims.begin(), indices->type.dims.end() - 1);
  out.insert(out.end(), data->type.dims.begin() + batch_dims + last,
             data->type.dims.end());
  result->kind = OpKind::kGather;
  result->outputs.push_back(MakeValue(data->type.dtype, std::move(out)));
  return absl::OkStatus();
}

absl::Status ScatterRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* data, context.RequiredInput(0, "data"));
  RETURN_IF_ERROR(context.RequiredInput(1, "indices").status());
  RETURN_IF_ERROR(context.RequiredInput(2, "updates").status());
  result->kind = OpKind::kScatter;
  result->outputs.push_back(MakeValue(data->type.dtype, data->type.dims));
  return absl::OkStatus();
}

absl::Status PadRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(std::optional<Dims> pads,
                   IntsFromInputOrAttribute(context, 1, "pads"));
  if (!pads.has_value()) {
    ASSIGN_OR_RETURN(pads, context.Ints("paddings"));
  }
  if (!pads.has_value()) return absl::InvalidArgumentError("has no 'pads'");
  const int64_t rank = x->type.rank();
  Dims axes;
  if (const Value* axes_input = context.input(3)) {
    ASSIGN_OR_RETURN(axes, ConstInts(axes_input, "axes"));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * n) {
    return absl::InvalidArgumentError(
        absl::StrCat("'pads' has ", pads->size(), " values for a rank-", rank,
                     " input (expected ", 2 * n, ")"));
  }
  Dims out = x->type.dims;
  OpAttributes& attrs = result->attributes;
  attrs.mutable_padding()->assign(static_cast<size_t>(rank),
                                  PaddingDimension());
  for (int64_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(int64_t axis, Axis(axes[i], rank, "axes"));
    const int64_t low = (*pads)[i];
    const int64_t high = (*pads)[i + n];
    RETURN_IF_ERROR(CheckRange(low, -kMaxPadding, kMaxPadding, "pads value"));
    RETURN_IF_ERROR(CheckRange(high, -kMaxPadding, kMaxPadding, "pads value"));
    ASSIGN_OR_RETURN(int64_t size, CheckedAdd(out[axis], low, "padded size"));
    ASSIGN_OR_RETURN(size, CheckedAdd(size, high, "padded size"));
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pads make dimension ", axis, " negative (", size, ")"));
    }
    out[axis] = size;
    (*attrs.mutable_padding())[axis].low = low;
    (*attrs.mutable_padding())[axis].high = high;
  }
  result->kind = OpKind::kPad;
  result->outputs.push_back(MakeValue(x->type.dtype, std::move(out)));
  return absl::OkStatus();
}

absl::Status TileRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  ASSIGN_OR_RETURN(const Value* repeats_input,
                   context.RequiredInput(1, "repeats"));
  ASSIGN_OR_RETURN(Dims repeats, ConstInts(repeats_input, "repeats"));
  if (static_cast<int64_t>(repeats.size()) != x->type.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'repeats' has ", repeats.size(),
                     " values for a rank-", x->type.rank(), " input"));
  }
  Dims out = x->type.dims;
  for (size_t i = 0; i < out.size(); ++i) {
    RETURN_IF_ERROR(
        CheckRange(repeats[i], 0, kMaxTensorBytes, "repeats value"));
    ASSIGN_OR_RETURN(out[i], CheckedMul(out[i], repeats[i], "tiled size"));
  }
  result->kind = OpKind::kBroadcast;
  result->outputs.push_back(MakeValue(x->type.dtype, std::move(out)));
  return absl::OkStatus();
}

absl::Status ExpandRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  ASSIGN_OR_RETURN(const Value* shape_input, context.RequiredInput(1, "shape"));
  ASSIGN_OR_RETURN(Dims shape, ConstInts(shape_input, "shape"));
  for (int64_t d : shape) {
    RETURN_IF_ERROR(CheckRange(d, 0, kMaxTensorBytes, "shape value"));
  }
  absl::StatusOr<Dims> out = BroadcastDims(x->type.dims, shape);
  if (!out.ok()) return out.status();
  result->kind = OpKind::kBroadcast;
  Value value = MakeValue(x->type.dtype, *std::move(out));
  if (x->constant.has_value() && Foldable(value)) {
    ConstantData data;
    data.is_real = x->constant->is_real;
    for (int64_t i = 0; i < Product(value.type.dims); ++i) {
      const int64_t at = BroadcastSource(value.type.dims, x->type.dims, i);
      data.AppendFrom(*x->constant, at);
    }
    value.constant = std::move(data);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

// Shape and Size always fold: every dimension is concrete after import.
absl::Status ShapeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  result->kind = OpKind::kShapeOf;
  ConstantData data;
  if (context.node().op_type() == "Size") {
    data.ints.push_back(x->type.num_elements());
    Value value = MakeValue(DType::kS64, {});
    value.constant = std::move(data);
    result->outputs.push_back(std::move(value));
    return absl::OkStatus();
  }
  const int64_t rank = x->type.rank();
  ASSIGN_OR_RETURN(int64_t start, context.Int("start", 0));
  ASSIGN_OR_RETURN(int64_t end, context.Int("end", rank));
  if (start < 0) start = std::max<int64_t>(0, start + rank);
  if (end < 0) end = std::max<int64_t>(0, end + rank);
  start = std::min(start, rank);
  end = std::min(end, rank);
  for (int64_t i = start; i < end; ++i) data.ints.push_back(x->type.dims[i]);
  Value value = MakeValue(DType::kS64, {data.size()});
  value.constant = std::move(data);
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status ConstantOfShapeRule(const NodeContext& context,
                                 OpInference* result) {
  ASSIGN_OR_RETURN(const Value* shape_input, context.RequiredInput(0, "input"));
  ASSIGN_OR_RETURN(Dims shape, ConstInts(shape_input, "input"));
  for (int64_t d : shape) {
    RETURN_IF_ERROR(CheckRange(d, 0, kMaxTensorBytes, "shape value"));
  }
  DType dtype = DType::kF32;
  ConstantData fill;
  fill.is_real = true;
  fill.reals.push_back(0);
  if (const AttributeProto* attr = context.FindAttribute("value")) {
    if (!attr->has_t()) {
      return absl::InvalidArgumentError("attribute 'value' is not a tensor");
    }
    ASSIGN_OR_RETURN(TensorType type,
                     TensorTypeFromProto(attr->t(), "attribute 'value'"));
    if (type.num_elements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'value' has ",
                                                     type.num_elements(),
                                                     " elements; expected 1"));
    }
    dtype = type.dtype;
    ASSIGN_OR_RETURN(std::optional<ConstantData> data,
                     DecodeTensorData(attr->t(), type, "attribute 'value'"));
    if (data.has_value()) {
      fill = *std::move(data);
    } else {
      fill = ConstantData();
      fill.is_real = !IsIntegralDType(dtype);
      if (fill.is_real) {
        fill.reals.push_back(0);
      } else {
        fill.ints.push_back(0);
      }
    }
  }
  // A literal shape makes the result a literal too (the "light" ONNX models
  // store their weights this way); a shape computed from other tensors makes
  // it a run-time broadcast.
  result->kind = shape_input->literal ? OpKind::kConstant : OpKind::kBroadcast;
  Value value = MakeValue(dtype, shape);
  RETURN_IF_ERROR(ValidateTensorType(value.type));
  value.literal = shape_input->literal;
  if (Foldable(value) && fill.size() == 1) {
    ConstantData data;
    data.is_real = fill.is_real;
    const int64_t count = value.type.num_elements();
    if (data.is_real) {
      data.reals.assign(static_cast<size_t>(count), fill.reals[0]);
    } else {
      data.ints.assign(static_cast<size_t>(count), fill.ints[0]);
    }
    value.constant = std::move(data);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status RangeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* start_input, context.RequiredInput(0, "start"));
  ASSIGN_OR_RETURN(const Value* limit_input, context.RequiredInput(1, "limit"));
  ASSIGN_OR_RETURN(const Value* delta_input, context.RequiredInput(2, "delta"));
  ASSIGN_OR_RETURN(std::vector<double> start, ConstReals(start_input, "start"));
  ASSIGN_OR_RETURN(std::vector<double> limit, ConstReals(limit_input, "limit"));
  ASSIGN_OR_RETURN(std::vector<double> delta, ConstReals(delta_input, "delta"));
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) {
    return absl::InvalidArgumentError("inputs must be scalars");
  }
  if (delta[0] == 0 || !std::isfinite(delta[0]) || !std::isfinite(start[0]) ||
      !std::isfinite(limit[0])) {
    return absl::InvalidArgumentError("has a zero or non-finite delta/bound");
  }
  const double count_real =
      std::max(0.0, std::ceil((limit[0] - start[0]) / delta[0]));
  if (count_real > static_cast<double>(kMaxTensorBytes)) {
    return absl::InvalidArgumentError("produces too many elements");
  }
  const int64_t count = static_cast<int64_t>(count_real);
  result->kind = OpKind::kIota;
  Value value = MakeValue(start_input->type.dtype, {count});
  if (count <= kMaxFoldElements) {
    ConstantData data;
    data.is_real = start_input->constant->is_real;
    for (int64_t i = 0; i < count; ++i) {
      const double v = start[0] + static_cast<double>(i) * delta[0];
      if (data.is_real) {
        data.reals.push_back(v);
      } else if (std::fabs(v) < 9.0e18) {
        data.ints.push_back(static_cast<int64_t>(v));
      } else {
        return absl::InvalidArgumentError("produces values beyond int64");
      }
    }
    value.constant = std::move(data);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status OneHotRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* indices, context.RequiredInput(0, "indices"));
  ASSIGN_OR_RETURN(const Value* depth_input, context.RequiredInput(1, "depth"));
  ASSIGN_OR_RETURN(const Value* values, context.RequiredInput(2, "values"));
  ASSIGN_OR_RETURN(Dims depth, ConstInts(depth_input, "depth"));
  if (depth.size() != 1) {
    return absl::InvalidArgumentError("input 'depth' must hold one value");
  }
  RETURN_IF_ERROR(CheckRange(depth[0], 0, kMaxTensorBytes, "depth"));
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", -1));
  ASSIGN_OR_RETURN(int64_t axis, Axis(axis_attr, indices->type.rank() + 1,
                                      "attribute 'axis'"));
  Dims out = indices->type.dims;
  out.insert(out.begin() + axis, depth[0]);
  result->kind = OpKind::kBroadcast;
  result->outputs.push_back(MakeValue(values->type.dtype, std::move(out)));
  return absl::OkStatus();
}

// Constant: one of value / sparse_value / value_float(s) / value_int(s) /
// value_string(s).
absl::Status ConstantRule(const NodeContext& context, OpInference* result) {
  result->kind = OpKind::kConstant;
  Value value;
  value.literal = true;
  if (const AttributeProto* attr = context.FindAttribute("value")) {
    if (!attr->has_t()) {
      return absl::InvalidArgumentError("attribute 'value' is not a tensor");
    }
    ASSIGN_OR_RETURN(value.type,
                     TensorTypeFromProto(attr->t(), "attribute 'value'"));
    ASSIGN_OR_RETURN(value.constant, DecodeTensorData(attr->t(), value.type,
                                                      "attribute 'value'"));
  } else if (const AttributeProto* sparse =
                 context.FindAttribute("sparse_value")) {
    ASSIGN_OR_RETURN(
        DType dtype,
        DTypeFromOnnx(sparse->sparse_tensor().values().data_type()));
    value.type =
        MakeTensorType(dtype, Dims(sparse->sparse_tensor().dims().begin(),
                                   sparse->sparse_tensor().dims().end()));
    RETURN_IF_ERROR(
        Annotate(ValidateTensorType(value.type), "attribute 'sparse_value'"));
  } else if (const AttributeProto* f = context.FindAttribute("value_float")) {
    value.type = MakeTensorType(DType::kF32, {});
    value.constant = ConstantData{/*is_real=*/true, {}, {f->f()}};
  } else if (const AttributeProto* fs = context.FindAttribute("value_floats")) {
    value.type = MakeTensorType(DType::kF32, {fs->floats_size()});
    if (fs->floats_size() <= kMaxFoldElements) {
      value.constant = ConstantData{
          /*is_real=*/true, {}, {fs->floats().begin(), fs->floats().end()}};
    }
  } else if (const AttributeProto* i = context.FindAttribute("value_int")) {
    value.type = MakeTensorType(DType::kS64, {});
    value.constant = ConstantData{/*is_real=*/false, {i->i()}, {}};
  } else if (const AttributeProto* is = context.FindAttribute("value_ints")) {
    value.type = MakeTensorType(DType::kS64, {is->ints_size()});
    if (is->ints_size() <= kMaxFoldElements) {
      value.constant = ConstantData{
          /*is_real=*/false, {is->ints().begin(), is->ints().end()}, {}};
    }
  } else if (context.FindAttribute("value_string") != nullptr) {
    value.type = MakeTensorType(DType::kString, {});
  } else if (const AttributeProto* ss =
                 context.FindAttribute("value_strings")) {
    value.type = MakeTensorType(DType::kString, {ss->strings_size()});
  } else {
    return absl::InvalidArgumentError("has no value attribute");
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status DataDependentRule(const NodeContext& context, OpInference*) {
  return Unknown(absl::StrCat(context.node().op_type(),
                              "'s output shape depends on the data it reads"));
}

}  // namespace

void AddShapeRules(RuleTable& rules) {
  for (absl::string_view op : {"Shape", "Size"}) rules[op] = ShapeRule;
  for (absl::string_view op : {"Scatter", "ScatterElements", "ScatterND"}) {
    rules[op] = ScatterRule;
  }
  for (absl::string_view op :
       {"NonZero", "NonMaxSuppression", "Unique", "Compress"}) {
    rules[op] = DataDependentRule;
  }
  rules["Constant"] = ConstantRule;
  rules["Reshape"] = ReshapeRule;
  rules["Flatten"] = FlattenRule;
  rules["Squeeze"] = SqueezeRule;
  rules["Unsqueeze"] = UnsqueezeRule;
  rules["Transpose"] = TransposeRule;
  rules["Concat"] = ConcatRule;
  rules["Split"] = SplitRule;
  rules["Slice"] = SliceRule;
  rules["Gather"] = GatherRule;
  rules["GatherElements"] = GatherElementsRule;
  rules["GatherND"] = GatherNdRule;
  rules["Pad"] = PadRule;
  rules["Tile"] = TileRule;
  rules["Expand"] = ExpandRule;
  rules["ConstantOfShape"] = ConstantOfShapeRule;
  rules["Range"] = RangeRule;
  rules["OneHot"] = OneHotRule;
}

}  // namespace gopt::graph::onnx_internal
