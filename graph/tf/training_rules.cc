// TensorFlow shape rules for the ops training graphs add: gradient kernels
// (BiasAddGrad, convolution and pool backprops, FusedBatchNormGrad, the loss
// kernels), the shape arithmetic tf.gradients emits (BroadcastGradientArgs,
// DynamicStitch, InvertPermutation, ConcatOffset), segment sums, optimizer
// updates (Apply* / ResourceApply*), variables, random initializers, input
// pipelines (IteratorGetNext) and summaries.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/tf/shape_rule_util.h"
#include "graph/tf/training_costs.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {

namespace {

// The feature dimension of a tensor of `rank` under the node's data_format
// (NHWC and friends: last; NCHW / NCDHW: 1).
absl::StatusOr<int64_t> FeatureDim(const RuleContext& ctx, int64_t rank) {
  ASSIGN_OR_RETURN(std::string format,
                   StringAttr(ctx.node, "data_format", "NHWC"));
  if (absl::StartsWith(format, "NC")) return rank >= 2 ? 1 : rank - 1;
  if (format.empty() || absl::StartsWith(format, "N")) return rank - 1;
  return ctx.Error(absl::StrCat("attr 'data_format' is '", format,
                                "', expected NHWC, NCHW or their 3-D forms"));
}

// BiasAddGrad(out_backprop): the bias gradient, one value per feature.
absl::Status BiasAddGradRule(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  PartialShape out = PartialShape::OfRank(1);
  if (x.rank_known) {
    if (x.dims.empty()) return ctx.Error("out_backprop must have rank >= 1");
    ASSIGN_OR_RETURN(int64_t feature,
                     FeatureDim(ctx, static_cast<int64_t>(x.dims.size())));
    out.dims[0] = x.dims[feature];
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

// Ops whose output shape is the value of input `index` (Conv2DBackpropInput:
// input_sizes; Conv2DBackpropFilter: filter_sizes; AvgPoolGrad:
// orig_input_shape; Random*: shape).
template <int kIndex>
absl::Status ShapeFromInputRule(RuleContext& ctx) {
  const TensorInfo& sizes = ctx.In(kIndex);
  if (sizes.shape.rank_known && sizes.shape.dims.size() > 1) {
    return ctx.Error(absl::StrCat("input ", kIndex, " must be a 1-D shape, is ",
                                  PartialShapeString(sizes.shape)));
  }
  if (sizes.value.has_value()) {
    for (int64_t v : *sizes.value) {
      if (v != kUnknownValue && v < 0) {
        return ctx.Error(absl::StrCat("input ", kIndex, " holds size ", v));
      }
    }
  }
  SetAll(ctx, DefaultDType(ctx), ShapeFromValue(sizes));
  return absl::OkStatus();
}

// Random*(shape, ...): a tensor of that shape, of type attr dtype (Tout for
// RandomUniformInt; T is the shape's integer type).
absl::Status RandomRule(RuleContext& ctx) {
  RETURN_IF_ERROR(ShapeFromInputRule<0>(ctx));
  const DType dtype = AttrOr(ctx, "dtype", AttrOr(ctx, "Tout", DType::kF32));
  for (TensorInfo& out : ctx.out) out.dtype = dtype;
  return absl::OkStatus();
}

// Ops with no data outputs (resource updates, savers, assertions).
absl::Status NoOutputRule(RuleContext&) { return absl::OkStatus(); }

// MaxPoolGrad(orig_input, orig_output, grad) and the other gradients that
// have the shape of their first input (ReluGrad-like ops are elementwise).
absl::Status LikeFirstInputRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), ctx.In(0).shape);
  return absl::OkStatus();
}

// Gradient kernels of elementwise activations: (gradients, features) or
// (y, dy); the output has the shape of either.
absl::Status ActivationGradRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), MergeShapes(ctx.In(0).shape, ctx.In(1).shape));
  return absl::OkStatus();
}

