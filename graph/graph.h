#ifndef GOPT_GRAPH_GRAPH_H_
#define GOPT_GRAPH_GRAPH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/op_attributes.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"

namespace gopt::graph {

// Index of a node in Graph::nodes(), which is a topological order.
using NodeId = int32_t;

// Where a node may run.
enum class DeviceConstraint : uint8_t {
  kAny = 0,
  kCpuOnly,          // host-only ops (string processing, audio decoding, I/O)
  kAcceleratorOnly,  // ops only an accelerator implements
};

absl::string_view DeviceConstraintName(DeviceConstraint constraint);

// Where a node came from in the user's program, as its source format
// records it: the framework's op name ("jit(step)/dot_general"), the
// source file, function and line, and the SPMD sharding annotation as
// written ("{devices=[8,1]<=[8]}"). Empty fields: not recorded.
struct NodeMetadata {
  std::string op_name;
  std::string file;
  std::string function;
  int32_t line = 0;
  std::string sharding;

  bool operator==(const NodeMetadata& o) const {
    return op_name == o.op_name && file == o.file && function == o.function &&
           line == o.line && sharding == o.sharding;
  }
};

// The element of the caller's file a node came from, so that gopt's
// decisions can be named in the caller's terms and written back into the
// caller's file (graph/exporter.h). Several nodes may share one source
// element (an HLO instruction of a computation called twice); a node the
// importer made up (an ONNX outer-scope capture) has none (empty `name`).
struct SourceElement {
  // HLO: the computation holding the instruction; empty for other formats.
  std::string scope;
  // HLO instruction name; ONNX node name (its first output when the node is
  // unnamed), initializer or graph input name; TF / TF.js NodeDef name;
  // gopt.v1.Graph node name.
  std::string name;
  // True for an ONNX initializer or graph input (a tensor, not a node).
  bool is_tensor = false;

  bool empty() const { return name.empty(); }
  bool operator==(const SourceElement& o) const {
    return scope == o.scope && name == o.name && is_tensor == o.is_tensor;
  }
};

// One operation. Costs are for one execution of the node (a loop node's cost
// already includes all iterations of its body).
struct Node {
  std::string name;  // unique within the graph
  std::string op;    // the source format's op name ("dot", "Conv", "MatMul")
  OpKind kind = OpKind::kOther;
  // One entry per output. An XLA tuple-shaped instruction has one entry per
  // top-level tuple element; every other node usually has exactly one.
  std::vector<TensorType> outputs;
  OpAttributes attributes;

  double flops = 0;                // floating point (or integer) operations
  int64_t bytes_read = 0;          // from memory, operands included
  int64_t bytes_written = 0;       // to memory
  int64_t bytes_communicated = 0;  // collectives: bytes each device sends
  bool cost_unknown = false;       // costed by bytes only (e.g. custom-call)
  // An output type was assumed (an importer found no shape for it), not
  // derived from the model.
  bool shape_assumed = false;

  DeviceConstraint device_constraint = DeviceConstraint::kAny;
  int32_t colocation_group = -1;  // index into Graph::colocation_groups()
  bool layout_configurable = false;
  // Indices into Graph::subgraphs(): loop bodies/conditions, branches,
  // fusion computations.
  std::vector<int32_t> subgraphs;
  // Source metadata (HLO OpMetadata, sharding); out of line (one pointer)
  // when the format has none.
  OutOfLine<NodeMetadata> metadata;
  // Where in the caller's file this node came from.
  SourceElement source;

  // Sum of the sizes of all outputs.
  int64_t output_bytes() const;
};

// Hashes and compares node ids by the names of the nodes they index in
// `nodes`, and looks them up by name: a name index that holds 4 bytes per
// node instead of a copy of every name. `nodes` must outlive the index.
struct NodeNameHash {
  using is_transparent = void;
  const Node* nodes = nullptr;

  size_t operator()(int32_t id) const { return (*this)(nodes[id].name); }
  size_t operator()(absl::string_view name) const {
    return absl::Hash<absl::string_view>()(name);
  }
};
struct NodeNameEq {
  using is_transparent = void;
  const Node* nodes = nullptr;

  bool operator()(int32_t a, int32_t b) const {
    return nodes[a].name == nodes[b].name;
  }
  bool operator()(int32_t id, absl::string_view name) const {
    return nodes[id].name == name;
  }
  bool operator()(absl::string_view name, int32_t id) const {
    return nodes[id].name == name;
  }
};
using NodeNameIndex = absl::flat_hash_set<int32_t, NodeNameHash, NodeNameEq>;

// A data or control dependency from output `src_output` of `src` to input
// `dst_input` of `dst`. Control edges carry no data (src_output = -1,
// dst_input = -1). `src_output` = kAllOutputs means the consumer reads the
// producer's whole (tuple) value, as XLA operands of tuple type do.
struct Edge {
  static constexpr int32_t kAllOutputs = -1;

