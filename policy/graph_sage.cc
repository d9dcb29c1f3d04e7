#include "policy/graph_sage.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "policy/torch_util.h"

namespace gopt::policy {
namespace {

namespace nn = torch::nn;

// Groups the edges (key[e], other[e]) by `key`: `target` is the key node,
// `neighbour` the other end. A stable order keeps each node's edges in
// their original order, so sums over them add up in edge order.
Neighbours GroupEdges(const std::vector<int64_t>& key,
                      const std::vector<int64_t>& other, int64_t n,
                      bool with_mean_matrix) {
  const int64_t e = static_cast<int64_t>(key.size());
  Neighbours groups;
  groups.offsets.assign(n + 1, 0);
  for (int64_t k : key) ++groups.offsets[k + 1];
  for (int64_t i = 0; i < n; ++i) {
    groups.offsets[i + 1] += groups.offsets[i];
  }
  std::vector<int64_t> target(e), neighbour(e);
  std::vector<int64_t> next(groups.offsets.begin(), groups.offsets.end() - 1);
  for (int64_t i = 0; i < e; ++i) {
    const int64_t slot = next[key[i]]++;
    target[slot] = key[i];
    neighbour[slot] = other[i];
  }
  std::vector<float> degree(n);
  for (int64_t i = 0; i < n; ++i) {
    degree[i] = static_cast<float>(
        std::max<int64_t>(1, groups.offsets[i + 1] - groups.offsets[i]));
  }
  groups.target = torch::tensor(target, torch::kInt64);
  groups.neighbour = torch::tensor(neighbour, torch::kInt64);
  groups.degree = torch::tensor(degree, torch::kFloat32).unsqueeze(1);
  if (with_mean_matrix) {
    std::vector<float> values(e);
    for (int64_t i = 0; i < e; ++i) values[i] = 1.0f / degree[target[i]];
    torch::Tensor index = torch::stack({groups.target, groups.neighbour});
    groups.mean_matrix =
        torch::sparse_coo_tensor(index, torch::tensor(values), {n, n})
            .coalesce();
  }
  return groups;
}

// Drops LibTorch's one-time notice that scatter_reduce is a beta API (the
// "amax" reduction AggregateRows needs has no stable equivalent), which
// would otherwise reach the terminal of every gopt user; any other warning
// goes on to the handler it replaces. Installed per call with a
// WarningHandlerGuard (LibTorch keeps the handler per thread), around the
// scatter_reduce call alone.
class BetaNoticeFilter final : public c10::WarningHandler {
 public:
  explicit BetaNoticeFilter(c10::WarningHandler* next) : next_(next) {}

  void process(const c10::SourceLocation& source_location,
               const std::string& msg, const bool verbatim) override {
    if (msg.find("is in beta and the API may change") != std::string::npos) {
      return;
    }
    if (next_ != nullptr) next_->process(source_location, msg, verbatim);
  }

 private:
  c10::WarningHandler* next_;
};

torch::Tensor Activate(SageActivation activation, const torch::Tensor& x) {
  switch (activation) {
    case SageActivation::kRelu:
      return torch::relu(x);
    case SageActivation::kIdentity:
      return x;
  }
  return x;
}

}  // namespace

SageGraph SageGraph::FromEdges(const std::vector<int64_t>& src,
                               const std::vector<int64_t>& dst,
                               int64_t num_nodes, bool with_mean_matrix) {
  TORCH_CHECK(num_nodes >= 0, "GraphSAGE graph: ", num_nodes, " nodes");
  TORCH_CHECK(src.size() == dst.size(), "GraphSAGE graph: ", src.size(),
              " edge sources but ", dst.size(), " edge destinations");
  for (size_t k = 0; k < src.size(); ++k) {
    TORCH_CHECK(
        src[k] >= 0 && src[k] < num_nodes && dst[k] >= 0 && dst[k] < num_nodes,
        "GraphSAGE graph: edge ", k, " (", src[k], " -> ", dst[k],
        ") names a node outside [0, ", num_nodes, ")");
  }
  SageGraph graph;
  graph.predecessors = GroupEdges(dst, src, num_nodes, with_mean_matrix);
  graph.successors = GroupEdges(src, dst, num_nodes, with_mean_matrix);
  return graph;
}

namespace {

// AggregateRows without autograd, for a contiguous float `messages`: one
// pass over the block's edges, adding each neighbour's row in edge order
// (as index_add does) and keeping the element-wise max (as scatter_reduce's
// "amax" without self does), so the result is AggregateRows' bit for bit
// without a tensor operation per edge.
torch::Tensor AggregateRowsNoGrad(const torch::Tensor& messages,
                                  const Neighbours& neighbours, int64_t begin,
                                  int64_t end, bool with_max) {
  const int64_t rows = end - begin;
  const int64_t width = messages.size(1);
  const int64_t columns = with_max ? 2 * width : width;
  torch::Tensor out = torch::zeros({rows, columns}, messages.options());
  const float* in = messages.data_ptr<float>();
  float* result = out.data_ptr<float>();
  const int64_t* neighbour = neighbours.neighbour.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t first = neighbours.offsets[begin + r];
    const int64_t last = neighbours.offsets[begin + r + 1];
    if (first == last) continue;
    float* mean = result + r * columns;
    float* max = mean + width;
    for (int64_t e = first; e < last; ++e) {
      const float* row = in + neighbour[e] * width;
      for (int64_t c = 0; c < width; ++c) mean[c] += row[c];
      if (!with_max) continue;
      for (int64_t c = 0; c < width; ++c) {
        // The first neighbour sets the max; NaN wins, as in amax.
        if (e == first || row[c] > max[c] || std::isnan(row[c])) {
          max[c] = row[c];
        }
      }
    }
    const float degree = static_cast<float>(last - first);
    for (int64_t c = 0; c < width; ++c) mean[c] /= degree;
  }
  return out;
}

}  // namespace

