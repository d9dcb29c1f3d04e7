// TensorFlow shape rules for elementwise ops: unary and binary arithmetic
// (binary integer arithmetic folds), comparisons, casts, Select, AddN,
// BiasAdd.
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

// The shared integer operation a TF binary op folds with, or nullopt for
// ops whose values are not folded.
std::optional<IntBinaryOp> FoldedIntOp(absl::string_view op) {
  if (op == "Add" || op == "AddV2") return IntBinaryOp::kAdd;
  if (op == "Sub") return IntBinaryOp::kSub;
  if (op == "Mul") return IntBinaryOp::kMul;
  if (op == "Div" || op == "TruncateDiv") return IntBinaryOp::kTruncatingDiv;
  if (op == "FloorDiv") return IntBinaryOp::kFlooringDiv;
  if (op == "FloorMod") return IntBinaryOp::kFlooringMod;
  if (op == "Maximum") return IntBinaryOp::kMax;
  if (op == "Minimum") return IntBinaryOp::kMin;
  return std::nullopt;
}

// Elementwise arithmetic on folded integer values (scalars broadcast);
// elements that are unknown or do not fold (overflow, division by zero)
// become kUnknownValue.
std::optional<std::vector<int64_t>> FoldBinary(absl::string_view op,
                                               const TensorInfo& a,
                                               const TensorInfo& b) {
  if (!a.value.has_value() || !b.value.has_value()) return std::nullopt;
  const std::optional<IntBinaryOp> int_op = FoldedIntOp(op);
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
    // Ops that do not fold still give an all-unknown value of the right
    // length when no element is known.
    if (!int_op.has_value()) return std::nullopt;
    out[i] = FoldIntBinary(*int_op, p, q).value_or(kUnknownValue);
  }
  return out;
}

absl::Status UnaryRule(RuleContext& ctx) {
  SetAll(ctx, DefaultDType(ctx), ctx.In(0).shape);
  return absl::OkStatus();
}

// Ops that forward their input unchanged (value included).
absl::Status ForwardRule(RuleContext& ctx) {
  for (TensorInfo& out : ctx.out) {
    out = ctx.In(0);
    out.dtype = DefaultDType(ctx);
  }
  return absl::OkStatus();
}

absl::Status PredicateUnaryRule(RuleContext& ctx) {
  SetAll(ctx, DType::kPred, ctx.In(0).shape);
  return absl::OkStatus();
}

absl::Status CastRule(RuleContext& ctx) {
  TensorInfo& out = ctx.out[0];
  out.shape = ctx.In(0).shape;
  out.dtype = AttrOr(ctx, "DstT", DType::kF32);
  out.value = ctx.In(0).value;
  return absl::OkStatus();
}

absl::Status BinaryRule(RuleContext& ctx) {
  auto shape = BroadcastPartialShapes(ctx.In(0).shape, ctx.In(1).shape);
  if (!shape.ok()) return ctx.Annotated(shape.status());
  SetAll(ctx, DefaultDType(ctx), *shape);
  ctx.out[0].value = FoldBinary(ctx.node.op(), ctx.In(0), ctx.In(1));
  return absl::OkStatus();
}

absl::Status CompareRule(RuleContext& ctx) {
  auto shape = BroadcastPartialShapes(ctx.In(0).shape, ctx.In(1).shape);
  if (!shape.ok()) return ctx.Annotated(shape.status());
  SetAll(ctx, DType::kPred, *shape);
  return absl::OkStatus();
}

// AddN, Select(V2), ClipByValue: every input broadcasts into the output.
absl::Status BroadcastAllRule(RuleContext& ctx) {
  const bool select = ctx.node.op() == "Select";
  // Select (v1) takes a rank-1 condition against higher-rank values.
  const int first = select ? 1 : 0;
  PartialShape shape = ctx.In(first).shape;
  for (int i = first + 1; i < ctx.num_inputs(); ++i) {
    auto merged = BroadcastPartialShapes(shape, ctx.In(i).shape);
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

absl::Status BiasAddRule(RuleContext& ctx) {
  const PartialShape& x = ctx.In(0).shape;
  const PartialShape& b = ctx.In(1).shape;
  if (b.rank_known && b.dims.size() != 1) {
    return ctx.Error(
        absl::StrCat("bias must be rank 1, is ", PartialShapeString(b)));
  }
  if (x.rank_known && x.dims.size() < 2) {
    return ctx.Error(
        absl::StrCat("input must have rank >= 2, is ", PartialShapeString(x)));
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

}  // namespace

void AddElementwiseRules(RuleTable& rules) {
  AddRule(rules,
          {"Identity", "Snapshot", "StopGradient", "PreventGradient",
           "CheckNumerics", "Enter", "Exit", "NextIteration", "RefIdentity",
           "EnsureShape"},
          1, ForwardRule);
  AddRule(rules,
          {"Relu",
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
  AddRule(rules, {"IsNan", "IsInf", "IsFinite"}, 1, PredicateUnaryRule);
  AddRule(rules, {"Cast"}, 1, CastRule);
  AddRule(rules,
          {"Add",       "AddV2",       "Sub",         "Mul",
           "Div",       "RealDiv",     "DivNoNan",    "FloorDiv",
           "FloorMod",  "TruncateDiv", "TruncateMod", "Mod",
           "Maximum",   "Minimum",     "Pow",         "SquaredDifference",
           "Atan2",     "LogicalAnd",  "LogicalOr",   "BitwiseAnd",
           "BitwiseOr", "BitwiseXor",  "LeftShift",   "RightShift",
           "MulNoNan",  "Xdivy",       "Xlogy"},
          2, BinaryRule);
  AddRule(rules,
          {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"},
          2, CompareRule);
  AddRule(rules, {"AddN", "ClipByValue"}, 1, BroadcastAllRule);
  AddRule(rules, {"Select", "SelectV2"}, 3, BroadcastAllRule);
  AddRule(rules, {"BiasAdd", "BiasAddV1"}, 2, BiasAddRule);
}

}  // namespace gopt::graph::tf
