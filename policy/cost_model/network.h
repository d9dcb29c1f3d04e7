#ifndef GOPT_POLICY_COST_MODEL_NETWORK_H_
#define GOPT_POLICY_COST_MODEL_NETWORK_H_

// The LibTorch network of the learned cost model. Internal to
// policy/cost_model: only its own translation units and tests include this
// header (it pulls in <torch/torch.h>); everything else uses cost_model.h.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "policy/cost_model/cost_model.h"
#include "policy/graph_sage.h"

namespace gopt::policy::cost_model {

// One segment of a prepared graph as tensors (the whole kept graph when it
// is not segmented).
struct SegmentTensors {
  // (n, kNodeFeatures) sign(x) * log1p(|x|) of the TpuGraphs features.
  torch::Tensor node_features;
  torch::Tensor opcodes;  // (n,) int64
  // The data edges inside the segment, both directions (producers are
  // predecessors, consumers successors), with their mean matrices.
  SageGraph edges;
  // Configurable nodes of the segment: local index and slot in the
  // configuration's node order (int64, same length).
  torch::Tensor config_nodes;
  torch::Tensor config_slots;
  // Slot in the configuration's node order of each node, -1 when the node
  // is not configurable.
  std::vector<int32_t> node_slots;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // data edges inside the segment
  int64_t num_config_nodes = 0;
  // config_slots is 0..k-1 for all k configurable nodes of the graph (one
  // segment): the configuration tensor is used as it is.
  bool config_slots_are_all = false;
};

// Graph-level sums of one segment: (C, 2 * hidden) = [sum over all nodes,
// sum over configurable nodes], and the node counts behind them. Sums of
// segments add up; the head turns the totals into means.
struct SegmentSums {
  torch::Tensor sums;
  double num_nodes = 0;
  double num_config_nodes = 0;
};

// Width of a tile configuration row for models with
// tile_relative_to_default: the configuration's kTileConfigFeatures values,
// the kernel default's, and 1 when the default is known (else 0 and the
// default's values are 0).
inline constexpr int64_t kTileRelativeRowWidth = 2 * kTileConfigFeatures + 1;

// The checkpoint layout CostModelNetImpl::save writes (parameter names):
// 2 since the GraphSAGE layers are SageLayers (policy/graph_sage.h).
inline constexpr int64_t kNetworkFormatVersion = 2;

class CostModelNetImpl : public torch::nn::Module {
 public:
  explicit CostModelNetImpl(const CostModelOptions& options);

  // The configuration-independent input of a segment's nodes: (n, hidden),
  // a linear layer over their features and opcode embedding.
  torch::Tensor NodeInput(const SegmentTensors& segment);

  // Runs the GNN over one segment for a batch of C configurations:
  // `node_input` is NodeInput(segment); `config` is (C, num configurable
  // nodes of the graph, 18) for layout, (C, 24) for tile, or
  // (C, kTileRelativeRowWidth) for tile with tile_relative_to_default.
  SegmentSums Segment(const SegmentTensors& segment,
                      const torch::Tensor& node_input,
                      const torch::Tensor& config);

  // Inference for the layout task: the sums of Segment (equal up to float
  // round-off), computing every distinct node state once. A node's state
  // after layer l depends only on the configuration rows within l hops of
  // it, so across the C configurations most (node, configuration) pairs
  // repeat a state already computed: nodes whose neighbourhood holds no
  // configurable node have one state, a configurable node without edges
  // one per distinct row of its own. Call under torch::NoGradGuard.
  SegmentSums SegmentOfDistinctStates(const SegmentTensors& segment,
                                      const torch::Tensor& node_input,
                                      const torch::Tensor& config);

  // Replaces the parameters with those stored in `archive`, a checkpoint
  // of layout `format_version`: kNetworkFormatVersion, or 1, whose GraphSAGE
  // layers were stored as sage.<l>.{weight,bias} and
  // sage_norms.<l>.{weight,bias} (read here as sage.<l>.combine.* and
  // sage.<l>.norm.*). Throws c10::Error naming the parameter when one is
  // missing or has another shape.
  void LoadParameters(torch::serialize::InputArchive& archive,
                      int64_t format_version);

  // Pooling (means from the summed totals, sum, configurable mean) ->
  // optional cross-configuration attention -> MLP: (C,) scores.
  torch::Tensor Head(const SegmentSums& totals);

 private:
  // (C, k, 18) layout values in -1..5 -> (C, k, hidden): the sum of one
  // learned row per (slot, value); (C, 24) tile bounds -> (C, hidden): a
  // linear layer over their signed log (with tile_relative_to_default, over
  // [signed log, signed log minus the default's, is-default]).
  torch::Tensor EmbedConfig(const torch::Tensor& config);

  CostModelOptions options_;
  torch::nn::Embedding opcode_embedding_{nullptr};
  torch::nn::Linear input_{nullptr};
  torch::nn::EmbeddingBag layout_value_embedding_{nullptr};  // layout task
  torch::nn::Linear config_input_{nullptr};                  // tile task
  torch::nn::ModuleList sage_;                               // SageLayer
  torch::nn::LayerNorm mean_norm_{nullptr};
  torch::nn::LayerNorm sum_norm_{nullptr};
  torch::nn::LayerNorm config_norm_{nullptr};
  torch::nn::Linear pooled_{nullptr};
  torch::nn::MultiheadAttention attention_{nullptr};
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear output_{nullptr};
};
TORCH_MODULE(CostModelNet);

// sign(x) * log1p(|x|): squashes feature products of 1e9 and keeps -1.
torch::Tensor SignedLog(const torch::Tensor& x);

// Ranking losses over the C configurations of one graph (scores: lower =
// predicted faster; runtimes: (C,) double or float). The hinge loss counts
// the pairs whose runtimes differ by more than the relative
// `tie_tolerance`.
torch::Tensor PairwiseHingeLoss(const torch::Tensor& scores,
                                const torch::Tensor& runtimes, double margin,
                                double tie_tolerance = 0);
torch::Tensor ListMleLoss(const torch::Tensor& scores,
                          const torch::Tensor& runtimes);
// Mean squared error between centred scores and centred log runtimes
// divided by `scale`.
torch::Tensor CentredLogRuntimeLoss(const torch::Tensor& scores,
                                    const torch::Tensor& runtimes,
                                    double scale);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_NETWORK_H_