// FusedBatchNormGrad*(y_backprop, x, scale, reserve_1, reserve_2
// [, reserve_3]) -> x_backprop (x's shape), scale_backprop and
// offset_backprop ([C]), and two empty placeholders.
absl::Status FusedBatchNormGradRule(RuleContext& ctx) {
  const PartialShape x = MergeShapes(ctx.In(0).shape, ctx.In(1).shape);
  int64_t channels = kUnknownDim;
  if (x.rank_known) {
    if (x.dims.size() != 4 && x.dims.size() != 5) {
      return ctx.Error(
          absl::StrCat("x must have rank 4 or 5, is ", PartialShapeString(x)));
    }
    ASSIGN_OR_RETURN(int64_t feature,
                     FeatureDim(ctx, static_cast<int64_t>(x.dims.size())));
    channels = x.dims[feature];
  }
  const PartialShape& scale = ctx.In(2).shape;
  if (channels < 0 && scale.rank_known && scale.dims.size() == 1) {
    channels = scale.dims[0];
  }
  const DType dtype = DefaultDType(ctx);
  const DType stats = AttrOr(ctx, "U", DType::kF32);
  for (size_t i = 0; i < ctx.out.size(); ++i) {
    ctx.out[i].dtype = i == 0 ? dtype : stats;
    ctx.out[i].shape = i == 0  ? x
                       : i < 3 ? PartialShape::Known({channels})
                               : PartialShape::Known({0});
  }
  return absl::OkStatus();
}

// (Sparse)SoftmaxCrossEntropyWithLogits(features [B, C], labels) -> loss
// [B], backprop [B, C].
absl::Status SoftmaxCrossEntropyRule(RuleContext& ctx) {
  PartialShape logits = ctx.In(0).shape;
  if (ctx.node.op() == "SoftmaxCrossEntropyWithLogits") {
    absl::StatusOr<PartialShape> merged =
        BroadcastPartialShapes(logits, ctx.In(1).shape);
    if (!merged.ok()) return ctx.Annotated(merged.status());
    logits = *merged;
  }
  if (logits.rank_known && logits.dims.size() != 2) {
    return ctx.Error(absl::StrCat("features must have rank 2, is ",
                                  PartialShapeString(logits)));
  }
  PartialShape loss = PartialShape::OfRank(1);
  if (logits.rank_known) {
    loss.dims[0] = logits.dims[0];
  } else {
    logits = PartialShape::OfRank(2);
  }
  const DType dtype = DefaultDType(ctx);
  ctx.out[0].dtype = dtype;
  ctx.out[0].shape = loss;
  if (ctx.out.size() > 1) {
    ctx.out[1].dtype = dtype;
    ctx.out[1].shape = logits;
  }
  return absl::OkStatus();
}

// BroadcastGradientArgs(s0, s1) -> (r0, r1): the axes each operand of a
// broadcasting binary op was broadcast along, folded when both shapes are.
absl::Status BroadcastGradientArgsRule(RuleContext& ctx) {
  const DType dtype = AttrOr(ctx, "T", DType::kS32);
  for (TensorInfo& out : ctx.out) {
    out.dtype = dtype;
    out.shape = PartialShape::OfRank(1);
  }
  std::optional<std::vector<int64_t>> s0 = KnownValues(ctx.In(0));
  std::optional<std::vector<int64_t>> s1 = KnownValues(ctx.In(1));
  if (!s0.has_value() || !s1.has_value()) return absl::OkStatus();
  const size_t rank = std::max(s0->size(), s1->size());
  std::vector<int64_t> r[2];
  for (size_t i = 0; i < rank; ++i) {
    const size_t pad0 = rank - s0->size();
    const size_t pad1 = rank - s1->size();
    const int64_t a = i < pad0 ? 1 : (*s0)[i - pad0];
    const int64_t b = i < pad1 ? 1 : (*s1)[i - pad1];
    if (a != b && a != 1 && b != 1) {
      return ctx.Error(absl::StrCat("shapes do not broadcast: dimension ", i,
                                    " is ", a, " and ", b));
    }
    // TensorFlow reduces a size-1 dimension that meets a size-1 dimension
    // for neither operand, and one that meets a larger one for its side.
    if (a == 1 && b != 1) r[0].push_back(static_cast<int64_t>(i));
    if (b == 1 && a != 1) r[1].push_back(static_cast<int64_t>(i));
    if (a == 1 && b == 1) {
      r[0].push_back(static_cast<int64_t>(i));
      r[1].push_back(static_cast<int64_t>(i));
    }
  }
  for (size_t k = 0; k < ctx.out.size() && k < 2; ++k) {
    ctx.out[k].shape = PartialShape::Known({static_cast<int64_t>(r[k].size())});
    ctx.out[k].value = r[k];
  }
  return absl::OkStatus();
}

