// TensorFlow shape rules for neural-network ops: convolutions, pools, matrix
// products, batch norm, TopK, non-max suppression, image resize and the
// audio front-end ops (DecodeWav, AudioSpectrogram, Mfcc).
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

// Spatial layout of a 4-D NHWC/NCHW tensor.
struct Layout4 {
  int batch = 0;
  int feature = 3;
  int spatial[2] = {1, 2};
};

absl::StatusOr<Layout4> LayoutFromFormat(const RuleContext& ctx) {
  ASSIGN_OR_RETURN(std::string format,
                   StringAttr(ctx.node, "data_format", "NHWC"));
  Layout4 layout;
  if (format == "NCHW") {
    layout.feature = 1;
    layout.spatial[0] = 2;
    layout.spatial[1] = 3;
  } else if (format != "NHWC") {
    return ctx.Error(absl::StrCat("attr 'data_format' is '", format,
                                  "', expected NHWC or NCHW"));
  }
  return layout;
}

// Output size of one windowed dimension under TF padding rules.
absl::StatusOr<int64_t> WindowOutput(const RuleContext& ctx,
                                     const std::string& padding, int64_t input,
                                     int64_t window, int64_t stride,
                                     int64_t dilation, int64_t pad_low,
                                     int64_t pad_high) {
  if (stride <= 0 || dilation <= 0 || window < 0) {
    return ctx.Error(absl::StrCat("window ", window, ", stride ", stride,
                                  " and dilation ", dilation,
                                  " must be positive"));
  }
  if (input < 0) return kUnknownDim;
  if (padding == "SAME") {
    return static_cast<int64_t>((static_cast<__int128>(input) + stride - 1) /
                                stride);
  }
  WindowDimension dimension;
  dimension.size = window;
  dimension.stride = stride;
  dimension.window_dilation = dilation;
  dimension.padding_low = pad_low;
  dimension.padding_high = pad_high;
  absl::StatusOr<int64_t> size = PartialWindowedOutputSize(input, dimension);
  if (!size.ok()) return ctx.Annotated(size.status());
  return *size;
}

absl::StatusOr<std::string> PaddingAttr(const RuleContext& ctx) {
  ASSIGN_OR_RETURN(std::string padding, StringAttr(ctx.node, "padding", ""));
  if (padding != "SAME" && padding != "VALID" && padding != "EXPLICIT") {
    return ctx.Error(absl::StrCat("attr 'padding' is '", padding,
                                  "', expected SAME, VALID or EXPLICIT"));
  }
  return padding;
}

