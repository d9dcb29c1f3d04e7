#include "graph/tf/shape_rules.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::NodeDef;

// Inputs, outputs and error reporting for one node's rule.
struct Ctx {
  const NodeDef& node;
  absl::Span<const TensorInfo* const> in;
  std::vector<TensorInfo>& out;

  const TensorInfo& In(size_t i) const { return *in[i]; }
  int num_inputs() const { return static_cast<int>(in.size()); }
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name(), "' (", node.op(), "): ", message));
  }
  absl::Status Annotated(const absl::Status& status) const {
    return status.ok() ? status : Error(status.message());
  }
};

using RuleFn = absl::Status (*)(Ctx&);

struct Rule {
  int min_inputs = 0;
  RuleFn fn = nullptr;
};

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

std::string DimsString(const PartialShape& shape) {
  if (!shape.rank_known) return "<unknown rank>";
  std::vector<std::string> parts;
  for (int64_t d : shape.dims) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

std::optional<int64_t> NumElements(const PartialShape& shape) {
  if (!shape.fully_known()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shape.dims) n = SatMul(n, d);
  return n;
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

// The number of values of a 1-D (or scalar) shape-like tensor: its value
// length when folded, else its static length.
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

DType AttrOr(const Ctx& ctx, absl::string_view attr, DType fallback) {
  auto type = TypeAttr(ctx.node, attr);
  if (type.ok() && type->has_value() && **type != DType::kInvalid) {
    return **type;
  }
  return fallback;
}

DType DefaultDType(const Ctx& ctx) {
  DType fallback = ctx.num_inputs() > 0 ? ctx.In(0).dtype : DType::kF32;
  if (fallback == DType::kInvalid) fallback = DType::kF32;
  for (absl::string_view attr : {"T", "dtype"}) {
    DType type = AttrOr(ctx, attr, DType::kInvalid);
    if (type != DType::kInvalid) return type;
  }
  return fallback;
}

void SetAll(Ctx& ctx, DType dtype, const PartialShape& shape) {
  for (TensorInfo& out : ctx.out) {
    out.dtype = dtype;
    out.shape = shape;
  }
}

absl::StatusOr<PartialShape> BroadcastPartial(const PartialShape& a,
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
        return absl::InvalidArgumentError(absl::StrCat("shapes ", DimsString(a),
                                                       " and ", DimsString(b),
                                                       " do not broadcast"));
      }
      out.dims[i] = x == 1 ? y : x;
    } else if (x < 0 && y < 0) {
      out.dims[i] = kUnknownDim;
    } else {
      // An unknown size against a known size above 1 must broadcast to it.
      const int64_t known = x < 0 ? y : x;
      out.dims[i] = known == 1 ? kUnknownDim : known;
    }
  }
  return out;
}

