#include "graph/onnx/onnx_op_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"

namespace gopt::graph::onnx_internal {
namespace {

using ::gopt::onnx::AttributeProto;
using ::gopt::onnx::TensorProto;

using Dims = std::vector<int64_t>;
using Rule = absl::Status (*)(const NodeContext&, OpInference*);

// Attribute values that size windows (strides, dilations) and paddings are
// bounded so that window arithmetic on dims below 2^50 cannot overflow.
constexpr int64_t kMaxWindowFactor = int64_t{1} << 12;
constexpr int64_t kMaxPadding = int64_t{1} << 40;

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

// Product of validated dims (each type already passed ValidateTensorType, so
// the product stays below 2^50).
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

// Newer opsets pass some lists as inputs that older ones pass as attributes
// (Slice, Pad, Squeeze, Unsqueeze, Split, Reduce*, Clip, TopK). The input
// wins when present, so files whose opset_import is off still import.
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

// Flat index into a tensor of dims `in` that output element `flat` of the
// broadcast shape `out` reads.
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

// ---------------------------------------------------------------------------
// Elementwise ops.

OpKind UnaryKind(absl::string_view op) {
  static const auto* const kKinds =
      new absl::flat_hash_map<absl::string_view, OpKind>({
          {"Relu", OpKind::kElementwiseUnary},
          {"LeakyRelu", OpKind::kElementwiseUnary},
          {"ThresholdedRelu", OpKind::kElementwiseUnary},
          {"HardSigmoid", OpKind::kElementwiseUnary},
          {"HardSwish", OpKind::kElementwiseUnary},
          {"Neg", OpKind::kElementwiseUnary},
          {"Abs", OpKind::kElementwiseUnary},
          {"Ceil", OpKind::kElementwiseUnary},
          {"Floor", OpKind::kElementwiseUnary},
          {"Round", OpKind::kElementwiseUnary},
          {"Sign", OpKind::kElementwiseUnary},
          {"Not", OpKind::kElementwiseUnary},
          {"BitwiseNot", OpKind::kElementwiseUnary},
          {"Reciprocal", OpKind::kElementwiseUnary},
          {"Softsign", OpKind::kElementwiseUnary},
          {"Shrink", OpKind::kElementwiseUnary},
          {"Trilu", OpKind::kElementwiseUnary},
          {"IsNaN", OpKind::kCompare},
          {"IsInf", OpKind::kCompare},
          {"Sigmoid", OpKind::kTranscendental},
          {"Tanh", OpKind::kTranscendental},
          {"Exp", OpKind::kTranscendental},
          {"Log", OpKind::kTranscendental},
          {"Sqrt", OpKind::kTranscendental},
          {"Sin", OpKind::kTranscendental},
          {"Cos", OpKind::kTranscendental},
          {"Tan", OpKind::kTranscendental},
          {"Asin", OpKind::kTranscendental},
          {"Acos", OpKind::kTranscendental},
          {"Atan", OpKind::kTranscendental},
          {"Sinh", OpKind::kTranscendental},
          {"Cosh", OpKind::kTranscendental},
          {"Asinh", OpKind::kTranscendental},
          {"Acosh", OpKind::kTranscendental},
          {"Atanh", OpKind::kTranscendental},
          {"Erf", OpKind::kTranscendental},
          {"Elu", OpKind::kTranscendental},
          {"Selu", OpKind::kTranscendental},
          {"Celu", OpKind::kTranscendental},
          {"Softplus", OpKind::kTranscendental},
          {"Gelu", OpKind::kTranscendental},
          {"Mish", OpKind::kTranscendental},
      });
  auto it = kKinds->find(op);
  return it == kKinds->end() ? OpKind::kOther : it->second;
}

std::optional<double> FoldUnaryReal(absl::string_view op, double x) {
  if (op == "Neg") return -x;
  if (op == "Abs") return std::fabs(x);
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Round") return std::nearbyint(x);
  if (op == "Relu") return x > 0 ? x : 0;
  return std::nullopt;
}

std::optional<int64_t> FoldUnaryInt(absl::string_view op, int64_t x) {
  if (op == "Neg" && x != std::numeric_limits<int64_t>::min()) return -x;
  if (op == "Abs" && x != std::numeric_limits<int64_t>::min()) {
    return x < 0 ? -x : x;
  }
  if (op == "Not") return x == 0 ? 1 : 0;
  if (op == "Relu") return x > 0 ? x : 0;
  if (op == "Floor" || op == "Ceil" || op == "Round") return x;
  return std::nullopt;
}

absl::Status UnaryRule(const NodeContext& context, OpInference* result) {
  const absl::string_view op = context.node().op_type();
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  result->kind = UnaryKind(op);
  Value out =
      MakeValue(result->kind == OpKind::kCompare ? DType::kPred : x->type.dtype,
                x->type.dims);
  if (x->constant.has_value() && Foldable(out)) {
    ConstantData data;
    data.is_real = x->constant->is_real;
    bool ok = true;
    for (int64_t i = 0; i < x->constant->size() && ok; ++i) {
      if (data.is_real) {
        std::optional<double> v = FoldUnaryReal(op, x->constant->reals[i]);
        ok = v.has_value();
        if (ok) data.reals.push_back(*v);
      } else {
        std::optional<int64_t> v = FoldUnaryInt(op, x->constant->ints[i]);
        ok = v.has_value();
        if (ok) data.ints.push_back(*v);
      }
    }
    if (ok) out.constant = std::move(data);
  }
  result->outputs.push_back(std::move(out));
  return absl::OkStatus();
}

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kMax,
  kMin,
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
  kOther,
};

BinaryOp BinaryOpFromName(absl::string_view op) {
  static const auto* const kOps =
      new absl::flat_hash_map<absl::string_view, BinaryOp>({
          {"Add", BinaryOp::kAdd},
          {"Sum", BinaryOp::kAdd},
          {"Sub", BinaryOp::kSub},
          {"Mul", BinaryOp::kMul},
          {"Div", BinaryOp::kDiv},
          {"Mod", BinaryOp::kMod},
          {"Pow", BinaryOp::kPow},
          {"Max", BinaryOp::kMax},
          {"Min", BinaryOp::kMin},
          {"Equal", BinaryOp::kEqual},
          {"Less", BinaryOp::kLess},
          {"Greater", BinaryOp::kGreater},
          {"LessOrEqual", BinaryOp::kLessOrEqual},
          {"GreaterOrEqual", BinaryOp::kGreaterOrEqual},
          {"And", BinaryOp::kAnd},
          {"Or", BinaryOp::kOr},
          {"Xor", BinaryOp::kXor},
      });
  auto it = kOps->find(op);
  return it == kOps->end() ? BinaryOp::kOther : it->second;
}

bool IsComparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::kEqual:
    case BinaryOp::kLess:
    case BinaryOp::kGreater:
    case BinaryOp::kLessOrEqual:
    case BinaryOp::kGreaterOrEqual:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> FoldBinaryInt(BinaryOp op, int64_t a, int64_t b) {
  int64_t r;
  switch (op) {
    case BinaryOp::kAdd:
      if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
      return r;
    case BinaryOp::kSub:
      if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
      return r;
    case BinaryOp::kMul:
      if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
      return r;
    case BinaryOp::kDiv:
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) {
        return std::nullopt;
      }
      return a / b;
    case BinaryOp::kMod: {
      if (b == 0 || b == -1)
        return b == -1 ? std::optional<int64_t>(0) : std::nullopt;
      const int64_t m = a % b;
      return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
    }
    case BinaryOp::kMax:
      return std::max(a, b);
    case BinaryOp::kMin:
      return std::min(a, b);
    case BinaryOp::kEqual:
      return a == b;
    case BinaryOp::kLess:
      return a < b;
    case BinaryOp::kGreater:
      return a > b;
    case BinaryOp::kLessOrEqual:
      return a <= b;
    case BinaryOp::kGreaterOrEqual:
      return a >= b;
    case BinaryOp::kAnd:
      return (a != 0) && (b != 0);
    case BinaryOp::kOr:
      return (a != 0) || (b != 0);
    case BinaryOp::kXor:
      return (a != 0) != (b != 0);
    default:
      return std::nullopt;
  }
}