// UnsortedSegmentSum/Max/Min/Prod(data, segment_ids, num_segments) ->
// [num_segments] + data.shape[rank(segment_ids):].
absl::Status UnsortedSegmentRule(RuleContext& ctx) {
  const PartialShape& data = ctx.In(0).shape;
  const PartialShape& ids = ctx.In(1).shape;
  std::optional<int64_t> segments = ScalarValue(ctx.In(2));
  if (segments.has_value() && *segments < 0) {
    return ctx.Error(absl::StrCat("num_segments is ", *segments));
  }
  PartialShape out = PartialShape::UnknownRank();
  if (data.rank_known && ids.rank_known) {
    if (ids.dims.size() > data.dims.size()) {
      return ctx.Error(absl::StrCat("segment_ids ", PartialShapeString(ids),
                                    " have a higher rank than data ",
                                    PartialShapeString(data)));
    }
    out = PartialShape::Known({segments.value_or(kUnknownDim)});
    out.dims.insert(out.dims.end(), data.dims.begin() + ids.dims.size(),
                    data.dims.end());
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

// (Parallel)DynamicStitch(indices_0..N-1, data_0..N-1): merged has max index
// + 1 rows of data_0.shape[rank(indices_0):]. Rows unknown when an index is;
// the folded value is stitched when every input is folded.
absl::Status DynamicStitchRule(RuleContext& ctx) {
  const int n = ctx.num_inputs() / 2;
  if (n == 0 || ctx.num_inputs() % 2 != 0) {
    return ctx.Error(absl::StrCat("has ", ctx.num_inputs(),
                                  " inputs, expected N indices and N data"));
  }
  int64_t rows = -1;
  bool rows_known = true;
  for (int i = 0; i < n; ++i) {
    std::optional<std::vector<int64_t>> indices = KnownValues(ctx.In(i));
    if (!indices.has_value()) {
      rows_known = false;
      break;
    }
    for (int64_t v : *indices) {
      if (v < 0) return ctx.Error(absl::StrCat("negative index ", v));
      rows = std::max(rows, v);
    }
  }
  const PartialShape& indices0 = ctx.In(0).shape;
  const PartialShape& data0 = ctx.In(n).shape;
  PartialShape out = PartialShape::UnknownRank();
  if (indices0.rank_known && data0.rank_known &&
      indices0.dims.size() <= data0.dims.size()) {
    out = PartialShape::Known({rows_known ? rows + 1 : kUnknownDim});
    out.dims.insert(out.dims.end(), data0.dims.begin() + indices0.dims.size(),
                    data0.dims.end());
  }
  SetAll(ctx, DefaultDType(ctx), out);
  if (rows_known && out.rank_known && out.dims.size() == 1 &&
      rows + 1 <= kMaxFoldedElements) {
    std::vector<int64_t> merged(static_cast<size_t>(rows + 1), kUnknownValue);
    for (int i = 0; i < n; ++i) {
      std::optional<std::vector<int64_t>> indices = KnownValues(ctx.In(i));
      const auto& data = ctx.In(n + i).value;
      if (!data.has_value() || data->size() != indices->size()) {
        return absl::OkStatus();
      }
      for (size_t k = 0; k < indices->size(); ++k) {
        merged[static_cast<size_t>((*indices)[k])] = (*data)[k];
      }
    }
    ctx.out[0].value = std::move(merged);
  }
  return absl::OkStatus();
}

// InvertPermutation(x): same shape; folded when x is.
absl::Status InvertPermutationRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), ctx.In(0).shape);
  std::optional<std::vector<int64_t>> perm = KnownValues(ctx.In(0));
  if (!perm.has_value()) return absl::OkStatus();
  std::vector<int64_t> inverse(perm->size(), kUnknownValue);
  for (size_t i = 0; i < perm->size(); ++i) {
    const int64_t p = (*perm)[i];
    if (p < 0 || p >= static_cast<int64_t>(perm->size()) ||
        inverse[static_cast<size_t>(p)] != kUnknownValue) {
      return ctx.Error("input is not a permutation");
    }
    inverse[static_cast<size_t>(p)] = static_cast<int64_t>(i);
  }
  ctx.out[0].value = std::move(inverse);
  return absl::OkStatus();
}