// Conv2D, DepthwiseConv2dNative and their TF.js fused forms.
absl::Status ConvRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(Layout4 layout, LayoutFromFormat(ctx));
  ASSIGN_OR_RETURN(std::string padding, PaddingAttr(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   IntListAttr(ctx.node, "strides", 4));
  if (strides.empty()) return ctx.Error("attr 'strides' is missing");
  ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                   IntListAttr(ctx.node, "dilations", 4, {1, 1, 1, 1}));
  ASSIGN_OR_RETURN(std::vector<int64_t> explicit_paddings,
                   ExplicitPaddingsAttr(ctx.node, padding));
  const PartialShape& x = ctx.In(0).shape;
  const PartialShape& k = ctx.In(1).shape;
  if ((x.rank_known && x.dims.size() != 4) ||
      (k.rank_known && k.dims.size() != 4)) {
    return ctx.Error(absl::StrCat("input ", PartialShapeString(x),
                                  " and filter ", PartialShapeString(k),
                                  " must have rank 4"));
  }
  const bool depthwise = absl::StrContains(ctx.node.op(), "Depthwise");
  PartialShape out = PartialShape::OfRank(4);
  if (x.rank_known) {
    out.dims[layout.batch] = x.dims[layout.batch];
    if (k.rank_known && x.dims[layout.feature] >= 0 && k.dims[2] >= 0 &&
        !depthwise && k.dims[2] > 0 && x.dims[layout.feature] % k.dims[2]) {
      return ctx.Error(absl::StrCat("input has ", x.dims[layout.feature],
                                    " channels, filter expects ", k.dims[2]));
    }
    if (depthwise && k.rank_known && x.dims[layout.feature] >= 0 &&
        k.dims[2] >= 0 && x.dims[layout.feature] != k.dims[2]) {
      return ctx.Error(absl::StrCat("input has ", x.dims[layout.feature],
                                    " channels, filter expects ", k.dims[2]));
    }
  }
  if (k.rank_known) {
    out.dims[layout.feature] = depthwise ? (k.dims[2] < 0 || k.dims[3] < 0
                                                ? kUnknownDim
                                                : SatMul(k.dims[2], k.dims[3]))
                                         : k.dims[3];
  }
  for (int s = 0; s < 2; ++s) {
    const int d = layout.spatial[s];
    if (!x.rank_known || !k.rank_known) break;
    if (k.dims[s] < 0) continue;
    ASSIGN_OR_RETURN(
        out.dims[d],
        WindowOutput(ctx, padding, x.dims[d], k.dims[s], strides[d],
                     dilations[d], explicit_paddings[2 * d],
                     explicit_paddings[2 * d + 1]));
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

absl::Status PoolRule(RuleContext& ctx) {
  RETURN_IF_ERROR(LayoutFromFormat(ctx).status());
  ASSIGN_OR_RETURN(std::string padding, PaddingAttr(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> ksize,
                   IntListAttr(ctx.node, "ksize", 4));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   IntListAttr(ctx.node, "strides", 4));
  if (ksize.empty() || strides.empty()) {
    return ctx.Error("attrs 'ksize' and 'strides' are required");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> explicit_paddings,
                   ExplicitPaddingsAttr(ctx.node, padding));
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 4) {
    return ctx.Error(
        absl::StrCat("input must have rank 4, is ", PartialShapeString(x)));
  }
  PartialShape out = PartialShape::OfRank(4);
  if (x.rank_known) {
    for (int d = 0; d < 4; ++d) {
      ASSIGN_OR_RETURN(
          out.dims[d],
          WindowOutput(ctx, padding, x.dims[d], ksize[d], strides[d], 1,
                       explicit_paddings[2 * d], explicit_paddings[2 * d + 1]));
    }
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

absl::Status MatMulRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(bool ta, BoolAttr(ctx.node, "transpose_a", false));
  ASSIGN_OR_RETURN(bool tb, BoolAttr(ctx.node, "transpose_b", false));
  const PartialShape& a = ctx.In(0).shape;
  const PartialShape& b = ctx.In(1).shape;
  if ((a.rank_known && a.dims.size() != 2) ||
      (b.rank_known && b.dims.size() != 2)) {
    return ctx.Error(absl::StrCat("operands ", PartialShapeString(a), " and ",
                                  PartialShapeString(b), " must have rank 2"));
  }
  PartialShape out = PartialShape::OfRank(2);
  if (a.rank_known) out.dims[0] = a.dims[ta ? 1 : 0];
  if (b.rank_known) out.dims[1] = b.dims[tb ? 0 : 1];
  if (a.rank_known && b.rank_known) {
    const int64_t ka = a.dims[ta ? 0 : 1];
    const int64_t kb = b.dims[tb ? 1 : 0];
    if (ka >= 0 && kb >= 0 && ka != kb) {
      return ctx.Error(
          absl::StrCat("inner dimensions differ: ", PartialShapeString(a),
                       " x ", PartialShapeString(b)));
    }
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

absl::Status BatchMatMulRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(bool adj_x, BoolAttr(ctx.node, "adj_x", false));
  ASSIGN_OR_RETURN(bool adj_y, BoolAttr(ctx.node, "adj_y", false));
  const PartialShape& a = ctx.In(0).shape;
  const PartialShape& b = ctx.In(1).shape;
  DType dtype = AttrOr(ctx, "Tout", DefaultDType(ctx));
  if (!a.rank_known || !b.rank_known) {
    SetAll(ctx, dtype, PartialShape::UnknownRank());
    return absl::OkStatus();
  }
  if (a.dims.size() < 2 || b.dims.size() < 2) {
    return ctx.Error(absl::StrCat("operands ", PartialShapeString(a), " and ",
                                  PartialShapeString(b),
                                  " must have rank >= 2"));
  }
  const size_t ra = a.dims.size();
  const size_t rb = b.dims.size();
  const int64_t m = a.dims[adj_x ? ra - 1 : ra - 2];
  const int64_t ka = a.dims[adj_x ? ra - 2 : ra - 1];
  const int64_t kb = b.dims[adj_y ? rb - 1 : rb - 2];
  const int64_t n = b.dims[adj_y ? rb - 2 : rb - 1];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return ctx.Error(
        absl::StrCat("inner dimensions differ: ", PartialShapeString(a), " x ",
                     PartialShapeString(b)));
  }
  PartialShape batch_a = PartialShape::Known(
      std::vector<int64_t>(a.dims.begin(), a.dims.end() - 2));
  PartialShape batch_b = PartialShape::Known(
      std::vector<int64_t>(b.dims.begin(), b.dims.end() - 2));
  auto batch = BroadcastPartialShapes(batch_a, batch_b);
  if (!batch.ok()) return ctx.Annotated(batch.status());
  PartialShape out = *batch;
  out.dims.push_back(m);
  out.dims.push_back(n);
  SetAll(ctx, dtype, out);
  return absl::OkStatus();
}

absl::Status FusedBatchNormRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(Layout4 layout, LayoutFromFormat(ctx));
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 4) {
    return ctx.Error(
        absl::StrCat("input must have rank 4, is ", PartialShapeString(x)));
  }
  int64_t channels = kUnknownDim;
  if (x.rank_known) channels = x.dims[layout.feature];
  if (channels < 0 && ctx.In(1).shape.rank_known &&
      ctx.In(1).shape.dims.size() == 1) {
    channels = ctx.In(1).shape.dims[0];
  }
  const DType dtype = DefaultDType(ctx);
  for (size_t i = 0; i < ctx.out.size(); ++i) {
    ctx.out[i].dtype = i == 0 ? dtype : AttrOr(ctx, "U", DType::kF32);
    ctx.out[i].shape = i == 0 ? x : PartialShape::Known({channels});
  }
  return absl::OkStatus();
}

