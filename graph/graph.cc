#include "graph/graph.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/huge_pages.h"
#include "util/status_macros.h"

namespace gopt::graph {

absl::string_view DeviceConstraintName(DeviceConstraint constraint) {
  switch (constraint) {
    case DeviceConstraint::kAny:
      return "any";
    case DeviceConstraint::kCpuOnly:
      return "cpu-only";
    case DeviceConstraint::kAcceleratorOnly:
      return "accelerator-only";
  }
  return "any";
}

int64_t Node::output_bytes() const {
  int64_t total = 0;
  for (const TensorType& output : outputs) total += output.size_bytes();
  return total;
}

int64_t Graph::EdgeBytes(const Edge& edge) const {
  if (edge.control) return 0;
  const Node& src = nodes_[edge.src];
  if (edge.src_output == Edge::kAllOutputs) return src.output_bytes();
  return src.outputs[edge.src_output].size_bytes();
}

namespace {

// An empty name index over `nodes`, with room for `size` names.
NodeNameIndex MakeNameIndex(const std::vector<Node>& nodes, size_t size) {
  return NodeNameIndex(size, NodeNameHash{nodes.data()},
                       NodeNameEq{nodes.data()});
}

}  // namespace

Graph::Graph(const Graph& other) { *this = other; }

Graph& Graph::operator=(const Graph& other) {
  if (this == &other) return *this;
  name_ = other.name_;
  format_ = other.format_;
  nodes_ = other.nodes_;
  in_edges_ = other.in_edges_;
  in_offsets_ = other.in_offsets_;
  out_edges_ = other.out_edges_;
  out_offsets_ = other.out_offsets_;
  index_by_name_ = MakeNameIndex(nodes_, nodes_.size());
  for (NodeId i = 0; i < num_nodes(); ++i) index_by_name_.insert(i);
  subgraphs_ = other.subgraphs_;
  loops_ = other.loops_;
  colocation_groups_ = other.colocation_groups_;
  warnings_ = other.warnings_;
  spmd_ = other.spmd_;
  total_flops_ = other.total_flops_;
  total_bytes_ = other.total_bytes_;
  return *this;
}

std::optional<NodeId> Graph::FindNode(absl::string_view name) const {
  auto it = index_by_name_.find(name);
  if (it == index_by_name_.end()) return std::nullopt;
  return *it;
}

GraphBuilder::GraphBuilder(std::string name, std::string format)
    : name_(std::move(name)), format_(std::move(format)) {}

void GraphBuilder::Reserve(int64_t nodes, int64_t edges) {
  nodes_.reserve(static_cast<size_t>(std::max<int64_t>(nodes, 0)));
  edges_.reserve(static_cast<size_t>(std::max<int64_t>(edges, 0)));
  AdviseHugePagesForCapacity(nodes_);
  AdviseHugePagesForCapacity(edges_);
}

int GraphBuilder::AddNode(Node node) {
  nodes_.push_back(std::move(node));
  return static_cast<int>(nodes_.size()) - 1;
}

void GraphBuilder::AddEdge(int src, int32_t src_output, int dst,
                           int32_t dst_input) {
  edges_.push_back(Edge{src, src_output, dst, dst_input, /*control=*/false});
}

void GraphBuilder::AddControlEdge(int src, int dst) {
  edges_.push_back(Edge{src, -1, dst, -1, /*control=*/true});
}

int32_t GraphBuilder::AddSubgraph(std::shared_ptr<const Graph> subgraph) {
  subgraphs_.push_back(std::move(subgraph));
  return static_cast<int32_t>(subgraphs_.size()) - 1;
}

void GraphBuilder::AddLoop(LoopInfo loop) { loops_.push_back(std::move(loop)); }

int32_t GraphBuilder::ColocationGroup(absl::string_view name) {
  for (size_t i = 0; i < colocation_groups_.size(); ++i) {
    if (colocation_groups_[i] == name) return static_cast<int32_t>(i);
  }
  colocation_groups_.emplace_back(name);
  return static_cast<int32_t>(colocation_groups_.size()) - 1;
}

void GraphBuilder::AddWarning(std::string warning) {
  warnings_.push_back(std::move(warning));
}

namespace {

// Describes one cycle among the nodes Kahn's algorithm could not order.
std::string DescribeCycle(const std::vector<Node>& nodes,
                          const std::vector<std::vector<int>>& preds,
                          const std::vector<int>& remaining_in_degree) {
  int start = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (remaining_in_degree[i] > 0) {
      start = static_cast<int>(i);
      break;
    }
  }
  // Walk backwards along unordered predecessors until a node repeats.
  std::vector<int> position(nodes.size(), -1);
  std::vector<int> path;
  int current = start;
  while (position[current] < 0) {
    position[current] = static_cast<int>(path.size());
    path.push_back(current);
    int next = -1;
    for (int pred : preds[current]) {
      if (remaining_in_degree[pred] > 0) {
        next = pred;
        break;
      }
    }
    if (next < 0) break;
    current = next;
  }
  std::vector<std::string> names;
  for (size_t i = position[current]; i < path.size(); ++i) {
    names.push_back(absl::StrCat("'", nodes[path[i]].name, "'"));
  }
  std::reverse(names.begin(), names.end());
  names.push_back(names.front());
  return absl::StrJoin(names, " -> ");
}

// Kahn's algorithm with a min-heap on insertion index: the order is
// deterministic and equals insertion order when that is already topological.
// InvalidArgument naming the nodes of a cycle when there is one.
absl::StatusOr<std::vector<int>> TopologicalOrder(
    const std::string& graph_name, const std::vector<Node>& nodes,
    const std::vector<Edge>& edges) {
  const int n = static_cast<int>(nodes.size());
  std::vector<int> in_degree(n, 0);
  std::vector<int> succ_offsets(n + 1, 0);
  for (const Edge& edge : edges) {
    ++succ_offsets[edge.src + 1];
    ++in_degree[edge.dst];
  }
  for (int i = 0; i < n; ++i) succ_offsets[i + 1] += succ_offsets[i];
  std::vector<int> succs(edges.size());
  std::vector<int> cursor(succ_offsets.begin(), succ_offsets.end() - 1);
  for (const Edge& edge : edges) succs[cursor[edge.src]++] = edge.dst;

  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (in_degree[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> remaining = std::move(in_degree);
  while (!ready.empty()) {
    const int current = ready.top();
    ready.pop();
    order.push_back(current);
    for (int k = succ_offsets[current]; k < succ_offsets[current + 1]; ++k) {
      if (--remaining[succs[k]] == 0) ready.push(succs[k]);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    std::vector<std::vector<int>> preds(n);
    for (const Edge& edge : edges) preds[edge.dst].push_back(edge.src);
    return absl::InvalidArgumentError(absl::StrCat(
        "graph '", graph_name,
        "' has a cycle: ", DescribeCycle(nodes, preds, remaining)));
  }
  return order;
}

// CSR offsets (size num_nodes + 1) of `edges` grouped by `key` (a node id in
// 0..num_nodes-1).
std::vector<int32_t> EdgeOffsets(const std::vector<Edge>& edges, int num_nodes,
                                 NodeId Edge::*key) {
  std::vector<int32_t> offsets(num_nodes + 1, 0);
  for (const Edge& edge : edges) ++offsets[edge.*key + 1];
  for (int i = 0; i < num_nodes; ++i) offsets[i + 1] += offsets[i];
  return offsets;
}

// Groups `edges` by `key` (a node id in 0..num_nodes-1) into `*sorted` and
// returns the CSR offsets (size num_nodes + 1). Within a group edges are
// ordered by `less`, ties kept in their order in `edges`: the same result as
// a stable sort by (key, less), without its buffer. Groups are usually in
// order already, as importers add edges node by node.
template <typename Less>
std::vector<int32_t> SortEdgesBy(const std::vector<Edge>& edges, int num_nodes,
                                 NodeId Edge::*key, std::vector<Edge>* sorted,
                                 Less less) {
  std::vector<int32_t> offsets = EdgeOffsets(edges, num_nodes, key);
  std::vector<int32_t> cursor(offsets.begin(), offsets.end() - 1);
  sorted->reserve(edges.size());
  AdviseHugePagesForCapacity(*sorted);
  sorted->resize(edges.size());
  for (const Edge& edge : edges) (*sorted)[cursor[edge.*key]++] = edge;
  for (int i = 0; i < num_nodes; ++i) {
    const auto begin = sorted->begin() + offsets[i];
    const auto end = sorted->begin() + offsets[i + 1];
    if (!std::is_sorted(begin, end, less)) std::stable_sort(begin, end, less);
  }
  return offsets;
}

}  // namespace

namespace {

// A node's costs are finite, non-negative and within the per-node bounds.
absl::Status ValidateNodeCost(const Node& node) {
  if (!(node.flops >= 0 && node.flops <= kMaxNodeFlops)) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name, "' (op '", node.op, "'): flops ",
                     node.flops, " is not a number in [0, ", kMaxNodeFlops,
                     "] (a loop trip count or shape too large?)"));
  }
  // A subnormal count is no real op's work, and the roofline's efficiency
  // curve underflows on it (a step time of inf).
  if (node.flops > 0 && node.flops < std::numeric_limits<double>::min()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name, "' (op '", node.op, "'): flops ", node.flops,
        " is a subnormal number; send 0 for an op without arithmetic"));
  }
  for (auto [bytes, field] :
       {std::pair<int64_t, absl::string_view>{node.bytes_read, "bytes_read"},
        {node.bytes_written, "bytes_written"},
        {node.bytes_communicated, "bytes_communicated"}}) {
    if (bytes < 0 || bytes > kMaxNodeBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' (op '", node.op, "'): ", field,
                       " ", bytes, " is not in [0, ", kMaxNodeBytes,
                       "] (a loop trip count or shape too large?)"));
    }
  }
  return absl::OkStatus();
}

