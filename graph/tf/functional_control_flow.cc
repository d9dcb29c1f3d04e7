#include "graph/tf/functional_control_flow.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/tf/attr_util.h"
#include "graph/tf/shape_rule_util.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::AttrValue;
using ::gopt::tensorflow::DataType;
using ::gopt::tensorflow::NameAttrList;
using ::gopt::tensorflow::NodeDef;

// Identity chains followed when tracing a loop variable.
constexpr int kMaxTraceSteps = 64;
// LogicalAnd nesting followed in a loop condition.
constexpr int kMaxConditionDepth = 8;

bool IsWhile(absl::string_view op) {
  return op == "While" || op == "StatelessWhile";
}
bool IsIf(absl::string_view op) { return op == "If" || op == "StatelessIf"; }
bool IsCase(absl::string_view op) {
  return op == "Case" || op == "StatelessCase";
}

std::string NodeLabel(const NodeDef& node) {
  return absl::StrCat("node '", node.name(), "' (", node.op(), ")");
}

absl::Status NodeError(const NodeDef& node, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(NodeLabel(node), " ", message));
}

const AttrValue* FindAttrValue(const NodeDef& node, absl::string_view name) {
  auto it = node.attr().find(std::string(name));
  return it == node.attr().end() ? nullptr : &it->second;
}

// The list-of-types attribute `name`, or nullopt when absent.
absl::StatusOr<std::optional<std::vector<DataType>>> TypeListAttr(
    const NodeDef& node, absl::string_view name) {
  const AttrValue* attr = FindAttrValue(node, name);
  if (attr == nullptr) return std::nullopt;
  if (attr->value_case() != AttrValue::kList) {
    return NodeError(node,
                     absl::StrCat("attr '", name, "' is not a list of types"));
  }
  std::vector<DataType> types;
  for (int type : attr->list().type()) {
    types.push_back(static_cast<DataType>(type));
  }
  return std::optional<std::vector<DataType>>(std::move(types));
}

// The functions a node calls, by attribute: While: body, cond; If:
// then_branch, else_branch; Case: branches:0, branches:1, ...
absl::StatusOr<std::vector<std::pair<std::string, const NameAttrList*>>>
FunctionAttrs(const NodeDef& node) {
  std::vector<std::pair<std::string, const NameAttrList*>> out;
  if (IsCase(node.op())) {
    const AttrValue* attr = FindAttrValue(node, "branches");
    if (attr == nullptr || attr->value_case() != AttrValue::kList ||
        attr->list().func_size() == 0) {
      return NodeError(node, "attr 'branches' is missing or lists no function");
    }
    for (int k = 0; k < attr->list().func_size(); ++k) {
      out.emplace_back(absl::StrCat("branches[", k, "]"),
                       &attr->list().func(k));
    }
    return out;
  }
  const bool is_while = IsWhile(node.op());
  for (const char* name :
       {is_while ? "body" : "then_branch", is_while ? "cond" : "else_branch"}) {
    const AttrValue* attr = FindAttrValue(node, name);
    if (attr == nullptr || attr->value_case() != AttrValue::kFunc) {
      return NodeError(
          node, absl::StrCat("attr '", name, "' is missing or not a function"));
    }
    out.emplace_back(name, &attr->func());
  }
  return out;
}

// The TensorFlow type of a gopt element type (the first TensorFlow type
// mapping onto it), for arguments whose call lists no types.
DataType TfTypeOf(DType dtype) {
  for (int type = tensorflow::DT_FLOAT; type <= tensorflow::DT_UINT64; ++type) {
    if (DTypeFromTf(type) == dtype) return static_cast<DataType>(type);
  }
  return tensorflow::DT_FLOAT;
}

bool IsIntegerType(DataType type) {
  switch (type) {
    case tensorflow::DT_INT32:
    case tensorflow::DT_INT64:
    case tensorflow::DT_BOOL:
      return true;
    default:
      return false;
  }
}

