#include "policy/cost_model/network.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gopt::policy::cost_model {
namespace {

// Layout values are dimension indices 0..5 or -1 (default): 7 classes.
constexpr int64_t kLayoutValueClasses = 7;

// The class EmbedConfig gives a layout value: round(v + 1) clamped to 0..6
// (round half to even, as torch::round).
int64_t LayoutValueClass(float value) {
  const float rounded = std::nearbyint(value + 1.0f);
  return static_cast<int64_t>(
      std::clamp(rounded, 0.0f, static_cast<float>(kLayoutValueClasses - 1)));
}

// Node states of one segment under C configurations: of[i * C + c] is the
// id of node i's state under configuration c; state s belongs to node
// node[s] and configuration config[s] is one that has it.
struct NodeStates {
  std::vector<int32_t> of;
  std::vector<int32_t> node;
  std::vector<int64_t> config;
};

// Layer-0 states: one per node that is not configurable, one per distinct
// (class-rounded) configuration row of a configurable node. `config` is
// (C, k, kLayoutConfigFeatures), contiguous.
NodeStates InitialStates(const SegmentTensors& segment,
                         const torch::Tensor& config) {
  const int64_t n = segment.num_nodes;
  const int64_t c = config.size(0);
  const int64_t k = config.size(1);
  const float* values = config.data_ptr<float>();
  NodeStates states;
  states.of.resize(n * c);
  // A row's 18 classes (3 bits each) as one key.
  absl::flat_hash_map<uint64_t, int32_t> row_state;
  for (int64_t i = 0; i < n; ++i) {
    int32_t* of = states.of.data() + i * c;
    const int32_t slot = segment.node_slots[i];
    if (slot < 0) {
      std::fill_n(of, c, static_cast<int32_t>(states.node.size()));
      states.node.push_back(static_cast<int32_t>(i));
      states.config.push_back(0);
      continue;
    }
    row_state.clear();
    for (int64_t j = 0; j < c; ++j) {
      const float* row = values + (j * k + slot) * kLayoutConfigFeatures;
      uint64_t key = 0;
      for (int64_t f = 0; f < kLayoutConfigFeatures; ++f) {
        key = key << 3 | static_cast<uint64_t>(LayoutValueClass(row[f]));
      }
      const auto [it, inserted] =
          row_state.try_emplace(key, static_cast<int32_t>(states.node.size()));
      if (inserted) {
        states.node.push_back(static_cast<int32_t>(i));
        states.config.push_back(j);
      }
      of[j] = it->second;
    }
  }
  return states;
}

// The states after one more GraphSAGE layer: node i's new state under
// configuration j is determined by its own state and those of its
// producers and consumers (in list order) under j. The tuple is folded
// pairwise into ids (a fold id is fresh per node and pair, and above every
// old state id, so equal final ids mean equal tuples of the same node).
NodeStates NextStates(const SegmentTensors& segment, const NodeStates& states,
                      int64_t c) {
  const int64_t n = segment.num_nodes;
  NodeStates next;
  next.of.resize(n * c);
  // interned[t]: the new state of chain id t, -1 until seen.
  std::vector<int32_t> interned(states.node.size(), -1);
  absl::flat_hash_map<uint64_t, int32_t> fold;
  auto fold_in = [&](int64_t chain, int32_t state) -> int64_t {
    const uint64_t key =
        static_cast<uint64_t>(chain) << 32 | static_cast<uint32_t>(state);
    const auto [it, inserted] =
        fold.try_emplace(key, static_cast<int32_t>(interned.size()));
    if (inserted) interned.push_back(-1);
    return it->second;
  };
  for (int64_t i = 0; i < n; ++i) {
    const Neighbours& in = segment.edges.predecessors;
    const Neighbours& out = segment.edges.successors;
    const int64_t* producers = in.neighbour.data_ptr<int64_t>() + in.offsets[i];
    const int64_t num_producers = in.offsets[i + 1] - in.offsets[i];
    const int64_t* consumers =
        out.neighbour.data_ptr<int64_t>() + out.offsets[i];
    const int64_t num_consumers = out.offsets[i + 1] - out.offsets[i];
    fold.clear();
    for (int64_t j = 0; j < c; ++j) {
      int64_t chain = states.of[i * c + j];
      for (int64_t p = 0; p < num_producers; ++p) {
        chain = fold_in(chain, states.of[producers[p] * c + j]);
      }
      for (int64_t q = 0; q < num_consumers; ++q) {
        chain = fold_in(chain, states.of[consumers[q] * c + j]);
      }
      int32_t& id = interned[chain];
      if (id < 0) {
        id = static_cast<int32_t>(next.node.size());
        next.node.push_back(static_cast<int32_t>(i));
        next.config.push_back(j);
      }
      next.of[i * c + j] = id;
    }
  }
  return next;
}

// For MeanOfRows: the rows of `x` (the rows of `states`) that next state
// u averages over `neighbours` (producers or consumers): the states of its
// node's neighbours under u's configuration, in list order.
void NeighbourRows(const Neighbours& neighbours, const NodeStates& states,
                   const NodeStates& next, int64_t c,
                   std::vector<int64_t>* offsets, std::vector<int32_t>* rows) {
  const int64_t* list = neighbours.neighbour.data_ptr<int64_t>();
  const int64_t u = static_cast<int64_t>(next.node.size());
  offsets->assign(1, 0);
  offsets->reserve(u + 1);
  rows->clear();
  for (int64_t s = 0; s < u; ++s) {
    const int32_t node = next.node[s];
    for (int64_t e = neighbours.offsets[node]; e < neighbours.offsets[node + 1];
         ++e) {
      rows->push_back(states.of[list[e] * c + next.config[s]]);
    }
    offsets->push_back(static_cast<int64_t>(rows->size()));
  }
}

torch::Tensor LongTensor(const std::vector<int32_t>& values) {
  return torch::tensor(std::vector<int64_t>(values.begin(), values.end()),
                       torch::kLong);
}

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
  // x + ReLU(LayerNorm(W [x, producers' mean, consumers' mean] + b)), the
  // product split by column block (inputs are batched over configurations).
  for (int i = 0; i < options.sage_layers; ++i) {
    sage_->push_back(SageLayer(SageLayerOptions(h)
                                   .message(0)
                                   .max(false)
                                   .condition(0)
                                   .activation(SageActivation::kRelu)
                                   .norm(SageNorm::kInBranch)
                                   .split_products(true)));
  }
  register_module("sage", sage_);
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

torch::Tensor CostModelNetImpl::NodeInput(const SegmentTensors& segment) {
  return input_(torch::cat(
      {segment.node_features, opcode_embedding_(segment.opcodes)}, 1));
}

SegmentSums CostModelNetImpl::Segment(const SegmentTensors& segment,
                                      const torch::Tensor& node_input,
                                      const torch::Tensor& config) {
  const int64_t n = segment.num_nodes;
  const int64_t c = config.size(0);
  const int64_t h = options_.hidden_dim;
  const torch::Tensor& base = node_input;
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
  for (const std::shared_ptr<torch::nn::Module>& layer : *sage_) {
    // A segment without edges has all-zero means: they are skipped.
    std::vector<torch::Tensor> means(2);
    if (segment.num_edges > 0) {
      means = {MeanByMatrix(x, segment.edges.predecessors),
               MeanByMatrix(x, segment.edges.successors)};
    }
    x = layer->as<SageLayer>()->Update(x, means, torch::Tensor());
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

SegmentSums CostModelNetImpl::SegmentOfDistinctStates(
    const SegmentTensors& segment, const torch::Tensor& node_input,
    const torch::Tensor& config) {
  const int64_t n = segment.num_nodes;
  const int64_t c = config.size(0);
  const int64_t h = options_.hidden_dim;
  const torch::Tensor layout = config.contiguous();
  NodeStates states = InitialStates(segment, layout);
  // Layer 0: the node input, plus at configurable nodes their row's
  // embedding (the same sums EmbedConfig forms).
  torch::Tensor x = node_input.index_select(0, LongTensor(states.node));
  std::vector<int64_t> joined;
  std::vector<int64_t> bags;
  const float* values = layout.data_ptr<float>();
  for (size_t s = 0; s < states.node.size(); ++s) {
    const int32_t slot = segment.node_slots[states.node[s]];
    if (slot < 0) continue;
    joined.push_back(static_cast<int64_t>(s));
    const float* row = values + (states.config[s] * layout.size(1) + slot) *
                                    kLayoutConfigFeatures;
    for (int64_t f = 0; f < kLayoutConfigFeatures; ++f) {
      bags.push_back(f * kLayoutValueClasses + LayoutValueClass(row[f]));
    }
  }
  if (!joined.empty()) {
    const int64_t m = static_cast<int64_t>(joined.size());
    x = x.index_add(0, torch::tensor(joined, torch::kLong),
                    layout_value_embedding_(
                        torch::tensor(bags, torch::kLong).reshape({m, -1})));
  }
  x = torch::relu(x);
  std::vector<int64_t> mean_offsets;
  std::vector<int32_t> mean_rows;
  for (const std::shared_ptr<torch::nn::Module>& layer : *sage_) {
    NodeStates next = NextStates(segment, states, c);
    std::vector<int64_t> own(next.node.size());
    for (size_t s = 0; s < own.size(); ++s) {
      own[s] = states.of[next.node[s] * c + next.config[s]];
    }
    const torch::Tensor self =
        x.index_select(0, torch::tensor(own, torch::kLong));
    std::vector<torch::Tensor> means(2);
    if (segment.num_edges > 0) {
      x = x.contiguous();
      NeighbourRows(segment.edges.predecessors, states, next, c, &mean_offsets,
                    &mean_rows);
      means[0] = MeanOfRows(x, mean_offsets, mean_rows);
      NeighbourRows(segment.edges.successors, states, next, c, &mean_offsets,
                    &mean_rows);
      means[1] = MeanOfRows(x, mean_offsets, mean_rows);
    }
    x = layer->as<SageLayer>()->Update(self, means, torch::Tensor());
    states = std::move(next);
  }
  // Pooling: per configuration, the sums of its nodes' final states (all
  // nodes, configurable nodes).
  x = x.contiguous();
  const float* rows = x.data_ptr<float>();
  SegmentSums out;
  out.sums = torch::zeros({c, 2 * h}, x.options());
  float* sums = out.sums.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const bool configurable = segment.node_slots[i] >= 0;
    for (int64_t j = 0; j < c; ++j) {
      const float* row = rows + static_cast<int64_t>(states.of[i * c + j]) * h;
      float* all = sums + j * 2 * h;
      for (int64_t d = 0; d < h; ++d) all[d] += row[d];
      if (!configurable) continue;
      float* mine = all + h;
      for (int64_t d = 0; d < h; ++d) mine[d] += row[d];
    }
  }
  out.num_nodes = static_cast<double>(n);
  out.num_config_nodes = static_cast<double>(segment.num_config_nodes);
  return out;
}

void CostModelNetImpl::LoadParameters(torch::serialize::InputArchive& archive,
                                      int64_t format_version) {
  TORCH_CHECK(format_version == 1 || format_version == kNetworkFormatVersion,
              "cost model parameters of layout ", format_version);
  auto load = [&](const std::string& name, torch::Tensor& tensor,
                  bool is_buffer) {
    std::vector<std::string> path = absl::StrSplit(name, '.');
    // Layout 1: sage.<l>.combine.<p> was sage.<l>.<p>, sage.<l>.norm.<p>
    // was sage_norms.<l>.<p>.
    if (format_version == 1 && path.size() == 4 && path[0] == "sage") {
      if (path[2] == "norm") path[0] = "sage_norms";
      path.erase(path.begin() + 2);
    }
    std::vector<torch::serialize::InputArchive> levels(path.size() - 1);
    torch::serialize::InputArchive* level = &archive;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      level->read(path[i], levels[i]);
      level = &levels[i];
    }
    const std::vector<int64_t> shape = tensor.sizes().vec();
    level->read(path.back(), tensor, is_buffer);
    TORCH_CHECK(tensor.sizes().vec() == shape, "parameter '",
                absl::StrJoin(path, "."), "' has shape ", tensor.sizes(),
                ", the model's options give ", c10::IntArrayRef(shape));
  };
  for (auto& item : named_parameters()) load(item.key(), item.value(), false);
  for (auto& item : named_buffers()) load(item.key(), item.value(), true);
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
