// ModelBuilder's backward pass: one function per tape op, each emitting the
// TensorFlow-style gradient ops of that op.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {

using graph::OpAttributes;
using graph::OpKind;
using graph::TensorType;
using graph::WindowDimension;

void ModelBuilder::Backprop(const TapeEntry& e) {
  std::vector<Tensor> dy(e.outputs.size());
  bool any = false;
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    dy[i] = gradients_[e.outputs[i].id];
    any = any || dy[i].valid();
  }
  if (!any || !status_.ok()) return;
  switch (e.op) {
    case TapeOp::kMatMul:
      return BackpropMatMul(e, dy);
    case TapeOp::kConv:
      return BackpropConv(e, dy);
    case TapeOp::kPool:
      return BackpropPool(e, dy);
    case TapeOp::kAdd:
    case TapeOp::kSub:
      return BackpropAddSub(e, dy);
    case TapeOp::kMul:
      return BackpropMul(e, dy);
    case TapeOp::kUnary:
      return BackpropUnary(e, dy);
    case TapeOp::kBatchNorm:
    case TapeOp::kLayerNorm:
      return BackpropNorm(e, dy);
    case TapeOp::kSoftmax:
      return BackpropSoftmax(e, dy);
    case TapeOp::kXent:
      return BackpropXent(e, dy);
    case TapeOp::kReduceMean:
    case TapeOp::kReduceSum:
      return BackpropReduce(e, dy);
    case TapeOp::kReshape:
      return BackpropReshape(e, dy);
    case TapeOp::kTranspose:
      return BackpropTranspose(e, dy);
    case TapeOp::kConcat:
    case TapeOp::kStack:
      return BackpropConcat(e, dy);
    case TapeOp::kSplit:
    case TapeOp::kUnstack:
      return BackpropSplit(e, dy);
    case TapeOp::kSlice:
      return BackpropSlice(e, dy);
    case TapeOp::kGather:
      return BackpropGather(e, dy);
  }
}

bool ModelBuilder::NeedsGradient(const TapeEntry& e, size_t i) const {
  return i < e.inputs.size() && values_[e.inputs[i].id].requires_grad;
}

void ModelBuilder::BackpropMatMul(const TapeEntry& e,
                                  const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const Tensor a = e.inputs[0];
  const Tensor b = e.inputs[1];
  const bool ta = e.transpose_a;
  const bool tb = e.transpose_b;
  if (NeedsGradient(e, 0)) {
    Tensor da = !ta   ? MatMulNode(GradName(e, "MatMul"), g, b, false, !tb)
                : !tb ? MatMulNode(GradName(e, "MatMul"), b, g, false, true)
                      : MatMulNode(GradName(e, "MatMul"), b, g, true, true);
    AccumulateGradient(a, da);
  }
  if (NeedsGradient(e, 1)) {
    Tensor db =
        !tb ? (!ta ? MatMulNode(GradName(e, "MatMul_1"), a, g, true, false)
                   : MatMulNode(GradName(e, "MatMul_1"), a, g, false, false))
            : (!ta ? MatMulNode(GradName(e, "MatMul_1"), g, a, true, false)
                   : MatMulNode(GradName(e, "MatMul_1"), g, a, true, true));
    AccumulateGradient(b, db);
  }
}

