#include "policy/go/network.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "ATen/Parallel.h"
#include "absl/strings/str_cat.h"
#include "policy/go/actions.h"

namespace gopt::policy::go {
namespace {

namespace nn = torch::nn;

// Masked logits: low enough to vanish in softmax, finite so that
// probability * log-probability stays 0 rather than NaN.
constexpr float kMaskedLogit = -1e9f;
// Segments per attention block: bounds the [segments, heads, L, 2L] score
// tensor (4 segments of 256, one head: 2 MiB) and gives the intra-op
// threads several blocks to share; each block recomputes the keys and
// values of one segment before it (its memory).
constexpr int64_t kSegmentChunk = 4;

// Rows per block of row-wise work in ConcatBlocks.
constexpr int64_t kRowBlock = 2048;

// Evaluates `block(begin, end)` over [0, count) split into near-equal
// ranges of at most `grain` items and concatenates the results along
// dimension 0, so that the temporaries of one block (the attention scores
// above all) stay small. The split depends only on `count` and `grain`, so
// the result does not depend on the thread count; it is even (when there
// is more than one block) so that two threads get equal shares. Without
// gradient (inference) the blocks are shared among LibTorch's intra-op
// threads, each block running its operators on one thread: a few large
// tasks per layer instead of a parallel region per small operator. With
// gradient (training) they run in order on the calling thread.
torch::Tensor ConcatBlocks(
    int64_t count, int64_t grain,
    const std::function<torch::Tensor(int64_t, int64_t)>& block) {
  int64_t blocks = (count + grain - 1) / grain;
  if (blocks > 1 && blocks % 2 == 1) ++blocks;
  std::vector<torch::Tensor> results(blocks);
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      results[b] = block(count * b / blocks, count * (b + 1) / blocks);
    }
  };
  if (torch::GradMode::is_enabled() || blocks < 2) {
    run(0, blocks);
  } else {
    at::parallel_for(0, blocks, /*grain_size=*/1,
                     [&](int64_t first, int64_t last) {
                       // Grad mode is thread-local: the pool's threads
                       // must not record autograd graphs either.
                       torch::NoGradGuard no_grad;
                       run(first, last);
                     });
  }
  return blocks == 1 ? results[0] : torch::cat(results, 0);
}

// Groups the edges (src[e], dst[e]) by `key` (src or dst): `target` is the
// key node, `neighbour` the other end. A stable order keeps each node's
// edges in their original order, so sums over them add up as before.
EdgeGroups GroupEdges(const std::vector<int64_t>& key,
                      const std::vector<int64_t>& other, int64_t n) {
  const int64_t e = static_cast<int64_t>(key.size());
  EdgeGroups groups;
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
  return groups;
}

// Drops LibTorch's one-time notice that scatter_reduce is a beta API (the
// "amax" reduction Aggregate needs has no stable equivalent), which would
// otherwise reach the terminal of every gopt user; any other warning goes
// on to the handler it replaces. Installed per call with a
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

// Mean and max of the messages `m` of the neighbours of rows [begin, end),
// as [end - begin, 2 * width] (mean, then max; zeros where a node has no
// neighbours).
torch::Tensor Aggregate(const torch::Tensor& m, const EdgeGroups& groups,
                        int64_t begin, int64_t end) {
  const int64_t rows = end - begin;
  const int64_t width = m.size(1);
  torch::Tensor mean = torch::zeros({rows, width}, m.options());
  torch::Tensor max = torch::zeros({rows, width}, m.options());
  const int64_t first = groups.offsets[begin];
  const int64_t last = groups.offsets[end];
  if (last > first) {
    torch::Tensor messages =
        m.index_select(0, groups.neighbour.slice(0, first, last));
    torch::Tensor local = groups.target.slice(0, first, last) - begin;
    mean =
        mean.index_add(0, local, messages) / groups.degree.slice(0, begin, end);
    BetaNoticeFilter filter(c10::Warning::get_warning_handler());
    c10::Warning::WarningHandlerGuard quiet(&filter);
    max = max.scatter_reduce(0, local.unsqueeze(1).expand({-1, width}),
                             messages, "amax", /*include_self=*/false);
  }
  return torch::cat({mean, max}, 1);
}