// Reads a function's graph (FunctionGraph) through the identities that the
// inliner and tf.function put between a value and its use.
class FunctionReader {
 public:
  explicit FunctionReader(const FunctionGraph& function) : function_(function) {
    for (const NodeDef& node : function.graph_def.node()) {
      nodes_[node.name()] = &node;
    }
    for (size_t k = 0; k < function.args.size(); ++k) {
      args_[function.args[k]] = static_cast<int>(k);
    }
  }

  // Return value k as a tensor reference, or nullptr.
  const std::string* Return(int k) const {
    const NodeDef* result = Find(function_.result);
    if (result == nullptr || k < 0 || k >= result->input_size() ||
        absl::StartsWith(result->input(k), "^")) {
      return nullptr;
    }
    return &result->input(k);
  }

  // The number of values the function returns.
  int NumReturns() const {
    const NodeDef* result = Find(function_.result);
    if (result == nullptr) return 0;
    int count = 0;
    while (count < result->input_size() &&
           !absl::StartsWith(result->input(count), "^")) {
      ++count;
    }
    return count;
  }

  // The node (and output) that tensor `ref` comes from, past Identity,
  // IdentityN and Snapshot nodes; nullptr when `ref` names no node.
  std::pair<const NodeDef*, int> Trace(const std::string* ref) const {
    if (ref == nullptr) return {nullptr, 0};
    auto [node, output] = Parse(*ref);
    for (int step = 0; node != nullptr && step < kMaxTraceSteps; ++step) {
      const std::string& op = node->op();
      int next = -1;
      if ((op == "Identity" || op == "Snapshot" || op == "StopGradient") &&
          output == 0) {
        next = 0;
      } else if (op == "IdentityN") {
        next = output;
      }
      if (next < 0 || next >= node->input_size() ||
          absl::StartsWith(node->input(next), "^")) {
        break;
      }
      std::tie(node, output) = Parse(node->input(next));
    }
    return {node, output};
  }

  // The argument behind tensor `ref`, or -1.
  int ArgOf(const std::string* ref) const {
    const NodeDef* node = Trace(ref).first;
    if (node == nullptr) return -1;
    auto it = args_.find(node->name());
    return it == args_.end() ? -1 : it->second;
  }

  // The value of the integer scalar constant behind `ref`.
  std::optional<int64_t> ConstOf(const std::string* ref) const {
    const NodeDef* node = Trace(ref).first;
    if (node == nullptr || node->op() != "Const") return std::nullopt;
    const AttrValue* value = FindAttrValue(*node, "value");
    if (value == nullptr || value->value_case() != AttrValue::kTensor) {
      return std::nullopt;
    }
    for (const auto& dim : value->tensor().tensor_shape().dim()) {
      if (dim.size() != 1) return std::nullopt;
    }
    std::optional<std::vector<int64_t>> values =
        IntTensorValues(value->tensor(), 1);
    if (!values.has_value() || values->size() != 1) return std::nullopt;
    return (*values)[0];
  }

 private:
  const NodeDef* Find(absl::string_view name) const {
    auto it = nodes_.find(name);
    return it == nodes_.end() ? nullptr : it->second;
  }

  std::pair<const NodeDef*, int> Parse(absl::string_view ref) const {
    const size_t colon = ref.rfind(':');
    int output = 0;
    if (colon != absl::string_view::npos &&
        absl::SimpleAtoi(ref.substr(colon + 1), &output) && output >= 0) {
      ref = ref.substr(0, colon);
    } else {
      output = 0;
    }
    return {Find(ref), output};
  }

  const FunctionGraph& function_;
  absl::flat_hash_map<absl::string_view, const NodeDef*> nodes_;
  absl::flat_hash_map<absl::string_view, int> args_;
};

// A counted loop's condition `variable <op> bound` in the form
// `variable < limit` (or <=, !=) over an increasing variable.
enum class Bound { kBelow, kAtMost, kNotEqual };

