#include "graph/hlo/hlo_lowering.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/hlo/while_trip_count.h"
#include "graph/op_catalog.h"
#include "graph/shape_inference.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

// The graph value an HLO instruction produces: a node's single output, or
// all of a multi-output (tuple) node's outputs.
struct Value {
  int node = -1;
  int32_t output = 0;
  const HloShape* shape = nullptr;
};

// The instructions lowered into one graph, by node name (for locations).
using GraphRecord = std::vector<std::pair<HloInstructionRef, std::string>>;

// A graph under construction.
struct Target {
  GraphBuilder* builder = nullptr;
  GraphRecord* record = nullptr;
  // Subgraph index of each attached graph, so that a computation used twice
  // is attached once.
  absl::flat_hash_map<const Graph*, int32_t> subgraph_index;
};

std::string DimsString(DType dtype, const std::vector<int64_t>& dims) {
  return MakeTensorType(dtype, dims).ToString();
}

absl::Status CheckDims(const HloInstruction& instruction,
                       const std::vector<int64_t>& expected) {
  if (instruction.shape.is_tuple || instruction.shape.dims != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("declared shape ", instruction.shape.ToString(),
                     " but the operands give ",
                     DimsString(instruction.shape.dtype, expected)));
  }
  return absl::OkStatus();
}

// Checks the declared shape of `instruction` against its operands for the
// ops whose output shape follows from them.
absl::Status CheckDeclaredShape(const HloInstruction& instruction, OpKind kind,
                                const std::vector<const HloShape*>& operands) {
  const OpAttributes& a = instruction.attributes;
  auto array = [&](size_t i) -> const HloShape* {
    return i < operands.size() && !operands[i]->is_tuple ? operands[i]
                                                         : nullptr;
  };
  switch (kind) {
    case OpKind::kDot: {
      if (array(0) == nullptr || array(1) == nullptr) {
        return absl::InvalidArgumentError("dot needs two array operands");
      }
      ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                       DotOutputDims(array(0)->dims, array(1)->dims, a.dot()));
      return CheckDims(instruction, dims);
    }
    case OpKind::kConvolution: {
      if (array(0) == nullptr || array(1) == nullptr) {
        return absl::InvalidArgumentError(
            "convolution needs two array operands");
      }
      if (!a.has_convolution_dimensions) return absl::OkStatus();
      std::vector<WindowDimension> window = a.window();
      if (window.empty()) window.resize(a.convolution().input_spatial.size());
      ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                       ConvolutionOutputDims(
                           array(0)->dims, array(1)->dims, a.convolution(),
                           window, a.feature_group_count, a.batch_group_count));
      return CheckDims(instruction, dims);
    }
    case OpKind::kElementwiseUnary:
    case OpKind::kTranscendental:
    case OpKind::kElementwiseBinary:
    case OpKind::kCompare:
    case OpKind::kSelect:
    case OpKind::kClamp:
    case OpKind::kConvert:
      if (instruction.shape.is_tuple) return absl::OkStatus();
      for (size_t i = 0; i < operands.size(); ++i) {
        const HloShape* operand = array(i);
        // Scalars may pair with arrays (select's predicate, clamp bounds).
        if (operand == nullptr || operand->dims.empty()) continue;
        if (operand->dims != instruction.shape.dims) {
          return absl::InvalidArgumentError(
              absl::StrCat("declared shape ", instruction.shape.ToString(),
                           " but operand ", i, " is ", operand->ToString()));
        }
      }
      return absl::OkStatus();
    case OpKind::kReshape: {
      if (instruction.opcode != "reshape" || array(0) == nullptr ||
          instruction.shape.is_tuple) {
        return absl::OkStatus();
      }
      if (array(0)->ToTensorType().num_elements() !=
          instruction.shape.ToTensorType().num_elements()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "reshape of ", array(0)->ToString(), " to ",
            instruction.shape.ToString(), " changes the element count"));
      }
      return absl::OkStatus();
    }
    case OpKind::kTranspose: {
      if (array(0) == nullptr) return absl::OkStatus();
      ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                       TransposeOutputDims(array(0)->dims, a.dimensions));
      return CheckDims(instruction, dims);
    }
    case OpKind::kBroadcast: {
      const HloShape* operand = array(0);
      if (operand == nullptr || instruction.shape.is_tuple) {
        return absl::OkStatus();
      }
      const std::vector<int64_t>& out = instruction.shape.dims;
      bool ok = a.dimensions.size() == operand->dims.size();
      for (size_t i = 0; ok && i < a.dimensions.size(); ++i) {
        const int64_t d = a.dimensions[i];
        ok = d >= 0 && d < static_cast<int64_t>(out.size()) &&
             out[d] == operand->dims[i];
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "broadcast of ", operand->ToString(), " to ",
            instruction.shape.ToString(), " does not fit its dimensions"));
      }
      return absl::OkStatus();
    }
    case OpKind::kSlice: {
      const HloShape* operand = array(0);
      if (operand == nullptr || a.slice_starts().empty())
        return absl::OkStatus();
      const size_t rank = operand->dims.size();
      if (a.slice_starts().size() != rank || a.slice_limits().size() != rank ||
          a.slice_strides().size() != rank) {
        return absl::InvalidArgumentError(
            absl::StrCat("slice has ", a.slice_starts().size(),
                         " dimensions for operand ", operand->ToString()));
      }
      std::vector<int64_t> dims(rank);
      for (size_t i = 0; i < rank; ++i) {
        const int64_t start = a.slice_starts()[i];
        const int64_t limit = a.slice_limits()[i];
        const int64_t stride = a.slice_strides()[i];
        if (start < 0 || limit < start || limit > operand->dims[i] ||
            stride < 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "slice [", start, ":", limit, ":", stride,
              "] does not fit dimension ", i, " of ", operand->ToString()));
        }
        dims[i] = (limit - start + stride - 1) / stride;
      }
      return CheckDims(instruction, dims);
    }
    default:
      return absl::OkStatus();
  }
}