void ModelBuilder::BackpropConv(const TapeEntry& e,
                                const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const Tensor x = e.inputs[0];
  const Tensor w = e.inputs[1];
  // Copies: emitting nodes below may reallocate the tables.
  const OpAttributes forward = builder_.node(e.node).attributes;
  const TensorType tx = types_[x.id];
  const TensorType tw = types_[w.id];
  const TensorType tg = types_[g.id];
  const bool strided_pointwise = !e.depthwise && tw.dims[0] == 1 &&
                                 tw.dims[1] == 1 && e.stride > 1 &&
                                 forward.window()[0].padding_low == 0 &&
                                 forward.window()[1].padding_low == 0;
  if (NeedsGradient(e, 0) && strided_pointwise) {
    // A strided 1x1 convolution reads every stride-th pixel, so its input
    // gradient is a 1x1 convolution of the output gradient scattered
    // back into those pixels: exact work, where the dilated form below
    // would be costed over all the stride's zeros.
    OpAttributes attrs;
    attrs.has_convolution_dimensions = true;
    *attrs.mutable_convolution() = ChannelsLastDims(2);
    std::swap(attrs.mutable_convolution()->kernel_input_feature,
              attrs.mutable_convolution()->kernel_output_feature);
    attrs.mutable_window()->resize(2);
    std::vector<int64_t> dims = tg.dims;
    dims[3] = tx.dims[3];
    const Tensor dense =
        Emit1(GradName(e, "Conv2DBackpropInput"), "Conv2DBackpropInput",
              OpKind::kConvolution, {g, w}, dims, std::move(attrs));
    OpAttributes pad;
    pad.mutable_padding()->resize(4);
    for (int i = 1; i <= 2; ++i) {
      (*pad.mutable_padding())[i].interior = e.stride - 1;
      (*pad.mutable_padding())[i].high =
          tx.dims[i] - ((tg.dims[i] - 1) * e.stride + 1);
    }
    AccumulateGradient(
        x, Emit1(GradName(e, "Conv2DBackpropInput_pad"), "Pad", OpKind::kPad,
                 {dense}, tx.dims, std::move(pad)));
  } else if (NeedsGradient(e, 0)) {
    // XLA's Conv2DBackpropInput: the output gradient, dilated by the
    // stride, convolved with the spatially reversed kernel.
    OpAttributes attrs;
    attrs.has_convolution_dimensions = true;
    *attrs.mutable_convolution() = ChannelsLastDims(2);
    if (!e.depthwise) {
      std::swap(attrs.mutable_convolution()->kernel_input_feature,
                attrs.mutable_convolution()->kernel_output_feature);
    } else {
      attrs.feature_group_count = tx.dims[3];
    }
    for (int i = 0; i < 2; ++i) {
      const WindowDimension& f = forward.window()[i];
      WindowDimension w_dim;
      w_dim.size = f.size;
      w_dim.base_dilation = f.stride;
      w_dim.window_dilation = f.window_dilation;
      w_dim.reversal = true;
      const int64_t span = (f.size - 1) * f.window_dilation;
      w_dim.padding_low = span - f.padding_low;
      w_dim.padding_high = tx.dims[i + 1] + span -
                           (tg.dims[i + 1] - 1) * f.stride - 1 -
                           w_dim.padding_low;
      attrs.mutable_window()->push_back(w_dim);
    }
    AccumulateGradient(
        x, Emit1(GradName(e, e.depthwise ? "DepthwiseConv2dNativeBackpropInput"
                                         : "Conv2DBackpropInput"),
                 e.depthwise ? "DepthwiseConv2dNativeBackpropInput"
                             : "Conv2DBackpropInput",
                 OpKind::kConvolution, {g, w}, tx.dims, std::move(attrs)));
  }
  if (NeedsGradient(e, 1)) {
    // XLA's Conv2DBackpropFilter: the input (batch and feature roles
    // swapped) convolved with the output gradient as the kernel; the
    // forward stride becomes the window dilation.
    OpAttributes attrs;
    attrs.has_convolution_dimensions = true;
    graph::ConvolutionDimensions& d = *attrs.mutable_convolution();
    d.input_batch = 3;
    d.input_feature = 0;
    d.input_spatial = {1, 2};
    d.kernel_input_feature = 0;
    d.kernel_output_feature = 3;
    d.kernel_spatial = {1, 2};
    d.output_batch = 2;
    d.output_feature = 3;
    d.output_spatial = {0, 1};
    if (e.depthwise) attrs.batch_group_count = tx.dims[3];
    for (int i = 0; i < 2; ++i) {
      const WindowDimension& f = forward.window()[i];
      WindowDimension w_dim;
      w_dim.size = tg.dims[i + 1];
      w_dim.stride = f.window_dilation;
      w_dim.window_dilation = f.stride;
      w_dim.padding_low = f.padding_low;
      w_dim.padding_high = (f.size - 1) * f.window_dilation +
                           (tg.dims[i + 1] - 1) * f.stride + 1 -
                           tx.dims[i + 1] - f.padding_low;
      attrs.mutable_window()->push_back(w_dim);
    }
    AccumulateGradient(
        w, Emit1(GradName(e, e.depthwise ? "DepthwiseConv2dNativeBackpropFilter"
                                         : "Conv2DBackpropFilter"),
                 e.depthwise ? "DepthwiseConv2dNativeBackpropFilter"
                             : "Conv2DBackpropFilter",
                 OpKind::kConvolution, {x, g}, tw.dims, std::move(attrs)));
  }
}