// Iterations of `for (v = start; v <bound> limit; v += step)`; nullopt when
// the loop never ends or the count overflows.
std::optional<int64_t> Iterations(Bound bound, __int128 start, __int128 limit,
                                  __int128 step) {
  __int128 count = 0;
  if (bound == Bound::kNotEqual) {
    if (step == 0 || (limit - start) % step != 0) return std::nullopt;
    count = (limit - start) / step;
    if (count < 0) return std::nullopt;
  } else {
    const __int128 span = limit - start + (bound == Bound::kAtMost ? 1 : 0);
    if (span <= 0) return 0;
    if (step <= 0) return std::nullopt;
    count = (span + step - 1) / step;
  }
  if (count > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(count);
}

// Derives a While's trip count from its cond and body functions and the
// initial values of its loop variables.
class TripCounter {
 public:
  TripCounter(const FunctionGraph& cond, const FunctionGraph& body,
              absl::Span<const TensorInfo* const> inputs)
      : cond_(cond), body_(body), inputs_(inputs) {}

  std::optional<int64_t> Derive() const {
    return FromPredicate(cond_.Trace(cond_.Return(0)).first, 0);
  }

 private:
  std::optional<int64_t> FromPredicate(const NodeDef* predicate,
                                       int depth) const {
    if (predicate == nullptr || depth > kMaxConditionDepth ||
        predicate->input_size() < 2) {
      return std::nullopt;
    }
    const std::string& op = predicate->op();
    if (op == "LogicalAnd") {
      // The loop ends when either side turns false: the smaller count.
      std::optional<int64_t> best;
      for (int side = 0; side < 2; ++side) {
        std::optional<int64_t> trips = FromPredicate(
            cond_.Trace(&predicate->input(side)).first, depth + 1);
        if (trips.has_value() && (!best || *trips < *best)) best = trips;
      }
      return best;
    }
    // `lhs <op> rhs` as `rhs <flipped op> lhs` for side 1.
    struct Direction {
      const char* op;
      Bound bound;
      bool decreasing;  // the variable must decrease (v > limit)
    };
    static constexpr Direction kDirections[] = {
        {"Less", Bound::kBelow, false},
        {"LessEqual", Bound::kAtMost, false},
        {"Greater", Bound::kBelow, true},
        {"GreaterEqual", Bound::kAtMost, true},
        {"NotEqual", Bound::kNotEqual, false},
    };
    const Direction* direction = nullptr;
    for (const Direction& d : kDirections) {
      if (op == d.op) direction = &d;
    }
    if (direction == nullptr) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const int variable = cond_.ArgOf(&predicate->input(side));
      std::optional<int64_t> start = Initial(variable);
      std::optional<int64_t> step = Step(variable);
      std::optional<int64_t> limit = Limit(&predicate->input(1 - side));
      if (!start || !step || !limit) continue;
      // v > limit (or limit < v, with the variable on side 1) counts like
      // -v < -limit.
      const bool negate = direction->bound != Bound::kNotEqual &&
                          direction->decreasing == (side == 0);
      const __int128 sign = negate ? -1 : 1;
      return Iterations(direction->bound, sign * *start, sign * *limit,
                        sign * *step);
    }
    return std::nullopt;
  }

  // The constant the body adds to loop variable k each iteration.
  std::optional<int64_t> Step(int k) const {
    if (k < 0) return std::nullopt;
    const NodeDef* update = body_.Trace(body_.Return(k)).first;
    if (update == nullptr || update->input_size() < 2) return std::nullopt;
    const std::string& op = update->op();
    const bool subtract = op == "Sub";
    if (op != "Add" && op != "AddV2" && !subtract) return std::nullopt;
    for (int side = 0; side < (subtract ? 1 : 2); ++side) {
      if (body_.ArgOf(&update->input(side)) != k) continue;
      std::optional<int64_t> step = body_.ConstOf(&update->input(1 - side));
      if (!step.has_value()) return std::nullopt;
      return subtract ? -*step : *step;
    }
    return std::nullopt;
  }

  // The initial value of loop variable k.
  std::optional<int64_t> Initial(int k) const {
    if (k < 0 || k >= static_cast<int>(inputs_.size())) return std::nullopt;
    return ScalarValue(*inputs_[k]);
  }

  // The bound `ref` of the condition: a constant, or a loop variable the
  // body passes through unchanged whose initial value is known.
  std::optional<int64_t> Limit(const std::string* ref) const {
    if (std::optional<int64_t> value = cond_.ConstOf(ref)) return value;
    const int j = cond_.ArgOf(ref);
    if (j < 0 || body_.ArgOf(body_.Return(j)) != j) return std::nullopt;
    return Initial(j);
  }

  FunctionReader cond_;
  FunctionReader body_;
  absl::Span<const TensorInfo* const> inputs_;
};

