#include "graph/tf/graphdef_lowering.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <queue>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "graph/op_catalog.h"
#include "graph/tf/function_inlining.h"
#include "graph/tf/functional_control_flow.h"
#include "graph/tf/op_lowering.h"
#include "graph/tf/shape_rule_util.h"
#include "graph/tf/shape_rules.h"
#include "util/status_macros.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::GraphDef;
using ::gopt::tensorflow::NodeDef;

// Output indices above this are rejected, so no allocation follows an index
// read from the file.
constexpr int kMaxOutputs = 4096;
// Shape inference passes over graphs with loops (loop-carried shapes flow
// from NextIteration back into Merge between passes).
constexpr int kMaxInferencePasses = 4;
// Nodes named individually in the "assumed dimension" warning.
constexpr int kMaxNamedNodesInWarning = 20;

struct InputRef {
  int node = 0;
  int output = 0;
  bool back_edge = false;  // a NextIteration -> Merge edge that is cut
};

struct NodeState {
  const NodeDef* def = nullptr;
  std::vector<InputRef> data_inputs;
  std::vector<int> control_inputs;
  int num_outputs = 1;
  std::vector<TensorInfo> outputs;
  std::vector<TensorType> types;
  // While / If / Case: the bodies, cost and trip count.
  std::optional<FunctionalLowering> functional;
};

class Lowering {
 public:
  // `scope` serves the functions that While / If / Case nodes call.
  Lowering(const GraphDef& graph_def, absl::string_view format,
           const ImportOptions& options, const TfjsHints* hints,
           FunctionScope* scope, bool function_body = false)
      : graph_def_(graph_def),
        format_(format),
        options_(options),
        hints_(hints),
        scope_(scope),
        function_body_(function_body) {}