// `warnings` plus one for the nodes an importer made up (no source element)
// among nodes it did not. Graphs where no node has a source element (built
// in code: generators, tests) and "generated" graphs get none.
std::vector<std::string> AddSourceWarning(const Graph& graph,
                                          std::vector<std::string> warnings) {
  std::vector<absl::string_view> unsourced;
  for (const Node& node : graph.nodes()) {
    if (node.source.empty()) unsourced.push_back(node.name);
  }
  if (graph.format() == "generated" || unsourced.empty() ||
      unsourced.size() == static_cast<size_t>(graph.num_nodes())) {
    return warnings;
  }
  constexpr size_t kNamed = 5;
  const size_t named = std::min(unsourced.size(), kNamed);
  warnings.push_back(absl::StrCat(
      unsourced.size(), " node(s) have no source element in the file ",
      "(created by the importer; their decisions are not written back): ",
      absl::StrJoin(unsourced.begin(), unsourced.begin() + named, ", "),
      unsourced.size() > named ? ", ..." : ""));
  return warnings;
}

}  // namespace

absl::StatusOr<Graph> GraphBuilder::Build(const GraphLimits& limits) && {
  const int n = static_cast<int>(nodes_.size());
  if (n > limits.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("graph '", name_, "' has ", n,
                     " nodes, more than the limit of ", limits.max_nodes));
  }
  NodeNameIndex index_by_name = MakeNameIndex(nodes_, n);
  for (int i = 0; i < n; ++i) {
    const Node& node = nodes_[i];
    if (node.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node #", i, " (op '", node.op, "') has no name"));
    }
    auto [it, inserted] = index_by_name.insert(i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate node name '",
                                                     node.name, "' (nodes #",
                                                     *it, " and #", i, ")"));
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      absl::Status status = ValidateTensorType(node.outputs[o]);
      if (!status.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", node.name, "' output ", o, ": ", status.message()));
      }
    }
    RETURN_IF_ERROR(ValidateNodeCost(node));
    for (int32_t subgraph : node.subgraphs) {
      if (subgraph < 0 || subgraph >= static_cast<int32_t>(subgraphs_.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name, "' names subgraph ", subgraph,
                         " of ", subgraphs_.size()));
      }
    }
    if (node.colocation_group >=
        static_cast<int32_t>(colocation_groups_.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name, "' names colocation group ",
          node.colocation_group, " of ", colocation_groups_.size()));
    }
  }

  // Importers add nodes in file order, so every edge usually points
  // forward and insertion order is already topological.
  bool forward_only = true;
  for (const Edge& edge : edges_) {
    if (edge.src < 0 || edge.src >= n || edge.dst < 0 || edge.dst >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("edge ", edge.src, " -> ", edge.dst,
                       " names a node outside 0..", n - 1));
    }
    const Node& src = nodes_[edge.src];
    if (!edge.control && edge.src_output != Edge::kAllOutputs &&
        (edge.src_output < 0 ||
         edge.src_output >= static_cast<int32_t>(src.outputs.size()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", nodes_[edge.dst].name, "' input ", edge.dst_input,
          " reads output ", edge.src_output, " of '", src.name, "', which has ",
          src.outputs.size(), " output(s)"));
    }
    forward_only = forward_only && edge.src < edge.dst;
  }

  std::vector<int> order;
  if (forward_only) {
    // Kahn's algorithm below would return exactly this order.
    order.resize(n);
    for (int i = 0; i < n; ++i) order[i] = i;
  } else {
    ASSIGN_OR_RETURN(order, TopologicalOrder(name_, nodes_, edges_));
  }
  std::vector<NodeId> new_id(n);
  for (int i = 0; i < n; ++i) new_id[order[i]] = i;

  Graph graph;
  graph.name_ = std::move(name_);
  graph.format_ = std::move(format_);
  // `order` is a permutation of 0..n-1: sorted means unchanged.
  const bool already_ordered = std::is_sorted(order.begin(), order.end());
  if (already_ordered) {
    // The common case (importers add nodes in file order): hand the vector
    // over instead of moving every (large) node.
    graph.nodes_ = std::move(nodes_);
  } else {
    graph.nodes_.reserve(n);
    for (int i = 0; i < n; ++i) {
      graph.nodes_.push_back(std::move(nodes_[order[i]]));
    }
  }
  for (Edge& edge : edges_) {
    edge.src = new_id[edge.src];
    edge.dst = new_id[edge.dst];
  }
  const auto in_less = [](const Edge& a, const Edge& b) {
    return std::make_tuple(a.control, a.dst_input) <
           std::make_tuple(b.control, b.dst_input);
  };
  // Importers usually add each node's input edges in input order, node
  // after node: then the edges are the in-edge array already.
  const bool in_edge_order = std::is_sorted(
      edges_.begin(), edges_.end(), [&](const Edge& a, const Edge& b) {
        return a.dst != b.dst ? a.dst < b.dst : in_less(a, b);
      });
  graph.out_offsets_ =
      SortEdgesBy(edges_, n, &Edge::src, &graph.out_edges_,
                  [](const Edge& a, const Edge& b) {
                    return std::make_tuple(a.dst, a.dst_input) <
                           std::make_tuple(b.dst, b.dst_input);
                  });
  if (in_edge_order) {
    graph.in_offsets_ = EdgeOffsets(edges_, n, &Edge::dst);
    graph.in_edges_ = std::move(edges_);
  } else {
    graph.in_offsets_ =
        SortEdgesBy(edges_, n, &Edge::dst, &graph.in_edges_, in_less);
  }
  edges_ = std::vector<Edge>();
  if (already_ordered) {
    // Still valid: it indexes the node buffer the graph now owns.
    graph.index_by_name_ = std::move(index_by_name);
  } else {
    graph.index_by_name_ = MakeNameIndex(graph.nodes_, n);
    for (NodeId i = 0; i < n; ++i) graph.index_by_name_.insert(i);
  }
  // Each term is at most 2 * kMaxNodeBytes, so the running sum is checked
  // before it can overflow.
  for (const Node& node : graph.nodes_) {
    graph.total_flops_ += node.flops;
    graph.total_bytes_ += node.bytes_read + node.bytes_written;
    if (graph.total_flops_ > kMaxGraphFlops ||
        graph.total_bytes_ > kMaxGraphBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph '", graph.name_, "': total cost over the limits (",
          kMaxGraphFlops, " FLOPs, ", kMaxGraphBytes, " bytes) at node '",
          node.name, "'"));
    }
  }
  for (LoopInfo& loop : loops_) {
    loop.merge = new_id[loop.merge];
    loop.next_iteration = new_id[loop.next_iteration];
  }
  graph.subgraphs_ = std::move(subgraphs_);
  graph.loops_ = std::move(loops_);
  graph.colocation_groups_ = std::move(colocation_groups_);
  graph.spmd_ = spmd_;
  graph.warnings_ = AddSourceWarning(graph, std::move(warnings_));
  return graph;
}