torch::Tensor AggregateRows(const torch::Tensor& messages,
                            const Neighbours& neighbours, int64_t begin,
                            int64_t end, bool with_max) {
  if (!torch::GradMode::is_enabled() && messages.dim() == 2 &&
      messages.scalar_type() == torch::kFloat32 && messages.is_contiguous() &&
      neighbours.neighbour.scalar_type() == torch::kInt64 &&
      neighbours.neighbour.is_contiguous()) {
    return AggregateRowsNoGrad(messages, neighbours, begin, end, with_max);
  }
  const int64_t rows = end - begin;
  const int64_t width = messages.size(1);
  torch::Tensor mean = torch::zeros({rows, width}, messages.options());
  torch::Tensor max;
  if (with_max) max = torch::zeros({rows, width}, messages.options());
  const int64_t first = neighbours.offsets[begin];
  const int64_t last = neighbours.offsets[end];
  if (last > first) {
    torch::Tensor read =
        messages.index_select(0, neighbours.neighbour.slice(0, first, last));
    torch::Tensor local = neighbours.target.slice(0, first, last) - begin;
    mean =
        mean.index_add(0, local, read) / neighbours.degree.slice(0, begin, end);
    if (with_max) {
      BetaNoticeFilter filter(c10::Warning::get_warning_handler());
      c10::Warning::WarningHandlerGuard quiet(&filter);
      max = max.scatter_reduce(0, local.unsqueeze(1).expand({-1, width}), read,
                               "amax", /*include_self=*/false);
    }
  }
  return with_max ? torch::cat({mean, max}, 1) : mean;
}

torch::Tensor MeanByMatrix(const torch::Tensor& x,
                           const Neighbours& neighbours) {
  TORCH_CHECK(neighbours.mean_matrix.defined(),
              "MeanByMatrix: the neighbourhood was built without its mean "
              "matrix");
  const int64_t n = x.size(0);
  return torch::mm(neighbours.mean_matrix, x.reshape({n, -1}))
      .reshape(x.sizes());
}

torch::Tensor MeanOfRows(const torch::Tensor& x,
                         const std::vector<int64_t>& offsets,
                         const std::vector<int32_t>& rows) {
  TORCH_CHECK(
      x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
      "MeanOfRows: x must be a contiguous [R, W] float tensor");
  TORCH_CHECK(!offsets.empty() && offsets.back() <= int64_t(rows.size()),
              "MeanOfRows: ", offsets.size(), " offsets over ", rows.size(),
              " rows");
  const int64_t h = x.size(1);
  const int64_t u = static_cast<int64_t>(offsets.size()) - 1;
  torch::Tensor out = torch::zeros({u, h}, x.options());
  const float* in = x.data_ptr<float>();
  float* sums = out.data_ptr<float>();
  for (int64_t s = 0; s < u; ++s) {
    const int64_t begin = offsets[s];
    const int64_t end = offsets[s + 1];
    if (begin == end) continue;
    const float weight = 1.0f / static_cast<float>(end - begin);
    float* row = sums + s * h;
    for (int64_t e = begin; e < end; ++e) {
      TORCH_CHECK(rows[e] >= 0 && rows[e] < x.size(0), "MeanOfRows: row ",
                  rows[e], " of ", x.size(0));
      const float* neighbour = in + static_cast<int64_t>(rows[e]) * h;
      for (int64_t d = 0; d < h; ++d) row[d] += weight * neighbour[d];
    }
  }
  return out;
}