// The key of a body in the FunctionScope cache.
std::string BodyKey(const NameAttrList& function,
                    absl::Span<const FunctionArg> args) {
  std::string key = function.name();
  if (function.attr_size() > 0) {
    absl::StrAppend(&key, "|", function.SerializeAsString());
  }
  for (const FunctionArg& arg : args) {
    absl::StrAppend(&key, "|", arg.dtype, ":", PartialShapeString(arg.shape));
    if (arg.value.has_value()) {
      absl::StrAppend(&key, "=", absl::StrJoin(*arg.value, ","));
    }
  }
  return key;
}

// One lowered body with what the node's error and warning messages call it.
struct CalledBody {
  std::string label;  // "attr 'body' (function 'f')"
  std::shared_ptr<const FunctionScope::Body> body;
};

// The output types of `called`'s return values, which must number
// `expected`.
absl::StatusOr<std::vector<TensorType>> ReturnTypes(const NodeDef& node,
                                                    const CalledBody& called,
                                                    int expected) {
  const FunctionReader reader(called.body->function);
  const int returns = reader.NumReturns();
  if (returns != expected) {
    return NodeError(node,
                     absl::StrCat(called.label, " returns ", returns,
                                  " value(s); the node needs ", expected));
  }
  const Graph& graph = *called.body->graph;
  std::optional<NodeId> result = graph.FindNode(called.body->function.result);
  if (!result.has_value() ||
      graph.node(*result).outputs.size() < static_cast<size_t>(expected)) {
    return NodeError(
        node, absl::StrCat(called.label, ": its return values were not found"));
  }
  const auto& outputs = graph.node(*result).outputs;
  return std::vector<TensorType>(outputs.begin(), outputs.begin() + expected);
}

PartialShape ShapeOf(const TensorType& type) {
  return PartialShape::Known(type.dims);
}

}  // namespace

bool IsFunctionalControlFlow(absl::string_view op) {
  return IsWhile(op) || IsIf(op) || IsCase(op);
}

absl::StatusOr<int> FunctionalOutputCount(const NodeDef& node,
                                          int num_data_inputs,
                                          int max_outputs) {
  const bool is_while = IsWhile(node.op());
  const char* attr = is_while ? "T" : "Tout";
  ASSIGN_OR_RETURN(std::optional<std::vector<DataType>> types,
                   TypeListAttr(node, attr));
  if (!is_while && num_data_inputs < 1) {
    return NodeError(
        node, absl::StrCat("has no input '",
                           IsIf(node.op()) ? "cond" : "branch_index", "'"));
  }
  if (!is_while && !types.has_value()) {
    return NodeError(node, "has no attr 'Tout'");
  }
  if (is_while && types.has_value() &&
      static_cast<int>(types->size()) != num_data_inputs) {
    return NodeError(
        node, absl::StrCat("attr 'T' lists ", types->size(), " types for ",
                           num_data_inputs, " inputs"));
  }
  const int count =
      types.has_value() ? static_cast<int>(types->size()) : num_data_inputs;
  if (count > max_outputs) {
    return NodeError(
        node, absl::StrCat("has ", count, " outputs, more than the limit of ",
                           max_outputs));
  }
  return count;
}

FunctionScope::FunctionScope(const tensorflow::FunctionDefLibrary& library,
                             int64_t max_nodes)
    : library_(library), nodes_left_(max_nodes) {}

