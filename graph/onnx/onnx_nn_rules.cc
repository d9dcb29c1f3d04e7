// ONNX rules for neural-network ops: convolution, matrix products, recurrent
// cells, normalization, softmax, pooling, reductions, TopK, Resize and
// DepthToSpace/SpaceToDepth.
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
// Convolution, matrix products, recurrent cells.

struct SpatialWindow {
  Dims kernel;
  Dims strides;
  Dims dilations;
  Dims pads_low;
  Dims pads_high;
  std::string auto_pad;
};

// Reads kernel_shape/strides/dilations/pads/auto_pad for `spatial` spatial
// dims. `kernel` is the kernel size taken from the weights (empty for pools,
// whose kernel_shape is required).
absl::StatusOr<SpatialWindow> ReadWindow(const NodeContext& context,
                                         int64_t spatial, int64_t input_rank,
                                         const Dims& kernel) {
  SpatialWindow window;
  ASSIGN_OR_RETURN(std::optional<Dims> kernel_shape,
                   context.Ints("kernel_shape"));
  auto count_error = [&](absl::string_view name, size_t count) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' has ", count,
                     " values for a rank-", input_rank, " input"));
  };
  if (kernel_shape.has_value()) {
    if (static_cast<int64_t>(kernel_shape->size()) != spatial) {
      return count_error("kernel_shape", kernel_shape->size());
    }
    for (int64_t k : *kernel_shape) {
      RETURN_IF_ERROR(CheckRange(k, 1, kMaxTensorBytes, "kernel_shape value"));
    }
    if (!kernel.empty() && *kernel_shape != kernel) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute 'kernel_shape' ", DimsString(*kernel_shape),
          " differs from the weights' spatial dims ", DimsString(kernel)));
    }
    window.kernel = *kernel_shape;
  } else if (!kernel.empty()) {
    window.kernel = kernel;
  } else {
    return absl::InvalidArgumentError("attribute 'kernel_shape' is missing");
  }
  ASSIGN_OR_RETURN(std::optional<Dims> strides, context.Ints("strides"));
  ASSIGN_OR_RETURN(std::optional<Dims> dilations, context.Ints("dilations"));
  ASSIGN_OR_RETURN(std::optional<Dims> pads, context.Ints("pads"));
  window.strides = strides.value_or(Dims(spatial, 1));
  window.dilations = dilations.value_or(Dims(spatial, 1));
  if (static_cast<int64_t>(window.strides.size()) != spatial) {
    return count_error("strides", window.strides.size());
  }
  if (static_cast<int64_t>(window.dilations.size()) != spatial) {
    return count_error("dilations", window.dilations.size());
  }
  for (int64_t s : window.strides) {
    RETURN_IF_ERROR(CheckRange(s, 1, kMaxWindowFactor, "strides value"));
  }
  for (int64_t d : window.dilations) {
    RETURN_IF_ERROR(CheckRange(d, 1, kMaxWindowFactor, "dilations value"));
  }
  Dims all_pads = pads.value_or(Dims(2 * spatial, 0));
  if (static_cast<int64_t>(all_pads.size()) != 2 * spatial) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'pads' has ", all_pads.size(), " values for a rank-",
        input_rank, " input (expected ", 2 * spatial, ")"));
  }
  for (int64_t p : all_pads) {
    RETURN_IF_ERROR(CheckRange(p, 0, kMaxPadding, "pads value"));
  }
  window.pads_low.assign(all_pads.begin(), all_pads.begin() + spatial);
  window.pads_high.assign(all_pads.begin() + spatial, all_pads.end());
  ASSIGN_OR_RETURN(window.auto_pad, context.String("auto_pad", "NOTSET"));
  if (window.auto_pad.empty()) window.auto_pad = "NOTSET";
  if (window.auto_pad != "NOTSET" && window.auto_pad != "VALID" &&
      window.auto_pad != "SAME_UPPER" && window.auto_pad != "SAME_LOWER") {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'auto_pad' is '", window.auto_pad,
                     "'; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER"));
  }
  return window;
}

