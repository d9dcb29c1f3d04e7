#include "graph/tf/op_lowering.h"

#include <algorithm>
#include <array>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/tf/attr_util.h"
#include "graph/tf/training_costs.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::NodeDef;

const absl::flat_hash_map<std::string, OpKind>& KindTable() {
  static const auto* const kTable = [] {
    auto* table = new absl::flat_hash_map<std::string, OpKind>();
    auto add = [table](OpKind kind, std::initializer_list<const char*> ops) {
      for (const char* op : ops) (*table)[op] = kind;
    };
    add(OpKind::kParameter, {"Placeholder", "PlaceholderWithDefault"});
    add(OpKind::kConstant, {"Const", "HostConst"});
    add(OpKind::kElementwiseUnary, {"Relu",
                                    "Relu6",
                                    "LeakyRelu",
                                    "Abs",
                                    "Neg",
                                    "Floor",
                                    "Ceil",
                                    "Round",
                                    "Rint",
                                    "Sign",
                                    "Square",
                                    "Reciprocal",
                                    "Inv",
                                    "LogicalNot",
                                    "ZerosLike",
                                    "OnesLike",
                                    "IsNan",
                                    "IsInf",
                                    "IsFinite",
                                    "Invert",
                                    "FakeQuantWithMinMaxVars",
                                    "FakeQuantWithMinMaxArgs",
                                    "ReluGrad",
                                    "Relu6Grad"});
    add(OpKind::kTranscendental,
        {"Sigmoid", "Tanh",  "Exp",      "Expm1",       "Log",      "Log1p",
         "Sqrt",    "Rsqrt", "Softplus", "Softsign",    "Elu",      "Selu",
         "Erf",     "Erfc",  "Sin",      "Cos",         "Tan",      "Asin",
         "Acos",    "Atan",  "Sinh",     "Cosh",        "Asinh",    "Acosh",
         "Atanh",   "Pow",   "Atan2",    "SigmoidGrad", "TanhGrad", "LRN",
         "Xlogy"});
    add(OpKind::kElementwiseBinary,
        {"Add",         "AddV2",       "Sub",
         "Mul",         "Div",         "RealDiv",
         "DivNoNan",    "FloorDiv",    "FloorMod",
         "TruncateDiv", "TruncateMod", "Mod",
         "Maximum",     "Minimum",     "SquaredDifference",
         "LogicalAnd",  "LogicalOr",   "BitwiseAnd",
         "BitwiseOr",   "BitwiseXor",  "LeftShift",
         "RightShift",  "MulNoNan",    "Xdivy",
         "BiasAdd",     "BiasAddV1",   "AddN",
         "Cumsum",      "Cumprod"});
    add(OpKind::kCompare,
        {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"});
    add(OpKind::kSelect, {"Select", "SelectV2"});
    add(OpKind::kClamp, {"ClipByValue"});
    add(OpKind::kConvert, {"Cast"});
    add(OpKind::kDot, {"MatMul", "_FusedMatMul", "BatchMatMul", "BatchMatMulV2",
                       "BatchMatMulV3"});
    add(OpKind::kConvolution, {"Conv2D", "DepthwiseConv2dNative",
                               "_FusedConv2D", "FusedDepthwiseConv2dNative"});
    add(OpKind::kNormalization,
        {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"});
    add(OpKind::kSoftmax, {"Softmax", "LogSoftmax"});
    add(OpKind::kReduce, {"Mean", "Sum", "Max", "Min", "Prod", "All", "Any",
                          "ArgMax", "ArgMin", "EuclideanNorm"});
    add(OpKind::kReduceWindow, {"MaxPool", "AvgPool"});
    add(OpKind::kBroadcast, {"Fill", "Tile", "BroadcastTo", "OneHot"});
    add(OpKind::kTranspose, {"Transpose"});
    add(OpKind::kReshape, {"Reshape", "Squeeze", "ExpandDims"});
    add(OpKind::kSlice, {"Slice", "StridedSlice", "Split", "SplitV", "Unpack"});
    add(OpKind::kPad, {"Pad", "PadV2", "MirrorPad"});
    add(OpKind::kConcatenate, {"ConcatV2", "Concat", "Pack"});
    add(OpKind::kGather, {"GatherV2", "Gather", "GatherNd"});
    add(OpKind::kResize, {"ResizeBilinear", "ResizeNearestNeighbor",
                          "ResizeBicubic", "ResizeArea"});
    add(OpKind::kSort, {"TopKV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4",
                        "NonMaxSuppressionV5"});
    add(OpKind::kIota, {"Range"});
    add(OpKind::kIdentity, {"Identity", "IdentityN", "Snapshot", "StopGradient",
                            "PreventGradient", "CheckNumerics", "NoOp",
                            "ControlTrigger", "EnsureShape", "RefIdentity"});
    add(OpKind::kShapeOf, {"Shape", "ShapeN", "Size", "Rank"});
    add(OpKind::kLoopControl,
        {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"});
    add(OpKind::kCopy,
        {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayWriteV3",
         "TensorArraySplitV3", "TensorArrayReadV3", "TensorArrayGatherV3",
         "TensorArraySizeV3", "TensorListReserve", "EmptyTensorList",
         "TensorListFromTensor", "TensorListSetItem", "TensorListPushBack",
         "TensorListGetItem", "TensorListStack", "TensorListLength"});
    add(OpKind::kFft, {"AudioSpectrogram"});
    return table;
  }();
  return *kTable;
}

// SAME padding split the way TensorFlow does (the extra cell goes high).
void SamePadding(int64_t input, int64_t window, int64_t stride,
                 int64_t dilation, WindowDimension* dim) {
  // Attributes come from the file: compute wide and clamp, so absurd strides
  // or dilations cannot overflow.
  const __int128 out = (static_cast<__int128>(input) + stride - 1) / stride;
  const __int128 effective = (static_cast<__int128>(window) - 1) * dilation + 1;
  const __int128 total = std::clamp<__int128>(
      (out - 1) * stride + effective - input, 0, kMaxTensorBytes);
  dim->padding_low = static_cast<int64_t>(total / 2);
  dim->padding_high = static_cast<int64_t>(total - total / 2);
}

absl::StatusOr<std::array<int, 3>> Layout(const NodeDef& node) {
  ASSIGN_OR_RETURN(std::string format, StringAttr(node, "data_format", "NHWC"));
  if (format == "NCHW") return std::array<int, 3>{1, 2, 3};
  if (format == "NHWC") return std::array<int, 3>{3, 1, 2};
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name(), "' attr 'data_format' is '", format,
                   "', expected NHWC or NCHW"));
}

absl::Status LowerConvolution(const NodeDef& node,
                              absl::Span<const TensorType* const> inputs,
                              LoweredOp* lowered) {
  ASSIGN_OR_RETURN(auto layout, Layout(node));
  const int feature = layout[0];
  ASSIGN_OR_RETURN(std::string padding, StringAttr(node, "padding", "VALID"));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   IntListAttr(node, "strides", 4, {1, 1, 1, 1}));
  ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                   IntListAttr(node, "dilations", 4, {1, 1, 1, 1}));
  ASSIGN_OR_RETURN(std::vector<int64_t> explicit_paddings,
                   ExplicitPaddingsAttr(node, padding));
  const TensorType& x = *inputs[0];
  const TensorType& k = *inputs[1];
  if (x.rank() != 4 || k.rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name(), "': input ", x.ToString(),
                     " and filter ", k.ToString(), " must have rank 4"));
  }
  OpAttributes& attrs = lowered->attributes;
  attrs.has_convolution_dimensions = true;
  ConvolutionDimensions& dims = *attrs.mutable_convolution();
  dims.input_batch = 0;
  dims.input_feature = feature;
  dims.input_spatial = {layout[1], layout[2]};
  dims.kernel_spatial = {0, 1};
  dims.kernel_input_feature = 2;
  dims.kernel_output_feature = 3;
  dims.output_batch = 0;
  dims.output_feature = feature;
  dims.output_spatial = {layout[1], layout[2]};
  for (int s = 0; s < 2; ++s) {
    const int d = layout[1 + s];
    WindowDimension w;
    w.size = k.dims[s];
    w.stride = strides[d];
    w.window_dilation = dilations[d];
    if (padding == "SAME" && w.stride > 0 && w.window_dilation > 0) {
      SamePadding(x.dims[d], w.size, w.stride, w.window_dilation, &w);
    } else if (padding == "EXPLICIT") {
      w.padding_low = explicit_paddings[2 * d];
      w.padding_high = explicit_paddings[2 * d + 1];
    }
    attrs.mutable_window()->push_back(w);
  }
  if (absl::StrContains(node.op(), "Depthwise")) {
    attrs.feature_group_count = std::max<int64_t>(k.dims[2], 1);
    TensorType view = k;
    view.dims = {k.dims[0], k.dims[1], 1, k.dims[2] * k.dims[3]};
    lowered->kernel_view = view;
  } else if (k.dims[2] > 0 && x.dims[feature] > k.dims[2] &&
             x.dims[feature] % k.dims[2] == 0) {
    attrs.feature_group_count = x.dims[feature] / k.dims[2];
  }
  return absl::OkStatus();
}

