#include "graph/tf/shape_rules.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/tf/shape_rule_util.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {
namespace {

const RuleTable& Rules() {
  static const RuleTable* const kRules = [] {
    auto* rules = new RuleTable();
    AddElementwiseRules(*rules);
    AddNeuralNetRules(*rules);
    AddShapeRules(*rules);
    AddControlFlowRules(*rules);
    AddTrainingRules(*rules);
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
  if (absl::StartsWith(op, "FusedBatchNormGrad")) {
    return std::optional<int>(5);
  }
  if (op == "SoftmaxCrossEntropyWithLogits" ||
      op == "SparseSoftmaxCrossEntropyWithLogits" ||
      op == "BroadcastGradientArgs") {
    return std::optional<int>(2);
  }
  if (op == "ConcatOffset") return from_attr("N");
  if (absl::StartsWith(op, "ResourceApply") ||
      absl::StartsWith(op, "ResourceSparseApply") || op == "AssignVariableOp" ||
      op == "AssignAddVariableOp" || op == "AssignSubVariableOp" ||
      op == "MakeIterator" || op == "Assert" || op == "SaveV2") {
    return std::optional<int>(0);
  }
  // Ops with one output per entry of a type-list attribute.
  const char* type_list =
      op == "IdentityN"                                        ? "T"
      : op == "RestoreV2"                                      ? "dtypes"
      : op == "IteratorGetNext" || op == "IteratorGetNextSync" ? "output_types"
                                                               : nullptr;
  if (type_list != nullptr) {
    auto it = node.attr().find(type_list);
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
  RuleContext ctx{node, inputs, outputs};
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
      std::optional<int64_t> n = KnownNumElements(out.shape);
      if (static_cast<int64_t>(out.value->size()) > kMaxFoldedElements ||
          (n.has_value() && *n != static_cast<int64_t>(out.value->size()))) {
        out.value.reset();
      }
    }
  }
  return outputs;
}

}  // namespace gopt::graph::tf