torch::Tensor FromFloats(const std::vector<float>& values, int64_t rows,
                         int64_t cols) {
  return torch::from_blob(const_cast<float*>(values.data()), {rows, cols},
                          torch::kFloat32)
      .clone();
}

// [n, d] float: 1 at (node, device[node]), rows of zeros where the device
// is -1 or the vector is not filled.
torch::Tensor OneHotDevices(const std::vector<int32_t>& device, int64_t n,
                            int64_t d) {
  std::vector<float> one_hot(static_cast<size_t>(n * d), 0.0f);
  if (static_cast<int64_t>(device.size()) == n) {
    for (int64_t i = 0; i < n; ++i) {
      if (device[i] >= 0 && device[i] < d) one_hot[i * d + device[i]] = 1.0f;
    }
  }
  return FromFloats(one_hot, n, d);
}

}  // namespace

FeatureTensors ToTensors(const GraphFeatures& features) {
  const int64_t n = features.num_nodes;
  const int64_t d = features.num_devices;
  FeatureTensors t;
  t.node = FromFloats(features.node, n, NumNodeFeatures());
  t.device = FromFloats(features.device, d, NumDeviceFeatures());
  t.predecessors = GroupEdges(features.edge_dst, features.edge_src, n);
  t.successors = GroupEdges(features.edge_src, features.edge_dst, n);
  t.allowed = torch::from_blob(const_cast<uint8_t*>(features.allowed.data()),
                               {n, d}, torch::kUInt8)
                  .to(torch::kBool);
  t.work_position =
      torch::from_blob(const_cast<float*>(features.work_position.data()), {n},
                       torch::kFloat32)
          .clone();
  t.upward_rank =
      torch::from_blob(const_cast<float*>(features.upward_rank.data()), {n},
                       torch::kFloat32)
          .clone();
  t.heft_hint = OneHotDevices(features.heft_device, n, d);
  t.metis_hint = OneHotDevices(features.metis_device, n, d);
  return t;
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

SageLayerImpl::SageLayerImpl(const SageLayerOptions& options) {
  message_ = register_module("message",
                             nn::Linear(options.hidden(), options.message()));
  combine_ = register_module(
      "combine",
      nn::Linear(options.hidden() + 4 * options.message(), options.hidden()));
  norm_ = register_module(
      "norm", nn::LayerNorm(nn::LayerNormOptions({options.hidden()})));
  film_ = register_module(
      "film", Film(FilmOptions(options.condition(), options.hidden())));
}

torch::Tensor SageLayerImpl::forward(const torch::Tensor& h,
                                     const FeatureTensors& graph,
                                     const torch::Tensor& g) {
  // Every node's message first: a block aggregates messages from anywhere.
  torch::Tensor m =
      ConcatBlocks(h.size(0), kRowBlock, [&](int64_t begin, int64_t end) {
        return message_->forward(h.slice(0, begin, end));
      });
  return ConcatBlocks(h.size(0), kRowBlock, [&](int64_t begin, int64_t end) {
    torch::Tensor rows = h.slice(0, begin, end);
    torch::Tensor joined =
        torch::cat({rows, Aggregate(m, graph.predecessors, begin, end),
                    Aggregate(m, graph.successors, begin, end)},
                   1);
    torch::Tensor z = torch::relu(combine_->forward(joined));
    return norm_->forward(rows + film_->forward(z, g));
  });
}

SegmentAttentionImpl::SegmentAttentionImpl(
    const SegmentAttentionOptions& options)
    : options_(options) {
  const int64_t h = options.hidden();
  const int64_t a = options.attention_dim();
  query_ = register_module("query", nn::Linear(h, a));
  key_value_ = register_module("key_value", nn::Linear(h, 2 * a));
  output_ = register_module("output", nn::Linear(a, h));
  norm1_ = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({h})));
  ff1_ = register_module("ff1", nn::Linear(h, options.feed_forward()));
  ff2_ = register_module("ff2", nn::Linear(options.feed_forward(), h));
  norm2_ = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({h})));
  film_ = register_module("film", Film(FilmOptions(options.condition(), h)));
}

