#include "policy/cost_model/network.h"

#include <vector>

namespace gopt::policy::cost_model {
namespace {

// Layout values are dimension indices 0..5 or -1 (default): 7 classes.
constexpr int64_t kLayoutValueClasses = 7;

}  // namespace

torch::Tensor SignedLog(const torch::Tensor& x) {
  return torch::sign(x) * torch::log1p(torch::abs(x));
}

CostModelNetImpl::CostModelNetImpl(const CostModelOptions& options)
    : options_(options) {
  const int64_t h = options.hidden_dim;
  opcode_embedding_ = register_module(
      "opcode_embedding",
      torch::nn::Embedding(kNumOpcodes, options.opcode_embedding_dim));
  input_ = register_module(
      "input",
      torch::nn::Linear(kNodeFeatures + options.opcode_embedding_dim, h));
  if (options.task == Task::kLayout) {
    // One embedding row per (slot, value): the sum over a node's 18 slots
    // equals a linear layer over their one-hot encoding, without the
    // multiplications by zero.
    layout_value_embedding_ =
        register_module("layout_value_embedding",
                        torch::nn::EmbeddingBag(
                            torch::nn::EmbeddingBagOptions(
                                kLayoutConfigFeatures * kLayoutValueClasses, h)
                                .mode(torch::kSum)));
  } else {
    const int64_t inputs = options.tile_relative_to_default
                               ? 2 * kTileConfigFeatures + 1
                               : kTileConfigFeatures;
    config_input_ =
        register_module("config_input", torch::nn::Linear(inputs, h));
  }
  for (int i = 0; i < options.sage_layers; ++i) {
    sage_->push_back(torch::nn::Linear(3 * h, h));
    sage_norms_->push_back(torch::nn::LayerNorm(
        torch::nn::LayerNormOptions(std::vector<int64_t>{h})));
  }
  register_module("sage", sage_);
  register_module("sage_norms", sage_norms_);
  auto norm = [&](const char* name) {
    return register_module(
        name, torch::nn::LayerNorm(
                  torch::nn::LayerNormOptions(std::vector<int64_t>{h})));
  };
  mean_norm_ = norm("mean_norm");
  sum_norm_ = norm("sum_norm");
  config_norm_ = norm("config_norm");
  pooled_ = register_module("pooled", torch::nn::Linear(3 * h, h));
  if (options.cross_config_attention) {
    attention_ = register_module(
        "attention", torch::nn::MultiheadAttention(
                         torch::nn::MultiheadAttentionOptions(h, /*heads=*/2)));
  }
  hidden_ = register_module("hidden", torch::nn::Linear(h, h));
  output_ = register_module("output", torch::nn::Linear(h, 1));
}

torch::Tensor CostModelNetImpl::EmbedConfig(const torch::Tensor& config) {
  if (options_.task == Task::kTile) {
    if (!options_.tile_relative_to_default) {
      return config_input_(SignedLog(config));
    }
    const torch::Tensor own =
        SignedLog(config.narrow(1, 0, kTileConfigFeatures));
    const torch::Tensor reference =
        SignedLog(config.narrow(1, kTileConfigFeatures, kTileConfigFeatures));
    const torch::Tensor known = config.narrow(1, 2 * kTileConfigFeatures, 1);
    const torch::Tensor is_default =
        known * (own == reference).all(1, /*keepdim=*/true).to(own.dtype());
    return config_input_(
        torch::cat({own, (own - reference) * known, is_default}, 1));
  }
  const torch::Tensor classes =
      (config + 1).round().clamp(0, kLayoutValueClasses - 1).to(torch::kLong);
  const torch::Tensor slot_offsets =
      torch::arange(kLayoutConfigFeatures, torch::kLong) * kLayoutValueClasses;
  // A bag per (config, node) sums its 18 rows without materialising them.
  const torch::Tensor bags =
      (classes + slot_offsets).reshape({-1, kLayoutConfigFeatures});
  return layout_value_embedding_(bags).reshape(
      {config.size(0), config.size(1), -1});
}

SegmentSums CostModelNetImpl::Segment(const SegmentTensors& segment,
                                      const torch::Tensor& config) {
  const int64_t n = segment.num_nodes;
  const int64_t c = config.size(0);
  const int64_t h = options_.hidden_dim;
  const torch::Tensor base = input_(torch::cat(
      {segment.node_features, opcode_embedding_(segment.opcodes)}, 1));
  torch::Tensor x;
  if (options_.task == Task::kTile) {
    x = base.unsqueeze(1) + EmbedConfig(config).unsqueeze(0);
  } else if (segment.num_config_nodes > 0) {
    const torch::Tensor mine =
        segment.config_slots_are_all
            ? config
            : config.index_select(1, segment.config_slots);
    const torch::Tensor joined = EmbedConfig(mine).permute({1, 0, 2});
    x = base.unsqueeze(1).expand({n, c, h}).index_add(0, segment.config_nodes,
                                                      joined);
  } else {
    x = base.unsqueeze(1).expand({n, c, h});
  }
  x = torch::relu(x);
  namespace F = torch::nn::functional;
  for (size_t layer = 0; layer < sage_->size(); ++layer) {
    // W [x, mean of producers, mean of consumers] + b as three products,
    // so the 3h-wide concatenation is never built; a segment without
    // edges has all-zero means and skips them.
    const torch::nn::LinearImpl& linear =
        *sage_[layer]->as<torch::nn::Linear>();
    const torch::Tensor& w = linear.weight;
    torch::Tensor update = F::linear(x, w.narrow(1, 0, h), linear.bias);
    if (segment.num_edges > 0) {
      const torch::Tensor flat = x.reshape({n, c * h});
      update =
          update +
          F::linear(torch::mm(segment.producer_mean, flat).reshape({n, c, h}),
                    w.narrow(1, h, h)) +
          F::linear(torch::mm(segment.consumer_mean, flat).reshape({n, c, h}),
                    w.narrow(1, 2 * h, h));
    }
    x = x + torch::relu(sage_norms_[layer]->as<torch::nn::LayerNorm>()->forward(
                update));
  }
  SegmentSums out;
  torch::Tensor config_sum =
      segment.num_config_nodes > 0
          ? x.index_select(0, segment.config_nodes).sum(0)
          : torch::zeros({c, h}, x.options());
  out.sums = torch::cat({x.sum(0), config_sum}, 1);
  out.num_nodes = static_cast<double>(n);
  out.num_config_nodes = static_cast<double>(segment.num_config_nodes);
  return out;
}

torch::Tensor CostModelNetImpl::Head(const SegmentSums& totals) {
  const int64_t h = options_.hidden_dim;
  const torch::Tensor sum_all = totals.sums.narrow(1, 0, h);
  const torch::Tensor sum_config = totals.sums.narrow(1, h, h);
  const double n = std::max(totals.num_nodes, 1.0);
  const double k = std::max(totals.num_config_nodes, 1.0);
  torch::Tensor g = torch::relu(
      pooled_(torch::cat({mean_norm_(sum_all / n), sum_norm_(sum_all),
                          config_norm_(sum_config / k)},
                         1)));
  if (options_.cross_config_attention) {
    const torch::Tensor seq = g.unsqueeze(1);  // (C, batch 1, h)
    g = g + std::get<0>(attention_(seq, seq, seq)).squeeze(1);
  }
  return output_(torch::relu(hidden_(g))).squeeze(1);
}

torch::Tensor PairwiseHingeLoss(const torch::Tensor& scores,
                                const torch::Tensor& runtimes, double margin,
                                double tie_tolerance) {
  const torch::Tensor rt = runtimes.to(torch::kDouble);
  // faster[i][j]: config i is faster than config j beyond the tolerance.
  const torch::Tensor faster =
      rt.unsqueeze(1) * (1 + tie_tolerance) < rt.unsqueeze(0);
  const torch::Tensor gap = scores.unsqueeze(0) - scores.unsqueeze(1);
  const torch::Tensor violation = torch::relu(margin - gap);
  const torch::Tensor mask = faster.to(scores.dtype());
  const torch::Tensor pairs = mask.sum();
  return (violation * mask).sum() / torch::clamp_min(pairs, 1.0);
}

torch::Tensor ListMleLoss(const torch::Tensor& scores,
                          const torch::Tensor& runtimes) {
  const torch::Tensor order = torch::argsort(runtimes.to(torch::kDouble));
  const torch::Tensor utility = -scores.index_select(0, order);
  const torch::Tensor tail_logsumexp =
      torch::flip(torch::logcumsumexp(torch::flip(utility, {0}), 0), {0});
  return (tail_logsumexp - utility).mean();
}

torch::Tensor CentredLogRuntimeLoss(const torch::Tensor& scores,
                                    const torch::Tensor& runtimes,
                                    double scale) {
  const torch::Tensor log_rt = torch::log(runtimes.to(torch::kDouble));
  const torch::Tensor target =
      ((log_rt - log_rt.mean()) / scale).to(scores.dtype());
  return torch::mse_loss(scores - scores.mean(), target);
}

}  // namespace gopt::policy::cost_model