absl::StatusOr<std::shared_ptr<const FunctionScope::Body>>
FunctionScope::LowerBody(const NameAttrList& function,
                         absl::Span<const FunctionArg> args,
                         const Lowerer& lower) {
  if (absl::c_linear_search(active_, function.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("function '", function.name(), "' calls itself (",
                     absl::StrJoin(active_, " -> "), " -> ", function.name(),
                     "): recursion"));
  }
  if (active_.size() >= static_cast<size_t>(kMaxFunctionCallDepth)) {
    return absl::InvalidArgumentError(
        absl::StrCat("function bodies nest more than ", kMaxFunctionCallDepth,
                     " deep at function '", function.name(), "'"));
  }
  std::string key = BodyKey(function, args);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto body = std::make_shared<Body>();
  ASSIGN_OR_RETURN(body->function,
                   FunctionBodyGraph(library_, function, args, nodes_left_));
  const int64_t nodes = body->function.graph_def.node_size();
  if (nodes > nodes_left_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "function bodies have more nodes in all than the limit allows (at "
        "function '",
        function.name(), "')"));
  }
  nodes_left_ -= nodes;
  active_.push_back(function.name());
  absl::StatusOr<Graph> graph =
      lower(body->function.graph_def, function.name(), this);
  active_.pop_back();
  if (!graph.ok()) return graph.status();
  body->graph = std::make_shared<const Graph>(*std::move(graph));
  std::shared_ptr<const Body> shared = std::move(body);
  cache_.emplace(std::move(key), shared);
  return shared;
}