// Resolves auto_pad for a forward window over `input` spatial sizes.
void ApplyAutoPad(const Dims& input, SpatialWindow* window) {
  if (window->auto_pad == "VALID") {
    std::fill(window->pads_low.begin(), window->pads_low.end(), 0);
    std::fill(window->pads_high.begin(), window->pads_high.end(), 0);
    return;
  }
  if (window->auto_pad != "SAME_UPPER" && window->auto_pad != "SAME_LOWER") {
    return;
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const int64_t stride = window->strides[i];
    const int64_t out = (input[i] + stride - 1) / stride;
    const int64_t extent = (window->kernel[i] - 1) * window->dilations[i] + 1;
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * stride + extent - input[i]);
    const int64_t small = total / 2;
    const int64_t large = total - small;
    window->pads_low[i] = window->auto_pad == "SAME_UPPER" ? small : large;
    window->pads_high[i] = window->auto_pad == "SAME_UPPER" ? large : small;
  }
}

ConvolutionDimensions NchwDimensions(int64_t spatial) {
  ConvolutionDimensions dims;
  dims.input_batch = 0;
  dims.input_feature = 1;
  dims.kernel_output_feature = 0;
  dims.kernel_input_feature = 1;
  dims.output_batch = 0;
  dims.output_feature = 1;
  for (int64_t i = 0; i < spatial; ++i) {
    dims.input_spatial.push_back(2 + i);
    dims.kernel_spatial.push_back(2 + i);
    dims.output_spatial.push_back(2 + i);
  }
  return dims;
}

// What Conv and ConvTranspose read alike: X and W of the same rank (at
// least 3), the window attributes and the group count.
struct ConvOperands {
  const Value* x = nullptr;
  const Value* w = nullptr;
  SpatialWindow window;
  int64_t group = 1;
};

absl::StatusOr<ConvOperands> ReadConvOperands(const NodeContext& context) {
  ConvOperands operands;
  ASSIGN_OR_RETURN(operands.x, context.RequiredInput(0, "X"));
  ASSIGN_OR_RETURN(operands.w, context.RequiredInput(1, "W"));
  const Value* x = operands.x;
  const Value* w = operands.w;
  RETURN_IF_ERROR(RequireRank(x, "X", 3, -1));
  if (w->type.rank() != x->type.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'W' has type ", w->type.ToString(), ", rank ",
                     w->type.rank(), " for a rank-", x->type.rank(), " input"));
  }
  const int64_t rank = x->type.rank();
  const Dims kernel(w->type.dims.begin() + 2, w->type.dims.end());
  ASSIGN_OR_RETURN(operands.window,
                   ReadWindow(context, rank - 2, rank, kernel));
  ASSIGN_OR_RETURN(operands.group, context.Int("group", 1));
  RETURN_IF_ERROR(CheckRange(operands.group, 1,
                             std::max<int64_t>(1, x->type.dims[1]),
                             "attribute 'group'"));
  return operands;
}

absl::Status ConvRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(ConvOperands operands, ReadConvOperands(context));
  const Value* x = operands.x;
  const Value* w = operands.w;
  const int64_t rank = x->type.rank();
  const int64_t spatial = rank - 2;
  SpatialWindow& window = operands.window;
  const int64_t group = operands.group;
  const Dims input_spatial(x->type.dims.begin() + 2, x->type.dims.end());
  ApplyAutoPad(input_spatial, &window);
  OpAttributes& attrs = result->attributes;
  attrs.has_convolution_dimensions = true;
  *attrs.mutable_convolution() = NchwDimensions(spatial);
  attrs.feature_group_count = group;
  for (int64_t i = 0; i < spatial; ++i) {
    WindowDimension dim;
    dim.size = window.kernel[i];
    dim.stride = window.strides[i];
    dim.window_dilation = window.dilations[i];
    dim.padding_low = window.pads_low[i];
    dim.padding_high = window.pads_high[i];
    attrs.mutable_window()->push_back(dim);
  }
  absl::StatusOr<Dims> out =
      ConvolutionOutputDims(x->type.dims, w->type.dims, attrs.convolution(),
                            attrs.window(), group, /*batch_group_count=*/1);
  if (!out.ok()) return out.status();
  if (const Value* bias = context.input(2)) {
    if (bias->type.dims != Dims{w->type.dims[0]}) {
      return absl::InvalidArgumentError(
          absl::StrCat("input 'B' has type ", bias->type.ToString(),
                       "; expected [", w->type.dims[0], "]"));
    }
  }
  result->kind = OpKind::kConvolution;
  result->outputs.push_back(MakeValue(x->type.dtype, *std::move(out)));
  return absl::OkStatus();
}