// Elementwise arithmetic on folded integer values (scalars broadcast).
std::optional<std::vector<int64_t>> FoldBinary(absl::string_view op,
                                               const TensorInfo& a,
                                               const TensorInfo& b) {
  if (!a.value.has_value() || !b.value.has_value()) return std::nullopt;
  const std::vector<int64_t>& x = *a.value;
  const std::vector<int64_t>& y = *b.value;
  if (x.size() != y.size() && x.size() != 1 && y.size() != 1) {
    return std::nullopt;
  }
  const size_t n = std::max(x.size(), y.size());
  std::vector<int64_t> out(n, kUnknownValue);
  for (size_t i = 0; i < n; ++i) {
    const int64_t p = x[x.size() == 1 ? 0 : i];
    const int64_t q = y[y.size() == 1 ? 0 : i];
    if (p == kUnknownValue || q == kUnknownValue) continue;
    if (op == "Add" || op == "AddV2") {
      out[i] = SatAdd(p, q);
    } else if (op == "Sub") {
      out[i] = SatAdd(p, -q);
    } else if (op == "Mul") {
      out[i] = SatMul(p, q);
    } else if (op == "FloorDiv" || op == "Div" || op == "TruncateDiv") {
      if (q == 0 || (p == std::numeric_limits<int64_t>::min() && q == -1)) {
        continue;
      }
      int64_t r = p / q;
      if (op == "FloorDiv" && (p % q != 0) && ((p < 0) != (q < 0))) --r;
      out[i] = r;
    } else if (op == "FloorMod") {
      if (q == 0 || (p == std::numeric_limits<int64_t>::min() && q == -1)) {
        continue;
      }
      int64_t r = p % q;
      if (r != 0 && ((r < 0) != (q < 0))) r += q;
      out[i] = r;
    } else if (op == "Maximum") {
      out[i] = std::max(p, q);
    } else if (op == "Minimum") {
      out[i] = std::min(p, q);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

absl::Status UnaryRule(Ctx& ctx) {
  SetAll(ctx, DefaultDType(ctx), ctx.In(0).shape);
  return absl::OkStatus();
}

// Ops that forward their input unchanged (value included).
absl::Status ForwardRule(Ctx& ctx) {
  for (TensorInfo& out : ctx.out) {
    out = ctx.In(0);
    out.dtype = DefaultDType(ctx);
  }
  return absl::OkStatus();
}

absl::Status PredicateUnaryRule(Ctx& ctx) {
  SetAll(ctx, DType::kPred, ctx.In(0).shape);
  return absl::OkStatus();
}

absl::Status CastRule(Ctx& ctx) {
  TensorInfo& out = ctx.out[0];
  out.shape = ctx.In(0).shape;
  out.dtype = AttrOr(ctx, "DstT", DType::kF32);
  out.value = ctx.In(0).value;
  return absl::OkStatus();
}

absl::Status BinaryRule(Ctx& ctx) {
  auto shape = BroadcastPartial(ctx.In(0).shape, ctx.In(1).shape);
  if (!shape.ok()) return ctx.Annotated(shape.status());
  SetAll(ctx, DefaultDType(ctx), *shape);
  ctx.out[0].value = FoldBinary(ctx.node.op(), ctx.In(0), ctx.In(1));
  return absl::OkStatus();
}

absl::Status CompareRule(Ctx& ctx) {
  auto shape = BroadcastPartial(ctx.In(0).shape, ctx.In(1).shape);
  if (!shape.ok()) return ctx.Annotated(shape.status());
  SetAll(ctx, DType::kPred, *shape);
  return absl::OkStatus();
}

// AddN, Select(V2), ClipByValue: every input broadcasts into the output.
absl::Status BroadcastAllRule(Ctx& ctx) {
  const bool select = ctx.node.op() == "Select";
  // Select (v1) takes a rank-1 condition against higher-rank values.
  const int first = select ? 1 : 0;
  PartialShape shape = ctx.In(first).shape;
  for (int i = first + 1; i < ctx.num_inputs(); ++i) {
    auto merged = BroadcastPartial(shape, ctx.In(i).shape);
    if (!merged.ok()) return ctx.Annotated(merged.status());
    shape = *merged;
  }
  DType dtype = DefaultDType(ctx);
  if (ctx.node.op() == "Select" || ctx.node.op() == "SelectV2") {
    dtype = AttrOr(ctx, "T", ctx.In(1).dtype);
  }
  SetAll(ctx, dtype, shape);
  return absl::OkStatus();
}

absl::Status BiasAddRule(Ctx& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  const PartialShape& b = ctx.In(1).shape;
  if (b.rank_known && b.dims.size() != 1) {
    return ctx.Error(absl::StrCat("bias must be rank 1, is ", DimsString(b)));
  }
  if (x.rank_known && x.dims.size() < 2) {
    return ctx.Error(
        absl::StrCat("input must have rank >= 2, is ", DimsString(x)));
  }
  PartialShape out = x;
  ASSIGN_OR_RETURN(std::string format,
                   StringAttr(ctx.node, "data_format", "NHWC"));
  if (x.rank_known && b.rank_known) {
    const size_t channel = format == "NCHW" ? 1 : x.dims.size() - 1;
    if (out.dims[channel] < 0) {
      out.dims[channel] = b.dims[0];
    } else if (b.dims[0] >= 0 && b.dims[0] != out.dims[channel]) {
      return ctx.Error(absl::StrCat("bias of ", b.dims[0],
                                    " values for a channel dimension of ",
                                    out.dims[channel]));
    }
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

// Spatial layout of a 4-D NHWC/NCHW tensor.
struct Layout4 {
  int batch = 0;
  int feature = 3;
  int spatial[2] = {1, 2};
};

absl::StatusOr<Layout4> LayoutFromFormat(const Ctx& ctx) {
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
absl::StatusOr<int64_t> WindowOutput(const Ctx& ctx, const std::string& padding,
                                     int64_t input, int64_t window,
                                     int64_t stride, int64_t dilation,
                                     int64_t pad_low, int64_t pad_high) {
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
  const __int128 effective = static_cast<__int128>(window - 1) * dilation + 1;
  const __int128 padded = static_cast<__int128>(input) + pad_low + pad_high;
  if (padded < effective) {
    return ctx.Error(absl::StrCat("window of size ", window, " (dilation ",
                                  dilation, ") does not fit input of size ",
                                  input));
  }
  const __int128 out = (padded - effective) / stride + 1;
  if (out > kMaxTensorBytes) return ctx.Error("output dimension too large");
  return static_cast<int64_t>(out);
}

absl::StatusOr<std::string> PaddingAttr(const Ctx& ctx) {
  ASSIGN_OR_RETURN(std::string padding, StringAttr(ctx.node, "padding", ""));
  if (padding != "SAME" && padding != "VALID" && padding != "EXPLICIT") {
    return ctx.Error(absl::StrCat("attr 'padding' is '", padding,
                                  "', expected SAME, VALID or EXPLICIT"));
  }
  return padding;
}

// Conv2D, DepthwiseConv2dNative and their TF.js fused forms.
absl::Status ConvRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(Layout4 layout, LayoutFromFormat(ctx));
  ASSIGN_OR_RETURN(std::string padding, PaddingAttr(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   IntListAttr(ctx.node, "strides", 4));
  if (strides.empty()) return ctx.Error("attr 'strides' is missing");
  ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                   IntListAttr(ctx.node, "dilations", 4, {1, 1, 1, 1}));
  std::vector<int64_t> explicit_paddings(8, 0);
  if (padding == "EXPLICIT") {
    ASSIGN_OR_RETURN(explicit_paddings,
                     IntListAttr(ctx.node, "explicit_paddings", 8));
  }
  const PartialShape& x = ctx.In(0).shape;
  const PartialShape& k = ctx.In(1).shape;
  if ((x.rank_known && x.dims.size() != 4) ||
      (k.rank_known && k.dims.size() != 4)) {
    return ctx.Error(absl::StrCat("input ", DimsString(x), " and filter ",
                                  DimsString(k), " must have rank 4"));
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

absl::Status PoolRule(Ctx& ctx) {
  RETURN_IF_ERROR(LayoutFromFormat(ctx).status());
  ASSIGN_OR_RETURN(std::string padding, PaddingAttr(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> ksize,
                   IntListAttr(ctx.node, "ksize", 4));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                   IntListAttr(ctx.node, "strides", 4));
  if (ksize.empty() || strides.empty()) {
    return ctx.Error("attrs 'ksize' and 'strides' are required");
  }
  std::vector<int64_t> explicit_paddings(8, 0);
  if (padding == "EXPLICIT") {
    ASSIGN_OR_RETURN(explicit_paddings,
                     IntListAttr(ctx.node, "explicit_paddings", 8));
  }
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 4) {
    return ctx.Error(
        absl::StrCat("input must have rank 4, is ", DimsString(x)));
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

absl::Status MatMulRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(bool ta, BoolAttr(ctx.node, "transpose_a", false));
  ASSIGN_OR_RETURN(bool tb, BoolAttr(ctx.node, "transpose_b", false));
  const PartialShape& a = ctx.In(0).shape;
  const PartialShape& b = ctx.In(1).shape;
  if ((a.rank_known && a.dims.size() != 2) ||
      (b.rank_known && b.dims.size() != 2)) {
    return ctx.Error(absl::StrCat("operands ", DimsString(a), " and ",
                                  DimsString(b), " must have rank 2"));
  }
  PartialShape out = PartialShape::OfRank(2);
  if (a.rank_known) out.dims[0] = a.dims[ta ? 1 : 0];
  if (b.rank_known) out.dims[1] = b.dims[tb ? 0 : 1];
  if (a.rank_known && b.rank_known) {
    const int64_t ka = a.dims[ta ? 0 : 1];
    const int64_t kb = b.dims[tb ? 1 : 0];
    if (ka >= 0 && kb >= 0 && ka != kb) {
      return ctx.Error(absl::StrCat("inner dimensions differ: ", DimsString(a),
                                    " x ", DimsString(b)));
    }
  }
  SetAll(ctx, DefaultDType(ctx), out);
  return absl::OkStatus();
}

absl::Status BatchMatMulRule(Ctx& ctx) {
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
    return ctx.Error(absl::StrCat("operands ", DimsString(a), " and ",
                                  DimsString(b), " must have rank >= 2"));
  }
  const size_t ra = a.dims.size();
  const size_t rb = b.dims.size();
  const int64_t m = a.dims[adj_x ? ra - 1 : ra - 2];
  const int64_t ka = a.dims[adj_x ? ra - 2 : ra - 1];
  const int64_t kb = b.dims[adj_y ? rb - 1 : rb - 2];
  const int64_t n = b.dims[adj_y ? rb - 2 : rb - 1];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return ctx.Error(absl::StrCat("inner dimensions differ: ", DimsString(a),
                                  " x ", DimsString(b)));
  }
  PartialShape batch_a = PartialShape::Known(
      std::vector<int64_t>(a.dims.begin(), a.dims.end() - 2));
  PartialShape batch_b = PartialShape::Known(
      std::vector<int64_t>(b.dims.begin(), b.dims.end() - 2));
  auto batch = BroadcastPartial(batch_a, batch_b);
  if (!batch.ok()) return ctx.Annotated(batch.status());
  PartialShape out = *batch;
  out.dims.push_back(m);
  out.dims.push_back(n);
  SetAll(ctx, dtype, out);
  return absl::OkStatus();
}

absl::Status FusedBatchNormRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(Layout4 layout, LayoutFromFormat(ctx));
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 4) {
    return ctx.Error(
        absl::StrCat("input must have rank 4, is ", DimsString(x)));
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

absl::Status ShapeRule(Ctx& ctx) {
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

absl::Status SizeRule(Ctx& ctx) {
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
  std::optional<int64_t> n = NumElements(ctx.In(0).shape);
  out.value = std::vector<int64_t>{n.has_value() ? *n : kUnknownValue};
  return absl::OkStatus();
}

// A shape given as the value of a 1-D tensor (Reshape, Fill, BroadcastTo).
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

absl::Status ReshapeRule(Ctx& ctx) {
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
      std::optional<int64_t> n = NumElements(ctx.In(0).shape);
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
  std::optional<int64_t> n = NumElements(ctx.In(0).shape);
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
                                    DimsString(out.shape)));
    }
    out.shape.dims[inferred] = *n / product;
  } else if (product != *n) {
    return ctx.Error(absl::StrCat("cannot reshape ", *n, " elements (",
                                  DimsString(ctx.In(0).shape), ") into ",
                                  DimsString(out.shape)));
  }
  return absl::OkStatus();
}

absl::Status SqueezeRule(Ctx& ctx) {
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
      return ctx.Error(
          absl::StrCat("cannot squeeze dimension ", a, " of ", DimsString(x)));
    }
    drop[a] = true;
  }
  out.shape = PartialShape::Known({});
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (!drop[i]) out.shape.dims.push_back(x.dims[i]);
  }
  return absl::OkStatus();
}

