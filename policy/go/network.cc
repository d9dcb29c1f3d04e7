#include "policy/go/network.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/go/actions.h"
#include "policy/torch_util.h"

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

// Rows per block of row-wise work (ConcatRowBlocks) and of the GraphSAGE
// layers.
constexpr int64_t kRowBlock = 2048;

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

// [E, 2] float: 1 where the HEFT hint (column 0) or the METIS hint (column
// 1) puts the two ends of dependency e on different devices; 0 where it
// keeps them together or leaves an end unplaced (a row of zeros).
torch::Tensor HintCuts(const FeatureTensors& graph) {
  std::vector<torch::Tensor> columns;
  for (const torch::Tensor* hint : {&graph.heft_hint, &graph.metis_hint}) {
    const torch::Tensor src = hint->index_select(0, graph.edge_src);
    const torch::Tensor dst = hint->index_select(0, graph.edge_dst);
    const torch::Tensor placed = src.sum(1).gt(0).logical_and(dst.sum(1).gt(0));
    columns.push_back(
        placed.logical_and((src * dst).sum(1).eq(0)).to(torch::kFloat32));
  }
  return torch::stack(columns, 1);
}

}  // namespace

FeatureTensors ToTensors(const GraphFeatures& features) {
  const int64_t n = features.num_nodes;
  const int64_t d = features.num_devices;
  FeatureTensors t;
  t.node = FromFloats(features.node, n, NumNodeFeatures());
  t.device = FromFloats(features.device, d, NumDeviceFeatures());
  t.edges = SageGraph::FromEdges(features.edge_src, features.edge_dst, n,
                                 /*with_mean_matrix=*/false);
  t.edge_src = torch::tensor(features.edge_src, torch::kInt64);
  t.edge_dst = torch::tensor(features.edge_dst, torch::kInt64);
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
      ConcatRowBlocks(segments, kSegmentChunk, [&](int64_t begin, int64_t end) {
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

CoLocationHeadImpl::CoLocationHeadImpl(int64_t hidden, bool hint_cuts)
    : hint_cuts_(hint_cuts) {
  embed_ = register_module("embed", nn::Linear(hidden, kCoLocationWidth));
  hidden_ = register_module(
      "hidden",
      nn::Linear(2 * kCoLocationWidth + (hint_cuts ? 2 : 0), kCoLocationWidth));
  output_ = register_module("output", nn::Linear(kCoLocationWidth, 1));
  // Zero: an untrained head says "no opinion" (logit 0) on every edge, so a
  // decode weighting edges by it starts from its unweighted form.
  torch::NoGradGuard no_grad;
  output_->weight.zero_();
  output_->bias.zero_();
}

torch::Tensor CoLocationHeadImpl::forward(const torch::Tensor& y,
                                          const torch::Tensor& src,
                                          const torch::Tensor& dst,
                                          const torch::Tensor& hint_cuts) {
  const int64_t edges = src.size(0);
  if (edges == 0) return torch::zeros({0}, y.options());
  const torch::Tensor z =
      ConcatRowBlocks(y.size(0), kRowBlock, [&](int64_t begin, int64_t end) {
        return embed_->forward(y.slice(0, begin, end));
      });
  return ConcatRowBlocks(edges, kRowBlock, [&](int64_t begin, int64_t end) {
    const torch::Tensor z_u = z.index_select(0, src.slice(0, begin, end));
    const torch::Tensor z_v = z.index_select(0, dst.slice(0, begin, end));
    std::vector<torch::Tensor> pair = {z_u * z_v, (z_u - z_v).abs()};
    if (hint_cuts_) pair.push_back(hint_cuts.slice(0, begin, end));
    return output_->forward(torch::relu(hidden_->forward(torch::cat(pair, 1))))
        .squeeze(1);
  });
}

GoNetworkImpl::GoNetworkImpl(const GoNetworkOptions& options)
    : options_(options) {
  const GoModelOptions& m = options.model;
  const int64_t h = m.hidden;
  const int64_t c = m.graph_embedding;
  input_ = register_module("input", nn::Linear(options.node_features, h));
  sage_ = register_module("sage", nn::ModuleList());
  for (int i = 0; i < m.sage_layers; ++i) {
    // Messages of m.message features; mean and max over each direction,
    // concatenated with the node's state; Linear + ReLU, FiLM, residual +
    // LayerNorm. Narrow messages keep a layer at O(N * hidden * (hidden +
    // 4 * message)) multiply-adds instead of O(N * 5 * hidden^2).
    sage_->push_back(SageLayer(SageLayerOptions(h)
                                   .message(m.message)
                                   .max(true)
                                   .condition(c)
                                   .activation(SageActivation::kRelu)
                                   .norm(SageNorm::kAfterResidual)
                                   .row_block(kRowBlock)));
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
  if (m.co_location_head) {
    co_location_ = register_module("co_location",
                                   CoLocationHead(h, m.co_location_hint_cuts));
  }
}

void GoNetworkImpl::AddCoLocationHead(bool hint_cuts) {
  if (has_co_location_head()) return;
  co_location_ = register_module(
      "co_location", CoLocationHead(options_.model.hidden, hint_cuts));
  options_.model.co_location_head = true;
  options_.model.co_location_hint_cuts = hint_cuts;
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

bool GoNetworkImpl::heft_prior_on() const {
  return heft_prior_scale_.item<float>() != 0;
}

bool GoNetworkImpl::metis_prior_on() const {
  return metis_prior_scale_.item<float>() != 0;
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
  // Row-wise work over all nodes, in blocks (see ConcatRowBlocks).
  auto by_rows = [n](const std::function<torch::Tensor(int64_t, int64_t)>& f) {
    return ConcatRowBlocks(n, kRowBlock, f);
  };
  torch::Tensor x0 = by_rows([&](int64_t begin, int64_t end) {
    return torch::relu(input_->forward(graph.node.slice(0, begin, end)));
  });
  torch::Tensor devices = device_mlp_->forward(graph.device);
  torch::Tensor g = graph_mlp_->forward(
      torch::cat({x0.mean(0), devices.mean(0)}).unsqueeze(0));
  torch::Tensor x = x0;
  for (const std::shared_ptr<nn::Module>& layer : *sage_) {
    x = layer->as<SageLayer>()->forward(x, graph.edges, g);
  }

  NetworkOutput out;
  torch::Tensor device_actions = placement_action_->forward(devices);
  torch::Tensor previous;  // embedding of the decided tasks' actions
  if (tasks.placement) {
    torch::Tensor y = RunStack(placement_stack_, x, g);
    if (has_co_location_head()) {
      // The hints' cuts, derived here only for a head that reads them.
      out.co_location = co_location_->forward(
          y, graph.edge_src, graph.edge_dst,
          options_.model.co_location_hint_cuts ? HintCuts(graph)
                                               : torch::Tensor());
    }
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