class Lowering {
 public:
  Lowering(const HloModule& module, const HloLoweringOptions& options)
      : module_(module),
        options_(options),
        standalone_(module.computations.size()),
        active_(module.computations.size(), 0) {}

  absl::StatusOr<Graph> Run(
      absl::flat_hash_map<HloInstructionRef, HloNodeLocation>* locations) {
    const int32_t entry = module_.entry;
    GraphBuilder builder(
        options_.graph_name.empty() ? module_.name : options_.graph_name,
        options_.format);
    if (entry >= 0 &&
        entry < static_cast<int32_t>(module_.computations.size())) {
      // Calls are inlined, so this is a lower bound; it avoids most of the
      // re-allocation of large nodes on big modules.
      const int64_t instructions =
          static_cast<int64_t>(module_.computations[entry].instructions.size());
      builder.Reserve(instructions, 2 * instructions);
    }
    // Names are recorded only when locations are asked for: a record is a
    // copy of every node name.
    record_locations_ = locations != nullptr;
    warnings_ = module_.warnings;
    GraphRecord record;
    Target target;
    target.builder = &builder;
    target.record = record_locations_ ? &record : nullptr;
    active_[entry] = 1;
    Value root;
    RETURN_IF_ERROR(LowerInto(&target, entry, nullptr, "", 0, &root));
    active_[entry] = 0;
    if (root.node >= 0)
      builder.mutable_node(root.node).attributes.is_root = true;
    if (options_.spmd.num_partitions > 1) {
      builder.SetSpmd(options_.spmd);
      const int32_t group = builder.ColocationGroup("spmd-program");
      for (int id = 0; id < builder.num_nodes(); ++id) {
        builder.mutable_node(id).colocation_group = group;
      }
    }
    if (unknown_trip_counts_ > 0) {
      warnings_.push_back(absl::StrCat(
          unknown_trip_counts_, " of ", while_loops_,
          " while loops have no known trip count (each costed as 1 "
          "iteration)"));
    }
    for (std::string& warning : warnings_) {
      builder.AddWarning(std::move(warning));
    }
    ASSIGN_OR_RETURN(Graph graph, std::move(builder).Build(options_.limits));
    if (locations != nullptr) FillLocations(graph, record, locations);
    return graph;
  }