absl::Status TopKRule(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  std::optional<int64_t> k = ScalarValue(ctx.In(1));
  PartialShape out = x;
  if (x.rank_known) {
    if (x.dims.empty()) return ctx.Error("input must have rank >= 1");
    out.dims.back() = k.has_value() ? *k : kUnknownDim;
    if (k.has_value() &&
        (*k < 0 || (x.dims.back() >= 0 && *k > x.dims.back()))) {
      return ctx.Error(
          absl::StrCat("k = ", *k, " for a last dimension of ", x.dims.back()));
    }
  }
  ctx.out[0].dtype = DefaultDType(ctx);
  ctx.out[0].shape = out;
  if (ctx.out.size() > 1) {
    ctx.out[1].dtype = AttrOr(ctx, "index_type", DType::kS32);
    ctx.out[1].shape = out;
  }
  return absl::OkStatus();
}

absl::Status NonMaxSuppressionRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(bool pad,
                   BoolAttr(ctx.node, "pad_to_max_output_size", false));
  std::optional<int64_t> max_out = ScalarValue(ctx.In(2));
  const int64_t size = pad && max_out.has_value() ? *max_out : kUnknownDim;
  ctx.out[0].dtype = DType::kS32;
  ctx.out[0].shape = PartialShape::Known({size});
  const std::string& op = ctx.node.op();
  const bool with_scores = op == "NonMaxSuppressionV5";
  for (size_t i = 1; i < ctx.out.size(); ++i) {
    if (with_scores && i == 1) {
      ctx.out[i].dtype =
          ctx.In(1).dtype == DType::kInvalid ? DType::kF32 : ctx.In(1).dtype;
      ctx.out[i].shape = PartialShape::Known({size});
    } else {
      ctx.out[i].dtype = DType::kS32;
      ctx.out[i].shape = PartialShape::Known({});
    }
  }
  return absl::OkStatus();
}

