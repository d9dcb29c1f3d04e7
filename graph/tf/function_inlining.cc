#include "graph/tf/function_inlining.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::AttrValue;
using ::gopt::tensorflow::FunctionDef;
using ::gopt::tensorflow::FunctionDefLibrary;
using ::gopt::tensorflow::GraphDef;
using ::gopt::tensorflow::NameAttrList;
using ::gopt::tensorflow::NodeDef;
using ::gopt::tensorflow::OpDef;
using ::gopt::tensorflow::TensorProto;
using ::gopt::tensorflow::TensorShapeProto;
using AttrMap = google::protobuf::Map<std::string, AttrValue>;

// Output argument names, in order, of the multi-output ops function bodies
// use; every other op has one (possibly list-valued) output argument, whose
// index is the flat output index.
const absl::flat_hash_map<std::string, std::vector<std::string>>& OutputArgs() {
  static const auto* const kArgs =
      new absl::flat_hash_map<std::string, std::vector<std::string>>{
          {"FusedBatchNorm",
           {"y", "batch_mean", "batch_variance", "reserve_space_1",
            "reserve_space_2"}},
          {"FusedBatchNormV2",
           {"y", "batch_mean", "batch_variance", "reserve_space_1",
            "reserve_space_2"}},
          {"FusedBatchNormV3",
           {"y", "batch_mean", "batch_variance", "reserve_space_1",
            "reserve_space_2", "reserve_space_3"}},
          {"FusedBatchNormGrad",
           {"x_backprop", "scale_backprop", "offset_backprop",
            "reserve_space_3", "reserve_space_4"}},
          {"FusedBatchNormGradV2",
           {"x_backprop", "scale_backprop", "offset_backprop",
            "reserve_space_3", "reserve_space_4"}},
          {"FusedBatchNormGradV3",
           {"x_backprop", "scale_backprop", "offset_backprop",
            "reserve_space_4", "reserve_space_5"}},
          {"SoftmaxCrossEntropyWithLogits", {"loss", "backprop"}},
          {"SparseSoftmaxCrossEntropyWithLogits", {"loss", "backprop"}},
          {"BroadcastGradientArgs", {"r0", "r1"}},
          {"TopKV2", {"values", "indices"}},
          {"Switch", {"output_false", "output_true"}},
          {"Merge", {"output", "value_index"}},
          {"Unique", {"y", "idx"}},
          {"NonMaxSuppressionV4", {"selected_indices", "valid_outputs"}},
          {"NonMaxSuppressionV5",
           {"selected_indices", "selected_scores", "valid_outputs"}},
          {"DecodeWav", {"audio", "sample_rate"}},
      };
  return *kArgs;
}

bool IsCallOp(absl::string_view op) {
  return op == "StatefulPartitionedCall" || op == "PartitionedCall";
}

class Inliner {
 public:
  // Inlines the calls of `graph_def`'s nodes to functions of `library`.
  Inliner(const GraphDef& graph_def, const FunctionDefLibrary& library,
          int64_t max_nodes)
      : graph_def_(graph_def), max_nodes_(max_nodes) {
    for (const FunctionDef& function : library.function()) {
      functions_[function.signature().name()] = &function;
    }
  }

  // True when some node calls a library function.
  bool HasCalls() const {
    for (const NodeDef& node : graph_def_.node()) {
      if (CalledFunction(node) != nullptr) return true;
    }
    return false;
  }

  absl::StatusOr<GraphDef> Run() {
    GraphDef out;
    *out.mutable_versions() = graph_def_.versions();
    out_ = &out;
    for (const NodeDef& node : graph_def_.node()) names_.insert(node.name());
    for (const NodeDef& node : graph_def_.node()) {
      RETURN_IF_ERROR(Emit(node, 0));
    }
    return out;
  }