std::optional<double> FoldBinaryReal(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return std::pow(a, b);
    case BinaryOp::kMax:
      return std::max(a, b);
    case BinaryOp::kMin:
      return std::min(a, b);
    case BinaryOp::kEqual:
      return a == b ? 1.0 : 0.0;
    case BinaryOp::kLess:
      return a < b ? 1.0 : 0.0;
    case BinaryOp::kGreater:
      return a > b ? 1.0 : 0.0;
    case BinaryOp::kLessOrEqual:
      return a <= b ? 1.0 : 0.0;
    case BinaryOp::kGreaterOrEqual:
      return a >= b ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

// Folds `op` over constant `a` and `b` broadcast to `out`; nullopt when an
// element does not fold (overflow, division by zero).
std::optional<ConstantData> FoldBinary(BinaryOp op, const Value& a,
                                       const Value& b, const Value& out) {
  const bool real = a.constant->is_real || b.constant->is_real;
  const bool bool_out = IsComparison(op);
  ConstantData data;
  data.is_real = real && !bool_out;
  const int64_t count = out.type.num_elements();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t ia = BroadcastSource(out.type.dims, a.type.dims, i);
    const int64_t ib = BroadcastSource(out.type.dims, b.type.dims, i);
    if (real) {
      std::optional<double> v =
          FoldBinaryReal(op, a.constant->RealAt(ia), b.constant->RealAt(ib));
      if (!v.has_value()) return std::nullopt;
      if (bool_out) {
        data.ints.push_back(*v != 0 ? 1 : 0);
      } else {
        data.reals.push_back(*v);
      }
    } else {
      std::optional<int64_t> v =
          FoldBinaryInt(op, a.constant->ints[ia], b.constant->ints[ib]);
      if (!v.has_value()) return std::nullopt;
      data.ints.push_back(*v);
    }
  }
  return data;
}

