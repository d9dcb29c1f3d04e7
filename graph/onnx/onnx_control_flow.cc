// The control-flow ops of the ONNX importer: If, Loop and Scan, whose
// bodies become subgraphs of one node (GraphImporter's control-flow part).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/onnx/onnx_graph_importer.h"
#include "graph/onnx/onnx_op_rules.h"
#include "graph/onnx/onnx_source.h"
#include "graph/onnx/onnx_tensor.h"
#include "graph/op_catalog.h"
#include "util/status_macros.h"

namespace gopt::graph::onnx_internal {
namespace {

// Finds graph attribute `name` of a control-flow node.
absl::StatusOr<const GraphProto*> GraphAttribute(const NodeProto& node,
                                                 absl::string_view name) {
  for (const AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) {
      if (!attribute.has_g()) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute '", name, "' is not a graph"));
      }
      return &attribute.g();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' is missing"));
}

int64_t IntAttribute(const NodeProto& node, absl::string_view name,
                     int64_t fallback) {
  for (const AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) return attribute.i();
  }
  return fallback;
}

std::vector<int64_t> IntsAttribute(const NodeProto& node,
                                   absl::string_view name) {
  for (const AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) {
      return {attribute.ints().begin(), attribute.ints().end()};
    }
  }
  return {};
}

}  // namespace

absl::StatusOr<ControlFlowBody> GraphImporter::ImportBody(
    const GraphProto& graph, const std::string& name, absl::string_view role,
    const std::vector<TensorType>* formal) {
  GraphImporter child(
      state_, graph, this, depth_ + 1,
      graph.name().empty() ? absl::StrCat(name, "/", role) : graph.name());
  RETURN_IF_ERROR(
      Annotate(child.Import(formal), absl::StrCat("attribute '", role, "'")));
  absl::StatusOr<Graph> built = child.Build();
  if (!built.ok()) {
    return Annotate(built.status(), absl::StrCat("attribute '", role, "'"));
  }
  ControlFlowBody body;
  body.graph = std::make_shared<const Graph>(*std::move(built));
  body.outputs = child.outputs();
  body.captured = child.captured();
  return body;
}

absl::StatusOr<std::vector<Value>> GraphImporter::MergeBranchOutputs(
    const NodeProto& proto, const std::string& name,
    const ControlFlowBody& then_body, const ControlFlowBody& else_body) {
  if (then_body.outputs.size() != else_body.outputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("then_branch has ", then_body.outputs.size(),
                     " outputs, else_branch ", else_body.outputs.size()));
  }
  std::vector<Value> outputs;
  for (size_t k = 0; k < then_body.outputs.size(); ++k) {
    const TensorType& a = then_body.outputs[k].type;
    const TensorType& b = else_body.outputs[k].type;
    Value value;
    value.type = a;
    if (a != b) {
      if (a.dtype != b.dtype) {
        return absl::InvalidArgumentError(
            absl::StrCat("branch output ", k, " is ", a.ToString(),
                         " in then_branch, ", b.ToString(), " in else_branch"));
      }
      std::optional<TensorType> declared;
      if (k < static_cast<size_t>(proto.output_size())) {
        auto it = declared_.find(proto.output(static_cast<int>(k)));
        if (it != declared_.end()) {
          ASSIGN_OR_RETURN(declared, DeclaredType(*it->second));
        }
      }
      value.type = declared.has_value()                   ? *declared
                   : a.num_elements() >= b.num_elements() ? a
                                                          : b;
      Warn(absl::StrCat(NodeLabel(name, proto.op_type()), ": output ", k,
                        " is ", a.ToString(), " or ", b.ToString(),
                        " depending on the branch; using ",
                        value.type.ToString()));
    }
    outputs.push_back(std::move(value));
  }
  return outputs;
}