FilmImpl::FilmImpl(const FilmOptions& options) : options_(options) {
  projection_ = register_module(
      "projection", nn::Linear(options.condition(), 2 * options.features()));
  torch::NoGradGuard no_grad;
  projection_->weight.zero_();
  projection_->bias.zero_();
}

torch::Tensor FilmImpl::forward(const torch::Tensor& x,
                                const torch::Tensor& g) {
  std::vector<torch::Tensor> gamma_beta =
      projection_->forward(g).squeeze(0).chunk(2);
  return x * (1 + gamma_beta[0]) + gamma_beta[1];
}

SageLayerImpl::SageLayerImpl(const SageLayerOptions& options)
    : options_(options) {
  const int64_t h = options.hidden();
  const int64_t width = options.message() > 0 ? options.message() : h;
  const int64_t parts = 2 * (options.max() ? 2 : 1);
  if (options.message() > 0) {
    message_ = register_module("message", nn::Linear(h, options.message()));
  }
  combine_ = register_module("combine", nn::Linear(h + parts * width, h));
  norm_ = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({h})));
  if (options.condition() > 0) {
    film_ = register_module("film", Film(FilmOptions(options.condition(), h)));
  }
}

torch::Tensor SageLayerImpl::Messages(const torch::Tensor& h) {
  return message_ ? message_->forward(h) : h;
}

torch::Tensor SageLayerImpl::Update(const torch::Tensor& x,
                                    const std::vector<torch::Tensor>& parts,
                                    const torch::Tensor& g) {
  torch::Tensor z;
  if (options_.split_products()) {
    namespace F = torch::nn::functional;
    const torch::Tensor& w = combine_->weight;
    const int64_t h = options_.hidden();
    const int64_t width = options_.message() > 0 ? options_.message() : h;
    TORCH_CHECK(h + static_cast<int64_t>(parts.size()) * width == w.size(1),
                "GraphSAGE layer: ", parts.size(), " parts of width ", width,
                " for a combine input of ", w.size(1));
    z = F::linear(x, w.narrow(1, 0, h), combine_->bias);
    for (size_t k = 0; k < parts.size(); ++k) {
      if (!parts[k].defined()) continue;
      z = z + F::linear(parts[k], w.narrow(1, h + k * width, width));
    }
  } else {
    std::vector<torch::Tensor> joined = {x};
    joined.insert(joined.end(), parts.begin(), parts.end());
    z = combine_->forward(torch::cat(joined, -1));
  }
  if (options_.norm() == SageNorm::kInBranch) z = norm_->forward(z);
  z = Activate(options_.activation(), z);
  if (film_) z = film_->forward(z, g);
  return options_.norm() == SageNorm::kAfterResidual ? norm_->forward(x + z)
                                                     : x + z;
}

torch::Tensor SageLayerImpl::forward(const torch::Tensor& h,
                                     const SageGraph& graph,
                                     const torch::Tensor& g) {
  const int64_t n = h.size(0);
  const int64_t block = options_.row_block();
  // Every node's message first: a block aggregates messages from anywhere.
  torch::Tensor m =
      message_ ? ConcatRowBlocks(n, block,
                                 [&](int64_t begin, int64_t end) {
                                   return Messages(h.slice(0, begin, end));
                                 })
               : h;
  return ConcatRowBlocks(n, block, [&](int64_t begin, int64_t end) {
    std::vector<torch::Tensor> parts;
    for (const Neighbours* direction :
         {&graph.predecessors, &graph.successors}) {
      torch::Tensor both =
          AggregateRows(m, *direction, begin, end, options_.max());
      if (options_.split_products() && options_.max()) {
        for (torch::Tensor& one : both.chunk(2, 1)) parts.push_back(one);
      } else {
        parts.push_back(std::move(both));
      }
    }
    return Update(h.slice(0, begin, end), parts, g);
  });
}

}  // namespace gopt::policy