 private:
  absl::Status CountNode() {
    if (++total_nodes_ > options_.limits.max_nodes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "module '", module_.name, "' lowers to more than ",
          options_.limits.max_nodes, " nodes (calls are inlined)"));
    }
    return absl::OkStatus();
  }

  // The instructions of `computation` in an order where operands come first.
  absl::StatusOr<std::vector<int32_t>> TopologicalOrder(
      const HloComputation& computation) {
    const int32_t n = static_cast<int32_t>(computation.instructions.size());
    std::vector<int32_t> order;
    order.reserve(n);
    bool sorted = true;
    for (int32_t i = 0; i < n && sorted; ++i) {
      for (int32_t operand : computation.instructions[i].operands) {
        if (operand >= i) sorted = false;
      }
    }
    if (sorted) {
      for (int32_t i = 0; i < n; ++i) order.push_back(i);
      return order;
    }
    // Iterative depth-first post-order; state 1 = on the stack.
    std::vector<char> state(n, 0);
    std::vector<std::pair<int32_t, size_t>> stack;
    for (int32_t start = 0; start < n; ++start) {
      if (state[start] != 0) continue;
      stack.push_back({start, 0});
      state[start] = 1;
      while (!stack.empty()) {
        auto& [current, next] = stack.back();
        const std::vector<int32_t>& operands =
            computation.instructions[current].operands;
        if (next < operands.size()) {
          const int32_t operand = operands[next++];
          if (state[operand] == 1) {
            return absl::InvalidArgumentError(
                absl::StrCat("computation '", computation.name,
                             "' has a cycle through instruction '",
                             computation.instructions[operand].name, "'"));
          }
          if (state[operand] == 0) {
            state[operand] = 1;
            stack.push_back({operand, 0});
          }
        } else {
          state[current] = 2;
          order.push_back(current);
          stack.pop_back();
        }
      }
    }
    return order;
  }

  absl::StatusOr<std::shared_ptr<const Graph>> Standalone(int32_t computation,
                                                          int depth) {
    if (standalone_[computation] != nullptr) return standalone_[computation];
    const HloComputation& c = module_.computations[computation];
    if (active_[computation]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation '", c.name, "' calls itself (a computation cycle)"));
    }
    if (depth > kMaxHloNestingDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("computations nest deeper than ", kMaxHloNestingDepth,
                       " levels at '", c.name, "'"));
    }
    active_[computation] = 1;
    GraphBuilder builder(c.name, options_.format);
    std::unique_ptr<GraphRecord> record;
    if (record_locations_) record = std::make_unique<GraphRecord>();
    Target target;
    target.builder = &builder;
    target.record = record.get();
    Value root;
    RETURN_IF_ERROR(LowerInto(&target, computation, nullptr, "", depth, &root));
    if (root.node >= 0)
      builder.mutable_node(root.node).attributes.is_root = true;
    if (options_.spmd.num_partitions > 1) {
      builder.SetSpmd(options_.spmd);
      const int32_t group = builder.ColocationGroup("spmd-program");
      for (int id = 0; id < builder.num_nodes(); ++id) {
        builder.mutable_node(id).colocation_group = group;
      }
    }
    absl::StatusOr<Graph> graph = std::move(builder).Build(options_.limits);
    if (!graph.ok()) {
      return Annotate(graph.status(),
                      absl::StrCat("computation '", c.name, "'"));
    }
    active_[computation] = 0;
    auto shared = std::make_shared<const Graph>(*std::move(graph));
    if (record != nullptr) records_.emplace(shared.get(), std::move(record));
    standalone_[computation] = shared;
    return shared;
  }

  int32_t Attach(Target* target, const std::shared_ptr<const Graph>& graph) {
    auto it = target->subgraph_index.find(graph.get());
    if (it != target->subgraph_index.end()) return it->second;
    const int32_t index = target->builder->AddSubgraph(graph);
    target->subgraph_index.emplace(graph.get(), index);
    return index;
  }

  // Lowers computation `index` into `target`. `args` are the values of its
  // parameters when it is inlined (a call), or null when its parameters are
  // nodes. `prefix` is prepended to node names.
  absl::Status LowerInto(Target* target, int32_t index,
                         const std::vector<Value>* args,
                         const std::string& prefix, int depth, Value* result) {
    const HloComputation& computation = module_.computations[index];
    ASSIGN_OR_RETURN(std::vector<int32_t> order, TopologicalOrder(computation));
    std::vector<Value> values(computation.instructions.size());
    std::vector<Value> operands;
    for (int32_t i : order) {
      const HloInstruction& instruction = computation.instructions[i];
      operands.clear();
      for (int32_t operand : instruction.operands) {
        operands.push_back(values[operand]);
      }
      absl::Status status = LowerInstruction(target, index, i, args, prefix,
                                             depth, operands, &values[i]);
      if (!status.ok()) {
        return Annotate(status, absl::StrCat("instruction '", prefix,
                                             instruction.name, "'"));
      }
    }
    *result = values[computation.root];
    return absl::OkStatus();
  }

  absl::Status LowerInstruction(Target* target, int32_t computation_index,
                                int32_t index, const std::vector<Value>* args,
                                const std::string& prefix, int depth,
                                const std::vector<Value>& operands,
                                Value* value) {
    const HloInstruction& instruction =
        module_.computations[computation_index].instructions[index];
    const std::string& opcode = instruction.opcode;
    if (opcode == "parameter" && args != nullptr) {
      const int64_t number = instruction.attributes.parameter_number;
      if (number < 0 || number >= static_cast<int64_t>(args->size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter number ", number, " but the call passes ",
                         args->size(), " operand(s)"));
      }
      *value = (*args)[number];
      return absl::OkStatus();
    }
    if (opcode == "call") {
      if (instruction.called_computations.size() != 1) {
        return absl::InvalidArgumentError(
            "call needs exactly one called computation");
      }
      const int32_t callee = instruction.called_computations[0];
      if (active_[callee]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "calls computation '", module_.computations[callee].name,
            "', which is already being called (a cycle)"));
      }
      if (depth + 1 > kMaxHloNestingDepth) {
        return absl::InvalidArgumentError(absl::StrCat(
            "calls nest deeper than ", kMaxHloNestingDepth, " levels"));
      }
      active_[callee] = 1;
      RETURN_IF_ERROR(LowerInto(target, callee, &operands,
                                absl::StrCat(prefix, instruction.name, "/"),
                                depth + 1, value));
      active_[callee] = 0;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(CountNode());

    Node node;
    node.name = absl::StrCat(prefix, instruction.name);
    if (!instruction.synthetic) {
      node.source.scope = module_.computations[computation_index].name;
      node.source.name = instruction.name;
    }
    node.op = opcode;
    node.kind = HloOpcodeToOpKind(opcode);
    node.outputs = instruction.shape.ToNodeOutputs();
    node.attributes = instruction.attributes;
    node.attributes.is_root = false;
    SetMetadata(instruction, &node);
    node.layout_configurable =
        options_.layout_configurable.has_value()
            ? options_.layout_configurable->contains(
                  HloInstructionRef{computation_index, index})
            : IsLayoutConfigurableOpcode(opcode);

    std::vector<const HloShape*> operand_shapes;
    operand_shapes.reserve(operands.size());
    for (const Value& operand : operands)
      operand_shapes.push_back(operand.shape);

    int32_t gte_output = 0;
    if (node.kind == OpKind::kGetTupleElement) {
      ASSIGN_OR_RETURN(gte_output, TupleElementIndex(instruction, operands));
    }
    RETURN_IF_ERROR(CheckDeclaredShape(instruction, node.kind, operand_shapes));
    ASSIGN_OR_RETURN(OpCost cost, OperandsCost(*target, node, operands));
    RETURN_IF_ERROR(AttachCalledComputations(
        target, module_.computations[computation_index], instruction, depth,
        &node, &cost));
    SetNodeCost(cost, &node);

    if (target->record != nullptr) {
      target->record->emplace_back(HloInstructionRef{computation_index, index},
                                   node.name);
    }
    const OpKind kind = node.kind;
    const int id = target->builder->AddNode(std::move(node));
    for (size_t k = 0; k < operands.size(); ++k) {
      const int32_t output =
          kind == OpKind::kGetTupleElement ? gte_output : operands[k].output;
      target->builder->AddEdge(operands[k].node, output, id,
                               static_cast<int32_t>(k));
    }
    *value = Value{id, instruction.shape.is_tuple ? Edge::kAllOutputs : 0,
                   &instruction.shape};
    return absl::OkStatus();
  }

  // Copies the instruction's metadata (op name; source file, function and
  // line, from the stack-frame tables when it names a frame) and sharding
  // onto `node`; allocates nothing when the instruction has neither.
  void SetMetadata(const HloInstruction& instruction, Node* node) const {
    const HloMetadata& metadata = instruction.metadata.get();
    const std::string& sharding = instruction.sharding.get();
    if (metadata.op_name.empty() && metadata.source_file.empty() &&
        metadata.stack_frame_id == 0 && sharding.empty()) {
      return;
    }
    NodeMetadata* node_metadata = node->metadata.mutable_get();
    node_metadata->op_name = metadata.op_name;
    node_metadata->file = metadata.source_file;
    node_metadata->line = metadata.source_line;
    node_metadata->sharding = sharding;
    if (metadata.stack_frame_id != 0) {
      module_.stack_frames.Resolve(
          metadata.stack_frame_id, &node_metadata->file,
          &node_metadata->function, &node_metadata->line);
    }
  }

  // The tuple element a get-tuple-element reads, checked against its operand
  // and its declared shape.
  static absl::StatusOr<int32_t> TupleElementIndex(
      const HloInstruction& instruction, const std::vector<Value>& operands) {
    const HloShape* tuple = operands.empty() ? nullptr : operands[0].shape;
    const int64_t i = instruction.attributes.tuple_index;
    if (tuple == nullptr || !tuple->is_tuple ||
        operands[0].output != Edge::kAllOutputs) {
      return absl::InvalidArgumentError(
          "get-tuple-element needs one tuple operand");
    }
    if (i < 0 || i >= static_cast<int64_t>(tuple->tuple_shapes.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index ", i, " is outside the tuple ", tuple->ToString()));
    }
    const HloShape& element = tuple->tuple_shapes[i];
    if (element.is_tuple != instruction.shape.is_tuple ||
        element.dtype != instruction.shape.dtype ||
        element.dims != instruction.shape.dims) {
      return absl::InvalidArgumentError(
          absl::StrCat("declared shape ", instruction.shape.ToString(),
                       " but tuple element ", i, " is ", element.ToString()));
    }
    return static_cast<int32_t>(i);
  }

  // The op cost of `node` over its operands' types.
  static absl::StatusOr<OpCost> OperandsCost(
      const Target& target, const Node& node,
      const std::vector<Value>& operands) {
    // An array operand's type is its producer's output type, already built;
    // only whole-tuple operands need one made.
    std::vector<TensorType> tuple_types;
    for (const Value& operand : operands) {
      if (operand.output == Edge::kAllOutputs) {
        tuple_types.push_back(operand.shape->ToTensorType());
      }
    }
    OpCostQuery query;
    query.kind = node.kind;
    query.attributes = &node.attributes;
    query.operands.reserve(operands.size());
    size_t next_tuple = 0;
    for (const Value& operand : operands) {
      query.operands.push_back(
          operand.output == Edge::kAllOutputs
              ? &tuple_types[next_tuple++]
              : &target.builder->node(operand.node).outputs[operand.output]);
    }
    for (const TensorType& type : node.outputs) query.outputs.push_back(&type);
    return ComputeOpCost(query);
  }

  // While, conditional and fusion: lowers the called computations into
  // subgraphs of `node` and adds their cost to `cost`. Custom calls: warns
  // once per target that they are costed by bytes only.
  absl::Status AttachCalledComputations(Target* target,
                                        const HloComputation& parent,
                                        const HloInstruction& instruction,
                                        int depth, Node* node, OpCost* cost) {
    if (instruction.opcode == "async-start") {
      return AttachAsync(target, instruction, depth, node, cost);
    }
    switch (node->kind) {
      case OpKind::kWhile:
        return AttachWhile(target, parent, instruction, depth, node, cost);
      case OpKind::kConditional:
        return AttachConditional(target, instruction, depth, node, cost);
      case OpKind::kFusion:
        return AttachFusion(target, instruction, depth, node, cost);
      case OpKind::kCustomCall:
        NoteCustomCall(instruction, *node);
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  // An async-start is the op it wraps: its node takes the wrapped
  // computation's kind (an all-gather, a fusion, ...) when that computation
  // is one op, and its cost; async-update and async-done cost nothing.
  absl::Status AttachAsync(Target* target, const HloInstruction& instruction,
                           int depth, Node* node, OpCost* cost) {
    const std::vector<int32_t>& called = instruction.called_computations;
    if (called.size() != 1) {
      return absl::InvalidArgumentError(
          "async-start needs exactly one called computation");
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const Graph> wrapped,
                     Standalone(called[0], depth + 1));
    node->subgraphs = {Attach(target, wrapped)};
    const Graph* bodies[] = {wrapped.get()};
    *cost = SubgraphCost(bodies, 1);
    for (const Node& inner : wrapped->nodes()) {
      if (inner.attributes.is_root && inner.kind != OpKind::kTuple) {
        node->kind = inner.kind;
      }
    }
    return absl::OkStatus();
  }

  absl::Status AttachWhile(Target* target, const HloComputation& parent,
                           const HloInstruction& instruction, int depth,
                           Node* node, OpCost* cost) {
    const std::vector<int32_t>& called = instruction.called_computations;
    if (called.size() != 2) {
      return absl::InvalidArgumentError(
          "while needs a body and a condition computation");
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body,
                     Standalone(called[0], depth + 1));
    ASSIGN_OR_RETURN(std::shared_ptr<const Graph> condition,
                     Standalone(called[1], depth + 1));
    node->subgraphs = {Attach(target, body), Attach(target, condition)};
    std::optional<int64_t> trip =
        KnownTripCount(instruction.backend_config.get());
    if (!trip.has_value()) {
      trip = DeriveWhileTripCount(module_, parent, instruction);
    }
    node->attributes.trip_count = trip.value_or(-1);
    ++while_loops_;
    if (!trip.has_value()) {
      ++unknown_trip_counts_;
      warnings_.push_back(
          absl::StrCat("while '", node->name,
                       "' has no known trip count; costed as 1 iteration"));
    }
    const Graph* bodies[] = {body.get(), condition.get()};
    *cost = SubgraphCost(bodies, trip.value_or(1));
    return absl::OkStatus();
  }

  absl::Status AttachConditional(Target* target,
                                 const HloInstruction& instruction, int depth,
                                 Node* node, OpCost* cost) {
    const std::vector<int32_t>& called = instruction.called_computations;
    if (called.empty()) {
      return absl::InvalidArgumentError("conditional has no branches");
    }
    std::vector<const Graph*> branches;
    for (int32_t branch : called) {
      ASSIGN_OR_RETURN(std::shared_ptr<const Graph> graph,
                       Standalone(branch, depth + 1));
      node->subgraphs.push_back(Attach(target, graph));
      branches.push_back(graph.get());
    }
    *cost = MaxBranchCost(branches);
    return absl::OkStatus();
  }

  absl::Status AttachFusion(Target* target, const HloInstruction& instruction,
                            int depth, Node* node, OpCost* cost) {
    const std::vector<int32_t>& called = instruction.called_computations;
    if (called.size() != 1) {
      return absl::InvalidArgumentError(
          "fusion needs exactly one fused computation");
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const Graph> fused,
                     Standalone(called[0], depth + 1));
    node->subgraphs = {Attach(target, fused)};
    const Graph* bodies[] = {fused.get()};
    const OpCost body = SubgraphCost(bodies, 1);
    cost->flops = body.flops;
    cost->unknown = body.unknown;
    return absl::OkStatus();
  }

  void NoteCustomCall(const HloInstruction& instruction, const Node& node) {
    const std::string& target_name =
        instruction.attributes.custom_call_target();
    if (custom_call_targets_.insert(target_name).second) {
      warnings_.push_back(absl::StrCat("custom-call target '", target_name,
                                       "' is costed by bytes only (first at '",
                                       node.name, "')"));
    }
  }

  void FillLocations(
      const Graph& top, const GraphRecord& top_record,
      absl::flat_hash_map<HloInstructionRef, HloNodeLocation>* locations) {
    std::deque<std::pair<const Graph*, std::vector<int32_t>>> queue;
    absl::flat_hash_set<const Graph*> seen;
    queue.push_back({&top, {}});
    seen.insert(&top);
    while (!queue.empty()) {
      auto [graph, path] = std::move(queue.front());
      queue.pop_front();
      const GraphRecord* record = &top_record;
      if (graph != &top) {
        auto it = records_.find(graph);
        record = it == records_.end() ? nullptr : it->second.get();
      }
      if (record != nullptr) {
        for (const auto& [ref, name] : *record) {
          if (locations->contains(ref)) continue;
          std::optional<NodeId> node = graph->FindNode(name);
          if (node.has_value())
            (*locations)[ref] = HloNodeLocation{path, *node};
        }
      }
      for (size_t i = 0; i < graph->subgraphs().size(); ++i) {
        const Graph* child = graph->subgraphs()[i].get();
        if (!seen.insert(child).second) continue;
        std::vector<int32_t> child_path = path;
        child_path.push_back(static_cast<int32_t>(i));
        queue.push_back({child, std::move(child_path)});
      }
    }
  }

  const HloModule& module_;
  const HloLoweringOptions& options_;
  // Lowered computations with parameters as nodes, by computation index.
  std::vector<std::shared_ptr<const Graph>> standalone_;
  // Computations being lowered right now (to reject call cycles).
  std::vector<char> active_;
  // Whether nodes are recorded for FillLocations.
  bool record_locations_ = false;
  absl::flat_hash_map<const Graph*, std::unique_ptr<GraphRecord>> records_;
  std::vector<std::string> warnings_;
  absl::flat_hash_set<std::string> custom_call_targets_;
  int64_t total_nodes_ = 0;
  // While instructions lowered, and those whose trip count stayed unknown.
  int64_t while_loops_ = 0;
  int64_t unknown_trip_counts_ = 0;
};

}  // namespace

absl::StatusOr<Graph> LowerHloModule(
    const HloModule& module, const HloLoweringOptions& options,
    absl::flat_hash_map<HloInstructionRef, HloNodeLocation>* locations) {
  RETURN_IF_ERROR(ValidateHloModule(module));
  return Lowering(module, options).Run(locations);
}

std::optional<int64_t> KnownTripCount(absl::string_view backend_config) {
  const size_t key = backend_config.find("known_trip_count");
  if (key == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = backend_config.substr(key);
  const size_t n = rest.find("\"n\"");
  if (n == absl::string_view::npos) return std::nullopt;
  rest.remove_prefix(n + 3);
  size_t i = 0;
  while (i < rest.size() && (rest[i] == ' ' || rest[i] == ':' ||
                             rest[i] == '"' || rest[i] == '\t')) {
    ++i;
  }
  int64_t value = 0;
  size_t digits = 0;
  for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9'; ++i, ++digits) {
    if (value > (INT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + (rest[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  return value;
}

bool IsLayoutConfigurableOpcode(absl::string_view opcode) {
  return opcode == "convolution" || opcode == "dot" || opcode == "reshape";
}

}  // namespace gopt::graph::hlo
