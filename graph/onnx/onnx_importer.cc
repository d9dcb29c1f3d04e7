#include "graph/onnx/onnx_importer.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/onnx/onnx_graph_importer.h"
#include "graph/onnx/onnx_op_rules.h"
#include "graph/onnx/onnx_runtime_bounds.h"
#include "graph/onnx/onnx_source.h"
#include "graph/onnx/onnx_tensor.h"
#include "graph/op_catalog.h"
#include "onnx/onnx.pb.h"
#include "util/status_macros.h"

namespace gopt::graph::onnx_internal {
namespace {

// Names a subgraph reads but does not define (its inputs, initializers and
// node outputs define names), including those of nested subgraphs. Used to
// order the enclosing graph's nodes; depth-bounded like the import.
void CollectFreeNames(const GraphProto& graph, int depth,
                      absl::flat_hash_set<std::string>* free_names) {
  if (depth > kMaxSubgraphDepth) return;
  absl::flat_hash_set<std::string> defined;
  for (const ValueInfoProto& input : graph.input())
    defined.insert(input.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  for (const auto& init : graph.sparse_initializer()) {
    defined.insert(init.values().name());
  }
  for (const NodeProto& node : graph.node()) {
    for (const std::string& output : node.output()) defined.insert(output);
  }
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.contains(name)) free_names->insert(name);
  };
  for (const NodeProto& node : graph.node()) {
    for (const std::string& input : node.input()) use(input);
    for (const AttributeProto& attribute : node.attribute()) {
      absl::flat_hash_set<std::string> nested;
      if (attribute.has_g())
        CollectFreeNames(attribute.g(), depth + 1, &nested);
      for (const GraphProto& g : attribute.graphs()) {
        CollectFreeNames(g, depth + 1, &nested);
      }
      for (const std::string& name : nested) use(name);
    }
  }
  for (const ValueInfoProto& output : graph.output()) use(output.name());
}

}  // namespace

absl::Status GraphImporter::CountNode() {
  if (++state_->total_nodes > state_->options->limits.max_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the model has more than ", state_->options->limits.max_nodes,
        " nodes (subgraphs included)"));
  }
  return absl::OkStatus();
}

std::string GraphImporter::UniqueName(absl::string_view wanted) {
  std::string name(wanted);
  for (int suffix = 1; node_names_.contains(name); ++suffix) {
    name = absl::StrCat(wanted, "_", suffix);
  }
  node_names_.insert(name);
  return name;
}

bool GraphImporter::CanResolve(const std::string& name) const {
  if (values_.contains(name)) return true;
  return parent_ != nullptr && parent_->CanResolve(name);
}

absl::StatusOr<const Value*> GraphImporter::Resolve(const std::string& name) {
  auto it = values_.find(name);
  if (it != values_.end()) return &it->second;
  if (parent_ == nullptr) {
    return absl::NotFoundError(absl::StrCat("no tensor '", name, "'"));
  }
  ASSIGN_OR_RETURN(const Value* outer, parent_->Resolve(name));
  RETURN_IF_ERROR(CountNode());
  Node node;
  node.name = UniqueName(name);
  node.op = "OuterScope";
  node.kind = OpKind::kParameter;
  node.attributes.parameter_number = next_parameter_++;
  node.outputs = {outer->type};
  Value value = *outer;
  value.output = 0;
  value.node = builder_.AddNode(std::move(node));
  captured_.push_back(name);
  return &(values_[name] = std::move(value));
}

