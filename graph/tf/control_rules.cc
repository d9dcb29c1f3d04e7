// TensorFlow shape rules for control flow and state: Switch, Merge,
// LoopCond, graph inputs, Const, TensorArray and TensorList ops.
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

absl::Status SwitchRule(RuleContext& ctx) {
  for (TensorInfo& out : ctx.out) {
    out = ctx.In(0);
    out.dtype = DefaultDType(ctx);
  }
  return absl::OkStatus();
}

absl::Status MergeRule(RuleContext& ctx) {
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

absl::Status LoopCondRule(RuleContext& ctx) {
  SetAll(ctx, DType::kPred, ctx.In(0).shape);
  return absl::OkStatus();
}

absl::Status NoOutputRule(RuleContext&) { return absl::OkStatus(); }

absl::Status PlaceholderRule(RuleContext& ctx) {
  ASSIGN_OR_RETURN(PartialShape shape, ShapeAttr(ctx.node, "shape"));
  DType dtype = AttrOr(ctx, "dtype", DType::kInvalid);
  if (ctx.node.op() == "PlaceholderWithDefault") {
    shape = MergeShapes(shape, ctx.In(0).shape);
    if (dtype == DType::kInvalid) dtype = ctx.In(0).dtype;
  }
  SetAll(ctx, dtype == DType::kInvalid ? DType::kF32 : dtype, shape);
  return absl::OkStatus();
}

absl::Status ConstRule(RuleContext& ctx) {
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
  std::optional<int64_t> n = KnownNumElements(out.shape);
  if (n.has_value()) out.value = IntTensorValues(tensor, *n);
  return absl::OkStatus();
}

// TensorArrayV3(size) -> (handle, flow).
absl::Status TensorArrayRule(RuleContext& ctx) {
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

absl::Status TensorArrayWriteRule(RuleContext& ctx) {
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

absl::Status TensorArrayReadRule(RuleContext& ctx) {
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

absl::Status TensorArraySizeRule(RuleContext& ctx) {
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

absl::Status TensorListRule(RuleContext& ctx) {
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

}  // namespace

void AddControlFlowRules(RuleTable& rules) {
  AddRule(rules, {"Switch"}, 2, SwitchRule);
  AddRule(rules, {"Merge"}, 1, MergeRule);
  AddRule(rules, {"LoopCond"}, 1, LoopCondRule);
  AddRule(rules, {"NoOp", "ControlTrigger"}, 0, NoOutputRule);
  AddRule(rules, {"Placeholder"}, 0, PlaceholderRule);
  AddRule(rules, {"PlaceholderWithDefault"}, 1, PlaceholderRule);
  AddRule(rules, {"Const"}, 0, ConstRule);
  AddRule(rules, {"TensorArrayV3"}, 1, TensorArrayRule);
  AddRule(rules, {"TensorArrayScatterV3", "TensorArrayWriteV3"}, 4,
          TensorArrayWriteRule);
  AddRule(rules, {"TensorArraySplitV3"}, 4, TensorArrayWriteRule);
  AddRule(rules, {"TensorArrayReadV3", "TensorArrayGatherV3"}, 3,
          TensorArrayReadRule);
  AddRule(rules, {"TensorArraySizeV3"}, 2, TensorArraySizeRule);
  AddRule(rules,
          {"TensorListReserve", "EmptyTensorList", "TensorListFromTensor",
           "TensorListSetItem", "TensorListPushBack", "TensorListGetItem",
           "TensorListStack", "TensorListLength"},
          1, TensorListRule);
}

}  // namespace gopt::graph::tf