// Add, Mul, Equal, ... and the variadic Sum/Max/Min/Mean: multidirectional
// broadcasting over every input.
absl::Status BinaryRule(const NodeContext& context, OpInference* result) {
  const absl::string_view op_name = context.node().op_type();
  const BinaryOp op = BinaryOpFromName(op_name);
  if (context.num_inputs() < 1) {
    return absl::InvalidArgumentError("has no inputs");
  }
  ASSIGN_OR_RETURN(const Value* first, context.RequiredInput(0, "A"));
  Dims dims = first->type.dims;
  for (int i = 1; i < context.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(const Value* other,
                     context.RequiredInput(i, absl::StrCat("input ", i)));
    absl::StatusOr<Dims> broadcast = BroadcastDims(dims, other->type.dims);
    if (!broadcast.ok()) {
      return Annotate(broadcast.status(), absl::StrCat("input ", i));
    }
    dims = *std::move(broadcast);
  }
  const bool comparison = IsComparison(op);
  result->kind = comparison && op != BinaryOp::kAnd && op != BinaryOp::kOr &&
                         op != BinaryOp::kXor
                     ? OpKind::kCompare
                     : OpKind::kElementwiseBinary;
  Value out =
      MakeValue(comparison ? DType::kPred : first->type.dtype, std::move(dims));
  if (context.num_inputs() == 2 && op != BinaryOp::kOther &&
      first->constant.has_value() && context.input(1)->constant.has_value() &&
      Foldable(out)) {
    out.constant = FoldBinary(op, *first, *context.input(1), out);
  } else if (context.num_inputs() == 1 && first->constant.has_value()) {
    out.constant = first->constant;
  }
  result->outputs.push_back(std::move(out));
  return absl::OkStatus();
}

absl::Status PReluRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  ASSIGN_OR_RETURN(const Value* slope, context.RequiredInput(1, "slope"));
  absl::StatusOr<Dims> dims = BroadcastDims(x->type.dims, slope->type.dims);
  if (!dims.ok()) return Annotate(dims.status(), "input 'slope'");
  result->kind = OpKind::kElementwiseBinary;
  result->outputs.push_back(MakeValue(x->type.dtype, *std::move(dims)));
  return absl::OkStatus();
}

