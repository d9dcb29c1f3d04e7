#include "graph/onnx/onnx_op_rules.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/onnx/onnx_rule_util.h"
#include "util/status_macros.h"

namespace gopt::graph::onnx_internal {
namespace {

using ::gopt::onnx::AttributeProto;

const RuleTable& Rules() {
  static const RuleTable* const kRules = [] {
    auto* rules = new RuleTable();
    AddElementwiseRules(*rules);
    AddNeuralNetRules(*rules);
    AddShapeRules(*rules);
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