namespace {

absl::Status CompareNodes(const Node& a, const Node& b) {
  auto differ = [&](absl::string_view field, const auto& x, const auto& y) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", a.name, "': ", field, " ", x, " vs ", y));
  };
  if (a.name != b.name) return differ("name", a.name, b.name);
  if (a.op != b.op) return differ("op", a.op, b.op);
  if (a.kind != b.kind) {
    return differ("kind", OpKindName(a.kind), OpKindName(b.kind));
  }
  if (a.outputs.size() != b.outputs.size()) {
    return differ("output count", a.outputs.size(), b.outputs.size());
  }
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (a.outputs[i] != b.outputs[i]) {
      return differ(absl::StrCat("output ", i), a.outputs[i].ToString(),
                    b.outputs[i].ToString());
    }
  }
  if (!(a.attributes == b.attributes)) return differ("attributes", "", "");
  if (a.flops != b.flops) return differ("flops", a.flops, b.flops);
  if (a.bytes_read != b.bytes_read) {
    return differ("bytes_read", a.bytes_read, b.bytes_read);
  }
  if (a.bytes_written != b.bytes_written) {
    return differ("bytes_written", a.bytes_written, b.bytes_written);
  }
  if (a.bytes_communicated != b.bytes_communicated) {
    return differ("bytes_communicated", a.bytes_communicated,
                  b.bytes_communicated);
  }
  if (a.cost_unknown != b.cost_unknown) {
    return differ("cost_unknown", a.cost_unknown, b.cost_unknown);
  }
  if (a.device_constraint != b.device_constraint) {
    return differ("device_constraint",
                  DeviceConstraintName(a.device_constraint),
                  DeviceConstraintName(b.device_constraint));
  }
  if (a.colocation_group != b.colocation_group) {
    return differ("colocation_group", a.colocation_group, b.colocation_group);
  }
  if (a.layout_configurable != b.layout_configurable) {
    return differ("layout_configurable", a.layout_configurable,
                  b.layout_configurable);
  }
  if (a.subgraphs != b.subgraphs) {
    return differ("subgraphs", absl::StrJoin(a.subgraphs, ","),
                  absl::StrJoin(b.subgraphs, ","));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompareGraphs(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node count ", a.num_nodes(), " vs ", b.num_nodes()));
  }
  if (a.num_edges() != b.num_edges()) {
    return absl::InvalidArgumentError(
        absl::StrCat("edge count ", a.num_edges(), " vs ", b.num_edges()));
  }
  for (NodeId i = 0; i < a.num_nodes(); ++i) {
    RETURN_IF_ERROR(CompareNodes(a.node(i), b.node(i)));
  }
  for (int i = 0; i < a.num_edges(); ++i) {
    const Edge& x = a.edges()[i];
    const Edge& y = b.edges()[i];
    if (!(x == y)) {
      return absl::InvalidArgumentError(
          absl::StrCat("edge into '", a.node(x.dst).name, "' input ",
                       x.dst_input, " differs: from '", a.node(x.src).name,
                       "' vs '", b.node(y.src).name, "'"));
    }
  }
  if (a.subgraphs().size() != b.subgraphs().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subgraph count ", a.subgraphs().size(), " vs ", b.subgraphs().size()));
  }
  for (size_t i = 0; i < a.subgraphs().size(); ++i) {
    absl::Status status = CompareGraphs(*a.subgraphs()[i], *b.subgraphs()[i]);
    if (!status.ok()) {
      return Annotate(status, absl::StrCat("subgraph ", i, " '",
                                           a.subgraphs()[i]->name(), "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gopt::graph
