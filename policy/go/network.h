#ifndef GOPT_POLICY_GO_NETWORK_H_
#define GOPT_POLICY_GO_NETWORK_H_

// The LibTorch modules of the GO network. Only the policy/go .cc files that
// need LibTorch include this header; everything else uses go_model.h.

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "policy/go/features.h"
#include "policy/go/go_model.h"
#include "policy/graph_sage.h"
#include "policy/policy.h"

namespace gopt::policy::go {

// GraphFeatures as tensors (CPU).
struct FeatureTensors {
  torch::Tensor node;           // [N, F] float
  torch::Tensor device;         // [D, Fd] float
  SageGraph edges;              // the dependencies, both directions
  torch::Tensor edge_src;       // [E] int64: GraphFeatures::edge_src
  torch::Tensor edge_dst;       // [E] int64: GraphFeatures::edge_dst
  torch::Tensor allowed;        // [N, D] bool
  torch::Tensor work_position;  // [N] float
  torch::Tensor upward_rank;    // [N] float
  torch::Tensor heft_hint;      // [N, D] float: 1 at HEFT's device
  torch::Tensor metis_hint;     // [N, D] float: 1 at METIS's device
};

// The tensors of `features`, copied. Throws c10::Error (SageGraph::FromEdges)
// for an edge naming a node outside the graph; GoModel::Run checks the
// features first.
FeatureTensors ToTensors(const GraphFeatures& features);

// Per task, [N, actions] log-probabilities (undefined for tasks not run).
struct NetworkOutput {
  torch::Tensor placement;
  torch::Tensor scheduling;
  torch::Tensor fusion;
  // [E] logits, one per dependency edge (FeatureTensors::edge_src/edge_dst
  // order), that both ends share a device; undefined without the
  // co-location head or when placement is not run.
  torch::Tensor co_location;
};

// Width of the co-location head's node embedding and hidden layer.
inline constexpr int64_t kCoLocationWidth = 32;

// The co-location head: z = Linear(hidden, 32)(y) per node from the
// placement stack's output y; per edge (u, v) the features
// [z_u * z_v, |z_u - z_v|] (symmetric in u and v) -> Linear(64, 32) -> ReLU
// -> Linear(32, 1) = the logit that u and v share a device. The last layer
// starts at zero (weight and bias), so an untrained head gives logit 0
// (probability 1/2) on every edge. With `hint_cuts`
// (GoModelOptions::co_location_hint_cuts) the hidden layer reads the edge's
// two hint-cut flags too (Linear(66, 32)). Edges are processed in row
// blocks (ConcatRowBlocks). Not thread-safe while training.
class CoLocationHeadImpl : public torch::nn::Module {
 public:
  CoLocationHeadImpl(int64_t hidden, bool hint_cuts);
  // y: [N, hidden]; src, dst: [E] int64 node indices; hint_cuts: [E, 2],
  // 1 where the HEFT (column 0) or METIS (column 1) hint cuts the edge
  // (read only with `hint_cuts`; may be undefined without). Returns
  // [E] logits.
  torch::Tensor forward(const torch::Tensor& y, const torch::Tensor& src,
                        const torch::Tensor& dst,
                        const torch::Tensor& hint_cuts);

 private:
  bool hint_cuts_;
  torch::nn::Linear embed_{nullptr};
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear output_{nullptr};
};
TORCH_MODULE(CoLocationHead);

// One segment-recurrent attention layer (Transformer-XL style): nodes in
// topological order are cut into segments of `segment`; each segment attends
// to itself and to the previous segment's layer input (the memory, detached:
// no gradient flows through it). All segments run as one batch (in chunks to
// bound memory), since the memory of segment s is known from the previous
// layer; keys and values are projected once per node and the memory's are
// the previous segment's. Attention runs at attention_dim (< hidden keeps
// 80,000-node graphs fast). Post-norm residual blocks; FiLM on the
// feed-forward output.
struct SegmentAttentionOptions {
  SegmentAttentionOptions(int64_t hidden, int64_t attention_dim, int64_t heads,
                          int64_t feed_forward, int64_t segment,
                          int64_t condition)
      : hidden_(hidden),
        attention_dim_(attention_dim),
        heads_(heads),
        feed_forward_(feed_forward),
        segment_(segment),
        condition_(condition) {}
  TORCH_ARG(int64_t, hidden);
  TORCH_ARG(int64_t, attention_dim);
  TORCH_ARG(int64_t, heads);
  TORCH_ARG(int64_t, feed_forward);
  TORCH_ARG(int64_t, segment);
  TORCH_ARG(int64_t, condition);
};

class SegmentAttentionImpl : public torch::nn::Module {
 public:
  explicit SegmentAttentionImpl(const SegmentAttentionOptions& options);
  // x: [N, hidden] in topological order; g: [1, condition].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& g);