absl::Status LowerPool(const NodeDef& node,
                       absl::Span<const TensorType* const> inputs,
                       LoweredOp* lowered) {
  ASSIGN_OR_RETURN(std::string padding, StringAttr(node, "padding", "VALID"));
  ASSIGN_OR_RETURN(std::vector<int64_t> ksize,
                   IntListAttr(node, "ksize", 4, {1, 1, 1, 1}));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   IntListAttr(node, "strides", 4, {1, 1, 1, 1}));
  ASSIGN_OR_RETURN(std::vector<int64_t> explicit_paddings,
                   ExplicitPaddingsAttr(node, padding));
  const TensorType& x = *inputs[0];
  if (x.rank() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name(), "': input ", x.ToString(), " must have rank 4"));
  }
  for (int d = 0; d < 4; ++d) {
    WindowDimension w;
    w.size = ksize[d];
    w.stride = strides[d];
    if (padding == "SAME" && w.stride > 0) {
      SamePadding(x.dims[d], w.size, w.stride, 1, &w);
    } else if (padding == "EXPLICIT") {
      w.padding_low = explicit_paddings[2 * d];
      w.padding_high = explicit_paddings[2 * d + 1];
    }
    lowered->attributes.mutable_window()->push_back(w);
  }
  return absl::OkStatus();
}