void ModelBuilder::BackpropPool(const TapeEntry& e,
                                const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const Tensor x = e.inputs[0];
  OpAttributes attrs = builder_.node(e.node).attributes;
  if (e.pool == PoolKind::kMax) {
    AccumulateGradient(x, Emit1(GradName(e, "MaxPoolGrad"), "MaxPoolGrad",
                                OpKind::kSelectAndScatter, {x, g},
                                types_[x.id].dims, std::move(attrs)));
  } else {
    AccumulateGradient(x, Emit1(GradName(e, "AvgPoolGrad"), "AvgPoolGrad",
                                OpKind::kReduceWindow, {g}, types_[x.id].dims,
                                std::move(attrs)));
  }
}

void ModelBuilder::BackpropAddSub(const TapeEntry& e,
                                  const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  if (NeedsGradient(e, 0)) {
    AccumulateGradient(e.inputs[0],
                       ReduceToShapeOf(GradName(e, "x"), g, e.inputs[0]));
  }
  if (NeedsGradient(e, 1)) {
    Tensor db = ReduceToShapeOf(GradName(e, "y"), g, e.inputs[1]);
    if (e.op == TapeOp::kSub) {
      db = ElementwiseNode(GradName(e, "Neg"), "Neg", OpKind::kElementwiseUnary,
                           {db});
    }
    AccumulateGradient(e.inputs[1], db);
  }
}

void ModelBuilder::BackpropMul(const TapeEntry& e,
                               const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const OpKind kBinary = OpKind::kElementwiseBinary;
  for (size_t i = 0; i < 2; ++i) {
    if (!NeedsGradient(e, i)) continue;
    Tensor product = ElementwiseNode(GradName(e, i == 0 ? "Mul" : "Mul_1"),
                                     "Mul", kBinary, {g, e.inputs[1 - i]});
    AccumulateGradient(
        e.inputs[i],
        ReduceToShapeOf(GradName(e, i == 0 ? "x" : "y"), product, e.inputs[i]));
  }
}

void ModelBuilder::BackpropUnary(const TapeEntry& e,
                                 const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const OpKind kBinary = OpKind::kElementwiseBinary;
  const Tensor x = e.inputs[0];
  const Tensor y = e.outputs[0];
  Tensor dx;
  switch (e.unary) {
    case UnaryOp::kRelu:
      dx =
          ElementwiseNode(GradName(e, "ReluGrad"), "ReluGrad", kBinary, {g, y});
      break;
    case UnaryOp::kTanh:
      dx =
          ElementwiseNode(GradName(e, "TanhGrad"), "TanhGrad", kBinary, {y, g});
      break;
    case UnaryOp::kSigmoid:
      dx = ElementwiseNode(GradName(e, "SigmoidGrad"), "SigmoidGrad", kBinary,
                           {y, g});
      break;
    case UnaryOp::kGelu:
      dx = ElementwiseNode(GradName(e, "GeluGrad"), "GeluGrad",
                           OpKind::kTranscendental, {g, x});
      break;
    case UnaryOp::kSqrt:
      dx =
          ElementwiseNode(GradName(e, "SqrtGrad"), "SqrtGrad", kBinary, {y, g});
      break;
  }
  AccumulateGradient(x, dx);
}

void ModelBuilder::BackpropNorm(const TapeEntry& e,
                                const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const bool batch = e.op == TapeOp::kBatchNorm;
  const Tensor x = e.inputs[0];
  std::vector<graph::TensorType> outputs = {
      types_[x.id], types_[e.inputs[1].id], types_[e.inputs[2].id]};
  const absl::string_view op = batch ? "FusedBatchNormGradV3" : "LayerNormGrad";
  std::vector<Tensor> grads =
      Emit(GradName(e, op), op, OpKind::kNormalization,
           {g, x, e.inputs[1], e.outputs[1], e.outputs[2]}, std::move(outputs));
  if (grads.empty()) return;
  for (size_t i = 0; i < 3; ++i) {
    if (NeedsGradient(e, i)) AccumulateGradient(e.inputs[i], grads[i]);
  }
}

void ModelBuilder::BackpropSoftmax(const TapeEntry& e,
                                   const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  AccumulateGradient(e.inputs[0], Emit1(GradName(e, "SoftmaxGrad"),
                                        "SoftmaxGrad", OpKind::kSoftmax,
                                        {g, e.outputs[0]}, types_[g.id].dims));
}