absl::Status WhereRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* cond, context.RequiredInput(0, "condition"));
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(1, "X"));
  ASSIGN_OR_RETURN(const Value* y, context.RequiredInput(2, "Y"));
  absl::StatusOr<Dims> dims = BroadcastDims(cond->type.dims, x->type.dims);
  if (dims.ok()) dims = BroadcastDims(*dims, y->type.dims);
  if (!dims.ok()) return dims.status();
  result->kind = OpKind::kSelect;
  Value out = MakeValue(x->type.dtype, *std::move(dims));
  if (cond->constant && x->constant && y->constant && Foldable(out) &&
      x->constant->is_real == y->constant->is_real) {
    ConstantData data;
    data.is_real = x->constant->is_real;
    for (int64_t i = 0; i < out.type.num_elements(); ++i) {
      const bool pick_x = cond->constant->RealAt(BroadcastSource(
                              out.type.dims, cond->type.dims, i)) != 0;
      const Value* from = pick_x ? x : y;
      const int64_t source = BroadcastSource(out.type.dims, from->type.dims, i);
      data.AppendFrom(*from->constant, source);
    }
    out.constant = std::move(data);
  }
  result->outputs.push_back(std::move(out));
  return absl::OkStatus();
}

// Converts folded data to `dtype`, wrapping integers to the target width as
// the hardware cast does; nullopt when a real does not fit an integer.
std::optional<ConstantData> CastData(const ConstantData& in, DType dtype) {
  ConstantData out;
  out.is_real = !IsIntegralDType(dtype);
  for (int64_t i = 0; i < in.size(); ++i) {
    if (out.is_real) {
      out.reals.push_back(in.RealAt(i));
      continue;
    }
    if (dtype == DType::kPred) {
      out.ints.push_back(in.RealAt(i) != 0 ? 1 : 0);
      continue;
    }
    std::optional<int64_t> v = in.IntAt(i);
    if (!v.has_value()) return std::nullopt;
    const int bits = DTypeBits(dtype);
    int64_t w = *v;
    if (bits < 64) {
      const uint64_t mask = (uint64_t{1} << bits) - 1;
      const uint64_t low = static_cast<uint64_t>(w) & mask;
      const bool is_signed =
          dtype == DType::kS8 || dtype == DType::kS16 || dtype == DType::kS32;
      if (is_signed && (low >> (bits - 1)) != 0) {
        w = static_cast<int64_t>(low | ~mask);
      } else {
        w = static_cast<int64_t>(low);
      }
    }
    out.ints.push_back(w);
  }
  return out;
}

absl::Status CastRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  DType dtype;
  if (context.node().op_type() == "CastLike") {
    ASSIGN_OR_RETURN(const Value* like,
                     context.RequiredInput(1, "target_type"));
    dtype = like->type.dtype;
  } else {
    if (context.FindAttribute("to") == nullptr) {
      return absl::InvalidArgumentError("attribute 'to' is missing");
    }
    ASSIGN_OR_RETURN(int64_t to, context.Int("to", 0));
    absl::StatusOr<DType> converted = DTypeFromOnnx(to);
    if (!converted.ok()) return Annotate(converted.status(), "attribute 'to'");
    dtype = *converted;
  }
  result->kind = OpKind::kConvert;
  Value out = MakeValue(dtype, x->type.dims);
  if (x->constant.has_value()) out.constant = CastData(*x->constant, dtype);
  result->outputs.push_back(std::move(out));
  return absl::OkStatus();
}

absl::Status ClipRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  for (int i = 1; i <= 2; ++i) {
    const Value* bound = context.input(i);
    if (bound != nullptr && bound->type.num_elements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", i == 1 ? "min" : "max",
                       "' must be a scalar, is ", bound->type.ToString()));
    }
  }
  result->kind = OpKind::kClamp;
  result->outputs.push_back(MakeValue(x->type.dtype, x->type.dims));
  return absl::OkStatus();
}

absl::Status IdentityRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  result->kind = OpKind::kIdentity;
  Value out = MakeValue(x->type.dtype, x->type.dims);
  out.constant = x->constant;
  result->outputs.push_back(std::move(out));
  if (context.node().op_type() == "Dropout") {
    result->outputs.push_back(MakeValue(DType::kPred, x->type.dims));
  }
  return absl::OkStatus();
}

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