torch::Tensor SegmentAttentionImpl::forward(const torch::Tensor& x,
                                            const torch::Tensor& g) {
  const int64_t n = x.size(0);
  const int64_t a = options_.attention_dim();
  const int64_t length = options_.segment();
  const int64_t heads = options_.heads();
  const int64_t head_dim = a / heads;
  const int64_t segments = (n + length - 1) / length;
  const int64_t padded = segments * length;
  torch::Tensor position =
      torch::arange(padded, torch::kInt64).view({segments, length});
  torch::Tensor current_valid = position < n;
  torch::Tensor memory_valid = (torch::arange(segments, torch::kInt64) > 0)
                                   .unsqueeze(1)
                                   .expand({segments, length});
  torch::Tensor key_valid = torch::cat({memory_valid, current_valid}, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  torch::Tensor x_padded =
      padded > n
          ? torch::cat({x, torch::zeros({padded - n, x.size(1)}, x.options())},
                       0)
          : x;
  // Each chunk of segments runs the whole layer (attention, then the
  // row-wise output projection, norms and feed-forward) on its own rows.
  torch::Tensor out =
      ConcatBlocks(segments, kSegmentChunk, [&](int64_t begin, int64_t end) {
        const int64_t c = end - begin;
        torch::Tensor rows = x_padded.slice(0, begin * length, end * length);
        torch::Tensor q = query_->forward(rows)
                              .view({c, length, heads, head_dim})
                              .transpose(1, 2);
        torch::Tensor current =
            key_value_->forward(rows).view({c, length, 2 * a});
        // Memory: the previous segment's keys and values, without
        // gradient (the chunk's first segment recomputes its memory from
        // the previous chunk's last rows; the first segment has none).
        torch::Tensor first_memory =
            begin == 0 ? torch::zeros({1, length, 2 * a}, x.options())
                       : key_value_
                             ->forward(x_padded.slice(0, (begin - 1) * length,
                                                      begin * length))
                             .view({1, length, 2 * a});
        torch::Tensor memory =
            torch::cat({first_memory, current.slice(0, 0, c - 1)}, 0).detach();
        torch::Tensor kv = torch::cat({memory, current}, 1);
        std::vector<torch::Tensor> k_v = kv.chunk(2, -1);
        torch::Tensor k =
            k_v[0].reshape({c, 2 * length, heads, head_dim}).transpose(1, 2);
        torch::Tensor v =
            k_v[1].reshape({c, 2 * length, heads, head_dim}).transpose(1, 2);
        torch::Tensor scores = torch::matmul(q * scale, k.transpose(-1, -2));
        // Only the first segment (no memory) and the padded last one have
        // keys to hide; the score tensor is the largest in the network, so
        // the others skip the masking pass.
        if (begin == 0 || (end == segments && padded > n)) {
          torch::Tensor mask = key_valid.slice(0, begin, end)
                                   .logical_not()
                                   .view({c, 1, 1, 2 * length});
          scores.masked_fill_(mask, kMaskedLogit);
        }
        torch::Tensor attended = torch::matmul(torch::softmax(scores, -1), v)
                                     .transpose(1, 2)
                                     .reshape({c * length, a});
        torch::Tensor y = norm1_->forward(rows + output_->forward(attended));
        torch::Tensor ff = ff2_->forward(torch::relu(ff1_->forward(y)));
        return norm2_->forward(y + film_->forward(ff, g));
      });
  return out.slice(0, 0, n);
}

GoNetworkImpl::GoNetworkImpl(const GoNetworkOptions& options)
    : options_(options) {
  const GoModelOptions& m = options.model;
  const int64_t h = m.hidden;
  const int64_t c = m.graph_embedding;
  input_ = register_module("input", nn::Linear(options.node_features, h));
  sage_ = register_module("sage", nn::ModuleList());
  for (int i = 0; i < m.sage_layers; ++i) {
    sage_->push_back(SageLayer(SageLayerOptions(h, m.message, c)));
  }
  device_mlp_ = register_module(
      "device_mlp", nn::Sequential(nn::Linear(options.device_features, h),
                                   nn::ReLU(), nn::Linear(h, h)));
  graph_mlp_ = register_module(
      "graph_mlp",
      nn::Sequential(nn::Linear(2 * h, h), nn::ReLU(), nn::Linear(h, c)));
  auto make_stack = [&](const std::string& name) {
    nn::ModuleList stack;
    for (int i = 0; i < m.attention_layers; ++i) {
      stack->push_back(SegmentAttention(SegmentAttentionOptions(
          h, m.attention_dim, m.heads, m.feed_forward, m.segment, c)));
    }
    return register_module(name, stack);
  };
  placement_stack_ = make_stack("placement_stack");
  scheduling_stack_ = make_stack("scheduling_stack");
  fusion_stack_ = make_stack("fusion_stack");
  placement_query_ = register_module("placement_query", nn::Linear(h, h));
  placement_action_ = register_module("placement_action", nn::Linear(h, h));
  const float strength = m.prior_strength;
  placement_prior_scale_ = register_parameter(
      "placement_prior_scale", torch::full({1}, 0.25f * strength));
  heft_prior_scale_ =
      register_parameter("heft_prior_scale", torch::full({1}, 0.5f * strength));
  metis_prior_scale_ = register_parameter("metis_prior_scale",
                                          torch::full({1}, 6.0f * strength));
  // Zero-initialised: every gate starts at exp(0) = 1.
  placement_prior_gate_ =
      register_module("placement_prior_gate", nn::Linear(c, 3));
  {
    torch::NoGradGuard no_grad;
    placement_prior_gate_->weight.zero_();
    placement_prior_gate_->bias.zero_();
  }
  scheduling_prior_scale_ = register_parameter(
      "scheduling_prior_scale", torch::full({1}, 2.0f * strength));
  fusion_prior_scale_ = register_parameter("fusion_prior_scale",
                                           torch::full({1}, 6.0f * strength));
  scheduling_head_ =
      register_module("scheduling_head", nn::Linear(h, kPriorityLevels));
  scheduling_action_ =
      register_module("scheduling_action", nn::Embedding(kPriorityLevels, h));
  fusion_head_ = register_module("fusion_head", nn::Linear(h, kPriorityLevels));
}

void GoNetworkImpl::ScalePlacementPriors(float factor) {
  torch::NoGradGuard no_grad;
  placement_prior_gate_->weight.zero_();
  placement_prior_gate_->bias.zero_();
  placement_prior_scale_.mul_(factor);
  heft_prior_scale_.mul_(factor);
  metis_prior_scale_.mul_(factor);
}

void GoNetworkImpl::DisableHeuristicPriors() {
  torch::NoGradGuard no_grad;
  for (torch::Tensor* scale :
       {&placement_prior_scale_, &heft_prior_scale_, &metis_prior_scale_,
        &scheduling_prior_scale_, &fusion_prior_scale_}) {
    scale->zero_();
  }
}

torch::Tensor GoNetworkImpl::RunStack(nn::ModuleList& stack, torch::Tensor x,
                                      const torch::Tensor& g) {
  for (const std::shared_ptr<nn::Module>& layer : *stack) {
    x = layer->as<SegmentAttention>()->forward(x, g);
  }
  return x;
}

NetworkOutput GoNetworkImpl::forward(const FeatureTensors& graph,
                                     const TaskSet& tasks,
                                     const torch::Tensor& fixed_placement) {
  const int64_t n = graph.node.size(0);
  const int64_t d = graph.device.size(0);
  const double scale = 1.0 / std::sqrt(double(options_.model.hidden));
  // Row-wise work over all nodes, in blocks (see ConcatBlocks).
  auto by_rows = [n](const std::function<torch::Tensor(int64_t, int64_t)>& f) {
    return ConcatBlocks(n, kRowBlock, f);
  };
  torch::Tensor x0 = by_rows([&](int64_t begin, int64_t end) {
    return torch::relu(input_->forward(graph.node.slice(0, begin, end)));
  });
  torch::Tensor devices = device_mlp_->forward(graph.device);
  torch::Tensor g = graph_mlp_->forward(
      torch::cat({x0.mean(0), devices.mean(0)}).unsqueeze(0));
  torch::Tensor x = x0;
  for (const std::shared_ptr<nn::Module>& layer : *sage_) {
    x = layer->as<SageLayer>()->forward(x, graph, g);
  }

  NetworkOutput out;
  torch::Tensor device_actions = placement_action_->forward(devices);
  torch::Tensor previous;  // embedding of the decided tasks' actions
  if (tasks.placement) {
    torch::Tensor y = RunStack(placement_stack_, x, g);
    torch::Tensor centers =
        (torch::arange(d, torch::kFloat32) + 0.5) / static_cast<double>(d);
    torch::Tensor gate = placement_prior_gate_->forward(g).squeeze(0).exp();
    out.placement = by_rows([&](int64_t begin, int64_t end) {
      torch::Tensor logits =
          torch::matmul(placement_query_->forward(y.slice(0, begin, end)),
                        devices.t()) *
          scale;
      if (d > 1) {
        torch::Tensor distance =
            (graph.work_position.slice(0, begin, end).unsqueeze(1) -
             centers.unsqueeze(0)) *
            d;
        logits =
            logits - placement_prior_scale_ * gate[0] * distance * distance +
            heft_prior_scale_ * gate[1] * graph.heft_hint.slice(0, begin, end) +
            metis_prior_scale_ * gate[2] *
                graph.metis_hint.slice(0, begin, end);
      }
      logits = logits.masked_fill(
          graph.allowed.slice(0, begin, end).logical_not(), kMaskedLogit);
      return torch::log_softmax(logits, -1);
    });
    previous = by_rows([&](int64_t begin, int64_t end) {
      return torch::matmul(out.placement.slice(0, begin, end).exp(),
                           device_actions);
    });
  } else {
    torch::Tensor placement = fixed_placement.defined()
                                  ? fixed_placement
                                  : torch::zeros({n}, torch::kInt64);
    previous = device_actions.index_select(0, placement);
  }
  if (tasks.scheduling) {
    torch::Tensor y = RunStack(scheduling_stack_, x + previous, g);
    // Distance in levels between each level and the node's upward rank.
    torch::Tensor levels = torch::arange(kPriorityLevels, torch::kFloat32);
    out.scheduling = by_rows([&](int64_t begin, int64_t end) {
      torch::Tensor distance =
          levels.unsqueeze(0) -
          graph.upward_rank.slice(0, begin, end).unsqueeze(1) *
              (kPriorityLevels - 1);
      return torch::log_softmax(
          scheduling_head_->forward(y.slice(0, begin, end)) -
              scheduling_prior_scale_ * distance * distance,
          -1);
    });
    previous = previous + by_rows([&](int64_t begin, int64_t end) {
                 return torch::matmul(out.scheduling.slice(0, begin, end).exp(),
                                      scheduling_action_->weight);
               });
  }
  if (tasks.fusion) {
    torch::Tensor y = RunStack(fusion_stack_, x + previous, g);
    torch::Tensor eagerness =
        torch::arange(kPriorityLevels, torch::kFloat32) / (kPriorityLevels - 1);
    out.fusion = by_rows([&](int64_t begin, int64_t end) {
      return torch::log_softmax(fusion_head_->forward(y.slice(0, begin, end)) +
                                    fusion_prior_scale_ * eagerness,
                                -1);
    });
  }
  return out;
}

absl::Status ApplyGradients(GoNetwork& network,
                            torch::optim::Optimizer& optimizer,
                            const std::function<absl::Status()>& after_backward,
                            double max_grad_norm) {
  if (after_backward) {
    absl::Status reduced = after_backward();
    if (!reduced.ok()) return reduced;
  }
  torch::nn::utils::clip_grad_norm_(network->parameters(), max_grad_norm);
  optimizer.step();
  return absl::OkStatus();
}

}  // namespace gopt::policy::go