  absl::StatusOr<Graph> Run() {
    const int n = graph_def_.node_size();
    if (n > options_.limits.max_nodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("graph has ", n, " nodes, more than the limit of ",
                       options_.limits.max_nodes));
    }
    RETURN_IF_ERROR(IndexNodes());
    RETURN_IF_ERROR(ParseInputs());
    RETURN_IF_ERROR(CountOutputs());
    RETURN_IF_ERROR(TopologicalOrder());
    RETURN_IF_ERROR(InferShapes());
    RETURN_IF_ERROR(ResolveTypes());
    return Build();
  }

 private:
  const NodeDef& def(int i) const { return *nodes_[i].def; }

  absl::Status IndexNodes() {
    const int n = graph_def_.node_size();
    nodes_.resize(n);
    index_.reserve(n);
    for (int i = 0; i < n; ++i) {
      const NodeDef& node = graph_def_.node(i);
      nodes_[i].def = &node;
      if (node.name().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node #", i, " (op '", node.op(), "') has no name"));
      }
      if (node.op().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name(), "' has no op"));
      }
      auto [it, inserted] = index_.emplace(node.name(), i);
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("duplicate node name '", node.name(), "' (nodes #",
                         it->second, " and #", i, ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseInputs() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      NodeState& state = nodes_[i];
      const NodeDef& node = *state.def;
      for (int k = 0; k < node.input_size(); ++k) {
        absl::string_view input = node.input(k);
        const bool control = absl::ConsumePrefix(&input, "^");
        int output = 0;
        absl::string_view name = input;
        const size_t colon = input.rfind(':');
        if (!control && colon != absl::string_view::npos) {
          absl::string_view suffix = input.substr(colon + 1);
          int64_t index = 0;
          if (!suffix.empty() &&
              std::all_of(suffix.begin(), suffix.end(), absl::ascii_isdigit)) {
            if (suffix.size() > 9 || !absl::SimpleAtoi(suffix, &index) ||
                index >= kMaxOutputs) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "node '", node.name(), "' input ", k, " '", node.input(k),
                  "' reads an output index above the limit of ", kMaxOutputs));
            }
            output = static_cast<int>(index);
            name = input.substr(0, colon);
          }
        }
        auto it = index_.find(name);
        if (it == index_.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("node '", node.name(), "' input ", k, " names '",
                           name, "', which is not a node"));
        }
        if (control) {
          state.control_inputs.push_back(it->second);
        } else {
          InputRef ref;
          ref.node = it->second;
          ref.output = output;
          ref.back_edge =
              node.op() == "Merge" && def(it->second).op() == "NextIteration";
          state.data_inputs.push_back(ref);
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CountOutputs() {
    std::vector<int> max_read(nodes_.size(), -1);
    for (const NodeState& state : nodes_) {
      for (const InputRef& ref : state.data_inputs) {
        max_read[ref.node] = std::max(max_read[ref.node], ref.output);
      }
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (IsFunctionalControlFlow(def(i).op())) {
        ASSIGN_OR_RETURN(
            nodes_[i].num_outputs,
            FunctionalOutputCount(
                def(i), static_cast<int>(nodes_[i].data_inputs.size()),
                kMaxOutputs));
        continue;
      }
      ASSIGN_OR_RETURN(std::optional<int> known,
                       KnownOutputCount(def(i), kMaxOutputs));
      nodes_[i].num_outputs =
          known.has_value() ? *known : std::max(1, max_read[i] + 1);
    }
    for (const NodeState& state : nodes_) {
      for (size_t k = 0; k < state.data_inputs.size(); ++k) {
        const InputRef& ref = state.data_inputs[k];
        if (ref.output >= nodes_[ref.node].num_outputs) {
          return absl::InvalidArgumentError(absl::StrCat(
              "node '", state.def->name(), "' input ", k, " reads output ",
              ref.output, " of '", def(ref.node).name(), "' (",
              def(ref.node).op(), "), which has ", nodes_[ref.node].num_outputs,
              " output(s)"));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status TopologicalOrder() {
    const int n = static_cast<int>(nodes_.size());
    std::vector<std::vector<int>> succs(n);
    std::vector<int> in_degree(n, 0);
    for (int i = 0; i < n; ++i) {
      for (const InputRef& ref : nodes_[i].data_inputs) {
        if (ref.back_edge) continue;
        succs[ref.node].push_back(i);
        ++in_degree[i];
      }
      for (int src : nodes_[i].control_inputs) {
        succs[src].push_back(i);
        ++in_degree[i];
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < n; ++i) {
      if (in_degree[i] == 0) ready.push(i);
    }
    order_.reserve(n);
    while (!ready.empty()) {
      const int current = ready.top();
      ready.pop();
      order_.push_back(current);
      for (int succ : succs[current]) {
        if (--in_degree[succ] == 0) ready.push(succ);
      }
    }
    if (static_cast<int>(order_.size()) == n) return absl::OkStatus();
    // Walk backwards along unordered predecessors until a node repeats.
    int current = 0;
    while (in_degree[current] == 0) ++current;
    std::vector<int> position(n, -1);
    std::vector<int> path;
    while (position[current] < 0) {
      position[current] = static_cast<int>(path.size());
      path.push_back(current);
      int next = -1;
      for (const InputRef& ref : nodes_[current].data_inputs) {
        if (!ref.back_edge && in_degree[ref.node] > 0) next = ref.node;
      }
      for (int src : nodes_[current].control_inputs) {
        if (in_degree[src] > 0) next = src;
      }
      if (next < 0) break;
      current = next;
    }
    std::vector<std::string> names;
    for (size_t i = position[current]; i < path.size(); ++i) {
      names.push_back(absl::StrCat("'", def(path[i]).name(), "'"));
    }
    std::reverse(names.begin(), names.end());
    names.push_back(names.front());
    return absl::InvalidArgumentError(
        absl::StrCat("graph has a cycle outside TF1 while loops: ",
                     absl::StrJoin(names, " -> ")));
  }

  static bool SameInfo(const TensorInfo& a, const TensorInfo& b) {
    auto same_shape = [](const PartialShape& x, const PartialShape& y) {
      return x.rank_known == y.rank_known && x.dims == y.dims;
    };
    if (!same_shape(a.shape, b.shape) || a.value != b.value) return false;
    if (a.element_shape.has_value() != b.element_shape.has_value()) {
      return false;
    }
    return !a.element_shape.has_value() ||
           same_shape(*a.element_shape, *b.element_shape);
  }

  absl::Status InferNode(int i, bool with_back_edges) {
    NodeState& state = nodes_[i];
    const NodeDef& node = *state.def;
    std::vector<const TensorInfo*> inputs;
    for (const InputRef& ref : state.data_inputs) {
      if (ref.back_edge &&
          (!with_back_edges || nodes_[ref.node].outputs.empty())) {
        continue;
      }
      inputs.push_back(&nodes_[ref.node].outputs[ref.output]);
    }
    bool has_rule = true;
    std::vector<TensorInfo> outputs;
    if (IsFunctionalControlFlow(node.op())) {
      ASSIGN_OR_RETURN(state.functional, LowerFunctionalControlFlow(
                                             node, inputs, state.num_outputs,
                                             scope_, BodyLowerer()));
      outputs = state.functional->outputs;
    } else {
      ASSIGN_OR_RETURN(
          outputs, InferOutputs(node, inputs, state.num_outputs, &has_rule));
    }
    if (!has_rule && !with_back_edges) {
      auto& entry = ops_without_rule_[node.op()];
      if (entry.first++ == 0) entry.second = node.name();
    }
    ASSIGN_OR_RETURN(std::vector<PartialShape> recorded,
                     OutputShapesAttr(node));
    if (recorded.size() == outputs.size()) {
      for (size_t o = 0; o < outputs.size(); ++o) {
        outputs[o].shape = FillUnknownDims(recorded[o], outputs[o].shape);
      }
    }
    if (hints_ != nullptr && !outputs.empty()) {
      if (node.op() == "Const") {
        auto it = hints_->weight_shapes.find(node.name());
        if (it != hints_->weight_shapes.end()) {
          outputs[0].shape = FillUnknownDims(PartialShape::Known(it->second),
                                             outputs[0].shape);
        }
      } else if (node.op() == "Placeholder") {
        auto it = hints_->input_shapes.find(node.name());
        if (it != hints_->input_shapes.end()) {
          outputs[0].shape = FillUnknownDims(outputs[0].shape, it->second);
        }
      }
    }
    if (IsGraphInput(node.op())) {
      // Unknown dimensions of graph inputs (a batch of -1) take the
      // request's value here, so that inference downstream (and the shape
      // arithmetic tf.gradients emits) works with a known size.
      for (TensorInfo& out : outputs) {
        for (int64_t& dim : out.shape.dims) {
          if (dim >= 0) continue;
          dim = options_.default_symbolic_dim;
          if (!with_back_edges) inputs_given_request_dim_.insert(node.name());
        }
      }
    }
    state.outputs = std::move(outputs);
    return absl::OkStatus();
  }

  // Lowers a function body with this lowering's format and options.
  FunctionScope::Lowerer BodyLowerer() const {
    return [this](const GraphDef& body, absl::string_view name,
                  FunctionScope* scope) -> absl::StatusOr<Graph> {
      ImportOptions options = options_;
      options.source_name = std::string(name);
      return Lowering(body, format_, options, /*hints=*/nullptr, scope,
                      /*function_body=*/true)
          .Run();
    };
  }

  static bool IsGraphInput(absl::string_view op) {
    return op == "Placeholder" || op == "PlaceholderWithDefault" ||
           op == "IteratorGetNext" || op == "IteratorGetNextSync";
  }

  // Assign(ref, value) with validate_shape (the default) requires value to
  // have the variable's shape: a value of unknown shape (a RestoreV2 output
  // of the saver) takes it.
  void BackfillAssignedShapes() {
    for (int i : order_) {
      const NodeState& state = nodes_[i];
      if (def(i).op() != "Assign" || state.data_inputs.size() < 2) continue;
      absl::StatusOr<bool> validate = BoolAttr(def(i), "validate_shape", true);
      if (!validate.ok() || !*validate) continue;
      const InputRef& var = state.data_inputs[0];
      const InputRef& value = state.data_inputs[1];
      TensorInfo& target = nodes_[value.node].outputs[value.output];
      target.shape = FillUnknownDims(
          target.shape, nodes_[var.node].outputs[var.output].shape);
    }
  }

  absl::Status InferShapes() {
    bool has_loops = false;
    for (const NodeState& state : nodes_) {
      for (const InputRef& ref : state.data_inputs) {
        has_loops = has_loops || ref.back_edge;
      }
    }
    for (int i : order_) RETURN_IF_ERROR(InferNode(i, false));
    BackfillAssignedShapes();
    if (!has_loops) return absl::OkStatus();
    for (int pass = 1; pass < kMaxInferencePasses; ++pass) {
      bool changed = false;
      for (int i : order_) {
        std::vector<TensorInfo> before = nodes_[i].outputs;
        RETURN_IF_ERROR(InferNode(i, true));
        if (def(i).op() == "Merge") {
          for (size_t o = 0; o < before.size(); ++o) {
            changed = changed || !SameInfo(before[o], nodes_[i].outputs[o]);
          }
        }
      }
      if (!changed) break;
    }
    return absl::OkStatus();
  }

  absl::Status ResolveTypes() {
    std::vector<std::string> assumed;
    int assumed_count = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      NodeState& state = nodes_[i];
      bool assumed_here = false;
      state.types.reserve(state.outputs.size());
      for (size_t o = 0; o < state.outputs.size(); ++o) {
        const TensorInfo& info = state.outputs[o];
        TensorType type;
        type.dtype = info.dtype == DType::kInvalid ? DType::kF32 : info.dtype;
        if (!info.shape.rank_known) {
          assumed_here = assumed_here || type.dtype != DType::kOpaque;
        }
        for (int64_t dim : info.shape.dims) {
          if (dim < 0) {
            assumed_here = true;
            type.dims.push_back(options_.default_symbolic_dim);
          } else {
            type.dims.push_back(dim);
          }
        }
        absl::Status valid = ValidateTensorType(type);
        if (!valid.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "node '", def(i).name(), "' output ", o, ": ", valid.message()));
        }
        state.types.push_back(std::move(type));
      }
      if (assumed_here) {
        if (assumed_count < kMaxNamedNodesInWarning) {
          assumed.push_back(absl::StrCat("'", def(i).name(), "'"));
        }
        ++assumed_count;
      }
    }
    if (assumed_count > 0) {
      std::string more =
          assumed_count > kMaxNamedNodesInWarning
              ? absl::StrCat(" and ", assumed_count - kMaxNamedNodesInWarning,
                             " more")
              : "";
      warnings_.push_back(absl::StrCat(
          assumed_count,
          " node(s) have output dimensions that could not be "
          "inferred (data-dependent sizes or constants without values); "
          "assumed ",
          options_.default_symbolic_dim,
          " (unknown ranks as "
          "scalars): ",
          absl::StrJoin(assumed, ", "), more));
    }
    if (!inputs_given_request_dim_.empty()) {
      std::vector<std::string> names(inputs_given_request_dim_.begin(),
                                     inputs_given_request_dim_.end());
      std::sort(names.begin(), names.end());
      if (names.size() > kMaxNamedNodesInWarning) {
        names.resize(kMaxNamedNodesInWarning);
        names.push_back("...");
      }
      warnings_.push_back(absl::StrCat(
          inputs_given_request_dim_.size(),
          " graph input(s) have unknown dimensions (e.g. the batch); they take "
          "the request's dimension ",
          options_.default_symbolic_dim, ": ", absl::StrJoin(names, ", ")));
    }
    for (const auto& [op, entry] : ops_without_rule_) {
      warnings_.push_back(
          absl::StrCat("op '", op, "' has no shape rule (", entry.first,
                       " node(s), e.g. '", entry.second,
                       "'); its outputs are sized from _output_shapes or "
                       "assumed"));
    }
    return absl::OkStatus();
  }

  // Follows Identity / Enter / Switch chains back to their source.
  int Trace(int node) const {
    for (int steps = 0; steps < 64; ++steps) {
      const std::string& op = def(node).op();
      if ((op != "Identity" && op != "Enter" && op != "Switch" &&
           op != "Snapshot") ||
          nodes_[node].data_inputs.empty()) {
        return node;
      }
      node = nodes_[node].data_inputs[0].node;
    }
    return node;
  }

  std::optional<int64_t> ScalarOf(const InputRef& ref) const {
    const TensorInfo& info = nodes_[ref.node].outputs[ref.output];
    if (!info.value.has_value() || info.value->size() != 1 ||
        (*info.value)[0] == kUnknownValue) {
      return std::nullopt;
    }
    return (*info.value)[0];
  }

  // The loop's counter Merge behind `ref`, with its start and step.
  struct Counter {
    int merge = -1;
    int64_t start = 0;
    int64_t step = 0;
  };

  std::optional<Counter> CounterOf(const InputRef& ref) const {
    const int merge = Trace(ref.node);
    if (def(merge).op() != "Merge") return std::nullopt;
    Counter counter;
    counter.merge = merge;
    bool have_start = false;
    bool have_step = false;
    for (const InputRef& in : nodes_[merge].data_inputs) {
      if (!in.back_edge) {
        if (auto start = ScalarOf(in)) {
          counter.start = *start;
          have_start = true;
        }
        continue;
      }
      const NodeState& next = nodes_[in.node];
      if (next.data_inputs.empty()) continue;
      const int add = next.data_inputs[0].node;
      const std::string& op = def(add).op();
      if ((op != "Add" && op != "AddV2") ||
          nodes_[add].data_inputs.size() != 2) {
        continue;
      }
      for (int side = 0; side < 2; ++side) {
        const InputRef& other = nodes_[add].data_inputs[1 - side];
        if (Trace(nodes_[add].data_inputs[side].node) == merge) {
          if (auto step = ScalarOf(other)) {
            counter.step = *step;
            have_step = true;
          }
        }
      }
    }
    if (!have_start || !have_step || counter.step <= 0) return std::nullopt;
    return counter;
  }

  // Trip count implied by a loop predicate, with the counter Merge found.
  std::optional<std::pair<int64_t, int>> TripCount(int predicate,
                                                   int depth) const {
    if (depth > 8) return std::nullopt;
    const NodeState& state = nodes_[predicate];
    const std::string& op = def(predicate).op();
    if (op == "LogicalAnd" && state.data_inputs.size() == 2) {
      std::optional<std::pair<int64_t, int>> best;
      for (const InputRef& in : state.data_inputs) {
        auto trip = TripCount(Trace(in.node), depth + 1);
        if (trip.has_value() && (!best || trip->first < best->first)) {
          best = trip;
        }
      }
      return best;
    }
    if (state.data_inputs.size() != 2) return std::nullopt;
    const InputRef* counter_ref = nullptr;
    const InputRef* bound_ref = nullptr;
    bool inclusive = false;
    if (op == "Less" || op == "LessEqual") {
      counter_ref = &state.data_inputs[0];
      bound_ref = &state.data_inputs[1];
      inclusive = op == "LessEqual";
    } else if (op == "Greater" || op == "GreaterEqual") {
      counter_ref = &state.data_inputs[1];
      bound_ref = &state.data_inputs[0];
      inclusive = op == "GreaterEqual";
    } else {
      return std::nullopt;
    }
    std::optional<Counter> counter = CounterOf(*counter_ref);
    std::optional<int64_t> bound = ScalarOf(*bound_ref);
    if (!counter.has_value() || !bound.has_value()) return std::nullopt;
    const __int128 span =
        static_cast<__int128>(*bound) - counter->start + (inclusive ? 1 : 0);
    const __int128 trips =
        span <= 0 ? 0 : (span + counter->step - 1) / counter->step;
    return std::make_pair(
        static_cast<int64_t>(std::min<__int128>(trips, kMaxTensorBytes)),
        counter->merge);
  }

  // Groups the cut back edges into frames and finds their trip counts.
  void FindLoops() {
    struct Frame {
      std::vector<std::pair<int, int>> merges;  // (merge, next_iteration)
      int loop_cond = -1;
    };
    std::map<std::string, Frame> frames;
    std::vector<std::string> frame_order;
    for (int i : order_) {
      if (def(i).op() != "Merge") continue;
      int next = -1;
      std::string frame;
      for (const InputRef& ref : nodes_[i].data_inputs) {
        if (ref.back_edge) {
          next = ref.node;
        } else if (def(ref.node).op() == "Enter") {
          auto name = StringAttr(def(ref.node), "frame_name", "");
          if (name.ok()) frame = *name;
        }
      }
      if (next < 0) continue;
      if (frame.empty()) frame = def(i).name();
      if (!frames.count(frame)) frame_order.push_back(frame);
      frames[frame].merges.emplace_back(i, next);
      merge_frame_[i] = frame;
    }
    // Each loop's Switch nodes read (Merge, LoopCond).
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& state = nodes_[i];
      if (def(i).op() != "Switch" || state.data_inputs.size() != 2) continue;
      auto frame = merge_frame_.find(state.data_inputs[0].node);
      const int cond = state.data_inputs[1].node;
      if (frame != merge_frame_.end() && def(cond).op() == "LoopCond") {
        frames[frame->second].loop_cond = cond;
      }
    }
    for (const std::string& name : frame_order) {
      const Frame& frame = frames[name];
      LoopInfo loop;
      loop.frame_name = name;
      loop.merge = frame.merges[0].first;
      loop.next_iteration = frame.merges[0].second;
      if (frame.loop_cond >= 0 &&
          !nodes_[frame.loop_cond].data_inputs.empty()) {
        auto trip =
            TripCount(Trace(nodes_[frame.loop_cond].data_inputs[0].node), 0);
        if (trip.has_value()) {
          loop.trip_count = trip->first;
          for (const auto& [merge, next] : frame.merges) {
            if (merge == trip->second) {
              loop.merge = merge;
              loop.next_iteration = next;
            }
          }
        }
      }
      if (loop.trip_count < 0) {
        warnings_.push_back(absl::StrCat(
            "loop frame '", name,
            "': trip count unknown (no constant bound "
            "in its condition); its body is costed as one iteration"));
      }
      for (const auto& [merge, next] : frame.merges) {
        frame_trip_count_[merge] = loop.trip_count;
      }
      loops_.push_back(std::move(loop));
    }
  }

  static bool IsStateOrFrameOp(absl::string_view op) {
    return IsGraphInput(op) || op == "VariableV2" || op == "Variable" ||
           op == "VarHandleOp" || op == "_Arg" || op == "Enter" ||
           op == "RefEnter" || op == "Merge" || op == "Switch" ||
           op == "NextIteration" || op == "Exit";
  }

  // A TF1 training graph carries its variables' initializers (random or
  // constant values that the init op assigns once) beside the step. A node
  // that reads no graph input, variable or loop frame (through its data
  // inputs, transitively) and whose data all ends in the value input of an
  // Assign / AssignVariableOp only computes an initial value: one-time work,
  // not part of a step. Not applied inside function bodies, which run per
  // call.
  std::vector<bool> InitializerOnlyNodes() const {
    const int n = static_cast<int>(nodes_.size());
    std::vector<bool> result(n, false);
    if (function_body_) return result;
    std::vector<bool> constant(n, false);
    std::vector<std::vector<std::pair<int, int>>> consumers(n);
    for (int i : order_) {
      bool is_constant = !IsStateOrFrameOp(def(i).op());
      const std::vector<InputRef>& inputs = nodes_[i].data_inputs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        is_constant =
            is_constant && !inputs[k].back_edge && constant[inputs[k].node];
        consumers[inputs[k].node].emplace_back(i, static_cast<int>(k));
      }
      constant[i] = is_constant;
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const int i = *it;
      if (!constant[i] || consumers[i].empty()) continue;
      bool only_initializes = true;
      for (const auto& [consumer, input] : consumers[i]) {
        const std::string& op = def(consumer).op();
        const bool assigned_value =
            input == 1 && (op == "Assign" || op == "AssignVariableOp");
        only_initializes =
            only_initializes && (assigned_value || result[consumer]);
      }
      result[i] = only_initializes;
    }
    return result;
  }

  absl::StatusOr<Graph> Build() {
    FindLoops();
    const std::vector<bool> initializer_only = InitializerOnlyNodes();
    int64_t initializer_nodes = 0;
    double initializer_flops = 0;
    GraphBuilder builder(options_.source_name, std::string(format_));
    int64_t parameter_number = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& state = nodes_[i];
      const NodeDef& node = *state.def;
      std::vector<const TensorType*> input_types;
      std::vector<const TensorInfo*> input_infos;
      bool uses_strings = false;
      for (const InputRef& ref : state.data_inputs) {
        if (ref.back_edge) continue;
        input_types.push_back(&nodes_[ref.node].types[ref.output]);
        input_infos.push_back(&nodes_[ref.node].outputs[ref.output]);
        uses_strings =
            uses_strings || input_types.back()->dtype == DType::kString;
      }
      for (const TensorType& type : state.types) {
        uses_strings = uses_strings || type.dtype == DType::kString;
      }
      // Inference already checked every known shape against the op, so a
      // failure here comes from assumed dimensions: cost such a node by its
      // bytes only instead of rejecting the graph.
      absl::StatusOr<LoweredOp> lowered =
          state.functional.has_value()
              ? LoweredOp{state.functional->kind}
              : LowerOp(node, input_types, input_infos, state.types);
      absl::StatusOr<OpCost> cost =
          state.functional.has_value() ? state.functional->cost
          : lowered.ok()
              ? CostOfLoweredOp(node, *lowered, input_types, state.types)
              : absl::StatusOr<OpCost>(lowered.status());
      if (!cost.ok()) {
        warnings_.push_back(
            absl::StrCat("node '", node.name(),
                         "' costed by bytes only: ", cost.status().message()));
        LoweredOp fallback;
        fallback.kind = TfOpKind(node.op());
        lowered = std::move(fallback);
        OpCost bytes_only;
        for (const TensorType* type : input_types) {
          bytes_only.bytes_read += type->size_bytes();
        }
        for (const TensorType& type : state.types) {
          bytes_only.bytes_written += type.size_bytes();
        }
        bytes_only.unknown = true;
        cost = bytes_only;
      }
      Node out;
      out.name = node.name();
      out.source.name = node.name();
      out.op = node.op();
      out.kind = lowered->kind;
      out.outputs = state.types;
      out.attributes = std::move(lowered->attributes);
      if (out.kind == OpKind::kParameter) {
        out.attributes.parameter_number = parameter_number++;
      }
      if (auto it = frame_trip_count_.find(static_cast<int>(i));
          it != frame_trip_count_.end()) {
        out.attributes.trip_count = it->second;
      }
      if (state.functional.has_value()) {
        AttachBodies(*state.functional, &out, &builder);
      }
      if (initializer_only[i] && cost->flops > 0) {
        ++initializer_nodes;
        initializer_flops += cost->flops;
        cost->flops = 0;
      }
      SetNodeCost(*cost, &out);
      if (IsHostOnlyOp(node.op()) || uses_strings) {
        out.device_constraint = DeviceConstraint::kCpuOnly;
      }
      builder.AddNode(std::move(out));
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& state = nodes_[i];
      int32_t dst_input = 0;
      for (const InputRef& ref : state.data_inputs) {
        if (ref.back_edge) continue;
        builder.AddEdge(ref.node, ref.output, static_cast<int>(i), dst_input++);
      }
      for (int src : state.control_inputs) {
        builder.AddControlEdge(src, static_cast<int>(i));
      }
    }
    RETURN_IF_ERROR(AssignColocation(builder));
    if (initializer_nodes > 0) {
      warnings_.push_back(absl::StrCat(
          initializer_nodes,
          " node(s) only compute variables' initial values (constant or "
          "random inputs, assigned once by the init op): costed at zero "
          "FLOPs as one-time work outside the step (",
          static_cast<int64_t>(initializer_flops), " FLOPs left out)"));
    }
    for (LoopInfo& loop : loops_) builder.AddLoop(std::move(loop));
    for (std::string& warning : warnings_) {
      builder.AddWarning(std::move(warning));
    }
    return std::move(builder).Build(options_.limits);
  }

  // Attaches the bodies of While / If / Case node `out` (with its trip
  // count) and reports their warnings.
  void AttachBodies(const FunctionalLowering& functional, Node* out,
                    GraphBuilder* builder) {
    if (functional.kind == OpKind::kWhile) {
      out->attributes.trip_count = functional.trip_count;
    }
    for (const std::shared_ptr<const Graph>& body : functional.bodies) {
      out->subgraphs.push_back(builder->AddSubgraph(body));
    }
    warnings_.insert(warnings_.end(), functional.warnings.begin(),
                     functional.warnings.end());
  }

  absl::Status AssignColocation(GraphBuilder& builder) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      ASSIGN_OR_RETURN(std::vector<std::string> classes,
                       StringListAttr(def(i), "_class"));
      for (const std::string& entry : classes) {
        absl::string_view target = entry;
        if (!absl::ConsumePrefix(&target, "loc:@") || target.empty()) continue;
        const int32_t group = builder.ColocationGroup(target);
        Node& node = builder.mutable_node(static_cast<int>(i));
        if (node.colocation_group < 0) node.colocation_group = group;
        auto it = index_.find(target);
        if (it != index_.end()) {
          Node& anchor = builder.mutable_node(it->second);
          if (anchor.colocation_group < 0) anchor.colocation_group = group;
        }
        break;
      }
    }
    return absl::OkStatus();
  }

  const GraphDef& graph_def_;
  absl::string_view format_;
  const ImportOptions& options_;
  const TfjsHints* hints_;
  FunctionScope* scope_;
  std::vector<NodeState> nodes_;
  absl::flat_hash_map<absl::string_view, int> index_;
  std::vector<int> order_;
  std::vector<std::string> warnings_;
  // Op -> (nodes without a shape rule, first such node).
  std::map<std::string, std::pair<int, std::string>> ops_without_rule_;
  absl::flat_hash_map<int, std::string> merge_frame_;
  // Graph inputs whose unknown dimensions took the request's value.
  absl::flat_hash_set<std::string> inputs_given_request_dim_;
  absl::flat_hash_map<int, int64_t> frame_trip_count_;
  std::vector<LoopInfo> loops_;
  const bool function_body_;
};

}  // namespace

absl::StatusOr<Graph> LowerGraphDef(const GraphDef& graph_def,
                                    absl::string_view format,
                                    const ImportOptions& options,
                                    const TfjsHints* hints) {
  ASSIGN_OR_RETURN(std::optional<GraphDef> inlined,
                   InlineFunctionCalls(graph_def, options.limits.max_nodes));
  FunctionScope scope(graph_def.library(), options.limits.max_nodes);
  return Lowering(inlined.has_value() ? *inlined : graph_def, format, options,
                  hints, &scope)
      .Run();
}

}  // namespace gopt::graph::tf