absl::StatusOr<FunctionalLowering> LowerFunctionalControlFlow(
    const NodeDef& node, absl::Span<const TensorInfo* const> inputs,
    int num_outputs, FunctionScope* scope,
    const FunctionScope::Lowerer& lower) {
  const bool is_while = IsWhile(node.op());
  ASSIGN_OR_RETURN(auto functions, FunctionAttrs(node));
  // While: every input is a loop variable; If / Case: input 0 picks the
  // branch, the others are the branches' arguments.
  if (!is_while && inputs.empty()) {
    return NodeError(node, "has no input to pick its branch");
  }
  const absl::Span<const TensorInfo* const> args_in =
      is_while ? inputs : inputs.subspan(1);
  ASSIGN_OR_RETURN(std::optional<std::vector<DataType>> arg_types,
                   TypeListAttr(node, is_while ? "T" : "Tin"));
  if (arg_types.has_value() && arg_types->size() != args_in.size()) {
    return NodeError(
        node, absl::StrCat("attr '", is_while ? "T" : "Tin", "' lists ",
                           arg_types->size(), " types for ", args_in.size(),
                           " arguments"));
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<DataType>> out_types,
                   TypeListAttr(node, is_while ? "T" : "Tout"));
  std::vector<PartialShape> declared;
  if (const AttrValue* attr = FindAttrValue(node, "output_shapes")) {
    if (attr->value_case() != AttrValue::kList) {
      return NodeError(node, "attr 'output_shapes' is not a list of shapes");
    }
    for (int k = 0; k < attr->list().shape_size(); ++k) {
      ASSIGN_OR_RETURN(
          PartialShape shape,
          ShapeFromProto(attr->list().shape(k), node.name(),
                         absl::StrCat("attr 'output_shapes' ", k)));
      declared.push_back(std::move(shape));
    }
    if (!declared.empty() &&
        declared.size() != static_cast<size_t>(num_outputs)) {
      return NodeError(
          node, absl::StrCat("attr 'output_shapes' has ", declared.size(),
                             " shapes for ", num_outputs, " outputs"));
    }
  }
  std::vector<FunctionArg> args(args_in.size());
  for (size_t k = 0; k < args_in.size(); ++k) {
    const TensorInfo& in = *args_in[k];
    FunctionArg& arg = args[k];
    arg.dtype = arg_types.has_value() ? (*arg_types)[k] : TfTypeOf(in.dtype);
    arg.shape = in.shape;
    if (is_while) {
      // A loop variable has its declared shape in every iteration.
      if (k < declared.size()) {
        arg.shape = FillUnknownDims(arg.shape, declared[k]);
      }
    } else if (IsIntegerType(arg.dtype)) {
      // A branch argument holds its value: shape arithmetic folds.
      std::optional<std::vector<int64_t>> value = KnownValues(in);
      std::optional<int64_t> n = KnownNumElements(in.shape);
      if (value.has_value() && n.has_value() &&
          static_cast<int64_t>(value->size()) == *n) {
        arg.value = std::move(value);
      }
    }
  }
  FunctionalLowering out;
  std::vector<CalledBody> called;
  for (const auto& [attr, function] : functions) {
    CalledBody body;
    body.label =
        absl::StrCat("attr '", attr, "' (function '", function->name(), "')");
    absl::StatusOr<std::shared_ptr<const FunctionScope::Body>> lowered =
        scope->LowerBody(*function, args, lower);
    if (!lowered.ok()) {
      return Annotate(lowered.status(),
                      absl::StrCat(NodeLabel(node), " ", body.label));
    }
    body.body = *std::move(lowered);
    for (const std::string& warning : body.body->graph->warnings()) {
      out.warnings.push_back(
          absl::StrCat(NodeLabel(node), " ", body.label, ": ", warning));
    }
    out.bodies.push_back(body.body->graph);
    called.push_back(std::move(body));
  }

  // Output shapes: declared where known, else the bodies' return values.
  std::vector<std::vector<TensorType>> returns;
  for (size_t b = 0; b < called.size(); ++b) {
    if (is_while && b == 1) {
      RETURN_IF_ERROR(ReturnTypes(node, called[b], 1).status());
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<TensorType> types,
                     ReturnTypes(node, called[b], num_outputs));
    returns.push_back(std::move(types));
  }
  out.outputs.resize(num_outputs);
  for (int k = 0; k < num_outputs; ++k) {
    TensorInfo& info = out.outputs[k];
    // The branch whose output k is largest when branches disagree: the plan
    // must hold whichever runs.
    const TensorType* chosen = &returns[0][k];
    bool disagree = false;
    for (const auto& branch : returns) {
      disagree = disagree || branch[k] != *chosen;
      if (branch[k].num_elements() > chosen->num_elements()) {
        chosen = &branch[k];
      }
    }
    info.dtype =
        out_types.has_value() && k < static_cast<int>(out_types->size())
            ? DTypeFromTf((*out_types)[k])
            : chosen->dtype;
    const PartialShape from_body = ShapeOf(*chosen);
    info.shape = k < static_cast<int>(declared.size())
                     ? FillUnknownDims(declared[k], from_body)
                     : from_body;
    if (disagree && (k >= static_cast<int>(declared.size()) ||
                     !declared[k].fully_known())) {
      out.warnings.push_back(
          absl::StrCat(NodeLabel(node), ": output ", k,
                       " differs between branches; sized as the largest, ",
                       PartialShapeString(info.shape)));
    }
  }

  if (!is_while) {
    // No branch probabilities: the worse branch is what the plan must fit.
    std::vector<const Graph*> branches;
    for (const auto& graph : out.bodies) branches.push_back(graph.get());
    out.kind = OpKind::kConditional;
    out.cost = MaxBranchCost(branches);
    return out;
  }
  out.kind = OpKind::kWhile;
  const TripCounter counter(called[1].body->function, called[0].body->function,
                            inputs);
  out.trip_count = counter.Derive().value_or(-1);
  if (out.trip_count < 0) {
    out.warnings.push_back(absl::StrCat(
        NodeLabel(node),
        ": trip count unknown (its cond is not a loop counter compared with "
        "a constant bound); its body is costed as one iteration"));
  }
  const Graph* both[] = {out.bodies[0].get(), out.bodies[1].get()};
  out.cost = SubgraphCost(both, out.trip_count >= 0 ? out.trip_count : 1);
  return out;
}

}  // namespace gopt::graph::tf