// ConvTranspose as XLA expresses it: a convolution over the input dilated by
// the strides (base dilation), with a flipped kernel and padding
// (k-1)*d - pad on each side. The kernel is described to the catalog as
// [C/group, M, k...] so that group counts work as for Conv.
absl::Status ConvTransposeRule(const NodeContext& context,
                               OpInference* result) {
  ASSIGN_OR_RETURN(ConvOperands operands, ReadConvOperands(context));
  const Value* x = operands.x;
  const Value* w = operands.w;
  const int64_t rank = x->type.rank();
  const int64_t spatial = rank - 2;
  SpatialWindow& window = operands.window;
  const int64_t group = operands.group;
  const int64_t in_channels = x->type.dims[1];
  if (w->type.dims[0] != in_channels || in_channels % group != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'W' ", w->type.ToString(), " does not match ",
                     in_channels, " input channels in ", group, " group(s)"));
  }
  ASSIGN_OR_RETURN(std::optional<Dims> output_padding,
                   context.Ints("output_padding"));
  ASSIGN_OR_RETURN(std::optional<Dims> output_shape,
                   context.Ints("output_shape"));
  Dims extra = output_padding.value_or(Dims(spatial, 0));
  if (static_cast<int64_t>(extra.size()) != spatial) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'output_padding' has ", extra.size(),
                     " values for a rank-", rank, " input"));
  }
  for (int64_t e : extra) {
    RETURN_IF_ERROR(CheckRange(e, 0, kMaxWindowFactor, "output_padding value"));
  }
  if (output_shape.has_value() &&
      static_cast<int64_t>(output_shape->size()) != spatial) {
    if (static_cast<int64_t>(output_shape->size()) == rank) {
      output_shape->erase(output_shape->begin(), output_shape->begin() + 2);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'output_shape' has ", output_shape->size(),
                       " values for a rank-", rank, " input"));
    }
  }
  if (output_shape.has_value()) {
    for (int64_t size : *output_shape) {
      RETURN_IF_ERROR(
          CheckRange(size, 0, kMaxTensorBytes, "output_shape value"));
    }
  }
  ASSIGN_OR_RETURN(int64_t out_channels,
                   CheckedMul(w->type.dims[1], group, "output channels"));
  Dims out_dims = {x->type.dims[0], out_channels};
  OpAttributes& attrs = result->attributes;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = x->type.dims[2 + i];
    const int64_t s = window.strides[i];
    const int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    const int64_t full = s * (in - 1) + extra[i] + extent;
    int64_t target = -1;
    if (output_shape.has_value()) {
      target = (*output_shape)[i];
    } else if (window.auto_pad == "SAME_UPPER" ||
               window.auto_pad == "SAME_LOWER") {
      target = in * s;
    }
    if (target >= 0) {
      const int64_t total = full - target;
      const int64_t half = total / 2;
      const bool upper = window.auto_pad != "SAME_LOWER";
      window.pads_low[i] = upper ? half : total - half;
      window.pads_high[i] = upper ? total - half : half;
    } else if (window.auto_pad == "VALID") {
      window.pads_low[i] = window.pads_high[i] = 0;
    }
    const int64_t size = full - window.pads_low[i] - window.pads_high[i];
    if (size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spatial dimension ", i, " has negative output size ", size));
    }
    out_dims.push_back(size);
    WindowDimension dim;
    dim.size = window.kernel[i];
    dim.base_dilation = s;
    dim.window_dilation = window.dilations[i];
    dim.padding_low = extent - 1 - window.pads_low[i];
    dim.padding_high = extent - 1 - window.pads_high[i] + extra[i];
    dim.reversal = true;
    attrs.mutable_window()->push_back(dim);
  }
  attrs.has_convolution_dimensions = true;
  *attrs.mutable_convolution() = NchwDimensions(spatial);
  attrs.mutable_convolution()->kernel_input_feature = 0;
  attrs.mutable_convolution()->kernel_output_feature = 1;
  attrs.feature_group_count = group;
  result->kind = OpKind::kConvolution;
  result->outputs.push_back(MakeValue(x->type.dtype, std::move(out_dims)));
  return absl::OkStatus();
}

