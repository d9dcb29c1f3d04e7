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
#include "graph/onnx/onnx_op_rules.h"
#include "graph/onnx/onnx_tensor.h"
#include "graph/op_catalog.h"
#include "onnx/onnx.pb.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

using ::gopt::graph::onnx_internal::ConstantData;
using ::gopt::graph::onnx_internal::DecodeTensorData;
using ::gopt::graph::onnx_internal::DTypeFromOnnx;
using ::gopt::graph::onnx_internal::InferOp;
using ::gopt::graph::onnx_internal::NodeContext;
using ::gopt::graph::onnx_internal::OpInference;
using ::gopt::graph::onnx_internal::TensorTypeFromProto;
using ::gopt::graph::onnx_internal::Value;
using ::gopt::onnx::AttributeProto;
using ::gopt::onnx::GraphProto;
using ::gopt::onnx::ModelProto;
using ::gopt::onnx::NodeProto;
using ::gopt::onnx::TypeProto;
using ::gopt::onnx::ValueInfoProto;

// Nesting depth of If/Loop/Scan bodies accepted; real models nest 2-3 deep.
constexpr int kMaxSubgraphDepth = 16;
// Largest Loop trip count taken from a constant M. Exporters write
// INT64_MAX for "until the condition fails", which is not a trip count.
constexpr int64_t kMaxTripCount = int64_t{1} << 31;
constexpr int64_t kMinTestedOpset = 9;
constexpr int64_t kMaxTestedOpset = 18;

// State shared by a model's main graph and all of its subgraphs.
struct ImportState {
  const ImportOptions* options = nullptr;
  int64_t opset = 0;
  absl::flat_hash_set<std::string> warned_symbols;
  // Symbols that took ImportOptions::default_symbolic_dim, quoted, in order.
  std::vector<std::string> defaulted_symbols;
  std::vector<std::string> warnings;
  int64_t total_nodes = 0;
};

// A node's name and op type as error messages show them.
std::string NodeLabel(absl::string_view name, absl::string_view op) {
  return absl::StrCat("node '", name, "' (", op, ")");
}

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

// One imported control-flow body: its frozen graph, outputs and the names
// of enclosing values it reads.
struct ControlFlowBody {
  std::shared_ptr<const Graph> graph;
  std::vector<Value> outputs;
  std::vector<std::string> captured;
};

// What importing an If, Loop or Scan yields before it becomes a node.
struct ControlFlowParts {
  OpKind kind = OpKind::kOther;
  std::vector<ControlFlowBody> bodies;
  std::vector<Value> outputs;
  OpCost cost;
  // Set for loops (Loop: the folded trip count or -1; Scan: the sequence).
  std::optional<int64_t> trip_count;
};

// Imports one GraphProto (the model's main graph or a control-flow body)
// into a GraphBuilder. Not thread-safe; one per graph per import.
class GraphImporter {
 public:
  GraphImporter(ImportState* state, const GraphProto& proto,
                GraphImporter* parent, int depth, std::string name)
      : state_(state),
        proto_(proto),
        parent_(parent),
        depth_(depth),
        builder_(std::move(name), "onnx") {}

  // Imports the graph. `formal_inputs` gives the types of a Loop/Scan body's
  // inputs by position (the graph's declared input types are then ignored);
  // nullptr for the main graph, whose inputs carry their own types.
  absl::Status Import(const std::vector<TensorType>* formal_inputs);

  // Freezes the graph; call once after Import.
  absl::StatusOr<Graph> Build();

  // The graph's outputs in order, after Import.
  const std::vector<Value>& outputs() const { return outputs_; }
  // Names of enclosing-graph values the graph reads, in first-use order.
  const std::vector<std::string>& captured() const { return captured_; }

 private:
  void Warn(std::string warning) {
    state_->warnings.push_back(std::move(warning));
  }
  absl::Status CountNode();
  std::string UniqueName(absl::string_view wanted);