absl::StatusOr<std::optional<TensorType>> GraphImporter::DeclaredType(
    const ValueInfoProto& info) {
  if (!info.has_type() || !info.type().has_tensor_type()) {
    return std::optional<TensorType>();
  }
  const TypeProto::Tensor& tensor = info.type().tensor_type();
  if (tensor.elem_type() == 0 || !tensor.has_shape()) {
    return std::optional<TensorType>();
  }
  TensorType type;
  absl::StatusOr<DType> dtype = DTypeFromOnnx(tensor.elem_type());
  if (!dtype.ok()) {
    return Annotate(dtype.status(), absl::StrCat("tensor '", info.name(), "'"));
  }
  type.dtype = *dtype;
  bool warned_unknown = false;
  const ImportOptions& options = *state_->options;
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const auto& dim = tensor.shape().dim(i);
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", info.name(), "' dimension ", i,
                         " is negative (", dim.dim_value(), ")"));
      }
      type.dims.push_back(dim.dim_value());
      continue;
    }
    if (dim.has_dim_param() && !dim.dim_param().empty()) {
      const std::string& symbol = dim.dim_param();
      auto it = options.symbolic_dims.find(symbol);
      const int64_t value = it != options.symbolic_dims.end()
                                ? it->second
                                : options.default_symbolic_dim;
      const std::string quoted = absl::StrCat("'", symbol, "'");
      if (it == options.symbolic_dims.end() &&
          std::find(state_->defaulted_symbols.begin(),
                    state_->defaulted_symbols.end(),
                    quoted) == state_->defaulted_symbols.end()) {
        state_->defaulted_symbols.push_back(quoted);
      }
      if (state_->warned_symbols.insert(symbol).second) {
        Warn(absl::StrCat("symbolic dimension '", symbol, "' set to ", value,
                          it != options.symbolic_dims.end()
                              ? " (from the request)"
                              : " (default)"));
      }
      type.dims.push_back(value);
      continue;
    }
    if (!warned_unknown) {
      warned_unknown = true;
      Warn(absl::StrCat("tensor '", info.name(), "' has unknown dimensions; ",
                        "assuming ", options.default_symbolic_dim));
    }
    type.dims.push_back(options.default_symbolic_dim);
  }
  RETURN_IF_ERROR(Annotate(ValidateTensorType(type),
                           absl::StrCat("tensor '", info.name(), "'")));
  return std::optional<TensorType>(std::move(type));
}

absl::Status GraphImporter::CheckDeclared(const std::string& name,
                                          const TensorType& inferred,
                                          absl::string_view where) const {
  auto it = declared_.find(name);
  if (it == declared_.end()) return absl::OkStatus();
  const ValueInfoProto& info = *it->second;
  if (!info.has_type() || !info.type().has_tensor_type()) {
    return absl::OkStatus();
  }
  const TypeProto::Tensor& tensor = info.type().tensor_type();
  std::string problem;
  if (tensor.elem_type() != 0) {
    absl::StatusOr<DType> dtype = DTypeFromOnnx(tensor.elem_type());
    if (!dtype.ok() || *dtype != inferred.dtype) {
      problem =
          absl::StrCat("element type ", tensor.elem_type(), " (ONNX enum)");
    }
  }
  if (problem.empty() && tensor.has_shape()) {
    if (tensor.shape().dim_size() != inferred.rank()) {
      problem = absl::StrCat("rank ", tensor.shape().dim_size());
    } else {
      for (int i = 0; i < inferred.rank(); ++i) {
        const auto& dim = tensor.shape().dim(i);
        if (dim.has_dim_value() && dim.dim_value() != inferred.dims[i]) {
          problem = absl::StrCat("dimension ", i, " = ", dim.dim_value());
          break;
        }
      }
    }
  }
  if (problem.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      where, " tensor '", name, "' is inferred as ", inferred.ToString(),
      " but its declared type (value_info / graph output) has ", problem));
}

int GraphImporter::AddValueNode(Node node, const std::string& tensor,
                                Value value) {
  value.node = builder_.AddNode(std::move(node));
  value.output = 0;
  const int id = value.node;
  values_[tensor] = std::move(value);
  return id;
}