absl::Status GemmRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* a, context.RequiredInput(0, "A"));
  ASSIGN_OR_RETURN(const Value* b, context.RequiredInput(1, "B"));
  RETURN_IF_ERROR(RequireRank(a, "A", 2, 2));
  RETURN_IF_ERROR(RequireRank(b, "B", 2, 2));
  ASSIGN_OR_RETURN(int64_t trans_a, context.Int("transA", 0));
  ASSIGN_OR_RETURN(int64_t trans_b, context.Int("transB", 0));
  DotDimensions dot;
  dot.lhs_contracting = {trans_a != 0 ? 0 : 1};
  dot.rhs_contracting = {trans_b != 0 ? 1 : 0};
  absl::StatusOr<Dims> out = DotOutputDims(a->type.dims, b->type.dims, dot);
  if (!out.ok()) return out.status();
  if (const Value* c = context.input(2)) {
    absl::StatusOr<Dims> with_c = BroadcastDims(*out, c->type.dims);
    if (!with_c.ok() || *with_c != *out) {
      return absl::InvalidArgumentError(
          absl::StrCat("input 'C' ", c->type.ToString(),
                       " does not broadcast to ", DimsString(*out)));
    }
  }
  result->kind = OpKind::kDot;
  result->attributes.has_dot_dimensions = true;
  *result->attributes.mutable_dot() = dot;
  result->outputs.push_back(MakeValue(a->type.dtype, *std::move(out)));
  return absl::OkStatus();
}

absl::Status MatMulRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* a, context.RequiredInput(0, "A"));
  ASSIGN_OR_RETURN(const Value* b, context.RequiredInput(1, "B"));
  absl::StatusOr<Dims> out = MatMulOutputDims(a->type.dims, b->type.dims);
  if (!out.ok()) return out.status();
  const int64_t ra = a->type.rank();
  const int64_t rb = b->type.rank();
  DotDimensions dot;
  dot.lhs_contracting = {ra - 1};
  dot.rhs_contracting = {rb == 1 ? 0 : rb - 2};
  if (ra == rb) {
    for (int64_t i = 0; i + 2 < ra; ++i) {
      dot.lhs_batch.push_back(i);
      dot.rhs_batch.push_back(i);
    }
  }
  result->kind = OpKind::kDot;
  result->attributes.has_dot_dimensions = true;
  *result->attributes.mutable_dot() = std::move(dot);
  result->outputs.push_back(MakeValue(
      context.node().op_type() == "MatMulInteger" ? DType::kS32 : a->type.dtype,
      *std::move(out)));
  return absl::OkStatus();
}

// LSTM, GRU, RNN with X, W, R as operands 0..2, as the catalog's rnn cost
// expects.
absl::Status RnnRule(const NodeContext& context, OpInference* result) {
  const absl::string_view op = context.node().op_type();
  const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  ASSIGN_OR_RETURN(const Value* w, context.RequiredInput(1, "W"));
  ASSIGN_OR_RETURN(const Value* r, context.RequiredInput(2, "R"));
  RETURN_IF_ERROR(RequireRank(x, "X", 3, 3));
  RETURN_IF_ERROR(RequireRank(w, "W", 3, 3));
  RETURN_IF_ERROR(RequireRank(r, "R", 3, 3));
  ASSIGN_OR_RETURN(std::string direction,
                   context.String("direction", "forward"));
  int64_t directions;
  if (direction == "forward" || direction == "reverse") {
    directions = 1;
  } else if (direction == "bidirectional") {
    directions = 2;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'direction' is '", direction,
                     "'; expected forward, reverse or bidirectional"));
  }
  ASSIGN_OR_RETURN(int64_t layout, context.Int("layout", 0));
  const int64_t seq = layout == 0 ? x->type.dims[0] : x->type.dims[1];
  const int64_t batch = layout == 0 ? x->type.dims[1] : x->type.dims[0];
  const int64_t input_size = x->type.dims[2];
  ASSIGN_OR_RETURN(int64_t hidden, context.Int("hidden_size", r->type.dims[2]));
  const Dims expected_w = {directions, gates * hidden, input_size};
  const Dims expected_r = {directions, gates * hidden, hidden};
  if (w->type.dims != expected_w) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'W' has type ", w->type.ToString(), "; expected ",
                     DimsString(expected_w)));
  }
  if (r->type.dims != expected_r) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'R' has type ", r->type.ToString(), "; expected ",
                     DimsString(expected_r)));
  }
  const DType dtype = x->type.dtype;
  result->kind = OpKind::kRnn;
  if (layout == 0) {
    result->outputs.push_back(
        MakeValue(dtype, {seq, directions, batch, hidden}));
    result->outputs.push_back(MakeValue(dtype, {directions, batch, hidden}));
  } else {
    result->outputs.push_back(
        MakeValue(dtype, {batch, seq, directions, hidden}));
    result->outputs.push_back(MakeValue(dtype, {batch, directions, hidden}));
  }
  if (gates == 4) result->outputs.push_back(result->outputs.back());
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Normalization, softmax, pooling, reductions.