 private:
  // The function `node` calls, or nullptr.
  const FunctionDef* CalledFunction(const NodeDef& node) const {
    std::string name = node.op();
    if (IsCallOp(node.op())) {
      auto f = node.attr().find("f");
      if (f == node.attr().end()) return nullptr;
      name = f->second.func().name();
    }
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second;
  }

  absl::Status Emit(const NodeDef& node, int depth) {
    if (const FunctionDef* function = CalledFunction(node)) {
      return Inline(node, *function, depth);
    }
    if (out_->node_size() >= max_nodes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("graph has more than ", max_nodes_,
                       " nodes after inlining its function calls"));
    }
    *out_->add_node() = node;
    return absl::OkStatus();
  }

  absl::Status AddName(const std::string& name, const NodeDef& call) {
    if (!names_.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("inlining call '", call.name(), "' creates node '", name,
                       "', which already exists"));
    }
    return absl::OkStatus();
  }

  // The attributes a call binds for its function's placeholders.
  static const AttrMap& CallAttrs(const NodeDef& call) {
    if (IsCallOp(call.op())) {
      auto f = call.attr().find("f");
      if (f != call.attr().end()) return f->second.func().attr();
    }
    return call.attr();
  }

  // The number of tensors argument `arg` of a call binds.
  static int ArgSize(const OpDef::ArgDef& arg, const AttrMap& attrs) {
    if (!arg.number_attr().empty()) {
      auto it = attrs.find(arg.number_attr());
      if (it != attrs.end()) return static_cast<int>(it->second.i());
    }
    if (!arg.type_list_attr().empty()) {
      auto it = attrs.find(arg.type_list_attr());
      if (it != attrs.end()) return it->second.list().type_size();
    }
    return 1;
  }

  // The DataType of a single-tensor argument, or 0 when not known.
  static int ArgType(const OpDef::ArgDef& arg, const AttrMap& attrs) {
    if (arg.type() != 0) return arg.type();
    auto it = attrs.find(arg.type_attr());
    return it == attrs.end() ? 0 : it->second.type();
  }

  absl::Status Inline(const NodeDef& call, const FunctionDef& function,
                      int depth) {
    const std::string& fname = function.signature().name();
    if (depth >= kMaxFunctionCallDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "call '", call.name(), "' of function '", fname, "' nests more than ",
          kMaxFunctionCallDepth, " calls deep (recursion?)"));
    }
    const AttrMap& attrs = CallAttrs(call);
    const std::string prefix = absl::StrCat(call.name(), "/");
    std::vector<std::string> data_inputs;
    std::vector<std::string> control_inputs;
    for (const std::string& input : call.input()) {
      (absl::StartsWith(input, "^") ? control_inputs : data_inputs)
          .push_back(input);
    }
    // Arguments: one Identity (IdentityN for lists) per input argument.
    absl::flat_hash_set<std::string> args;
    size_t next_input = 0;
    for (const OpDef::ArgDef& arg : function.signature().input_arg()) {
      const int size = ArgSize(arg, attrs);
      if (size < 0 ||
          next_input + static_cast<size_t>(size) > data_inputs.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "call '", call.name(), "' of function '", fname, "' has ",
            data_inputs.size(), " data inputs; argument '", arg.name(),
            "' needs more"));
      }
      NodeDef node;
      node.set_name(prefix + arg.name());
      RETURN_IF_ERROR(AddName(node.name(), call));
      const bool list =
          !arg.number_attr().empty() || !arg.type_list_attr().empty();
      node.set_op(list ? "IdentityN" : "Identity");
      for (int k = 0; k < size; ++k) {
        node.add_input(data_inputs[next_input++]);
      }
      for (const std::string& control : control_inputs) {
        node.add_input(control);
      }
      if (const int type = ArgType(arg, attrs); type != 0) {
        if (list) {
          for (int k = 0; k < size; ++k) {
            (*node.mutable_attr())["T"].mutable_list()->add_type(
                static_cast<tensorflow::DataType>(type));
          }
        } else {
          (*node.mutable_attr())["T"].set_type(
              static_cast<tensorflow::DataType>(type));
        }
      }
      args.insert(arg.name());
      RETURN_IF_ERROR(Emit(node, depth));
    }
    if (next_input != data_inputs.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("call '", call.name(), "' of function '", fname,
                       "' has ", data_inputs.size(),
                       " data inputs; its signature takes ", next_input));
    }
    absl::flat_hash_map<absl::string_view, const NodeDef*> body;
    for (const NodeDef& node : function.node_def()) body[node.name()] = &node;

    auto resolve = [&](absl::string_view ref) -> absl::StatusOr<std::string> {
      const bool control = absl::ConsumePrefix(&ref, "^");
      std::vector<absl::string_view> parts = absl::StrSplit(ref, ':');
      const std::string head = control ? "^" : "";
      if (args.contains(parts[0])) {
        return absl::StrCat(head, prefix, ref);
      }
      auto it = body.find(parts[0]);
      if (it == body.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "function '", fname, "' (called by '", call.name(),
            "') refers to '", ref, "', which is neither an argument nor a ",
            "body node"));
      }
      if (control || parts.size() == 1) {
        return absl::StrCat(head, prefix, parts[0]);
      }
      int64_t index = 0;
      if (parts.size() == 2 && absl::SimpleAtoi(parts[1], &index) &&
          index >= 0) {
        return index == 0 ? absl::StrCat(prefix, parts[0])
                          : absl::StrCat(prefix, parts[0], ":", index);
      }
      if (parts.size() != 3 || !absl::SimpleAtoi(parts[2], &index) ||
          index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("function '", fname, "' input '", ref,
                         "' is not of the form node:output_arg:index"));
      }
      ASSIGN_OR_RETURN(int64_t position,
                       OutputArgPosition(*it->second, parts[1]));
      const int64_t flat = position + index;
      return flat == 0 ? absl::StrCat(prefix, parts[0])
                       : absl::StrCat(prefix, parts[0], ":", flat);
    };

    for (const NodeDef& original : function.node_def()) {
      NodeDef node = original;
      node.set_name(prefix + original.name());
      RETURN_IF_ERROR(AddName(node.name(), call));
      node.clear_input();
      for (const std::string& input : original.input()) {
        ASSIGN_OR_RETURN(std::string resolved, resolve(input));
        node.add_input(std::move(resolved));
      }
      for (auto& [name, value] : *node.mutable_attr()) {
        if (value.value_case() != AttrValue::kPlaceholder) continue;
        auto bound = attrs.find(value.placeholder());
        if (bound != attrs.end()) value = bound->second;
      }
      RETURN_IF_ERROR(Emit(node, depth + 1));
    }
    // The call: an IdentityN over the return values.
    NodeDef result;
    result.set_name(call.name());
    result.set_op("IdentityN");
    auto tout = call.attr().find("Tout");
    for (const OpDef::ArgDef& arg : function.signature().output_arg()) {
      auto ret = function.ret().find(arg.name());
      if (ret == function.ret().end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "function '", fname, "' returns no value for '", arg.name(), "'"));
      }
      ASSIGN_OR_RETURN(std::string resolved, resolve(ret->second));
      result.add_input(std::move(resolved));
      int type = ArgType(arg, attrs);
      const int k = result.input_size() - 1;
      if (tout != call.attr().end() && k < tout->second.list().type_size()) {
        type = tout->second.list().type(k);
      }
      (*result.mutable_attr())["T"].mutable_list()->add_type(
          static_cast<tensorflow::DataType>(type == 0 ? 1 : type));
    }
    for (const auto& [name, target] : function.control_ret()) {
      ASSIGN_OR_RETURN(std::string resolved,
                       resolve(absl::StrCat("^", target)));
      result.add_input(std::move(resolved));
    }
    return Emit(result, depth);
  }

  // The flat index of the first output of argument `arg` of body node
  // `node`.
  absl::StatusOr<int64_t> OutputArgPosition(const NodeDef& node,
                                            absl::string_view arg) const {
    std::string op = node.op();
    if (IsCallOp(op)) return 0;
    auto fn = functions_.find(op);
    if (fn != functions_.end()) {
      const auto& outputs = fn->second->signature().output_arg();
      for (int i = 0; i < outputs.size(); ++i) {
        if (outputs[i].name() == arg) return i;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("function '", op, "' has no output '", arg, "'"));
    }
    auto it = OutputArgs().find(op);
    if (it == OutputArgs().end()) return 0;
    for (size_t i = 0; i < it->second.size(); ++i) {
      if (it->second[i] == arg) return static_cast<int64_t>(i);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name(), "' (", op, ") has no output '", arg, "'"));
  }

  const GraphDef& graph_def_;
  const int64_t max_nodes_;
  absl::flat_hash_map<std::string, const FunctionDef*> functions_;
  absl::flat_hash_set<std::string> names_;
  GraphDef* out_ = nullptr;
};

}  // namespace