absl::StatusOr<ControlFlowParts> GraphImporter::ImportIf(
    const NodeProto& proto, const std::string& name,
    const std::vector<const Value*>& inputs) {
  if (inputs.empty() || inputs[0] == nullptr) {
    return absl::InvalidArgumentError("input 0 ('cond') is missing");
  }
  const Value& cond = *inputs[0];
  if (cond.type.num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 'cond' must hold one value, is ", cond.type.ToString()));
  }
  ASSIGN_OR_RETURN(const GraphProto* then_graph,
                   GraphAttribute(proto, "then_branch"));
  ASSIGN_OR_RETURN(const GraphProto* else_graph,
                   GraphAttribute(proto, "else_branch"));
  ControlFlowParts parts;
  parts.kind = OpKind::kConditional;
  if (!cond.constant.has_value()) {
    ASSIGN_OR_RETURN(ControlFlowBody then_body,
                     ImportBody(*then_graph, name, "then_branch", nullptr));
    ASSIGN_OR_RETURN(ControlFlowBody else_body,
                     ImportBody(*else_graph, name, "else_branch", nullptr));
    ASSIGN_OR_RETURN(parts.outputs,
                     MergeBranchOutputs(proto, name, then_body, else_body));
    const Graph* both[] = {then_body.graph.get(), else_body.graph.get()};
    parts.cost = MaxBranchCost(both);
    parts.bodies.push_back(std::move(then_body));
    parts.bodies.push_back(std::move(else_body));
    return parts;
  }
  // The condition folds: the taken branch decides types and cost. The other
  // branch is kept when it imports (it may not: e.g. a Squeeze of a
  // dimension the condition proved is not 1).
  const bool taken = cond.constant->RealAt(0) != 0;
  const GraphProto* taken_graph = taken ? then_graph : else_graph;
  const GraphProto* other_graph = taken ? else_graph : then_graph;
  const char* taken_role = taken ? "then_branch" : "else_branch";
  const char* other_role = taken ? "else_branch" : "then_branch";
  ASSIGN_OR_RETURN(ControlFlowBody taken_body,
                   ImportBody(*taken_graph, name, taken_role, nullptr));
  parts.outputs = taken_body.outputs;
  const Graph* one[] = {taken_body.graph.get()};
  parts.cost = SubgraphCost(one, 1);
  parts.bodies.push_back(std::move(taken_body));
  absl::StatusOr<ControlFlowBody> other =
      ImportBody(*other_graph, name, other_role, nullptr);
  if (other.ok()) {
    parts.bodies.push_back(*std::move(other));
  } else {
    Warn(absl::StrCat(NodeLabel(name, proto.op_type()),
                      ": condition is always ", taken ? "true" : "false", "; ",
                      other_role, " not kept (", other.status().message(),
                      ")"));
  }
  return parts;
}

absl::StatusOr<ControlFlowParts> GraphImporter::ImportLoop(
    const NodeProto& proto, const std::string& name,
    const std::vector<const Value*>& inputs) {
  ASSIGN_OR_RETURN(const GraphProto* body_graph, GraphAttribute(proto, "body"));
  const Value* trip_input = inputs.size() > 0 ? inputs[0] : nullptr;
  int64_t trip_count = -1;
  if (trip_input != nullptr && trip_input->constant.has_value() &&
      trip_input->constant->size() == 1) {
    std::optional<int64_t> m = trip_input->constant->IntAt(0);
    if (m.has_value() && *m >= 0 && *m <= kMaxTripCount) trip_count = *m;
  }
  std::vector<TensorType> formal = {MakeTensorType(DType::kS64, {}),
                                    MakeTensorType(DType::kPred, {})};
  for (size_t k = 2; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop-carried input ", k, " is empty"));
    }
    formal.push_back(inputs[k]->type);
  }
  const size_t carried = formal.size() - 2;
  ASSIGN_OR_RETURN(ControlFlowBody body,
                   ImportBody(*body_graph, name, "body", &formal));
  if (body.outputs.size() < carried + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "body has ", body.outputs.size(), " outputs; expected at least ",
        carried + 1, " (condition and loop-carried values)"));
  }
  const int64_t iterations = trip_count >= 0 ? trip_count : 1;
  if (trip_count < 0) {
    Warn(absl::StrCat(NodeLabel(name, proto.op_type()),
                      ": trip count unknown; costed as one iteration"));
  }
  ControlFlowParts parts;
  for (size_t k = 1; k < body.outputs.size(); ++k) {
    Value value;
    value.type = body.outputs[k].type;
    if (k > carried) {
      value.type.dims.insert(value.type.dims.begin(), iterations);
    }
    parts.outputs.push_back(std::move(value));
  }
  const Graph* one[] = {body.graph.get()};
  parts.cost = SubgraphCost(one, iterations);
  parts.trip_count = trip_count;
  parts.kind = OpKind::kWhile;
  parts.bodies.push_back(std::move(body));
  return parts;
}