// ConcatOffset(concat_dim, shape_0..N-1) -> offset_i (shape_i's shape): the
// start of each input along concat_dim, folded when the shapes are.
absl::Status ConcatOffsetRule(RuleContext& ctx) {
  std::optional<int64_t> axis = ScalarValue(ctx.In(0));
  int64_t running = 0;
  for (size_t i = 0; i < ctx.out.size(); ++i) {
    const size_t input = i + 1;
    TensorInfo& out = ctx.out[i];
    out.dtype = DType::kS32;
    if (input >= ctx.in.size()) continue;
    out.shape = ctx.In(input).shape;
    std::optional<std::vector<int64_t>> shape = KnownValues(ctx.In(input));
    if (!axis.has_value() || !shape.has_value() || running < 0) {
      running = -1;
      continue;
    }
    const int64_t rank = static_cast<int64_t>(shape->size());
    const int64_t a = *axis < 0 ? *axis + rank : *axis;
    if (a < 0 || a >= rank) {
      return ctx.Error(
          absl::StrCat("concat_dim ", *axis, " is outside rank ", rank));
    }
    std::vector<int64_t> offset(shape->size(), 0);
    offset[static_cast<size_t>(a)] = running;
    out.value = std::move(offset);
    running = SatAdd(running, (*shape)[static_cast<size_t>(a)]);
  }
  return absl::OkStatus();
}

// Apply*(var, ...) optimizer updates return the updated variable.
absl::Status ApplyRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), ctx.In(0).shape);
  return absl::OkStatus();
}

// VariableV2 / Variable / VarHandleOp: a variable of attr 'shape'. Ref
// variables produce the tensor itself; resource handles are opaque scalars
// that remember the variable's shape for ReadVariableOp.
absl::Status VariableRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(PartialShape shape, ShapeAttr(ctx.node, "shape"));
  const DType dtype = AttrOr(ctx, "dtype", DType::kF32);
  if (ctx.node.op() == "VarHandleOp") {
    SetAll(ctx, DType::kOpaque, PartialShape::Known({}));
    ctx.out[0].element_shape = shape;
    return absl::OkStatus();
  }
  SetAll(ctx, dtype, shape);
  return absl::OkStatus();
}

// ReadVariableOp(resource): the variable's value.
absl::Status ReadVariableRule(RuleContext& ctx) {
  const TensorInfo& handle = ctx.In(0);
  SetAll(ctx, AttrOr(ctx, "dtype", DType::kF32),
         handle.element_shape.value_or(PartialShape::UnknownRank()));
  return absl::OkStatus();
}

// Assign / AssignAdd / AssignSub(ref, value) return the updated ref.
absl::Status AssignRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), MergeShapes(ctx.In(0).shape, ctx.In(1).shape));
  return absl::OkStatus();
}

// Resource handles and other opaque scalars: iterators, datasets, queues.
absl::Status HandleRule(RuleContext& ctx) {
  SetAll(ctx, DType::kOpaque, PartialShape::Known({}));
  return absl::OkStatus();
}

// Summaries: one serialized Summary proto (a string scalar).
absl::Status SummaryRule(RuleContext& ctx) {
  SetAll(ctx, DType::kString, PartialShape::Known({}));
  return absl::OkStatus();
}

// L2Loss(t) -> sum(t^2) / 2, a scalar.
absl::Status ScalarOfInputTypeRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), PartialShape::Known({}));
  return absl::OkStatus();
}

// IteratorGetNext and friends: one output per entry of attrs output_types /
// output_shapes.
absl::Status IteratorGetNextRule(RuleContext& ctx) {
  auto types = ctx.node.attr().find("output_types");
  auto shapes = ctx.node.attr().find("output_shapes");
  for (size_t i = 0; i < ctx.out.size(); ++i) {
    TensorInfo& out = ctx.out[i];
    out.dtype = DType::kF32;
    out.shape = PartialShape::UnknownRank();
    if (types != ctx.node.attr().end() &&
        static_cast<int>(i) < types->second.list().type_size()) {
      out.dtype = DTypeFromTf(types->second.list().type(static_cast<int>(i)));
    }
    if (shapes != ctx.node.attr().end() &&
        static_cast<int>(i) < shapes->second.list().shape_size()) {
      ASSIGN_OR_RETURN(
          out.shape,
          ShapeFromProto(shapes->second.list().shape(static_cast<int>(i)),
                         ctx.node.name(),
                         absl::StrCat("output_shapes[", i, "]")));
    }
  }
  return absl::OkStatus();
}