absl::Status NormalizationRule(const NodeContext& context,
                               OpInference* result) {
  const absl::string_view op = context.node().op_type();
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  result->kind = OpKind::kNormalization;
  result->outputs.push_back(MakeValue(x->type.dtype, x->type.dims));
  if (op == "BatchNormalization") {
    RETURN_IF_ERROR(RequireRank(x, "X", 2, -1));
    const int64_t channels = x->type.dims[1];
    for (int i = 1; i < context.num_inputs() && i <= 4; ++i) {
      const Value* param = context.input(i);
      if (param != nullptr && param->type.dims != Dims{channels}) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i, " has type ", param->type.ToString(),
                         "; expected [", channels, "]"));
      }
    }
    result->attributes.dimensions = {1};
    for (int i = 0; i < 4; ++i) {
      result->outputs.push_back(MakeValue(x->type.dtype, {channels}));
    }
  } else if (op == "LayerNormalization") {
    ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", -1));
    ASSIGN_OR_RETURN(int64_t axis,
                     Axis(axis_attr, x->type.rank(), "attribute 'axis'"));
    Dims stats = x->type.dims;
    for (int64_t i = axis; i < x->type.rank(); ++i) {
      stats[i] = 1;
      result->attributes.dimensions.push_back(i);
    }
    result->outputs.push_back(MakeValue(DType::kF32, stats));
    result->outputs.push_back(MakeValue(DType::kF32, stats));
  } else if (op == "InstanceNormalization" || op == "GroupNormalization") {
    for (int64_t i = 2; i < x->type.rank(); ++i) {
      result->attributes.dimensions.push_back(i);
    }
  }
  return absl::OkStatus();
}

absl::Status SoftmaxRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  ASSIGN_OR_RETURN(int64_t axis_attr,
                   context.Int("axis", context.opset() >= 13 ? -1 : 1));
  ASSIGN_OR_RETURN(int64_t axis, Axis(axis_attr, std::max(x->type.rank(), 1),
                                      "attribute 'axis'"));
  result->kind = OpKind::kSoftmax;
  result->attributes.dimensions = {axis};
  result->outputs.push_back(MakeValue(x->type.dtype, x->type.dims));
  return absl::OkStatus();
}

// MaxPool, AveragePool, LpPool as reduce-window over every dimension (size 1
// over batch and channels). ceil_mode becomes extra high padding, so the
// window reproduces ONNX's output size.
absl::Status PoolRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  RETURN_IF_ERROR(RequireRank(x, "X", 3, -1));
  const int64_t rank = x->type.rank();
  const int64_t spatial = rank - 2;
  ASSIGN_OR_RETURN(SpatialWindow window,
                   ReadWindow(context, spatial, rank, {}));
  ASSIGN_OR_RETURN(int64_t ceil_mode, context.Int("ceil_mode", 0));
  const Dims input_spatial(x->type.dims.begin() + 2, x->type.dims.end());
  if (window.auto_pad == "SAME_UPPER" || window.auto_pad == "SAME_LOWER") {
    ceil_mode = 0;
  }
  ApplyAutoPad(input_spatial, &window);
  OpAttributes& attrs = result->attributes;
  attrs.mutable_window()->resize(2);
  Dims out_dims = {x->type.dims[0], x->type.dims[1]};
  for (int64_t i = 0; i < spatial; ++i) {
    WindowDimension dim;
    dim.size = window.kernel[i];
    dim.stride = window.strides[i];
    dim.window_dilation = window.dilations[i];
    dim.padding_low = window.pads_low[i];
    dim.padding_high = window.pads_high[i];
    absl::StatusOr<int64_t> size = WindowedOutputSize(input_spatial[i], dim);
    if (!size.ok()) {
      return Annotate(size.status(), absl::StrCat("spatial dimension ", i));
    }
    int64_t out = *size;
    const int64_t extent = (dim.size - 1) * dim.window_dilation + 1;
    const int64_t span =
        input_spatial[i] + dim.padding_low + dim.padding_high - extent;
    if (ceil_mode != 0 && span % dim.stride != 0) {
      ++out;
      // ONNX drops a last window that would start inside the high padding.
      if ((out - 1) * dim.stride >= input_spatial[i] + dim.padding_low) --out;
      dim.padding_high =
          std::max(dim.padding_high, (out - 1) * dim.stride + extent -
                                         input_spatial[i] - dim.padding_low);
    }
    out_dims.push_back(out);
    attrs.mutable_window()->push_back(dim);
  }
  result->kind = OpKind::kReduceWindow;
  result->outputs.push_back(MakeValue(x->type.dtype, out_dims));
  if (context.node().op_type() == "MaxPool") {
    result->outputs.push_back(MakeValue(DType::kS64, out_dims));
  }
  return absl::OkStatus();
}