absl::Status ConvRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  ASSIGN_OR_RETURN(const Value* w, context.RequiredInput(1, "W"));
  RETURN_IF_ERROR(RequireRank(x, "X", 3, -1));
  if (w->type.rank() != x->type.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'W' has type ", w->type.ToString(), ", rank ",
                     w->type.rank(), " for a rank-", x->type.rank(), " input"));
  }
  const int64_t rank = x->type.rank();
  const int64_t spatial = rank - 2;
  const Dims kernel(w->type.dims.begin() + 2, w->type.dims.end());
  ASSIGN_OR_RETURN(SpatialWindow window,
                   ReadWindow(context, spatial, rank, kernel));
  ASSIGN_OR_RETURN(int64_t group, context.Int("group", 1));
  RETURN_IF_ERROR(CheckRange(group, 1, std::max<int64_t>(1, x->type.dims[1]),
                             "attribute 'group'"));
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
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "X"));
  ASSIGN_OR_RETURN(const Value* w, context.RequiredInput(1, "W"));
  RETURN_IF_ERROR(RequireRank(x, "X", 3, -1));
  if (w->type.rank() != x->type.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'W' has type ", w->type.ToString(), " for a rank-",
                     x->type.rank(), " input"));
  }
  const int64_t rank = x->type.rank();
  const int64_t spatial = rank - 2;
  const Dims kernel(w->type.dims.begin() + 2, w->type.dims.end());
  ASSIGN_OR_RETURN(SpatialWindow window,
                   ReadWindow(context, spatial, rank, kernel));
  ASSIGN_OR_RETURN(int64_t group, context.Int("group", 1));
  RETURN_IF_ERROR(CheckRange(group, 1, std::max<int64_t>(1, x->type.dims[1]),
                             "attribute 'group'"));
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
  result->outputs.push_back(MakeValue(x->type.dtype, *std::move(out)));
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
  for (int64_t size : sizes) {
    Dims out = x->type.dims;
    out[axis] = size;
    result->outputs.push_back(MakeValue(x->type.dtype, std::move(out)));
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
    int64_t start = (*starts)[i];
    int64_t end = (*ends)[i];
    if (start < 0) start = start < -dim ? -1 : start + dim;
    if (end < 0) end = end < -dim ? -1 : end + dim;
    // A step longer than the dimension takes one element, like dim + 1;
    // bounding it keeps the arithmetic below from overflowing.
    const int64_t stride = std::min<int64_t>(step > 0 ? step : -step, dim + 1);
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + stride - 1) / stride : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end + stride - 1) / stride : 0;
    }
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

absl::Status SameShapeRule(const NodeContext& context, OpInference* result) {
  const absl::string_view op = context.node().op_type();
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "input"));
  DType dtype = x->type.dtype;
  if (op == "CumSum") {
    result->kind = OpKind::kElementwiseBinary;
  } else if (op == "ReverseSequence") {
    result->kind = OpKind::kReverse;
  } else if (op == "EyeLike") {
    result->kind = OpKind::kIota;
  } else if (op == "RandomNormalLike" || op == "RandomUniformLike" ||
             op == "Bernoulli") {
    result->kind = OpKind::kRandom;
  } else {
    result->kind = OpKind::kNormalization;
  }
  if (context.FindAttribute("dtype") != nullptr) {
    ASSIGN_OR_RETURN(int64_t onnx_type, context.Int("dtype", 1));
    absl::StatusOr<DType> converted = DTypeFromOnnx(onnx_type);
    if (!converted.ok()) {
      return Annotate(converted.status(), "attribute 'dtype'");
    }
    dtype = *converted;
  }
  result->outputs.push_back(MakeValue(dtype, x->type.dims));
  return absl::OkStatus();
}

absl::Status RandomRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(std::optional<Dims> shape, context.Ints("shape"));
  if (!shape.has_value()) {
    return absl::InvalidArgumentError("attribute 'shape' is missing");
  }
  ASSIGN_OR_RETURN(int64_t onnx_type, context.Int("dtype", 1));
  absl::StatusOr<DType> dtype = DTypeFromOnnx(onnx_type);
  if (!dtype.ok()) return Annotate(dtype.status(), "attribute 'dtype'");
  result->kind = OpKind::kRandom;
  result->outputs.push_back(MakeValue(*dtype, *std::move(shape)));
  return absl::OkStatus();
}