absl::Status GraphImporter::AddInputsAndInitializers(
    const std::vector<TensorType>* formal_inputs) {
  // Graph outputs first, so value_info wins when both describe a tensor;
  // entries without a tensor type declare nothing.
  for (const auto* infos : {&proto_.output(), &proto_.value_info()}) {
    for (const ValueInfoProto& info : *infos) {
      if (info.has_type() && info.type().has_tensor_type()) {
        declared_[info.name()] = &info;
      }
    }
  }
  absl::flat_hash_set<std::string> initializer_names;
  for (const auto& init : proto_.initializer()) {
    initializer_names.insert(init.name());
  }
  if (formal_inputs != nullptr &&
      static_cast<size_t>(proto_.input_size()) != formal_inputs->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body has ", proto_.input_size(), " inputs, expected ",
                     formal_inputs->size()));
  }
  for (int i = 0; i < proto_.input_size(); ++i) {
    const ValueInfoProto& info = proto_.input(i);
    if (info.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input ", i, " has no name"));
    }
    if (values_.contains(info.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", info.name(), "' is listed twice"));
    }
    if (formal_inputs == nullptr && initializer_names.contains(info.name())) {
      declared_[info.name()] = &info;
      continue;
    }
    TensorType type;
    if (formal_inputs != nullptr) {
      type = (*formal_inputs)[static_cast<size_t>(i)];
    } else {
      ASSIGN_OR_RETURN(std::optional<TensorType> declared, DeclaredType(info));
      if (!declared.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph input '", info.name(), "' has no tensor type with a shape"));
      }
      type = *std::move(declared);
    }
    RETURN_IF_ERROR(CountNode());
    Node node;
    node.name = UniqueName(info.name());
    node.source = {"", info.name(), /*is_tensor=*/true};
    node.op = "Input";
    node.kind = OpKind::kParameter;
    node.attributes.parameter_number = next_parameter_++;
    node.outputs = {type};
    Value value;
    value.type = std::move(type);
    AddValueNode(std::move(node), info.name(), std::move(value));
  }
  for (const auto& init : proto_.initializer()) {
    const std::string what = absl::StrCat("initializer '", init.name(), "'");
    if (init.name().empty()) {
      return absl::InvalidArgumentError("an initializer has no name");
    }
    if (values_.contains(init.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is defined twice"));
    }
    ASSIGN_OR_RETURN(TensorType type, TensorTypeFromProto(init, what));
    ASSIGN_OR_RETURN(std::optional<ConstantData> data,
                     DecodeTensorData(init, type, what));
    RETURN_IF_ERROR(CheckDeclared(init.name(), type, what));
    RETURN_IF_ERROR(CountNode());
    Node node;
    node.name = UniqueName(init.name());
    node.source = {"", init.name(), /*is_tensor=*/true};
    node.op = "Initializer";
    node.kind = OpKind::kConstant;
    node.outputs = {type};
    Value value;
    value.type = std::move(type);
    value.constant = std::move(data);
    value.literal = true;
    AddValueNode(std::move(node), init.name(), std::move(value));
  }
  for (const auto& sparse : proto_.sparse_initializer()) {
    const std::string& name = sparse.values().name();
    const std::string what = absl::StrCat("sparse initializer '", name, "'");
    if (name.empty() || values_.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has no name or is defined twice"));
    }
    absl::StatusOr<DType> dtype = DTypeFromOnnx(sparse.values().data_type());
    if (!dtype.ok()) return Annotate(dtype.status(), what);
    TensorType type = MakeTensorType(
        *dtype,
        std::vector<int64_t>(sparse.dims().begin(), sparse.dims().end()));
    RETURN_IF_ERROR(Annotate(ValidateTensorType(type), what));
    RETURN_IF_ERROR(CountNode());
    Node node;
    node.name = UniqueName(name);
    node.source = {"", name, /*is_tensor=*/true};
    node.op = "SparseInitializer";
    node.kind = OpKind::kConstant;
    node.outputs = {type};
    Value value;
    value.type = std::move(type);
    value.literal = true;
    AddValueNode(std::move(node), name, std::move(value));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> GraphImporter::TopologicalOrder() {
  const int n = proto_.node_size();
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    const NodeProto& node = proto_.node(i);
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      if (values_.contains(output)) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeLabel(node.name(), node.op_type()), " output '", output,
            "' has the name of a graph input or initializer"));
      }
      auto [it, inserted] = producer.emplace(output, i);
      if (!inserted) {
        const NodeProto& other = proto_.node(it->second);
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", output, "' is produced twice: by ",
                         NodeLabel(other.name(), other.op_type()), " and by ",
                         NodeLabel(node.name(), node.op_type())));
      }
    }
  }
  std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::vector<absl::flat_hash_set<int>> predecessors(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const NodeProto& node = proto_.node(i);
    auto depend = [&](const std::string& name) {
      auto it = producer.find(name);
      if (it != producer.end() && predecessors[i].insert(it->second).second) {
        consumers[static_cast<size_t>(it->second)].push_back(i);
        ++pending[static_cast<size_t>(i)];
      }
    };
    for (int k = 0; k < node.input_size(); ++k) {
      const std::string& input = node.input(k);
      if (input.empty()) continue;
      if (!producer.contains(input) && !CanResolve(input)) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeLabel(node.name().empty() ? absl::StrCat(node.op_type(), "_", i)
                                          : node.name(),
                      node.op_type()),
            " input ", k, " names tensor '", input,
            "', which no node, initializer or graph input produces"));
      }
      depend(input);
    }
    for (const AttributeProto& attribute : node.attribute()) {
      absl::flat_hash_set<std::string> free_names;
      if (attribute.has_g())
        CollectFreeNames(attribute.g(), depth_ + 1, &free_names);
      for (const GraphProto& g : attribute.graphs()) {
        CollectFreeNames(g, depth_ + 1, &free_names);
      }
      for (const std::string& name : free_names) depend(name);
    }
  }
  // Kahn's algorithm, smallest index first, so a file already in order keeps
  // its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int consumer : consumers[static_cast<size_t>(i)]) {
      if (--pending[static_cast<size_t>(consumer)] == 0) ready.push(consumer);
    }
  }
  if (static_cast<int>(order.size()) == n) return order;
  // Walk predecessors among the unsorted nodes until one repeats: a cycle.
  int start = 0;
  while (pending[static_cast<size_t>(start)] == 0) ++start;
  std::vector<int> path;
  absl::flat_hash_map<int, size_t> position;
  int current = start;
  while (!position.contains(current)) {
    position[current] = path.size();
    path.push_back(current);
    for (int p : predecessors[static_cast<size_t>(current)]) {
      if (pending[static_cast<size_t>(p)] > 0) {
        current = p;
        break;
      }
    }
  }
  std::vector<std::string> names;
  for (size_t k = position[current]; k < path.size(); ++k) {
    const NodeProto& node = proto_.node(path[k]);
    names.push_back(NodeLabel(node.name(), node.op_type()));
  }
  std::reverse(names.begin(), names.end());
  return absl::InvalidArgumentError(absl::StrCat(
      "the graph has a cycle through ", absl::StrJoin(names, " -> ")));
}