absl::StatusOr<ControlFlowParts> GraphImporter::ImportScan(
    const NodeProto& proto, const std::string& name,
    const std::vector<const Value*>& inputs) {
  ASSIGN_OR_RETURN(const GraphProto* body_graph, GraphAttribute(proto, "body"));
  const int64_t num_scan = IntAttribute(proto, "num_scan_inputs", -1);
  const int64_t num_inputs = static_cast<int64_t>(inputs.size());
  if (num_scan < 1 || num_scan > num_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'num_scan_inputs' is ", num_scan, " for ",
                     num_inputs, " inputs"));
  }
  const int64_t num_states = num_inputs - num_scan;
  std::vector<int64_t> input_axes = IntsAttribute(proto, "scan_input_axes");
  std::vector<int64_t> output_axes = IntsAttribute(proto, "scan_output_axes");
  std::vector<TensorType> formal;
  int64_t sequence = -1;
  for (int64_t k = 0; k < num_inputs; ++k) {
    if (inputs[k] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("input ", k, " is empty"));
    }
    TensorType type = inputs[k]->type;
    if (k >= num_states) {
      const size_t s = static_cast<size_t>(k - num_states);
      const int64_t axis_value = s < input_axes.size() ? input_axes[s] : 0;
      if (type.rank() == 0 || axis_value < -type.rank() ||
          axis_value >= type.rank()) {
        return absl::InvalidArgumentError(
            absl::StrCat("scan input ", s, " ", type.ToString(),
                         " has no axis ", axis_value));
      }
      const int64_t axis =
          axis_value < 0 ? axis_value + type.rank() : axis_value;
      if (sequence >= 0 && type.dims[axis] != sequence) {
        return absl::InvalidArgumentError(
            absl::StrCat("scan inputs have different sequence lengths (",
                         sequence, " and ", type.dims[axis], ")"));
      }
      sequence = type.dims[axis];
      type.dims.erase(type.dims.begin() + axis);
    }
    formal.push_back(std::move(type));
  }
  ASSIGN_OR_RETURN(ControlFlowBody body,
                   ImportBody(*body_graph, name, "body", &formal));
  if (body.outputs.size() < static_cast<size_t>(num_states)) {
    return absl::InvalidArgumentError(
        absl::StrCat("body has ", body.outputs.size(), " outputs for ",
                     num_states, " states"));
  }
  ControlFlowParts parts;
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    Value value;
    value.type = body.outputs[k].type;
    if (k >= static_cast<size_t>(num_states)) {
      const size_t s = k - static_cast<size_t>(num_states);
      const int64_t rank = value.type.rank() + 1;
      const int64_t axis_value = s < output_axes.size() ? output_axes[s] : 0;
      if (axis_value < -rank || axis_value >= rank) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute 'scan_output_axes' value ", axis_value,
                         " is out of range for rank ", rank));
      }
      const int64_t axis = axis_value < 0 ? axis_value + rank : axis_value;
      value.type.dims.insert(value.type.dims.begin() + axis, sequence);
    }
    parts.outputs.push_back(std::move(value));
  }
  const Graph* one[] = {body.graph.get()};
  parts.cost = SubgraphCost(one, sequence);
  parts.trip_count = sequence;
  parts.kind = OpKind::kWhile;
  parts.bodies.push_back(std::move(body));
  return parts;
}

absl::Status GraphImporter::ImportControlFlow(
    const NodeProto& proto, const std::string& name,
    const std::vector<const Value*>& inputs) {
  if (depth_ + 1 > kMaxSubgraphDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subgraphs nest deeper than ", kMaxSubgraphDepth, " levels"));
  }
  const std::string& op = proto.op_type();
  absl::StatusOr<ControlFlowParts> parts =
      op == "If"     ? ImportIf(proto, name, inputs)
      : op == "Loop" ? ImportLoop(proto, name, inputs)
                     : ImportScan(proto, name, inputs);
  if (!parts.ok()) return parts.status();
  return AddControlFlowNode(proto, name, inputs, *std::move(parts));
}

absl::Status GraphImporter::AddControlFlowNode(
    const NodeProto& proto, const std::string& name,
    const std::vector<const Value*>& inputs, ControlFlowParts parts) {
  std::vector<Value>& outputs = parts.outputs;
  if (outputs.size() < static_cast<size_t>(proto.output_size())) {
    return absl::InvalidArgumentError(absl::StrCat("has ", proto.output_size(),
                                                   " outputs; its body gives ",
                                                   outputs.size()));
  }
  outputs.resize(static_cast<size_t>(proto.output_size()));
  Node node;
  node.name = name;
  node.source = {"", OnnxSourceName(proto), /*is_tensor=*/false};
  node.op = proto.op_type();
  node.kind = parts.kind;
  if (parts.trip_count.has_value()) {
    node.attributes.trip_count = *parts.trip_count;
  }
  for (int k = 0; k < proto.output_size(); ++k) {
    const TensorType& type = outputs[static_cast<size_t>(k)].type;
    RETURN_IF_ERROR(
        Annotate(ValidateTensorType(type), absl::StrCat("output ", k)));
    RETURN_IF_ERROR(
        CheckDeclared(proto.output(k), type, absl::StrCat("output ", k)));
    node.outputs.push_back(type);
  }
  for (const ControlFlowBody& body : parts.bodies) {
    node.subgraphs.push_back(builder_.AddSubgraph(body.graph));
  }
  SetNodeCost(parts.cost, &node);
  const int id = builder_.AddNode(std::move(node));
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] != nullptr) {
      builder_.AddEdge(inputs[k]->node, inputs[k]->output, id,
                       static_cast<int32_t>(k));
    }
  }
  // Values the bodies read from this graph (or further out) become extra
  // inputs after the node's own.
  absl::flat_hash_set<std::string> seen;
  int32_t next_input = static_cast<int32_t>(inputs.size());
  for (const ControlFlowBody& body : parts.bodies) {
    for (const std::string& captured : body.captured) {
      if (!seen.insert(captured).second) continue;
      ASSIGN_OR_RETURN(const Value* value, Resolve(captured));
      builder_.AddEdge(value->node, value->output, id, next_input++);
    }
  }
  for (int k = 0; k < proto.output_size(); ++k) {
    if (proto.output(k).empty()) continue;
    Value value = std::move(outputs[static_cast<size_t>(k)]);
    value.node = id;
    value.output = k;
    values_[proto.output(k)] = std::move(value);
  }
  return absl::OkStatus();
}

}  // namespace gopt::graph::onnx_internal