absl::StatusOr<std::optional<GraphDef>> InlineFunctionCalls(
    const GraphDef& graph_def, int64_t max_nodes) {
  if (graph_def.library().function_size() == 0) return std::nullopt;
  Inliner inliner(graph_def, graph_def.library(), max_nodes);
  if (!inliner.HasCalls()) return std::nullopt;
  ASSIGN_OR_RETURN(GraphDef inlined, inliner.Run());
  return std::optional<GraphDef>(std::move(inlined));
}

absl::StatusOr<FunctionGraph> FunctionBodyGraph(
    const FunctionDefLibrary& library, const NameAttrList& function,
    absl::Span<const FunctionArg> args, int64_t max_nodes) {
  const auto& functions = library.function();
  if (std::none_of(functions.begin(), functions.end(),
                   [&](const FunctionDef& f) {
                     return f.signature().name() == function.name();
                   })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "function '", function.name(), "' is not in the graph's library"));
  }
  FunctionGraph out;
  GraphDef call_graph;
  NodeDef call;
  call.set_op("PartitionedCall");
  *(*call.mutable_attr())["f"].mutable_func() = function;
  for (size_t k = 0; k < args.size(); ++k) {
    const FunctionArg& arg = args[k];
    NodeDef* node = call_graph.add_node();
    node->set_name(absl::StrCat("_arg", k));
    auto& attrs = *node->mutable_attr();
    attrs["dtype"].set_type(arg.dtype);
    TensorShapeProto shape;
    shape.set_unknown_rank(!arg.shape.rank_known);
    for (int64_t dim : arg.shape.dims) shape.add_dim()->set_size(dim);
    if (arg.value.has_value()) {
      node->set_op("Const");
      TensorProto& tensor = *attrs["value"].mutable_tensor();
      tensor.set_dtype(arg.dtype);
      *tensor.mutable_tensor_shape() = std::move(shape);
      for (int64_t v : *arg.value) {
        if (arg.dtype == tensorflow::DT_INT64) {
          tensor.add_int64_val(v);
        } else if (arg.dtype == tensorflow::DT_BOOL) {
          tensor.add_bool_val(v != 0);
        } else {
          tensor.add_int_val(static_cast<int32_t>(v));
        }
      }
    } else {
      node->set_op("Placeholder");
      *attrs["shape"].mutable_shape() = std::move(shape);
    }
    call.add_input(node->name());
    out.args.push_back(node->name());
  }
  // The call (and so its result) is named after the function, unless that
  // name is an argument's.
  out.result = absl::c_linear_search(out.args, function.name())
                   ? "_call"
                   : function.name();
  call.set_name(out.result);
  *call_graph.add_node() = std::move(call);
  Inliner inliner(call_graph, library, max_nodes);
  ASSIGN_OR_RETURN(out.graph_def, inliner.Run());
  return out;
}

}  // namespace gopt::graph::tf