// RestoreV2(prefix, tensor_names, shape_and_slices): one tensor per entry
// of attr dtypes, of a shape only the checkpoint knows (the lowering takes it
// from the variable an Assign stores it into).
absl::Status RestoreRule(RuleContext& ctx) {
  auto types = ctx.node.attr().find("dtypes");
  for (size_t i = 0; i < ctx.out.size(); ++i) {
    ctx.out[i].dtype = DType::kF32;
    if (types != ctx.node.attr().end() &&
        static_cast<int>(i) < types->second.list().type_size()) {
      ctx.out[i].dtype =
          DTypeFromTf(types->second.list().type(static_cast<int>(i)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddTrainingRules(RuleTable& rules) {
  AddRule(rules, {"BiasAddGrad"}, 1, BiasAddGradRule);
  AddRule(rules,
          {"Conv2DBackpropInput", "DepthwiseConv2dNativeBackpropInput",
           "Conv3DBackpropInputV2", "AvgPoolGrad"},
          1, ShapeFromInputRule<0>);
  for (absl::string_view op : RandomOps()) {
    rules[std::string(op)] = Rule{1, RandomRule};
  }
  AddRule(rules,
          {"Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropFilter",
           "Conv3DBackpropFilterV2"},
          2, ShapeFromInputRule<1>);
  AddRule(rules,
          {"MaxPoolGrad", "MaxPoolGradV2", "MaxPool3DGrad", "RandomShuffle"}, 1,
          LikeFirstInputRule);
  AddRule(
      rules,
      {"EluGrad", "SeluGrad", "SoftplusGrad", "SoftsignGrad", "LeakyReluGrad",
       "RsqrtGrad", "SqrtGrad", "ReciprocalGrad", "InvGrad"},
      2, ActivationGradRule);
  AddRule(
      rules,
      {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"}, 5,
      FusedBatchNormGradRule);
  AddRule(
      rules,
      {"SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"},
      2, SoftmaxCrossEntropyRule);
  AddRule(rules, {"BroadcastGradientArgs"}, 2, BroadcastGradientArgsRule);
  AddRule(rules,
          {"UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
           "UnsortedSegmentProd"},
          3, UnsortedSegmentRule);
  AddRule(rules, {"DynamicStitch", "ParallelDynamicStitch"}, 2,
          DynamicStitchRule);
  AddRule(rules, {"InvertPermutation"}, 1, InvertPermutationRule);
  AddRule(rules, {"ConcatOffset"}, 2, ConcatOffsetRule);
  for (absl::string_view name : OptimizerNames()) {
    rules[absl::StrCat("Apply", name)] = Rule{1, ApplyRule};
    rules[absl::StrCat("SparseApply", name)] = Rule{1, ApplyRule};
    rules[absl::StrCat("ResourceApply", name)] = Rule{1, NoOutputRule};
    rules[absl::StrCat("ResourceSparseApply", name)] = Rule{1, NoOutputRule};
  }
  AddRule(rules, {"VariableV2", "Variable", "VarHandleOp"}, 0, VariableRule);
  AddRule(rules, {"ReadVariableOp"}, 1, ReadVariableRule);
  AddRule(rules, {"Assign", "AssignAdd", "AssignSub"}, 2, AssignRule);
  for (absl::string_view op : HandleOps()) {
    rules[std::string(op)] = Rule{0, HandleRule};
  }
  for (absl::string_view op : SummaryOps()) {
    rules[std::string(op)] = Rule{0, SummaryRule};
  }
  AddRule(rules, {"L2Loss"}, 1, ScalarOfInputTypeRule);
  AddRule(rules, {"RestoreV2"}, 3, RestoreRule);
  AddRule(rules, {"IteratorGetNext", "IteratorGetNextSync"}, 0,
          IteratorGetNextRule);
  AddRule(rules,
          {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
           "MakeIterator", "Assert", "SaveV2"},
          0, NoOutputRule);
}

}  // namespace gopt::graph::tf