absl::StatusOr<std::vector<TensorType>> GraphImporter::DeclaredOutputTypes(
    const NodeProto& node) {
  std::vector<TensorType> types;
  for (const std::string& output : node.output()) {
    if (output.empty()) {
      types.push_back(MakeTensorType(DType::kF32, {0}));
      continue;
    }
    auto it = declared_.find(output);
    if (it == declared_.end()) {
      return absl::NotFoundError(
          absl::StrCat("output '", output, "' has no declared type"));
    }
    ASSIGN_OR_RETURN(std::optional<TensorType> type, DeclaredType(*it->second));
    if (!type.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("output '", output, "' has no declared shape"));
    }
    types.push_back(*std::move(type));
  }
  return types;
}

absl::StatusOr<std::optional<OpInference>>
GraphImporter::InferWithBoundedInputs(const NodeProto& proto,
                                      const std::string& label,
                                      const std::vector<const Value*>& inputs,
                                      const absl::Status& why) {
  const int64_t dim = state_->options->default_symbolic_dim;
  std::optional<BoundedInputs> bounded = BoundRuntimeInputs(proto, inputs, dim);
  if (!bounded.has_value()) return std::optional<OpInference>();
  absl::StatusOr<OpInference> inferred =
      InferOp(NodeContext(proto, state_->opset, bounded->inputs));
  if (!inferred.ok()) return std::optional<OpInference>();
  // Contents computed from stand-ins are not the run-time values.
  std::vector<std::string> shapes;
  for (Value& output : inferred->outputs) {
    output.constant.reset();
    output.literal = false;
    shapes.push_back(output.type.ToString());
  }
  Warn(absl::StrCat(label, ": ", why.message(), "; bounded by assuming ",
                    absl::StrJoin(bounded->assumed, ", "),
                    " (the request's dimension ", dim, "), giving ",
                    absl::StrJoin(shapes, ", ")));
  return std::optional<OpInference>(*std::move(inferred));
}