absl::Status QuantizeRule(const NodeContext& context, OpInference* result) {
  ASSIGN_OR_RETURN(const Value* x, context.RequiredInput(0, "x"));
  DType dtype = DType::kF32;
  if (context.node().op_type() == "QuantizeLinear") {
    const Value* zero_point = context.input(2);
    dtype = zero_point != nullptr ? zero_point->type.dtype : DType::kU8;
  } else if (const Value* scale = context.input(1)) {
    dtype = scale->type.dtype;
  }
  result->kind = OpKind::kConvert;
  result->outputs.push_back(MakeValue(dtype, x->type.dims));
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

const absl::flat_hash_map<absl::string_view, Rule>& Rules() {
  static const auto* const kRules = [] {
    auto* rules = new absl::flat_hash_map<absl::string_view, Rule>();
    for (absl::string_view op : {"Relu",        "LeakyRelu",  "ThresholdedRelu",
                                 "HardSigmoid", "HardSwish",  "Neg",
                                 "Abs",         "Ceil",       "Floor",
                                 "Round",       "Sign",       "Not",
                                 "BitwiseNot",  "Reciprocal", "Softsign",
                                 "Shrink",      "Trilu",      "IsNaN",
                                 "IsInf",       "Sigmoid",    "Tanh",
                                 "Exp",         "Log",        "Sqrt",
                                 "Sin",         "Cos",        "Tan",
                                 "Asin",        "Acos",       "Atan",
                                 "Sinh",        "Cosh",       "Asinh",
                                 "Acosh",       "Atanh",      "Erf",
                                 "Elu",         "Selu",       "Celu",
                                 "Softplus",    "Gelu",       "Mish"}) {
      (*rules)[op] = UnaryRule;
    }
    for (absl::string_view op :
         {"Add",       "Sub",       "Mul",     "Div",         "Mod",
          "Pow",       "Max",       "Min",     "Sum",         "Mean",
          "Equal",     "Less",      "Greater", "LessOrEqual", "GreaterOrEqual",
          "And",       "Or",        "Xor",     "BitShift",    "BitwiseAnd",
          "BitwiseOr", "BitwiseXor"}) {
      (*rules)[op] = BinaryRule;
    }
    for (absl::string_view op :
         {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
          "GroupNormalization", "LpNormalization", "LRN",
          "MeanVarianceNormalization"}) {
      (*rules)[op] = NormalizationRule;
    }
    for (absl::string_view op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      (*rules)[op] = SoftmaxRule;
    }
    for (absl::string_view op : {"MaxPool", "AveragePool", "LpPool"}) {
      (*rules)[op] = PoolRule;
    }
    for (absl::string_view op :
         {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
      (*rules)[op] = GlobalPoolRule;
    }
    for (absl::string_view op :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
          "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
          "ReduceSumSquare"}) {
      (*rules)[op] = ReduceRule;
    }
    for (absl::string_view op : {"LSTM", "GRU", "RNN"}) (*rules)[op] = RnnRule;
    for (absl::string_view op : {"Identity", "Dropout"}) {
      (*rules)[op] = IdentityRule;
    }
    for (absl::string_view op : {"Cast", "CastLike"}) (*rules)[op] = CastRule;
    for (absl::string_view op : {"Shape", "Size"}) (*rules)[op] = ShapeRule;
    for (absl::string_view op : {"Resize", "Upsample"}) {
      (*rules)[op] = ResizeRule;
    }
    for (absl::string_view op : {"DepthToSpace", "SpaceToDepth"}) {
      (*rules)[op] = DepthSpaceRule;
    }
    for (absl::string_view op : {"ArgMax", "ArgMin"}) {
      (*rules)[op] = ArgReduceRule;
    }
    for (absl::string_view op : {"Scatter", "ScatterElements", "ScatterND"}) {
      (*rules)[op] = ScatterRule;
    }
    for (absl::string_view op :
         {"CumSum", "ReverseSequence", "EyeLike", "RandomNormalLike",
          "RandomUniformLike", "Bernoulli"}) {
      (*rules)[op] = SameShapeRule;
    }
    for (absl::string_view op : {"RandomNormal", "RandomUniform"}) {
      (*rules)[op] = RandomRule;
    }
    for (absl::string_view op : {"QuantizeLinear", "DequantizeLinear"}) {
      (*rules)[op] = QuantizeRule;
    }
    for (absl::string_view op :
         {"NonZero", "NonMaxSuppression", "Unique", "Compress"}) {
      (*rules)[op] = DataDependentRule;
    }
    (*rules)["Constant"] = ConstantRule;
    (*rules)["PRelu"] = PReluRule;
    (*rules)["Where"] = WhereRule;
    (*rules)["Clip"] = ClipRule;
    (*rules)["Conv"] = ConvRule;
    (*rules)["ConvTranspose"] = ConvTransposeRule;
    (*rules)["Gemm"] = GemmRule;
    (*rules)["MatMul"] = MatMulRule;
    (*rules)["MatMulInteger"] = MatMulRule;
    (*rules)["TopK"] = TopKRule;
    (*rules)["Reshape"] = ReshapeRule;
    (*rules)["Flatten"] = FlattenRule;
    (*rules)["Squeeze"] = SqueezeRule;
    (*rules)["Unsqueeze"] = UnsqueezeRule;
    (*rules)["Transpose"] = TransposeRule;
    (*rules)["Concat"] = ConcatRule;
    (*rules)["Split"] = SplitRule;
    (*rules)["Slice"] = SliceRule;
    (*rules)["Gather"] = GatherRule;
    (*rules)["GatherElements"] = GatherElementsRule;
    (*rules)["GatherND"] = GatherNdRule;
    (*rules)["Pad"] = PadRule;
    (*rules)["Tile"] = TileRule;
    (*rules)["Expand"] = ExpandRule;
    (*rules)["ConstantOfShape"] = ConstantOfShapeRule;
    (*rules)["Range"] = RangeRule;
    (*rules)["OneHot"] = OneHotRule;
    return rules;
  }();
  return *kRules;
}

}  // namespace

