// ONNX rules for elementwise ops: unary and binary arithmetic with constant
// folding, Where, Cast, Clip, Identity, same-shape, random and quantize ops.
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
  switch (op) {
    case BinaryOp::kAdd:
      return FoldIntBinary(IntBinaryOp::kAdd, a, b);
    case BinaryOp::kSub:
      return FoldIntBinary(IntBinaryOp::kSub, a, b);
    case BinaryOp::kMul:
      return FoldIntBinary(IntBinaryOp::kMul, a, b);
    case BinaryOp::kDiv:
      return FoldIntBinary(IntBinaryOp::kTruncatingDiv, a, b);
    case BinaryOp::kMod:
      return FoldIntBinary(IntBinaryOp::kFlooringMod, a, b);
    case BinaryOp::kMax:
      return FoldIntBinary(IntBinaryOp::kMax, a, b);
    case BinaryOp::kMin:
      return FoldIntBinary(IntBinaryOp::kMin, a, b);
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
// Sum, Max and Min of three or more folded inputs, folded pairwise from the
// left (each is associative; Mean is not and stays unfolded). nullopt when
// an input is not folded or an element does not fold.
std::optional<ConstantData> FoldVariadic(const NodeContext& context,
                                         BinaryOp op) {
  if (op != BinaryOp::kAdd && op != BinaryOp::kMax && op != BinaryOp::kMin) {
    return std::nullopt;
  }
  if (context.node().op_type() == "Mean") return std::nullopt;
  const Value* first = context.input(0);
  if (first == nullptr || !first->constant.has_value()) return std::nullopt;
  Value acc = *first;
  for (int i = 1; i < context.num_inputs(); ++i) {
    const Value* next = context.input(i);
    if (next == nullptr || !next->constant.has_value()) return std::nullopt;
    absl::StatusOr<Dims> dims = BroadcastDims(acc.type.dims, next->type.dims);
    if (!dims.ok()) return std::nullopt;
    Value folded = MakeValue(acc.type.dtype, *std::move(dims));
    folded.constant = FoldBinary(op, acc, *next, folded);
    if (!folded.constant.has_value()) return std::nullopt;
    acc = std::move(folded);
  }
  return acc.constant;
}

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
  } else if (context.num_inputs() > 2 && Foldable(out)) {
    out.constant = FoldVariadic(context, op);
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

}  // namespace

void AddElementwiseRules(RuleTable& rules) {
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
    rules[op] = UnaryRule;
  }
  for (absl::string_view op :
       {"Add",       "Sub",       "Mul",     "Div",         "Mod",
        "Pow",       "Max",       "Min",     "Sum",         "Mean",
        "Equal",     "Less",      "Greater", "LessOrEqual", "GreaterOrEqual",
        "And",       "Or",        "Xor",     "BitShift",    "BitwiseAnd",
        "BitwiseOr", "BitwiseXor"}) {
    rules[op] = BinaryRule;
  }
  for (absl::string_view op : {"Identity", "Dropout"}) rules[op] = IdentityRule;
  for (absl::string_view op : {"Cast", "CastLike"}) rules[op] = CastRule;
  for (absl::string_view op :
       {"CumSum", "ReverseSequence", "EyeLike", "RandomNormalLike",
        "RandomUniformLike", "Bernoulli"}) {
    rules[op] = SameShapeRule;
  }
  for (absl::string_view op : {"RandomNormal", "RandomUniform"}) {
    rules[op] = RandomRule;
  }
  for (absl::string_view op : {"QuantizeLinear", "DequantizeLinear"}) {
    rules[op] = QuantizeRule;
  }
  rules["PRelu"] = PReluRule;
  rules["Where"] = WhereRule;
  rules["Clip"] = ClipRule;
}

}  // namespace gopt::graph::onnx_internal