absl::Status ResizeRule(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = ctx.node.op() == "ResizeNearestNeighbor" ? DefaultDType(ctx)
                                                       : DType::kF32;
  if (x.rank_known && x.dims.size() != 4) {
    return ctx.Error(
        absl::StrCat("images must have rank 4, is ", PartialShapeString(x)));
  }
  out.shape = PartialShape::OfRank(4);
  if (x.rank_known) {
    out.shape.dims[0] = x.dims[0];
    out.shape.dims[3] = x.dims[3];
  }
  const auto& size = ctx.In(1).value;
  if (size.has_value() && size->size() == 2) {
    for (int i = 0; i < 2; ++i) {
      const int64_t v = (*size)[i];
      if (v != kUnknownValue && v < 0) {
        return ctx.Error(absl::StrCat("negative size ", v));
      }
      out.shape.dims[1 + i] = v == kUnknownValue ? kUnknownDim : v;
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeWavRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t samples, IntAttr(ctx.node, "desired_samples", -1));
  ASSIGN_OR_RETURN(int64_t channels, IntAttr(ctx.node, "desired_channels", -1));
  ctx.out[0].dtype = DType::kF32;
  ctx.out[0].shape =
      PartialShape::Known({samples < 0 ? kUnknownDim : samples,
                           channels < 0 ? kUnknownDim : channels});
  if (ctx.out.size() > 1) {
    ctx.out[1].dtype = DType::kS32;
    ctx.out[1].shape = PartialShape::Known({});
  }
  return absl::OkStatus();
}

absl::Status AudioSpectrogramRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t window, IntAttr(ctx.node, "window_size", 0));
  ASSIGN_OR_RETURN(int64_t stride, IntAttr(ctx.node, "stride", 0));
  if (window <= 0 || stride <= 0 || window > (int64_t{1} << 30)) {
    return ctx.Error(absl::StrCat("window_size ", window, " and stride ",
                                  stride, " must be positive and sane"));
  }
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 2) {
    return ctx.Error(
        absl::StrCat("input must have rank 2, is ", PartialShapeString(x)));
  }
  int64_t fft = 1;
  while (fft < window) fft *= 2;
  PartialShape out =
      PartialShape::Known({kUnknownDim, kUnknownDim, fft / 2 + 1});
  if (x.rank_known) {
    out.dims[0] = x.dims[1];
    if (x.dims[0] >= 0) {
      out.dims[1] = x.dims[0] < window ? 0 : 1 + (x.dims[0] - window) / stride;
    }
  }
  SetAll(ctx, DType::kF32, out);
  return absl::OkStatus();
}

absl::Status MfccRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(int64_t count,
                   IntAttr(ctx.node, "dct_coefficient_count", 13));
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 3) {
    return ctx.Error(absl::StrCat("spectrogram must have rank 3, is ",
                                  PartialShapeString(x)));
  }
  PartialShape out = PartialShape::Known({kUnknownDim, kUnknownDim, count});
  if (count < 0) return ctx.Error("negative dct_coefficient_count");
  if (x.rank_known) {
    out.dims[0] = x.dims[0];
    out.dims[1] = x.dims[1];
  }
  SetAll(ctx, DType::kF32, out);
  return absl::OkStatus();
}

}  // namespace

void AddNeuralNetRules(RuleTable& rules) {
  AddRule(rules,
          {"Conv2D", "DepthwiseConv2dNative", "_FusedConv2D",
           "FusedDepthwiseConv2dNative"},
          2, ConvRule);
  AddRule(rules, {"MaxPool", "AvgPool"}, 1, PoolRule);
  AddRule(rules, {"MatMul", "_FusedMatMul"}, 2, MatMulRule);
  AddRule(rules, {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}, 2,
          BatchMatMulRule);
  AddRule(rules, {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}, 5,
          FusedBatchNormRule);
  AddRule(rules, {"TopKV2"}, 2, TopKRule);
  AddRule(rules,
          {"NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5"},
          3, NonMaxSuppressionRule);
  AddRule(rules,
          {"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic",
           "ResizeArea"},
          2, ResizeRule);
  AddRule(rules, {"DecodeWav"}, 1, DecodeWavRule);
  AddRule(rules, {"AudioSpectrogram"}, 1, AudioSpectrogramRule);
  AddRule(rules, {"Mfcc"}, 1, MfccRule);
}

}  // namespace gopt::graph::tf