const Value* NodeContext::input(int index) const {
  if (index < 0 || index >= num_inputs()) return nullptr;
  return inputs_[static_cast<size_t>(index)];
}

absl::StatusOr<const Value*> NodeContext::RequiredInput(
    int index, absl::string_view role) const {
  const Value* value = input(index);
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, " ('", role, "') is missing"));
  }
  return value;
}

const AttributeProto* NodeContext::FindAttribute(absl::string_view name) const {
  for (const AttributeProto& attribute : node_.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

namespace {

absl::Status WrongType(absl::string_view name, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' is not of type ", expected));
}

}  // namespace

absl::StatusOr<int64_t> NodeContext::Int(absl::string_view name,
                                         int64_t fallback) const {
  const AttributeProto* attribute = FindAttribute(name);
  if (attribute == nullptr) return fallback;
  if (attribute->type() != AttributeProto::INT &&
      attribute->type() != AttributeProto::UNDEFINED) {
    return WrongType(name, "INT");
  }
  return attribute->i();
}

absl::StatusOr<float> NodeContext::Float(absl::string_view name,
                                         float fallback) const {
  const AttributeProto* attribute = FindAttribute(name);
  if (attribute == nullptr) return fallback;
  if (attribute->type() != AttributeProto::FLOAT &&
      attribute->type() != AttributeProto::UNDEFINED) {
    return WrongType(name, "FLOAT");
  }
  return attribute->f();
}

absl::StatusOr<std::string> NodeContext::String(
    absl::string_view name, absl::string_view fallback) const {
  const AttributeProto* attribute = FindAttribute(name);
  if (attribute == nullptr) return std::string(fallback);
  if (attribute->type() != AttributeProto::STRING &&
      attribute->type() != AttributeProto::UNDEFINED) {
    return WrongType(name, "STRING");
  }
  return attribute->s();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> NodeContext::Ints(
    absl::string_view name) const {
  const AttributeProto* attribute = FindAttribute(name);
  if (attribute == nullptr) return std::optional<std::vector<int64_t>>();
  if (attribute->type() != AttributeProto::INTS &&
      attribute->type() != AttributeProto::UNDEFINED) {
    return WrongType(name, "INTS");
  }
  return std::optional<std::vector<int64_t>>(
      std::vector<int64_t>(attribute->ints().begin(), attribute->ints().end()));
}

absl::StatusOr<OpInference> InferOp(const NodeContext& context) {
  auto it = Rules().find(context.node().op_type());
  if (it == Rules().end()) {
    return Unknown(absl::StrCat("op type '", context.node().op_type(),
                                "' is not supported"));
  }
  OpInference result;
  RETURN_IF_ERROR(it->second(context, &result));
  return result;
}

}  // namespace gopt::graph::onnx_internal