  // The value named `name` here or, captured, in an enclosing graph.
  absl::StatusOr<const Value*> Resolve(const std::string& name);
  bool CanResolve(const std::string& name) const;

  // The concrete type of a declared ValueInfo; nullopt when it declares no
  // tensor type or no shape. Symbolic and unknown dims get their values here
  // (with warnings).
  absl::StatusOr<std::optional<TensorType>> DeclaredType(
      const ValueInfoProto& info);
  // Checks `inferred` against the declaration of tensor `name`, if any.
  absl::Status CheckDeclared(const std::string& name,
                             const TensorType& inferred,
                             absl::string_view where) const;

  absl::Status AddInputsAndInitializers(
      const std::vector<TensorType>* formal_inputs);
  absl::StatusOr<std::vector<int>> TopologicalOrder();
  absl::Status ImportNode(const NodeProto& node, int index);
  // If, Loop and Scan: the op's bodies become subgraphs of one node.
  absl::Status ImportControlFlow(const NodeProto& node, const std::string& name,
                                 const std::vector<const Value*>& inputs);
  // Imports body `graph` (attribute `role` of node `name`) as a child graph;
  // `formal` gives its input types by position (nullptr: declared types).
  absl::StatusOr<ControlFlowBody> ImportBody(
      const GraphProto& graph, const std::string& name, absl::string_view role,
      const std::vector<TensorType>* formal);
  // One function per control-flow op: bodies, outputs and cost of the node.
  absl::StatusOr<ControlFlowParts> ImportIf(
      const NodeProto& node, const std::string& name,
      const std::vector<const Value*>& inputs);
  absl::StatusOr<ControlFlowParts> ImportLoop(
      const NodeProto& node, const std::string& name,
      const std::vector<const Value*>& inputs);
  absl::StatusOr<ControlFlowParts> ImportScan(
      const NodeProto& node, const std::string& name,
      const std::vector<const Value*>& inputs);
  // The outputs of an If whose condition is not folded: the branches'
  // types, or where they differ the declared (else the larger) type.
  absl::StatusOr<std::vector<Value>> MergeBranchOutputs(
      const NodeProto& node, const std::string& name,
      const ControlFlowBody& then_body, const ControlFlowBody& else_body);
  // Adds the control-flow node made of `parts`, its input and captured
  // edges, and its output values.
  absl::Status AddControlFlowNode(const NodeProto& node,
                                  const std::string& name,
                                  const std::vector<const Value*>& inputs,
                                  ControlFlowParts parts);
  absl::StatusOr<std::vector<TensorType>> DeclaredOutputTypes(
      const NodeProto& node);
  int AddValueNode(Node node, const std::string& tensor, Value value);

  ImportState* state_;
  const GraphProto& proto_;
  GraphImporter* parent_;
  int depth_;
  GraphBuilder builder_;
  // Values by tensor name; node_hash_map keeps Value pointers stable.
  absl::node_hash_map<std::string, Value> values_;
  absl::flat_hash_map<std::string, const ValueInfoProto*> declared_;
  absl::flat_hash_set<std::string> node_names_;
  std::vector<std::string> captured_;
  std::vector<Value> outputs_;
  int64_t next_parameter_ = 0;
};

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
    if (!declared.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": ", inferred.status().message(), ", and ",
          declared.status().message(),
          " (declare its output shapes in value_info to import it as an "
          "opaque op)"));
    }
    Warn(absl::StrCat(label, ": ", inferred.status().message(),
                      "; imported as an opaque op with its declared output "
                      "shapes, costed by bytes only"));
    inference.kind = OpKind::kOther;
    for (TensorType& type : *declared) {
      Value value;
      value.type = std::move(type);
      inference.outputs.push_back(std::move(value));
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

  absl::StatusOr<Graph> Import(absl::string_view contents,
                               const ImportOptions& options) const override {
    ModelProto model;
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