  NodeId src = 0;
  int32_t src_output = 0;
  NodeId dst = 0;
  int32_t dst_input = 0;
  bool control = false;

  bool operator==(const Edge& o) const {
    return src == o.src && src_output == o.src_output && dst == o.dst &&
           dst_input == o.dst_input && control == o.control;
  }
};

// A loop whose back edge an importer cut to keep the graph acyclic (TF1
// Enter/Merge/NextIteration frames). The loop's nodes stay in the graph.
struct LoopInfo {
  std::string frame_name;
  NodeId merge = 0;           // the Merge (loop header) node
  NodeId next_iteration = 0;  // the NextIteration node whose edge was cut
  int64_t trip_count = -1;    // -1 when unknown
};

// How a graph relates to an SPMD program (XLA `num_partitions`, shardings):
// a graph with num_partitions > 1 is the program ONE device of a mesh of
// num_partitions devices runs (per-shard shapes, collectives as nodes);
// every device runs the same program, so the graph is simulated on one
// representative device with collectives priced on the mesh's links, and
// its nodes form one colocation group (placement is fixed by the given
// sharding; the decisions left are scheduling, fusion and layout).
struct SpmdProgram {
  int64_t num_partitions = 1;  // 1 = not an SPMD program
  // Collectives the importer added where shardings differ (the ones the
  // SPMD partitioner would insert); 0 when the module came partitioned.
  int64_t collectives_inserted = 0;
  // The importer costed the ops on their shards (false: the module's
  // shapes were per-device already, e.g. an optimized HLO dump).
  bool partitioned_by_importer = false;

  bool operator==(const SpmdProgram& o) const {
    return num_partitions == o.num_partitions &&
           collectives_inserted == o.collectives_inserted &&
           partitioned_by_importer == o.partitioned_by_importer;
  }
};

// The immutable graph IR: nodes in a topological order, CSR in/out adjacency.
// Build one with GraphBuilder. A Graph is a value (copyable, movable) and is
// safe to read from many threads at once.
class Graph {
 public:
  Graph() = default;
  // A copy re-indexes its own nodes; a move keeps the index, which points
  // into the node buffer that moves with it.
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  const std::string& name() const { return name_; }
  // Source format ("hlo", "hlo-proto", "onnx", "graphdef", "tfjs", "gopt",
  // "tpugraphs", or "generated").
  const std::string& format() const { return format_; }

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_edges() const { return static_cast<int>(in_edges_.size()); }
  const Node& node(NodeId id) const { return nodes_[id]; }
  absl::Span<const Node> nodes() const { return nodes_; }

  // Edges into `id`, ordered by dst_input (control edges last). Inline:
  // the simulator and the baselines walk them in their inner loops.
  absl::Span<const Edge> in_edges(NodeId id) const {
    return absl::MakeConstSpan(in_edges_.data() + in_offsets_[id],
                               in_offsets_[id + 1] - in_offsets_[id]);
  }
  // Edges out of `id`, ordered by (dst, dst_input).
  absl::Span<const Edge> out_edges(NodeId id) const {
    return absl::MakeConstSpan(out_edges_.data() + out_offsets_[id],
                               out_offsets_[id + 1] - out_offsets_[id]);
  }
  // All edges, grouped by destination.
  absl::Span<const Edge> edges() const { return in_edges_; }

  // Bytes an edge carries (0 for control edges).
  int64_t EdgeBytes(const Edge& edge) const;

  // The node with this name, or nullopt.
  std::optional<NodeId> FindNode(absl::string_view name) const;

  const std::vector<std::shared_ptr<const Graph>>& subgraphs() const {
    return subgraphs_;
  }
  const std::vector<LoopInfo>& loops() const { return loops_; }
  const std::vector<std::string>& colocation_groups() const {
    return colocation_groups_;
  }
  // Things a user should know about the import (custom-calls costed by bytes
  // only, unknown trip counts, assumed symbolic dimensions, ...).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The SPMD program this graph is one device's part of (see SpmdProgram).
  const SpmdProgram& spmd() const { return spmd_; }

  double total_flops() const { return total_flops_; }
  // Sum over nodes of bytes_read + bytes_written.
  int64_t total_bytes() const { return total_bytes_; }

 private:
  friend class GraphBuilder;