absl::Status GlobalPoolRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  RETURN_IF_ERROR(RequireRank(x, "X", 3, -1));
  Dims out_dims = x->type.dims;
  OpAttributes& attrs = result->attributes;
  attrs.mutable_window()->resize(2);
  for (int64_t i = 2; i < x->type.rank(); ++i) {
    WindowDimension dim;
    dim.size = std::max<int64_t>(x->type.dims[i], 1);
    attrs.mutable_window()->push_back(dim);
    out_dims[i] = 1;
  }
  result->kind = OpKind::kReduceWindow;
  result->outputs.push_back(MakeValue(x->type.dtype, std::move(out_dims)));
  return absl::OkStatus();
}

// ReduceSum/Prod/Max/Min of a folded input (shape arithmetic such as the
// element count of Shape(x)[1:]): `axes` are normalized and sorted, `out`
// is the reduced value's type. nullopt for the other reductions and for
// integer results that overflow.
std::optional<ConstantData> FoldReduce(absl::string_view op, const Value& x,
                                       const Dims& axes, const Value& out) {
  enum class Kind { kSum, kProd, kMax, kMin };
  Kind kind;
  if (op == "ReduceSum") {
    kind = Kind::kSum;
  } else if (op == "ReduceProd") {
    kind = Kind::kProd;
  } else if (op == "ReduceMax") {
    kind = Kind::kMax;
  } else if (op == "ReduceMin") {
    kind = Kind::kMin;
  } else {
    return std::nullopt;
  }
  const int64_t count = out.type.num_elements();
  if (count == 0) return std::nullopt;
  const bool real = x.constant->is_real;
  std::vector<double> reals(static_cast<size_t>(count));
  std::vector<int64_t> ints(static_cast<size_t>(count));
  std::vector<bool> seen(static_cast<size_t>(count), false);
  std::vector<bool> reduced(x.type.dims.size(), false);
  for (int64_t axis : axes) reduced[static_cast<size_t>(axis)] = true;
  for (int64_t flat = 0; flat < x.constant->size(); ++flat) {
    // The output element this input element reduces into: its coordinates
    // with the reduced axes dropped, row-major.
    int64_t rest = flat;
    int64_t target = 0;
    int64_t stride = 1;
    for (int d = x.type.rank() - 1; d >= 0; --d) {
      const int64_t coord = rest % x.type.dims[d];
      rest /= x.type.dims[d];
      if (reduced[d]) continue;
      target += coord * stride;
      stride *= x.type.dims[d];
    }
    const size_t t = static_cast<size_t>(target);
    if (real) {
      const double v = x.constant->reals[flat];
      double& r = reals[t];
      r = !seen[t]              ? v
          : kind == Kind::kSum  ? r + v
          : kind == Kind::kProd ? r * v
          : kind == Kind::kMax  ? std::max(r, v)
                                : std::min(r, v);
    } else {
      const int64_t v = x.constant->ints[flat];
      int64_t& r = ints[t];
      if (!seen[t]) {
        r = v;
      } else if (kind == Kind::kSum) {
        if (__builtin_add_overflow(r, v, &r)) return std::nullopt;
      } else if (kind == Kind::kProd) {
        if (__builtin_mul_overflow(r, v, &r)) return std::nullopt;
      } else {
        r = kind == Kind::kMax ? std::max(r, v) : std::min(r, v);
      }
    }
    seen[t] = true;
  }
  ConstantData data;
  data.is_real = real;
  if (real) {
    data.reals = std::move(reals);
  } else {
    data.ints = std::move(ints);
  }
  return data;
}