absl::Status LowerDot(const NodeDef& node,
                      absl::Span<const TensorType* const> inputs,
                      LoweredOp* lowered) {
  OpAttributes& attrs = lowered->attributes;
  attrs.has_dot_dimensions = true;
  DotDimensions& dot = *attrs.mutable_dot();
  const TensorType& a = *inputs[0];
  const TensorType& b = *inputs[1];
  if (node.op() == "MatMul" || node.op() == "_FusedMatMul") {
    ASSIGN_OR_RETURN(bool ta, BoolAttr(node, "transpose_a", false));
    ASSIGN_OR_RETURN(bool tb, BoolAttr(node, "transpose_b", false));
    dot.lhs_contracting = {ta ? 0 : 1};
    dot.rhs_contracting = {tb ? 1 : 0};
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(bool adj_x, BoolAttr(node, "adj_x", false));
  ASSIGN_OR_RETURN(bool adj_y, BoolAttr(node, "adj_y", false));
  const int64_t ra = a.rank();
  const int64_t rb = b.rank();
  if (ra < 2 || rb < 2) {
    attrs.has_dot_dimensions = false;
    return absl::OkStatus();
  }
  if (ra == rb) {
    for (int64_t d = 0; d < ra - 2; ++d) {
      dot.lhs_batch.push_back(d);
      dot.rhs_batch.push_back(d);
    }
  }
  dot.lhs_contracting = {adj_x ? ra - 2 : ra - 1};
  dot.rhs_contracting = {adj_y ? rb - 1 : rb - 2};
  return absl::OkStatus();
}

std::vector<int64_t> NormalizedAxes(const std::vector<int64_t>& axes,
                                    int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) {
    if (axis >= -rank && axis < rank)
      out.push_back(axis < 0 ? axis + rank : axis);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::vector<int64_t>> Known(const TensorInfo* info) {
  if (info == nullptr || !info->value.has_value()) return std::nullopt;
  for (int64_t v : *info->value) {
    if (v == kUnknownValue) return std::nullopt;
  }
  return info->value;
}

}  // namespace

OpKind TfOpKind(absl::string_view op) {
  if (std::optional<OpKind> kind = TrainingOpKind(op)) return *kind;
  auto it = KindTable().find(std::string(op));
  return it == KindTable().end() ? OpKind::kOther : it->second;
}

bool IsHostOnlyOp(absl::string_view op) {
  static const auto* const kHostOps =
      new absl::flat_hash_set<std::string>{"DecodeWav",
                                           "EncodeWav",
                                           "AudioSpectrogram",
                                           "Mfcc",
                                           "DecodeJpeg",
                                           "DecodePng",
                                           "DecodeImage",
                                           "DecodeBmp",
                                           "DecodeGif",
                                           "EncodeJpeg",
                                           "EncodePng",
                                           "DecodeAndCropJpeg",
                                           "ReadFile",
                                           "WriteFile",
                                           "DecodeRaw",
                                           "DecodeCSV",
                                           "ParseExample",
                                           "ParseExampleV2",
                                           "ParseSingleExample",
                                           "StringJoin",
                                           "StringSplit",
                                           "StringSplitV2",
                                           "RegexReplace",
                                           "StaticRegexReplace",
                                           "AsString",
                                           "StringToNumber",
                                           "Substr",
                                           "StringFormat",
                                           "StringLength",
                                           "StringStrip",
                                           "StringToHashBucket",
                                           "StringToHashBucketFast",
                                           "StringToHashBucketStrong",
                                           "Print",
                                           "PrintV2",
                                           "HashTableV2",
                                           "LookupTableFindV2",
                                           "LookupTableImportV2",
                                           "UnicodeDecode",
                                           "UnicodeEncode",
                                           "UnicodeTranscode"};
  return kHostOps->contains(std::string(op));
}

absl::StatusOr<LoweredOp> LowerOp(
    const NodeDef& node, absl::Span<const TensorType* const> input_types,
    absl::Span<const TensorInfo* const> input_infos,
    absl::Span<const TensorType> output_types) {
  LoweredOp lowered;
  lowered.kind = TfOpKind(node.op());
  const std::string& op = node.op();
  auto info = [&](size_t i) -> const TensorInfo* {
    return i < input_infos.size() ? input_infos[i] : nullptr;
  };
  const int64_t rank0 = input_types.empty() ? 0 : input_types[0]->rank();
  OpAttributes& attrs = lowered.attributes;
  // Training ops (gradient kernels, optimizer updates) share a kind with
  // forward ops but not their operands: training_costs.cc costs them.
  if (TrainingOpKind(op).has_value()) return lowered;
  switch (lowered.kind) {
    case OpKind::kConvolution:
      if (input_types.size() >= 2) {
        RETURN_IF_ERROR(LowerConvolution(node, input_types, &lowered));
      }
      break;
    case OpKind::kReduceWindow:
      if (!input_types.empty()) {
        RETURN_IF_ERROR(LowerPool(node, input_types, &lowered));
      }
      break;
    case OpKind::kDot:
      if (input_types.size() >= 2) {
        RETURN_IF_ERROR(LowerDot(node, input_types, &lowered));
      }
      break;
    case OpKind::kNormalization:
      lowered.cost_first_output_only = true;
      break;
    case OpKind::kReduce:
      if (auto axes = Known(info(1))) {
        attrs.dimensions = NormalizedAxes(*axes, rank0);
      }
      break;
    case OpKind::kTranspose:
      if (auto perm = Known(info(1))) attrs.dimensions = *perm;
      break;
    case OpKind::kConcatenate: {
      std::optional<std::vector<int64_t>> axis;
      int64_t rank = output_types.empty() ? 0 : output_types[0].rank();
      if (op == "Pack") {
        ASSIGN_OR_RETURN(int64_t a, IntAttr(node, "axis", 0));
        axis = std::vector<int64_t>{a};
      } else if (op == "ConcatV2" && !input_infos.empty()) {
        axis = Known(input_infos.back());
      } else {
        axis = Known(info(0));
      }
      if (axis.has_value() && axis->size() == 1) {
        attrs.dimensions = NormalizedAxes(*axis, rank);
      }
      break;
    }
    case OpKind::kPad:
      if (auto pads = Known(info(1));
          pads.has_value() && static_cast<int64_t>(pads->size()) == 2 * rank0) {
        for (int64_t d = 0; d < rank0; ++d) {
          attrs.mutable_padding()->push_back(
              PaddingDimension{(*pads)[2 * d], (*pads)[2 * d + 1], 0});
        }
      }
      break;
    case OpKind::kSlice:
      if (op == "Slice") {
        auto begin = Known(info(1));
        if (begin.has_value() && static_cast<int64_t>(begin->size()) == rank0 &&
            !output_types.empty() && output_types[0].rank() == rank0) {
          *attrs.mutable_slice_starts() = *begin;
          for (int64_t d = 0; d < rank0; ++d) {
            attrs.mutable_slice_limits()->push_back(static_cast<int64_t>(
                std::min<__int128>(static_cast<__int128>((*begin)[d]) +
                                       output_types[0].dims[d],
                                   INT64_MAX)));
            attrs.mutable_slice_strides()->push_back(1);
          }
        }
      }
      break;
    case OpKind::kCompare: {
      static const auto* const kDirections =
          new absl::flat_hash_map<std::string, std::string>{
              {"Less", "LT"},         {"LessEqual", "LE"}, {"Greater", "GT"},
              {"GreaterEqual", "GE"}, {"Equal", "EQ"},     {"NotEqual", "NE"}};
      *attrs.mutable_comparison() = kDirections->at(op);
      break;
    }
    case OpKind::kSort:
      if (rank0 > 0) attrs.dimensions = {rank0 - 1};
      break;
    default:
      break;
  }
  return lowered;
}

absl::StatusOr<OpCost> CostOfLoweredOp(
    const NodeDef& node, const LoweredOp& lowered,
    absl::Span<const TensorType* const> input_types,
    absl::Span<const TensorType> output_types) {
  if (std::optional<OpCost> training =
          TrainingOpCost(node, input_types, output_types)) {
    return *training;
  }
  OpCostQuery query;
  query.kind = lowered.kind;
  query.attributes = &lowered.attributes;
  query.operands.assign(input_types.begin(), input_types.end());
  if (lowered.kernel_view.has_value() && query.operands.size() >= 2) {
    query.operands[1] = &*lowered.kernel_view;
  }
  for (size_t i = 0; i < output_types.size(); ++i) {
    if (lowered.cost_first_output_only && i > 0) break;
    query.outputs.push_back(&output_types[i]);
  }
  absl::StatusOr<OpCost> cost = ComputeOpCost(query);
  if (!cost.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name(), "' (", node.op(),
                     "): ", cost.status().message()));
  }
  // TF.js fused kernels apply their fused_ops (BiasAdd, Relu, ...) to every
  // output element: one extra operation per element per fused op.
  auto fused = node.attr().find("fused_ops");
  if (fused != node.attr().end() && !output_types.empty()) {
    cost->flops += static_cast<double>(fused->second.list().s_size()) *
                   static_cast<double>(output_types[0].num_elements());
  }
  return cost;
}

}  // namespace gopt::graph::tf
