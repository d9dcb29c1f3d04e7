#include "graph/onnx/onnx_runtime_bounds.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::graph::onnx_internal {
namespace {

// The folded scalar of `value`, when it has one.
std::optional<int64_t> Scalar(const Value* value) {
  if (value == nullptr || !value->constant.has_value() ||
      value->constant->size() != 1) {
    return std::nullopt;
  }
  return value->constant->IntAt(0);
}

// The stand-in contents for input `index` of `op` with `n` elements.
std::vector<int64_t> StandIn(const std::string& op, int index, int64_t n,
                             int64_t dim,
                             const std::vector<const Value*>& inputs) {
  std::vector<int64_t> values(static_cast<size_t>(n), dim);
  if (op == "Slice") {
    int64_t fill = 0;
    if (index == 2) fill = std::numeric_limits<int64_t>::max();
    if (index == 4) fill = 1;
    for (int64_t i = 0; i < n; ++i) {
      values[static_cast<size_t>(i)] = index == 3 ? i : fill;
    }
  } else if (op == "Reshape") {
    for (int64_t i = 0; i < n; ++i) {
      values[static_cast<size_t>(i)] = i + 1 == n ? -1 : 1;
    }
  } else if (op == "Expand" || op == "Tile") {
    values.assign(values.size(), 1);
  } else if (op == "Range" && n == 1) {
    const int64_t start = Scalar(inputs[0]).value_or(0);
    const int64_t delta =
        Scalar(inputs.size() > 2 ? inputs[2] : nullptr).value_or(1);
    values[0] = index == 0 ? 0 : index == 2 ? 1 : start + dim * delta;
  }
  return values;
}

}  // namespace

std::optional<BoundedInputs> BoundRuntimeInputs(
    const gopt::onnx::NodeProto& node, const std::vector<const Value*>& inputs,
    int64_t dim) {
  const std::string& op = node.op_type();
  const int first = op == "ConstantOfShape" || op == "Range" ? 0 : 1;
  BoundedInputs bounded;
  bounded.inputs = inputs;
  for (int k = first; k < static_cast<int>(inputs.size()); ++k) {
    const Value* value = inputs[static_cast<size_t>(k)];
    if (value == nullptr || value->constant.has_value() ||
        !IsIntegralDType(value->type.dtype) || value->type.rank() > 1 ||
        value->type.num_elements() > kMaxFoldElements) {
      continue;
    }
    const int64_t n = value->type.num_elements();
    Value stand_in = *value;
    stand_in.constant = ConstantData();
    stand_in.constant->ints = StandIn(op, k, n, dim, inputs);
    bounded.assumed.push_back(absl::StrCat(
        "input ", k, " = [", absl::StrJoin(stand_in.constant->ints, ","), "]"));
    bounded.storage.push_back(std::move(stand_in));
    bounded.inputs[static_cast<size_t>(k)] = &bounded.storage.back();
  }
  if (bounded.assumed.empty()) return std::nullopt;
  return bounded;
}

}  // namespace gopt::graph::onnx_internal