 private:
  SegmentAttentionOptions options_;
  torch::nn::Linear query_{nullptr};
  torch::nn::Linear key_value_{nullptr};
  torch::nn::Linear output_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr};
  torch::nn::Linear ff1_{nullptr};
  torch::nn::Linear ff2_{nullptr};
  torch::nn::LayerNorm norm2_{nullptr};
  Film film_{nullptr};
};
TORCH_MODULE(SegmentAttention);

// The whole GO network:
//   node features -> linear + ReLU -> 3 GraphSAGE layers (shared encoder);
//   graph embedding g = MLP(mean over nodes of the input projection, mean
//   over devices of the device embeddings) conditions every layer by FiLM;
//   per task a stack of SegmentAttention layers; task order placement ->
//   scheduling -> fusion, each stack's input being the encoder output plus
//   the embedding of the previous tasks' actions (the expected embedding
//   under the previous head's distribution, so one forward pass serves every
//   sampled plan; a fixed placement is embedded exactly);
//   heads: placement logits = node query . device embedding / sqrt(hidden)
//   masked by device constraints; scheduling and fusion: 16 priority
//   levels. Each head adds heuristic priors with learned scales, so that
//   an untrained network starts near the classic heuristics + critical-path
//   scheduling + greedy fusion and PPO refines from there: placement
//   favours the device whose share of the cumulative work axis holds the
//   node (expert), the device HEFT chooses and the device METIS chooses,
//   the three weighted by learned scales times a gate computed from the
//   graph embedding (so the policy learns which heuristic to trust for
//   which graph and machine); scheduling favours the level matching the
//   node's upward rank; fusion favours high (eager) levels;
//   with GoModelOptions::co_location_head, the co-location head (above,
//   registered as "co_location") on the placement stack's output.
struct GoNetworkOptions {
  GoModelOptions model;
  int64_t node_features = 0;
  int64_t device_features = 0;
};

class GoNetworkImpl : public torch::nn::Module {
 public:
  explicit GoNetworkImpl(const GoNetworkOptions& options);

  // Runs the stacks of `tasks`. `fixed_placement` ([N] int64, or undefined)
  // is what scheduling and fusion condition on when placement is not run.
  NetworkOutput forward(const FeatureTensors& graph, const TaskSet& tasks,
                        const torch::Tensor& fixed_placement);

  const GoNetworkOptions& options() const { return options_; }

  // See GoModel::ScalePlacementPriors.
  void ScalePlacementPriors(float factor);

  // See GoModel::DisableHeuristicPriors.
  void DisableHeuristicPriors();

  // See GoModel::PlacementHintsUsed.
  bool heft_prior_on() const;
  bool metis_prior_on() const;

  // Registers the co-location head when absent (drawing its initial
  // parameters from LibTorch's global generator: the caller seeds it), with
  // the hint inputs when `hint_cuts`, and sets options().model's
  // co_location_head and co_location_hint_cuts. A no-op when present.
  void AddCoLocationHead(bool hint_cuts);

  // Whether the co-location head is registered.
  bool has_co_location_head() const { return !co_location_.is_empty(); }

 private:
  torch::Tensor RunStack(torch::nn::ModuleList& stack, torch::Tensor x,
                         const torch::Tensor& g);

  GoNetworkOptions options_;
  torch::nn::Linear input_{nullptr};
  torch::nn::ModuleList sage_;
  torch::nn::Sequential device_mlp_{nullptr};
  torch::nn::Sequential graph_mlp_{nullptr};
  torch::nn::ModuleList placement_stack_;
  torch::nn::ModuleList scheduling_stack_;
  torch::nn::ModuleList fusion_stack_;
  torch::nn::Linear placement_query_{nullptr};
  torch::nn::Linear placement_action_{nullptr};
  torch::Tensor placement_prior_scale_;
  torch::Tensor heft_prior_scale_;
  torch::Tensor metis_prior_scale_;
  torch::nn::Linear placement_prior_gate_{nullptr};
  torch::nn::Linear scheduling_head_{nullptr};
  torch::Tensor scheduling_prior_scale_;
  torch::Tensor fusion_prior_scale_;
  torch::nn::Embedding scheduling_action_{nullptr};
  torch::nn::Linear fusion_head_{nullptr};
  CoLocationHead co_location_{nullptr};  // null without the head
};
TORCH_MODULE(GoNetwork);

// The LibTorch side of GoModel.
class GoModel::Impl {
 public:
  explicit Impl(GoNetwork network) : network(std::move(network)) {}
  GoNetwork network;
};

// One optimiser update after a training step's backward passes: calls
// `after_backward` (may be empty; data-parallel training averages the
// gradients over its ranks there), clips the gradients of `network` to
// global norm `max_grad_norm`, steps `optimizer`. Returns after_backward's
// error with nothing clipped or stepped. LibTorch errors are thrown
// (c10::Error) for the caller's catch. Not thread-safe.
absl::Status ApplyGradients(GoNetwork& network,
                            torch::optim::Optimizer& optimizer,
                            const std::function<absl::Status()>& after_backward,
                            double max_grad_norm);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_NETWORK_H_