absl::Status ExpandDimsRule(Ctx& ctx) {
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

absl::Status TransposeRule(Ctx& ctx) {
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
  if (perm->size() != x.dims.size()) {
    return ctx.Error(absl::StrCat("permutation of length ", perm->size(),
                                  " for rank ", x.dims.size()));
  }
  std::vector<bool> seen(x.dims.size(), false);
  out.shape = PartialShape::OfRank(static_cast<int64_t>(x.dims.size()));
  for (size_t i = 0; i < perm->size(); ++i) {
    const int64_t p = (*perm)[i];
    if (p < 0 || p >= static_cast<int64_t>(x.dims.size()) || seen[p]) {
      return ctx.Error(absl::StrCat("[", absl::StrJoin(*perm, ","),
                                    "] is not a permutation"));
    }
    seen[p] = true;
    out.shape.dims[i] = x.dims[p];
  }
  return absl::OkStatus();
}

// Concatenates `parts` along `axis` (unknown when nullopt).
absl::Status ConcatParts(Ctx& ctx, const std::vector<const TensorInfo*>& parts,
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

absl::Status ConcatV2Rule(Ctx& ctx) {
  std::vector<const TensorInfo*> parts(ctx.in.begin(), ctx.in.end() - 1);
  return ConcatParts(ctx, parts, ScalarValue(ctx.In(ctx.in.size() - 1)));
}

absl::Status ConcatV1Rule(Ctx& ctx) {
  std::vector<const TensorInfo*> parts(ctx.in.begin() + 1, ctx.in.end());
  return ConcatParts(ctx, parts, ScalarValue(ctx.In(0)));
}

absl::Status PackRule(Ctx& ctx) {
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
      std::optional<int64_t> n = NumElements(part->shape);
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

absl::Status UnpackRule(Ctx& ctx) {
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

absl::Status SplitRule(Ctx& ctx) {
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

// Resolves one StridedSlice dimension (TF semantics, clamped bounds).
int64_t SliceLength(int64_t dim, int64_t begin, int64_t end, int64_t stride,
                    bool begin_masked, bool end_masked) {
  if (stride > 0) {
    int64_t b = begin_masked ? 0 : (begin < 0 ? begin + dim : begin);
    int64_t e = end_masked ? dim : (end < 0 ? end + dim : end);
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    if (e <= b) return 0;
    return static_cast<int64_t>((static_cast<__int128>(e) - b + stride - 1) /
                                stride);
  }
  int64_t b = begin_masked ? dim - 1 : (begin < 0 ? begin + dim : begin);
  int64_t e = end_masked ? -1 : (end < 0 ? end + dim : end);
  b = std::clamp<int64_t>(b, -1, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  if (b <= e) return 0;
  const __int128 s = -static_cast<__int128>(stride);
  return static_cast<int64_t>((static_cast<__int128>(b) - e + s - 1) / s);
}

absl::Status StridedSliceRule(Ctx& ctx) {
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

absl::Status SliceRule(Ctx& ctx) {
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

absl::Status PadRule(Ctx& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  if (!x.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  out.shape = PartialShape::OfRank(rank);
  const auto& pads = ctx.In(1).value;
  if (!pads.has_value()) return absl::OkStatus();
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

absl::Status ReduceRule(Ctx& ctx) {
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
  std::vector<bool> reduced(x.dims.size(), false);
  for (int64_t axis : *axes) {
    if (axis < -rank || axis >= rank) {
      return ctx.Error(absl::StrCat("reduction axis ", axis,
                                    " is out of range for rank ", rank));
    }
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  out.shape = PartialShape::Known({});
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.shape.dims.push_back(x.dims[d]);
    } else if (keep_dims) {
      out.shape.dims.push_back(1);
    }
  }
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

absl::Status FillRule(Ctx& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "T", ctx.In(1).dtype);
  out.shape = ShapeFromValue(ctx.In(0));
  std::optional<int64_t> n = NumElements(out.shape);
  if (n.has_value() && *n <= kMaxFoldedElements) {
    std::optional<int64_t> v = ScalarValue(ctx.In(1));
    out.value = std::vector<int64_t>(*n, v.has_value() ? *v : kUnknownValue);
  }
  return absl::OkStatus();
}

absl::Status BroadcastToRule(Ctx& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  out.shape = ShapeFromValue(ctx.In(1));
  if (out.shape.rank_known) {
    auto merged = BroadcastPartial(ctx.In(0).shape, out.shape);
    if (merged.ok() && merged->rank_known &&
        merged->dims.size() == out.shape.dims.size()) {
      out.shape = *merged;
    }
  }
  return absl::OkStatus();
}

absl::Status TileRule(Ctx& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = DefaultDType(ctx);
  if (!x.rank_known) return absl::OkStatus();
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  out.shape = PartialShape::OfRank(rank);
  const auto& multiples = ctx.In(1).value;
  if (!multiples.has_value()) return absl::OkStatus();
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

absl::Status RangeRule(Ctx& ctx) {
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

absl::Status GatherRule(Ctx& ctx) {
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

absl::Status GatherNdRule(Ctx& ctx) {
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

absl::Status TopKRule(Ctx& ctx) {
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

absl::Status NonMaxSuppressionRule(Ctx& ctx) {
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

absl::Status WhereRule(Ctx& ctx) {
  TensorInfo& out = ctx.out[0];
  out.dtype = DType::kS64;
  if (ctx.num_inputs() > 1) {
    auto shape = BroadcastPartial(ctx.In(1).shape, ctx.In(2).shape);
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

absl::Status ResizeRule(Ctx& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  TensorInfo& out = ctx.out[0];
  out.dtype = ctx.node.op() == "ResizeNearestNeighbor" ? DefaultDType(ctx)
                                                       : DType::kF32;
  if (x.rank_known && x.dims.size() != 4) {
    return ctx.Error(
        absl::StrCat("images must have rank 4, is ", DimsString(x)));
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

absl::Status SwitchRule(Ctx& ctx) {
  for (TensorInfo& out : ctx.out) {
    out = ctx.In(0);
    out.dtype = DefaultDType(ctx);
  }
  return absl::OkStatus();
}

absl::Status MergeRule(Ctx& ctx) {
  TensorInfo merged = ctx.In(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const TensorInfo& other = ctx.In(i);
    merged.shape = MergeShapes(merged.shape, other.shape);
    if (merged.value != other.value) merged.value.reset();
    if (other.element_shape.has_value()) {
      merged.element_shape =
          merged.element_shape.has_value()
              ? MergeShapes(*merged.element_shape, *other.element_shape)
              : *other.element_shape;
    }
  }
  merged.dtype = DefaultDType(ctx);
  ctx.out[0] = merged;
  if (ctx.out.size() > 1) {
    ctx.out[1].dtype = DType::kS32;
    ctx.out[1].shape = PartialShape::Known({});
  }
  return absl::OkStatus();
}

absl::Status LoopCondRule(Ctx& ctx) {
  SetAll(ctx, DType::kPred, ctx.In(0).shape);
  return absl::OkStatus();
}

absl::Status NoOutputRule(Ctx&) { return absl::OkStatus(); }

absl::Status PlaceholderRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(PartialShape shape, ShapeAttr(ctx.node, "shape"));
  DType dtype = AttrOr(ctx, "dtype", DType::kInvalid);
  if (ctx.node.op() == "PlaceholderWithDefault") {
    shape = MergeShapes(shape, ctx.In(0).shape);
    if (dtype == DType::kInvalid) dtype = ctx.In(0).dtype;
  }
  SetAll(ctx, dtype == DType::kInvalid ? DType::kF32 : dtype, shape);
  return absl::OkStatus();
}

absl::Status ConstRule(Ctx& ctx) {
  auto it = ctx.node.attr().find("value");
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "dtype", DType::kInvalid);
  if (it == ctx.node.attr().end()) {
    return ctx.Error("attr 'value' is missing");
  }
  if (it->second.value_case() != tensorflow::AttrValue::kTensor) {
    return ctx.Error("attr 'value' is not a tensor");
  }
  const tensorflow::TensorProto& tensor = it->second.tensor();
  if (out.dtype == DType::kInvalid) out.dtype = DTypeFromTf(tensor.dtype());
  if (!tensor.has_tensor_shape()) {
    out.shape = PartialShape::UnknownRank();
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(out.shape,
                   ShapeFromProto(tensor.tensor_shape(), ctx.node.name(),
                                  "attr 'value' tensor_shape"));
  if (!out.shape.fully_known()) {
    return ctx.Error("constant tensor has an unknown dimension");
  }
  std::optional<int64_t> n = NumElements(out.shape);
  if (n.has_value()) out.value = IntTensorValues(tensor, *n);
  return absl::OkStatus();
}

// TensorArrayV3(size) -> (handle, flow).
absl::Status TensorArrayRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(PartialShape element, ShapeAttr(ctx.node, "element_shape"));
  ctx.out[0].dtype = DType::kOpaque;
  ctx.out[0].shape = PartialShape::Known({});
  ctx.out[0].element_shape = element;
  if (ctx.out.size() > 1) {
    ctx.out[1].dtype = DType::kF32;
    ctx.out[1].shape = PartialShape::Known({});
    ctx.out[1].element_shape = element;
  }
  return absl::OkStatus();
}

// The element shape known for the list/array read by `handle` (and `flow`).
PartialShape ElementShape(const TensorInfo& handle, const TensorInfo* flow) {
  PartialShape shape = handle.element_shape.has_value()
                           ? *handle.element_shape
                           : PartialShape::UnknownRank();
  if (flow != nullptr && flow->element_shape.has_value()) {
    shape = MergeShapes(shape, *flow->element_shape);
  }
  return shape;
}

PartialShape DropFirst(const PartialShape& shape) {
  if (!shape.rank_known || shape.dims.empty()) {
    return PartialShape::UnknownRank();
  }
  return PartialShape::Known(
      std::vector<int64_t>(shape.dims.begin() + 1, shape.dims.end()));
}

PartialShape PrependDim(int64_t dim, const PartialShape& shape) {
  if (!shape.rank_known || shape.dims.size() >= kMaxRank) {
    return PartialShape::UnknownRank();
  }
  PartialShape out = shape;
  out.dims.insert(out.dims.begin(), dim);
  return out;
}

absl::Status TensorArrayWriteRule(Ctx& ctx) {
  // Scatter/Write(handle, indices, value, flow) and Split(handle, value,
  // lengths, flow) return the new flow.
  const std::string& op = ctx.node.op();
  TensorInfo& out = ctx.out[0];
  out.dtype = DType::kF32;
  out.shape = PartialShape::Known({});
  const TensorInfo& value = ctx.In(op == "TensorArraySplitV3" ? 1 : 2);
  PartialShape element =
      op == "TensorArrayWriteV3" ? value.shape : DropFirst(value.shape);
  out.element_shape = MergeShapes(ElementShape(ctx.In(0), nullptr), element);
  return absl::OkStatus();
}

absl::Status TensorArrayReadRule(Ctx& ctx) {
  // Read(handle, index, flow); Gather(handle, indices, flow).
  TensorInfo& out = ctx.out[0];
  out.dtype = AttrOr(ctx, "dtype", DType::kF32);
  PartialShape element = ElementShape(ctx.In(0), &ctx.In(2));
  if (ctx.node.op() == "TensorArrayGatherV3") {
    ASSIGN_OR_RETURN(PartialShape attr, ShapeAttr(ctx.node, "element_shape"));
    element = MergeShapes(element, attr);
    std::optional<int64_t> n = VectorLength(ctx.In(1));
    out.shape = PrependDim(n.has_value() ? *n : kUnknownDim, element);
  } else {
    out.shape = element;
  }
  return absl::OkStatus();
}

absl::Status TensorArraySizeRule(Ctx& ctx) {
  ctx.out[0].dtype = DType::kS32;
  ctx.out[0].shape = PartialShape::Known({});
  return absl::OkStatus();
}

// TensorList element shapes: a scalar (-1) means unknown rank.
PartialShape ElementShapeFromValue(const TensorInfo& info) {
  if (!info.shape.rank_known || info.shape.dims.empty()) {
    return PartialShape::UnknownRank();
  }
  return ShapeFromValue(info);
}

absl::Status TensorListRule(Ctx& ctx) {
  const std::string& op = ctx.node.op();
  TensorInfo& out = ctx.out[0];
  if (op == "TensorListReserve" || op == "EmptyTensorList") {
    out.dtype = DType::kOpaque;
    out.shape = PartialShape::Known({});
    out.element_shape = ElementShapeFromValue(ctx.In(0));
  } else if (op == "TensorListFromTensor") {
    out.dtype = DType::kOpaque;
    out.shape = PartialShape::Known({});
    out.element_shape = MergeShapes(DropFirst(ctx.In(0).shape),
                                    ElementShapeFromValue(ctx.In(1)));
  } else if (op == "TensorListSetItem" || op == "TensorListPushBack") {
    out = ctx.In(0);
    out.dtype = DType::kOpaque;
    const TensorInfo& item = ctx.In(op == "TensorListSetItem" ? 2 : 1);
    out.element_shape =
        MergeShapes(ElementShape(ctx.In(0), nullptr), item.shape);
  } else if (op == "TensorListGetItem") {
    out.dtype = AttrOr(ctx, "element_dtype", DType::kF32);
    out.shape = MergeShapes(ElementShape(ctx.In(0), nullptr),
                            ElementShapeFromValue(ctx.In(2)));
  } else if (op == "TensorListStack") {
    ASSIGN_OR_RETURN(int64_t n, IntAttr(ctx.node, "num_elements", -1));
    out.dtype = AttrOr(ctx, "element_dtype", DType::kF32);
    out.shape = PrependDim(n >= 0 ? n : kUnknownDim,
                           MergeShapes(ElementShape(ctx.In(0), nullptr),
                                       ElementShapeFromValue(ctx.In(1))));
  } else {  // TensorListLength
    out.dtype = DType::kS32;
    out.shape = PartialShape::Known({});
  }
  return absl::OkStatus();
}

absl::Status DecodeWavRule(Ctx& ctx) {
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

absl::Status AudioSpectrogramRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(int64_t window, IntAttr(ctx.node, "window_size", 0));
  ASSIGN_OR_RETURN(int64_t stride, IntAttr(ctx.node, "stride", 0));
  if (window <= 0 || stride <= 0 || window > (int64_t{1} << 30)) {
    return ctx.Error(absl::StrCat("window_size ", window, " and stride ",
                                  stride, " must be positive and sane"));
  }
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 2) {
    return ctx.Error(
        absl::StrCat("input must have rank 2, is ", DimsString(x)));
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

absl::Status MfccRule(Ctx& ctx) {
  ASSIGN_OR_RETURN(int64_t count,
                   IntAttr(ctx.node, "dct_coefficient_count", 13));
  const PartialShape& x = ctx.In(0).shape;
  if (x.rank_known && x.dims.size() != 3) {
    return ctx.Error(
        absl::StrCat("spectrogram must have rank 3, is ", DimsString(x)));
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

absl::Status OneHotRule(Ctx& ctx) {
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

absl::Status IdentityNRule(Ctx& ctx) {
  for (size_t i = 0; i < ctx.out.size() && i < ctx.in.size(); ++i) {
    ctx.out[i] = ctx.In(i);
  }
  return absl::OkStatus();
}

const absl::flat_hash_map<std::string, Rule>& Rules() {
  static const auto* const kRules = [] {
    auto* rules = new absl::flat_hash_map<std::string, Rule>();
    auto add = [rules](std::initializer_list<const char*> ops, int min_inputs,
                       RuleFn fn) {
      for (const char* op : ops) (*rules)[op] = Rule{min_inputs, fn};
    };
    add({"Identity", "Snapshot", "StopGradient", "PreventGradient",
         "CheckNumerics", "Enter", "Exit", "NextIteration", "RefIdentity",
         "EnsureShape"},
        1, ForwardRule);
    add({"Relu",
         "Relu6",
         "Elu",
         "Selu",
         "LeakyRelu",
         "Sigmoid",
         "Tanh",
         "Exp",
         "Expm1",
         "Log",
         "Log1p",
         "Sqrt",
         "Rsqrt",
         "Square",
         "Abs",
         "Neg",
         "Reciprocal",
         "Inv",
         "Floor",
         "Ceil",
         "Round",
         "Rint",
         "Sign",
         "Softplus",
         "Softsign",
         "Erf",
         "Erfc",
         "Sin",
         "Cos",
         "Tan",
         "Asin",
         "Acos",
         "Atan",
         "Sinh",
         "Cosh",
         "Asinh",
         "Acosh",
         "Atanh",
         "LogicalNot",
         "ZerosLike",
         "OnesLike",
         "Softmax",
         "LogSoftmax",
         "Cumsum",
         "Cumprod",
         "Invert",
         "Relu6Grad",
         "ReluGrad",
         "SigmoidGrad",
         "TanhGrad",
         "FakeQuantWithMinMaxVars",
         "FakeQuantWithMinMaxArgs",
         "LRN",
         "MirrorPadGrad"},
        1, UnaryRule);
    add({"IsNan", "IsInf", "IsFinite"}, 1, PredicateUnaryRule);
    add({"Cast"}, 1, CastRule);
    add({"Add",       "AddV2",       "Sub",         "Mul",
         "Div",       "RealDiv",     "DivNoNan",    "FloorDiv",
         "FloorMod",  "TruncateDiv", "TruncateMod", "Mod",
         "Maximum",   "Minimum",     "Pow",         "SquaredDifference",
         "Atan2",     "LogicalAnd",  "LogicalOr",   "BitwiseAnd",
         "BitwiseOr", "BitwiseXor",  "LeftShift",   "RightShift",
         "MulNoNan",  "Xdivy",       "Xlogy"},
        2, BinaryRule);
    add({"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"},
        2, CompareRule);
    add({"AddN", "ClipByValue"}, 1, BroadcastAllRule);
    add({"Select", "SelectV2"}, 3, BroadcastAllRule);
    add({"BiasAdd", "BiasAddV1"}, 2, BiasAddRule);
    add({"Conv2D", "DepthwiseConv2dNative", "_FusedConv2D",
         "FusedDepthwiseConv2dNative"},
        2, ConvRule);
    add({"MaxPool", "AvgPool"}, 1, PoolRule);
    add({"MatMul", "_FusedMatMul"}, 2, MatMulRule);
    add({"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}, 2, BatchMatMulRule);
    add({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}, 5,
        FusedBatchNormRule);
    add({"Shape", "ShapeN"}, 1, ShapeRule);
    add({"Size", "Rank"}, 1, SizeRule);
    add({"Reshape"}, 2, ReshapeRule);
    add({"Squeeze"}, 1, SqueezeRule);
    add({"ExpandDims"}, 2, ExpandDimsRule);
    add({"Transpose"}, 2, TransposeRule);
    add({"ConcatV2"}, 2, ConcatV2Rule);
    add({"Concat"}, 2, ConcatV1Rule);
    add({"Pack"}, 1, PackRule);
    add({"Unpack"}, 1, UnpackRule);
    add({"Split"}, 2, SplitRule);
    add({"SplitV"}, 3, SplitRule);
    add({"StridedSlice"}, 3, StridedSliceRule);
    add({"Slice"}, 3, SliceRule);
    add({"Pad", "PadV2", "MirrorPad"}, 2, PadRule);
    add({"Mean", "Sum", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin",
         "EuclideanNorm"},
        2, ReduceRule);
    add({"Fill"}, 2, FillRule);
    add({"BroadcastTo"}, 2, BroadcastToRule);
    add({"Tile"}, 2, TileRule);
    add({"Range"}, 3, RangeRule);
    add({"GatherV2"}, 3, GatherRule);
    add({"Gather"}, 2, GatherRule);
    add({"GatherNd"}, 2, GatherNdRule);
    add({"TopKV2"}, 2, TopKRule);
    add({"NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5"},
        3, NonMaxSuppressionRule);
    add({"Where"}, 1, WhereRule);
    add({"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic",
         "ResizeArea"},
        2, ResizeRule);
    add({"Switch"}, 2, SwitchRule);
    add({"Merge"}, 1, MergeRule);
    add({"LoopCond"}, 1, LoopCondRule);
    add({"NoOp", "ControlTrigger"}, 0, NoOutputRule);
    add({"Placeholder"}, 0, PlaceholderRule);
    add({"PlaceholderWithDefault"}, 1, PlaceholderRule);
    add({"Const"}, 0, ConstRule);
    add({"TensorArrayV3"}, 1, TensorArrayRule);
    add({"TensorArrayScatterV3", "TensorArrayWriteV3"}, 4,
        TensorArrayWriteRule);
    add({"TensorArraySplitV3"}, 4, TensorArrayWriteRule);
    add({"TensorArrayReadV3", "TensorArrayGatherV3"}, 3, TensorArrayReadRule);
    add({"TensorArraySizeV3"}, 2, TensorArraySizeRule);
    add({"TensorListReserve", "EmptyTensorList", "TensorListFromTensor",
         "TensorListSetItem", "TensorListPushBack", "TensorListGetItem",
         "TensorListStack", "TensorListLength"},
        1, TensorListRule);
    add({"DecodeWav"}, 1, DecodeWavRule);
    add({"AudioSpectrogram"}, 1, AudioSpectrogramRule);
    add({"Mfcc"}, 1, MfccRule);
    add({"OneHot"}, 4, OneHotRule);
    add({"IdentityN"}, 0, IdentityNRule);
    return rules;
  }();
  return *kRules;
}

// Inputs each TensorList op needs beyond the first.
int TensorListMinInputs(absl::string_view op) {
  if (op == "TensorListFromTensor" || op == "TensorListPushBack" ||
      op == "TensorListStack") {
    return 2;
  }
  if (op == "TensorListSetItem" || op == "TensorListGetItem") return 3;
  return 1;
}

}  // namespace

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

absl::StatusOr<std::optional<int>> KnownOutputCount(
    const tensorflow::NodeDef& node, int max_outputs) {
  const std::string& op = node.op();
  auto from_attr =
      [&](absl::string_view attr) -> absl::StatusOr<std::optional<int>> {
    ASSIGN_OR_RETURN(int64_t n, IntAttr(node, attr, -1));
    if (n < 0) return std::optional<int>();
    if (n > max_outputs) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name(), "' attr '", attr, "' is ", n,
                       ", more than the limit of ", max_outputs, " outputs"));
    }
    return std::optional<int>(static_cast<int>(n));
  };
  if (op == "Split" || op == "SplitV") return from_attr("num_split");
  if (op == "Unpack") return from_attr("num");
  if (op == "ShapeN") return from_attr("N");
  if (op == "NoOp" || op == "ControlTrigger") return std::optional<int>(0);
  if (op == "Switch" || op == "Merge" || op == "TopKV2" || op == "DecodeWav" ||
      op == "TensorArrayV3" || op == "NonMaxSuppressionV4" || op == "Unique") {
    return std::optional<int>(2);
  }
  if (op == "NonMaxSuppressionV5") return std::optional<int>(3);
  if (op == "FusedBatchNorm" || op == "FusedBatchNormV2") {
    return std::optional<int>(5);
  }
  if (op == "FusedBatchNormV3") return std::optional<int>(6);
  if (op == "IdentityN") {
    auto it = node.attr().find("T");
    if (it != node.attr().end()) {
      const int n = it->second.list().type_size();
      if (n > max_outputs) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name(), "' has ", n,
                         " outputs, more than ", max_outputs));
      }
      return std::optional<int>(n);
    }
  }
  auto rules = Rules().find(op);
  if (rules != Rules().end()) return std::optional<int>(1);
  return std::optional<int>();
}

absl::StatusOr<std::vector<TensorInfo>> InferOutputs(
    const tensorflow::NodeDef& node, absl::Span<const TensorInfo* const> inputs,
    int num_outputs, bool* has_rule) {
  std::vector<TensorInfo> outputs(static_cast<size_t>(num_outputs));
  auto it = Rules().find(node.op());
  *has_rule = it != Rules().end();
  Ctx ctx{node, inputs, outputs};
  if (!*has_rule) {
    const DType dtype = DefaultDType(ctx);
    for (TensorInfo& out : outputs) out.dtype = dtype;
    return outputs;
  }
  int min_inputs = it->second.min_inputs;
  if (absl::StartsWith(node.op(), "TensorList")) {
    min_inputs = TensorListMinInputs(node.op());
  }
  if (static_cast<int>(inputs.size()) < min_inputs) {
    return ctx.Error(absl::StrCat("has ", inputs.size(),
                                  " data input(s), expected at least ",
                                  min_inputs));
  }
  RETURN_IF_ERROR(it->second.fn(ctx));
  for (size_t i = 0; i < outputs.size(); ++i) {
    TensorInfo& out = outputs[i];
    if (out.dtype == DType::kInvalid) out.dtype = DType::kF32;
    if (out.shape.rank_known && out.shape.dims.size() > kMaxRank) {
      return ctx.Error(absl::StrCat("output ", i, " has rank ",
                                    out.shape.dims.size(), ", more than ",
                                    kMaxRank));
    }
    for (int64_t dim : out.shape.dims) {
      if (dim > kMaxTensorBytes) {
        return ctx.Error(absl::StrCat("output ", i, " has a dimension of ", dim,
                                      " elements, above the limit of ",
                                      kMaxTensorBytes));
      }
    }
    if (out.value.has_value()) {
      std::optional<int64_t> n = NumElements(out.shape);
      if (static_cast<int64_t>(out.value->size()) > kMaxFoldedElements ||
          (n.has_value() && *n != static_cast<int64_t>(out.value->size()))) {
        out.value.reset();
      }
    }
  }
  return outputs;
}

}  // namespace gopt::graph::tf