absl::Status GraphImporter::ImportNode(const NodeProto& proto, int index) {
  const std::string& op = proto.op_type();
  const std::string name = UniqueName(
      proto.name().empty() ? absl::StrCat(op, "_", index) : proto.name());
  const std::string label = NodeLabel(name, op);
  RETURN_IF_ERROR(CountNode());
  std::vector<const Value*> inputs;
  for (int k = 0; k < proto.input_size(); ++k) {
    const std::string& input = proto.input(k);
    if (input.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    absl::StatusOr<const Value*> value = Resolve(input);
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, " input ", k, " names tensor '", input,
          "', which no node, initializer or graph input produces"));
    }
    inputs.push_back(*value);
  }
  const bool default_domain =
      proto.domain().empty() || proto.domain() == "ai.onnx";
  if (default_domain && (op == "If" || op == "Loop" || op == "Scan")) {
    return Annotate(ImportControlFlow(proto, name, inputs), label);
  }

  OpInference inference;
  absl::StatusOr<OpInference> inferred =
      default_domain ? InferOp(NodeContext(proto, state_->opset, inputs))
                     : absl::UnimplementedError(
                           absl::StrCat("op type '", op, "' of domain '",
                                        proto.domain(), "' is not supported"));
  if (inferred.ok()) {
    inference = *std::move(inferred);
  } else if (inferred.status().code() == absl::StatusCode::kUnimplemented) {
    absl::StatusOr<std::vector<TensorType>> declared =
        DeclaredOutputTypes(proto);
    std::optional<OpInference> bounded;
    if (!declared.ok() && default_domain) {
      ASSIGN_OR_RETURN(bounded, InferWithBoundedInputs(proto, label, inputs,
                                                       inferred.status()));
    }
    if (bounded.has_value()) {
      inference = *std::move(bounded);
    } else if (!declared.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": ", inferred.status().message(), ", and ",
          declared.status().message(),
          " (declare its output shapes in value_info to import it as an "
          "opaque op)"));
    } else {
      Warn(absl::StrCat(label, ": ", inferred.status().message(),
                        "; imported as an opaque op with its declared output "
                        "shapes, costed by bytes only"));
      inference.kind = OpKind::kOther;
      for (TensorType& type : *declared) {
        Value value;
        value.type = std::move(type);
        inference.outputs.push_back(std::move(value));
      }
    }
  } else {
    return Annotate(inferred.status(), label);
  }
  if (inference.outputs.size() < static_cast<size_t>(proto.output_size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, " has ", proto.output_size(), " outputs; ", op,
                     " produces at most ", inference.outputs.size()));
  }
  inference.outputs.resize(static_cast<size_t>(proto.output_size()));

  Node node;
  node.name = name;
  node.source = {"", OnnxSourceName(proto), /*is_tensor=*/false};
  node.op = op;
  node.kind = inference.kind;
  node.attributes = std::move(inference.attributes);
  for (int k = 0; k < proto.output_size(); ++k) {
    const TensorType& type = inference.outputs[static_cast<size_t>(k)].type;
    RETURN_IF_ERROR(
        Annotate(ValidateTensorType(type), absl::StrCat(label, " output ", k)));
    RETURN_IF_ERROR(CheckDeclared(proto.output(k), type,
                                  absl::StrCat(label, " output ", k)));
    node.outputs.push_back(type);
  }
  OpCostQuery query;
  query.kind = node.kind;
  query.attributes = &node.attributes;
  for (const Value* input : inputs) {
    if (input != nullptr) query.operands.push_back(&input->type);
  }
  for (const TensorType& type : node.outputs) query.outputs.push_back(&type);
  absl::StatusOr<OpCost> cost = ComputeOpCost(query);
  if (!cost.ok()) return Annotate(cost.status(), label);
  SetNodeCost(*cost, &node);

  const int id = builder_.AddNode(std::move(node));
  for (int k = 0; k < proto.input_size(); ++k) {
    const Value* input = inputs[static_cast<size_t>(k)];
    if (input != nullptr) builder_.AddEdge(input->node, input->output, id, k);
  }
  for (int k = 0; k < proto.output_size(); ++k) {
    if (proto.output(k).empty()) continue;
    Value value = std::move(inference.outputs[static_cast<size_t>(k)]);
    value.node = id;
    value.output = k;
    values_[proto.output(k)] = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status GraphImporter::Import(
    const std::vector<TensorType>* formal_inputs) {
  RETURN_IF_ERROR(AddInputsAndInitializers(formal_inputs));
  ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder());
  for (int index : order) {
    RETURN_IF_ERROR(ImportNode(proto_.node(index), index));
  }
  for (int k = 0; k < proto_.output_size(); ++k) {
    const std::string& name = proto_.output(k).name();
    absl::StatusOr<const Value*> value = Resolve(name);
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output ", k, " names tensor '", name,
          "', which no node, initializer or graph input produces"));
    }
    RETURN_IF_ERROR(
        CheckDeclared(name, (*value)->type, absl::StrCat("graph output ", k)));
    builder_.mutable_node((*value)->node).attributes.is_root = true;
    outputs_.push_back(**value);
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph> GraphImporter::Build() {
  if (parent_ == nullptr) {
    for (std::string& warning : state_->warnings) {
      builder_.AddWarning(std::move(warning));
    }
    state_->warnings.clear();
  }
  return std::move(builder_).Build(state_->options->limits);
}

}  // namespace gopt::graph::onnx_internal