  std::string name_;
  std::string format_;
  std::vector<Node> nodes_;
  std::vector<Edge> in_edges_;        // sorted by (dst, control, dst_input)
  std::vector<int32_t> in_offsets_;   // size num_nodes + 1
  std::vector<Edge> out_edges_;       // sorted by (src, dst, dst_input)
  std::vector<int32_t> out_offsets_;  // size num_nodes + 1
  NodeNameIndex index_by_name_;       // over nodes_
  std::vector<std::shared_ptr<const Graph>> subgraphs_;
  std::vector<LoopInfo> loops_;
  std::vector<std::string> colocation_groups_;
  std::vector<std::string> warnings_;
  SpmdProgram spmd_;
  double total_flops_ = 0;
  int64_t total_bytes_ = 0;
};

// Limits a graph must respect; exceeding one is an error, not a truncation.
struct GraphLimits {
  // Largest accepted node count (top level; subgraph nodes not counted).
  // Default: 5,000,000 (the 80,000-node graphs of GO fit 60 times over).
  int64_t max_nodes = 5'000'000;
};

// Bounds on the costs a graph may carry, so that every sum and quotient of
// them the simulator and the baselines compute stays finite (and int64 byte
// sums cannot overflow). A node's FLOPs: beyond a whole large-model training
// run (~1e24). A node's bytes per field: 2^56 (64 PiB). A graph's total
// FLOPs and bytes: 1e30 and 2^61.
inline constexpr double kMaxNodeFlops = 1e27;
inline constexpr int64_t kMaxNodeBytes = int64_t{1} << 56;
inline constexpr double kMaxGraphFlops = 1e30;
inline constexpr int64_t kMaxGraphBytes = int64_t{1} << 61;

// Collects nodes and edges in any order, then validates and freezes them
// into a Graph. Not thread-safe; use one builder per thread.
//
//   GraphBuilder builder("mlp", "generated");
//   int x = builder.AddNode(std::move(param));
//   int y = builder.AddNode(std::move(relu));
//   builder.AddEdge(x, 0, y, 0);
//   ASSIGN_OR_RETURN(Graph graph, std::move(builder).Build(GraphLimits()));
class GraphBuilder {
 public:
  GraphBuilder(std::string name, std::string format);

  // Pre-allocates room for `nodes` nodes and `edges` edges (an optimisation
  // for importers that know their size: Nodes are large to move).
  void Reserve(int64_t nodes, int64_t edges);

  // Adds a node and returns its builder index (insertion order; the built
  // graph renumbers nodes into topological order).
  int AddNode(Node node);
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  Node& mutable_node(int index) { return nodes_[index]; }
  const Node& node(int index) const { return nodes_[index]; }

  // Adds a data edge from output `src_output` of `src` (or Edge::kAllOutputs)
  // to input `dst_input` of `dst` (builder indices).
  void AddEdge(int src, int32_t src_output, int dst, int32_t dst_input);
  // Adds a control dependency: `dst` runs after `src`.
  void AddControlEdge(int src, int dst);

  // Adds an attached subgraph and returns its index for Node::subgraphs.
  int32_t AddSubgraph(std::shared_ptr<const Graph> subgraph);
  // Records a cut loop back edge (builder indices for merge/next_iteration).
  void AddLoop(LoopInfo loop);
  // Returns the index of the colocation group `name`, adding it if new.
  int32_t ColocationGroup(absl::string_view name);
  void AddWarning(std::string warning);
  void SetSpmd(const SpmdProgram& spmd) { spmd_ = spmd; }

  // Validates and freezes the graph. Errors (InvalidArgument unless noted),
  // each naming the node and field:
  //  - more nodes than limits.max_nodes (ResourceExhausted),
  //  - an empty or duplicate node name,
  //  - an edge whose endpoint does not exist or reads an output the producer
  //    does not have,
  //  - an invalid output type (negative or overflowing dims, bad layout),
  //  - a cost that is negative, not finite or over kMaxNodeFlops /
  //    kMaxNodeBytes (e.g. a loop whose trip count times its body
  //    overflows), or graph totals over kMaxGraphFlops / kMaxGraphBytes,
  //  - a cycle (the message lists the nodes on it).
  // A graph (any format but "generated") where some nodes have a source
  // element and others do not gets a warning naming how many have none and
  // the first few (the nodes its importer made up).
  // Nodes come out in a topological order that keeps insertion order where
  // the dependencies allow. Loop infos are renumbered alongside.
  absl::StatusOr<Graph> Build(const GraphLimits& limits) &&;

 private:
  std::string name_;
  std::string format_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<std::shared_ptr<const Graph>> subgraphs_;
  std::vector<LoopInfo> loops_;
  std::vector<std::string> colocation_groups_;
  std::vector<std::string> warnings_;
  SpmdProgram spmd_;
};

// Structural equality of two graphs: same node order, names, ops, kinds,
// types, attributes, costs, edges and subgraphs (recursively). Returns OK or
// an error describing the first difference ("node 12 'add.3': flops 10 vs
// 12"); used to prove two importers agree.
absl::Status CompareGraphs(const Graph& a, const Graph& b);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_GRAPH_H_
