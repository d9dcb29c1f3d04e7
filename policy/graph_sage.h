#ifndef GOPT_POLICY_GRAPH_SAGE_H_
#define GOPT_POLICY_GRAPH_SAGE_H_

// GraphSAGE for both learned policies: the neighbourhoods of a graph, the
// aggregations over them and one configurable layer. The GO network
// (policy/go/network.cc) and the cost model (policy/cost_model/network.cc)
// build their encoders from it. Includes LibTorch: only policy/ .cc files
// include it.
//
// Errors: misuse (node ids out of range, parts that do not match the layer)
// throws c10::Error through TORCH_CHECK, as LibTorch itself does; the
// policies convert it at their boundary (policy/torch_util.h).
// Thread-safety: the structs are plain values; a layer is a torch module
// (concurrent forward passes on one layer are safe, training is not).

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace gopt::policy {

// ---- Neighbourhoods --------------------------------------------------------

// The edges of a graph in one direction, as seen from the nodes that
// aggregate over them (CSR): the neighbours of node i are
// neighbour[offsets[i] .. offsets[i + 1]), in edge order (a repeated edge
// is repeated), so a block of rows reads one contiguous range of edges.
struct Neighbours {
  std::vector<int64_t> offsets;  // N + 1 entries
  torch::Tensor neighbour;       // [E] int64: the node whose row is read
  torch::Tensor target;          // [E] int64: the node that aggregates it
  torch::Tensor degree;          // [N, 1] float: neighbours, at least 1
  // [N, N] sparse (coalesced): row i averages the rows of i's neighbours
  // (all zero without them). Undefined unless built with_mean_matrix.
  torch::Tensor mean_matrix;

  int64_t num_nodes() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t num_edges() const { return offsets.empty() ? 0 : offsets.back(); }
};

// Both directions of a graph's edges: `predecessors` groups edge
// (src, dst) at dst (its neighbour is src), `successors` at src.
struct SageGraph {
  Neighbours predecessors;
  Neighbours successors;

  // The neighbourhoods of the `num_nodes`-node graph with edges
  // (src[k], dst[k]). `with_mean_matrix` also builds each direction's
  // mean_matrix (for MeanByMatrix). Throws c10::Error when src and dst
  // differ in length or an id is outside [0, num_nodes), naming the edge.
  static SageGraph FromEdges(const std::vector<int64_t>& src,
                             const std::vector<int64_t>& dst, int64_t num_nodes,
                             bool with_mean_matrix);
};

// ---- Aggregations ----------------------------------------------------------
//
// Three kernels for three shapes of input, each with its own (fixed)
// floating-point order; none is a drop-in for another bit for bit.

// Over an edge list, for a block of rows: the mean (sum over
// neighbour.index_add, then divided by the degree) and, when `with_max`,
// the element-wise max (scatter_reduce "amax") of the `messages` rows
// ([N, W]) of the neighbours of nodes [begin, end) in `neighbours`, as
// [end - begin, W] (mean) or [end - begin, 2 * W] (mean, then max); zeros
// where a node has none. Differentiable. Without autograd (GradMode off) a
// plain loop over the block's edges gives the same result bit for bit,
// without LibTorch's per-edge work (index_add and scatter_reduce on CPU).
torch::Tensor AggregateRows(const torch::Tensor& messages,
                            const Neighbours& neighbours, int64_t begin,
                            int64_t end, bool with_max);

// Over the sparse mean matrix: row i of the result averages the rows of
// `x` ([N, ...], any trailing shape, e.g. [N, configurations, hidden]) of
// i's neighbours, as one sparse-dense product over the flattened trailing
// dimensions (no [E, ...] gather). Needs neighbours.mean_matrix.
// Differentiable.
torch::Tensor MeanByMatrix(const torch::Tensor& x,
                           const Neighbours& neighbours);

// Over explicit row lists: row u of the result averages the rows
// rows[offsets[u] .. offsets[u + 1]) of `x` ([R, W] float), each weighted
// by 1 / count and summed in list order; zeros for an empty list. For
// inference over deduplicated states, where the row a neighbour
// contributes depends on the output row. Reads `x` directly: not
// differentiable (call under torch::NoGradGuard).
torch::Tensor MeanOfRows(const torch::Tensor& x,
                         const std::vector<int64_t>& offsets,
                         const std::vector<int32_t>& rows);

// ---- FiLM ------------------------------------------------------------------

// Feature-wise linear modulation: x * (1 + gamma(g)) + beta(g), with the
// projection initialised to zero so that a new layer starts unmodulated.
struct FilmOptions {
  FilmOptions(int64_t condition, int64_t features)
      : condition_(condition), features_(features) {}
  TORCH_ARG(int64_t, condition);
  TORCH_ARG(int64_t, features);
};

// The FiLM module; its parameter is "projection" (Linear(condition,
// 2 * features)).
class FilmImpl : public torch::nn::Module {
 public:
  explicit FilmImpl(const FilmOptions& options);
  // x: [..., features]; g: [1, condition].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& g);

 private:
  FilmOptions options_;
  torch::nn::Linear projection_{nullptr};
};
TORCH_MODULE(Film);

// ---- The layer -------------------------------------------------------------

// Where a SageLayer normalises:
//   kAfterResidual  out = LayerNorm(x + film(act(W [x, parts] + b)))
//   kInBranch       out = x + film(act(LayerNorm(W [x, parts] + b)))
// (film only with a condition).
enum class SageNorm { kAfterResidual, kInBranch };

// The layer's activation.
enum class SageActivation { kRelu, kIdentity };

// Options of a SageLayer; the defaults give the GO network's layer but for
// the widths.
struct SageLayerOptions {
  explicit SageLayerOptions(int64_t hidden) : hidden_(hidden) {}
  // State width (input and output).
  TORCH_ARG(int64_t, hidden);
  // Width of the message projection Linear(hidden, message) applied to the
  // states before aggregation; 0 (default): no projection, the neighbours'
  // states are aggregated as they are.
  TORCH_ARG(int64_t, message) = 0;
  // Aggregate the max of the messages besides their mean, per direction
  // (default true).
  TORCH_ARG(bool, max) = true;
  // FiLM condition width; 0 (default): no FiLM.
  TORCH_ARG(int64_t, condition) = 0;
  TORCH_ARG(SageActivation, activation) = SageActivation::kRelu;
  TORCH_ARG(SageNorm, norm) = SageNorm::kAfterResidual;
  // How W [x, parts] is evaluated: false (default) concatenates and runs
  // one product; true runs one product per column block of W and sums
  // them (never building the concatenation, which is large for inputs
  // batched over many configurations), skipping undefined parts as zero.
  // Equal up to float round-off.
  TORCH_ARG(bool, split_products) = false;
  // Rows per block in forward() (default 2048).
  TORCH_ARG(int64_t, row_block) = 2048;
};

// One GraphSAGE layer. Submodules: "message" (when options.message() > 0),
// "combine" (Linear(hidden + parts * width, hidden), its input columns
// [x, predecessors' mean, (max), successors' mean, (max)], width the
// message width or hidden), "norm" (LayerNorm(hidden)) and "film" (with a
// condition).
class SageLayerImpl : public torch::nn::Module {
 public:
  explicit SageLayerImpl(const SageLayerOptions& options);

  // The whole layer over [N, hidden] states `h` with the edge-list
  // aggregation (AggregateRows), in blocks of rows shared among LibTorch's
  // threads without gradient (ConcatRowBlocks). `g`: [1, condition], or
  // undefined without FiLM.
  torch::Tensor forward(const torch::Tensor& h, const SageGraph& graph,
                        const torch::Tensor& g);

  // The messages of states `h` ([..., hidden]): the projection, or `h`.
  torch::Tensor Messages(const torch::Tensor& h);

  // The layer's update of states `x` ([..., hidden]) given the aggregated
  // `parts` in combine's column order, with x's leading shape. Concatenated
  // (the default), any split of the columns will do (mean and max of one
  // direction as one [..., 2 * width] tensor); with split_products each
  // part is one aggregation, [..., width], and an undefined part counts as
  // zeros. Throws c10::Error when the widths do not add up.
  torch::Tensor Update(const torch::Tensor& x,
                       const std::vector<torch::Tensor>& parts,
                       const torch::Tensor& g);

  const SageLayerOptions& options() const { return options_; }

 private:
  SageLayerOptions options_;
  torch::nn::Linear message_{nullptr};
  torch::nn::Linear combine_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  Film film_{nullptr};
};
TORCH_MODULE(SageLayer);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_GRAPH_SAGE_H_