namespace gopt::graph {
namespace {

using ::gopt::graph::onnx_internal::GraphImporter;
using ::gopt::graph::onnx_internal::ImportState;
using ::gopt::graph::onnx_internal::kMaxTestedOpset;
using ::gopt::graph::onnx_internal::kMinTestedOpset;
using ::gopt::onnx::GraphProto;
using ::gopt::onnx::ModelProto;
using ::gopt::onnx::NodeProto;
using ::gopt::onnx::TensorProto;

// Reads a base-128 varint at `*pos`; false when truncated or too long.
bool ReadVarint(absl::string_view data, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= data.size()) return false;
    const uint8_t byte = static_cast<uint8_t>(data[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

class OnnxImporter final : public Importer {
 public:
  absl::string_view format() const override { return "onnx"; }

  // A ModelProto starts with field 1 (ir_version, a small varint), then
  // length-delimited string fields 2-6 and the graph (field 7). TF GraphDef,
  // XLA HloModuleProto and tpu_graphs files start with a length-delimited
  // field 1 instead. The walk skips over field payloads, so it reads only a
  // few dozen bytes.
  bool Sniff(absl::string_view contents) const override {
    size_t pos = 0;
    uint64_t tag;
    if (!ReadVarint(contents, &pos, &tag) || tag != 0x08) return false;
    uint64_t ir_version;
    if (!ReadVarint(contents, &pos, &ir_version) || ir_version < 1 ||
        ir_version > 64) {
      return false;
    }
    for (int fields = 0; fields < 32 && pos < contents.size(); ++fields) {
      if (!ReadVarint(contents, &pos, &tag)) return false;
      const uint64_t field = tag >> 3;
      const uint64_t wire_type = tag & 7;
      if (field == 5 && wire_type == 0) {  // model_version
        uint64_t ignored;
        if (!ReadVarint(contents, &pos, &ignored)) return false;
        continue;
      }
      const bool string_field = field >= 2 && field <= 8 && field != 5;
      if (!string_field || wire_type != 2) return false;
      uint64_t length;
      if (!ReadVarint(contents, &pos, &length) ||
          length > contents.size() - pos) {
        return false;
      }
      if (field == 7) return true;
      pos += static_cast<size_t>(length);
    }
    return false;
  }

  // Nodes: operators (in subgraphs too) and tensors (initializers become
  // constant nodes; attribute tensors are counted too, as an upper bound).
  absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents,
      const ParseCostLimits& limits) const override {
    ASSIGN_OR_RETURN(ParseCost cost,
                     ProtoParseCost(contents, ModelProto::descriptor(),
                                    NodeTypes{{NodeProto::descriptor(),
                                               TensorProto::descriptor()},
                                              NodeProto::descriptor()},
                                    limits));
    cost.bytes += cost.nodes * kImporterBytesPerNode;
    return cost;
  }

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    google::protobuf::Arena arena(ImportArenaOptions());
    ModelProto& model =
        *google::protobuf::Arena::CreateMessage<ModelProto>(&arena);
    if (contents.size() > static_cast<size_t>(INT32_MAX) ||
        !model.ParseFromArray(contents.data(),
                              static_cast<int>(contents.size()))) {
      return absl::InvalidArgumentError(
          "not a valid ONNX ModelProto (protobuf parse failed)");
    }
    if (!model.has_graph()) {
      return absl::InvalidArgumentError("the model has no graph (field 7)");
    }
    ImportState state;
    state.options = &options;
    bool found_opset = false;
    for (const auto& opset : model.opset_import()) {
      if (opset.domain().empty() || opset.domain() == "ai.onnx") {
        state.opset = opset.version();
        found_opset = true;
      }
    }
    if (!found_opset) {
      return absl::InvalidArgumentError(
          "the model has no opset_import for the default ONNX domain");
    }
    if (state.opset < 7) {
      return absl::InvalidArgumentError(absl::StrCat(
          "opset ", state.opset, " is not supported (7 and newer are)"));
    }
    if (state.opset < kMinTestedOpset || state.opset > kMaxTestedOpset) {
      state.warnings.push_back(absl::StrCat(
          "opset ", state.opset, " is outside the tested range ",
          kMinTestedOpset, "-", kMaxTestedOpset,
          "; imported with the rules of the versions the file's ops match"));
    }
    const GraphProto& graph = model.graph();
    GraphImporter importer(
        &state, graph, /*parent=*/nullptr, /*depth=*/0,
        graph.name().empty() ? options.source_name : graph.name());
    absl::Status status = importer.Import(/*formal_inputs=*/nullptr);
    absl::StatusOr<Graph> built =
        status.ok() ? importer.Build() : absl::StatusOr<Graph>(status);
    if (!built.ok() && !state.defaulted_symbols.empty()) {
      // The usual cause of a shape error in a model with symbolic inputs is
      // a default that is too small (an image of height 1): say so.
      return absl::Status(
          built.status().code(),
          absl::StrCat(built.status().message(), " (symbolic dimensions ",
                       absl::StrJoin(state.defaulted_symbols, ", "),
                       " took the default ", options.default_symbolic_dim,
                       "; set them with --dim=NAME=VALUE)"));
    }
    return built;
  }
};

}  // namespace

std::unique_ptr<Importer> NewOnnxImporter() {
  return std::make_unique<OnnxImporter>();
}

}  // namespace gopt::graph