absl::Status ReduceRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(std::optional<Dims> axes,
                   IntsFromInputOrAttribute(context, 1, "axes"));
  ASSIGN_OR_RETURN(int64_t keepdims, context.Int("keepdims", 1));
  ASSIGN_OR_RETURN(int64_t noop, context.Int("noop_with_empty_axes", 0));
  Dims reduce_axes;
  if (axes.has_value() && !axes->empty()) {
    reduce_axes = *axes;
  } else if (noop == 0) {
    for (int64_t i = 0; i < x->type.rank(); ++i) reduce_axes.push_back(i);
  }
  absl::StatusOr<Dims> out =
      ReduceOutputDims(x->type.dims, reduce_axes, keepdims != 0);
  if (!out.ok()) return Annotate(out.status(), "attribute 'axes'");
  for (int64_t axis : reduce_axes) {
    result->attributes.dimensions.push_back(axis < 0 ? axis + x->type.rank()
                                                     : axis);
  }
  std::sort(result->attributes.dimensions.begin(),
            result->attributes.dimensions.end());
  result->kind = OpKind::kReduce;
  Value value = MakeValue(x->type.dtype, *std::move(out));
  if (x->constant.has_value() && Foldable(value)) {
    value.constant = FoldReduce(context.node().op_type(), *x,
                                result->attributes.dimensions, value);
  }
  result->outputs.push_back(std::move(value));
  return absl::OkStatus();
}

absl::Status ArgReduceRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "data"));
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", 0));
  ASSIGN_OR_RETURN(int64_t keepdims, context.Int("keepdims", 1));
  ASSIGN_OR_RETURN(int64_t axis,
                   Axis(axis_attr, x->type.rank(), "attribute 'axis'"));
  ASSIGN_OR_RETURN(Dims out,
                   ReduceOutputDims(x->type.dims, {axis}, keepdims != 0));
  result->kind = OpKind::kReduce;
  result->attributes.dimensions = {axis};
  result->outputs.push_back(MakeValue(DType::kS64, std::move(out)));
  return absl::OkStatus();
}

absl::Status TopKRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  int64_t k;
  if (const Value* k_input = context.input(1)) {
    ASSIGN_OR_RETURN(Dims values, ConstInts(k_input, "K"));
    if (values.size() != 1) {
      return absl::InvalidArgumentError("input 'K' must hold one value");
    }
    k = values[0];
  } else {
    ASSIGN_OR_RETURN(k, context.Int("k", -1));
  }
  ASSIGN_OR_RETURN(int64_t axis_attr, context.Int("axis", -1));
  ASSIGN_OR_RETURN(int64_t axis,
                   Axis(axis_attr, x->type.rank(), "attribute 'axis'"));
  RETURN_IF_ERROR(CheckRange(k, 0, x->type.dims[axis], "K"));
  Dims out = x->type.dims;
  out[axis] = k;
  result->kind = OpKind::kSort;
  result->attributes.dimensions = {axis};
  result->outputs.push_back(MakeValue(x->type.dtype, out));
  result->outputs.push_back(MakeValue(DType::kS64, out));
  return absl::OkStatus();
}