void ModelBuilder::BackpropXent(const TapeEntry& e,
                                const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const OpKind kBinary = OpKind::kElementwiseBinary;
  if (!g.valid()) return;
  const int64_t rows = types_[g.id].dims[0];
  Tensor column = ReshapeNode(GradName(e, "ExpandDims"), g, {rows, 1});
  AccumulateGradient(e.inputs[0],
                     ElementwiseNode(GradName(e, "mul"), "Mul", kBinary,
                                     {e.outputs[1], column}));
}

void ModelBuilder::BackpropReduce(const TapeEntry& e,
                                  const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const OpKind kBinary = OpKind::kElementwiseBinary;
  const Tensor x = e.inputs[0];
  const TensorType tx = types_[x.id];
  const std::vector<int64_t> axes = builder_.node(e.node).attributes.dimensions;
  std::vector<int64_t> kept = tx.dims;
  int64_t count = 1;
  for (int64_t axis : axes) {
    count *= kept[axis];
    kept[axis] = 1;
  }
  Tensor expanded = ReshapeNode(GradName(e, "Reshape"), g, kept);
  OpAttributes attrs;
  attrs.dimensions = axes;
  Tensor dx = Emit1(GradName(e, "BroadcastTo"), "BroadcastTo",
                    OpKind::kBroadcast, {expanded}, tx.dims, std::move(attrs));
  if (e.op == TapeOp::kReduceMean && count > 1) {
    dx = ElementwiseNode(GradName(e, "truediv"), "RealDiv", kBinary,
                         {dx, ScalarConstant(GradName(e, "Const"))});
  }
  AccumulateGradient(x, dx);
}

void ModelBuilder::BackpropReshape(const TapeEntry& e,
                                   const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  AccumulateGradient(e.inputs[0], ReshapeNode(GradName(e, "Reshape"), g,
                                              types_[e.inputs[0].id].dims));
}

void ModelBuilder::BackpropTranspose(const TapeEntry& e,
                                     const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const std::vector<int64_t> perm = builder_.node(e.node).attributes.dimensions;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  AccumulateGradient(e.inputs[0], TransposeNode(GradName(e, "transpose"), g,
                                                std::move(inverse)));
}

void ModelBuilder::BackpropConcat(const TapeEntry& e,
                                  const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const bool stack = e.op == TapeOp::kStack;
  std::vector<int64_t> sizes;
  for (Tensor input : e.inputs) {
    sizes.push_back(stack ? 1 : types_[input.id].dims[e.axis]);
  }
  std::vector<Tensor> pieces = SplitNode(
      GradName(e, stack ? "unstack" : "Split"), stack ? "Unpack" : "SplitV", g,
      static_cast<int>(e.axis), sizes, stack);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (NeedsGradient(e, i)) AccumulateGradient(e.inputs[i], pieces[i]);
  }
}

void ModelBuilder::BackpropSplit(const TapeEntry& e,
                                 const std::vector<Tensor>& dy) {
  const bool unstack = e.op == TapeOp::kUnstack;
  std::vector<Tensor> parts = dy;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].valid()) {
      parts[i] = ZerosLike(GradName(e, "zeros"), e.outputs[i]);
    }
  }
  AccumulateGradient(e.inputs[0],
                     ConcatNode(GradName(e, unstack ? "stack" : "concat"),
                                unstack ? "Pack" : "ConcatV2", parts,
                                static_cast<int>(e.axis), unstack));
}

void ModelBuilder::BackpropSlice(const TapeEntry& e,
                                 const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const TensorType tx = types_[e.inputs[0].id];
  OpAttributes attrs;
  for (int d = 0; d < tx.rank(); ++d) {
    graph::PaddingDimension pad;
    if (d == e.axis) {
      pad.low = e.start;
      pad.high = tx.dims[d] - e.start - types_[g.id].dims[d];
    }
    attrs.mutable_padding()->push_back(pad);
  }
  AccumulateGradient(
      e.inputs[0], Emit1(GradName(e, "Pad"), "Pad", OpKind::kPad, {g}, tx.dims,
                         std::move(attrs), tx.dtype));
}

void ModelBuilder::BackpropGather(const TapeEntry& e,
                                  const std::vector<Tensor>& dy) {
  const Tensor g = dy[0];
  const Tensor table = e.inputs[0];
  Tensor zeros = ZerosLike(GradName(e, "zeros"), table);
  AccumulateGradient(
      table,
      Emit1(GradName(e, "UnsortedSegmentSum"), "UnsortedSegmentSum",
            OpKind::kScatter, {zeros, e.inputs[1], g}, types_[table.id].dims));
}

}  // namespace gopt::simulator::generators