// Resize (opset 10+) and Upsample: output from `sizes` when given, else
// floor(dim * scale).
absl::Status ResizeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  const int64_t rank = x->type.rank();
  const bool upsample = context.node().op_type() == "Upsample";
  const bool opset10 = !upsample && context.opset() < 11;
  const Value* scales_input =
      upsample || opset10 ? context.input(1) : context.input(2);
  const Value* sizes_input = upsample || opset10 ? nullptr : context.input(3);
  ASSIGN_OR_RETURN(std::optional<Dims> axes_attr, context.Ints("axes"));
  Dims axes;
  if (axes_attr.has_value()) {
    for (int64_t a : *axes_attr) {
      ASSIGN_OR_RETURN(int64_t axis, Axis(a, rank, "attribute 'axes'"));
      axes.push_back(axis);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  Dims out = x->type.dims;
  if (sizes_input != nullptr && sizes_input->type.num_elements() > 0) {
    ASSIGN_OR_RETURN(Dims sizes, ConstInts(sizes_input, "sizes"));
    if (sizes.size() != axes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input 'sizes' has ", sizes.size(), " values for ",
                       axes.size(), " axes"));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      RETURN_IF_ERROR(CheckRange(sizes[i], 0, kMaxTensorBytes, "sizes value"));
      out[axes[i]] = sizes[i];
    }
  } else {
    std::vector<double> scales;
    if (scales_input != nullptr) {
      ASSIGN_OR_RETURN(scales, ConstReals(scales_input, "scales"));
    } else if (const AttributeProto* attr = context.FindAttribute("scales")) {
      scales.assign(attr->floats().begin(), attr->floats().end());
    } else {
      return absl::InvalidArgumentError("has neither 'scales' nor 'sizes'");
    }
    if (scales.size() != axes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'scales' has ", scales.size(), " values for ",
                       axes.size(), " axes"));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const double size =
          std::floor(static_cast<double>(out[axes[i]]) * scales[i]);
      if (!(size >= 0 && size <= static_cast<double>(kMaxTensorBytes))) {
        return absl::InvalidArgumentError(
            absl::StrCat("scale ", scales[i], " gives an invalid size"));
      }
      out[axes[i]] = static_cast<int64_t>(size);
    }
  }
  result->kind = OpKind::kResize;
  result->outputs.push_back(MakeValue(x->type.dtype, std::move(out)));
  return absl::OkStatus();
}

absl::Status DepthSpaceRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  RETURN_IF_ERROR(RequireRank(x, "input", 4, 4));
  ASSIGN_OR_RETURN(int64_t block, context.Int("blocksize", 0));
  RETURN_IF_ERROR(
      CheckRange(block, 1, kMaxWindowFactor, "attribute 'blocksize'"));
  Dims out = x->type.dims;
  const int64_t area = block * block;
  if (context.node().op_type() == "DepthToSpace") {
    if (out[1] % area != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "channels ", out[1], " are not divisible by blocksize^2 ", area));
    }
    out[1] /= area;
    ASSIGN_OR_RETURN(out[2], CheckedMul(out[2], block, "height"));
    ASSIGN_OR_RETURN(out[3], CheckedMul(out[3], block, "width"));
  } else {
    if (out[2] % block != 0 || out[3] % block != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("spatial dims of ", x->type.ToString(),
                       " are not divisible by blocksize ", block));
    }
    ASSIGN_OR_RETURN(out[1], CheckedMul(out[1], area, "channels"));
    out[2] /= block;
    out[3] /= block;
  }
  result->kind = OpKind::kTranspose;
  result->outputs.push_back(MakeValue(x->type.dtype, std::move(out)));
  return absl::OkStatus();
}

}  // namespace

void AddNeuralNetRules(RuleTable& rules) {
  for (absl::string_view op :
       {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
        "GroupNormalization", "LpNormalization", "LRN",
        "MeanVarianceNormalization"}) {
    rules[op] = NormalizationRule;
  }
  for (absl::string_view op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    rules[op] = SoftmaxRule;
  }
  for (absl::string_view op : {"MaxPool", "AveragePool", "LpPool"}) {
    rules[op] = PoolRule;
  }
  for (absl::string_view op :
       {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    rules[op] = GlobalPoolRule;
  }
  for (absl::string_view op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
        "ReduceSumSquare"}) {
    rules[op] = ReduceRule;
  }
  for (absl::string_view op : {"LSTM", "GRU", "RNN"}) rules[op] = RnnRule;
  for (absl::string_view op : {"Resize", "Upsample"}) rules[op] = ResizeRule;
  for (absl::string_view op : {"DepthToSpace", "SpaceToDepth"}) {
    rules[op] = DepthSpaceRule;
  }
  for (absl::string_view op : {"ArgMax", "ArgMin"}) rules[op] = ArgReduceRule;
  rules["Conv"] = ConvRule;
  rules["ConvTranspose"] = ConvTransposeRule;
  rules["Gemm"] = GemmRule;
  rules["MatMul"] = MatMulRule;
  rules["MatMulInteger"] = MatMulRule;
  rules["TopK"] = TopKRule;
}

}  // namespace gopt::graph::onnx_internal
