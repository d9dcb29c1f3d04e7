#ifndef GOPT_TRAINING_GO_DISTILLATION_H_
#define GOPT_TRAINING_GO_DISTILLATION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "policy/go/actions.h"
#include "policy/go/features.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/plan.h"
#include "simulator/topology.h"

// Search distillation (gopt-train only): supervised losses that move a GO
// network toward a plan the plan search found.
namespace gopt::policy::go {

// Per device of `topology`, the lowest index of the devices interchangeable
// with it (the classes CanonicalDevices relabels within: equal profiles and
// equal sorted link bandwidths and latencies). A machine of identical,
// fully linked devices gives all zeros. Thread-safe.
std::vector<int32_t> DeviceClasses(const simulator::Topology& topology);

// Relabels `device` (one device per node) so that devices the topology
// cannot tell apart get labels by order of first use: devices are
// interchangeable when their profiles (peaks, memory, efficiency) and their
// sorted outgoing and incoming link bandwidths and latencies are equal; in
// each such class the device first used in the graph's topological order
// becomes the class's lowest index, the next one the second lowest, and so
// on. Symmetric plans thus give one target. With a `reference` placement
// (one device per node, e.g. the network's own greedy placement; may be
// null) the class's devices are instead matched to the reference's, pairs
// sharing the most nodes first (ties: first use), so that the target is the
// symmetric copy of the plan closest to what the network already does and
// the loss does not fight its heuristic priors over a permutation. The
// identity when a relabelled
// node would land on a device its constraints forbid (`allowed`, row-major
// nodes x devices as GraphFeatures::allowed; may be empty). InvalidArgument
// when `device` does not have one valid device per node.
absl::StatusOr<std::vector<int32_t>> CanonicalDevices(
    const graph::Graph& graph, const simulator::Topology& topology,
    const std::vector<int32_t>& device, const std::vector<uint8_t>& allowed,
    const std::vector<int32_t>* reference = nullptr);

// What the network is trained toward for one instance.
struct DistillTarget {
  const TrainingInstance* instance = nullptr;  // borrowed
  // Placement: the canonical device of every node.
  std::vector<int32_t> device;
  // Scheduling: the plan's priorities (higher runs first; empty when the
  // plan keeps the framework's order: no scheduling target).
  std::vector<int32_t> priority;
  // Fusion: 1 for a node in a fusion group of two or more nodes, else 0
  // (trained as the top level kPriorityLevels - 1 versus level 0).
  std::vector<uint8_t> fused;
  // 1 for a node that can fuse: in a group of two or more when the greedy
  // rules fuse eagerly on the target's devices (GreedyFusionGroups without
  // priorities, by either FusionJoin rule); the only nodes whose fusion
  // level changes the plan.
  std::vector<uint8_t> fusible;
  // Per device of the instance's machine: DeviceClasses (what the
  // co-location loss's class term compares).
  std::vector<int32_t> device_class;
  // Per dependency of the instance's features: the weight of its label in
  // the co-location head's loss (DistillOptions::co_location_head_weight
  // says how). Needed when the network has the head and placement is
  // trained.
  std::vector<float> co_location_weight;
};

// The target for `plan` on `instance`, devices relabelled by
// CanonicalDevices (with `reference`, may be null). InvalidArgument when the
// plan or the reference is not for the instance's graph (a vector of the
// wrong length, a bad device).
absl::StatusOr<DistillTarget> MakeDistillTarget(
    const TrainingInstance& instance, const simulator::Plan& plan,
    const std::vector<int32_t>* reference = nullptr);

// How the placement head is trained toward a target placement.
enum class PlacementLoss {
  // Cross-entropy of each node's canonical target device (see
  // CanonicalDevices): the labels of symmetric devices are a convention.
  kCrossEntropy,
  // CoLocationLoss: depends only on which nodes share a device and on each
  // node's device class, so every relabelling of symmetric devices gives
  // the same loss and no label is the mode of every node.
  kCoLocation,
};

// A pair of node indices.
using NodePair = std::pair<int64_t, int64_t>;

// The co-location placement loss of one graph: with p_i the placement
// distribution of node i (`log_probs`: num_nodes x num_devices log
// probabilities, row-major, as PolicyOutput::placement) and
// P(u, v) = sum_d p_u(d) p_v(d) the probability that u and v share a
// device, the binary cross-entropy of P(u, v) over `pairs`, toward 1 when
// `device` puts u and v on one device and toward 0 otherwise
// (-log(P + 1e-6) or -log(1 - P + 1e-6)), half the mean over the pairs on
// one device plus half the mean over the pairs apart (the plain mean when
// all pairs are of one kind), plus, unless all devices are
// interchangeable, the mean over nodes of -log(c + 1e-6), c being the
// probability the node gives to its target device's class (`device_class`,
// per device: DeviceClasses). InvalidArgument when the sizes do not match
// (log_probs != nodes x devices, a device, class or pair's node out of
// range) or there is no pair; Internal for a LibTorch failure. Thread-safe.
absl::StatusOr<double> CoLocationLoss(const std::vector<float>& log_probs,
                                      const std::vector<int32_t>& device,
                                      const std::vector<int32_t>& device_class,
                                      const std::vector<NodePair>& pairs);

// The pairs the co-location loss compares on one graph: every dependency
// (src, dst) of `features` (GraphFeatures::edge_src/edge_dst), then
// `random_pairs` pairs of distinct nodes drawn with `rng` (none for a graph
// of one node). Deterministic for the generator's state.
std::vector<NodePair> CoLocationPairs(const GraphFeatures& features,
                                      int random_pairs, std::mt19937_64* rng);

struct DistillOptions {
  TaskSet tasks;                // losses for these tasks only
  double learning_rate = 3e-4;  // Adam
  // Adam learning rate of the heads' heuristic-prior scales and the
  // placement prior gate (the parameters named "*prior*", network.h); 0 =
  // learning_rate. Adam moves a parameter by about its learning rate per
  // step whatever the gradient's size, so at gopt-train's 1e-3 a prior scale
  // that starts at 6 moves by at most ~1.4 in 1,400 updates.
  double prior_learning_rate = 0;
  double max_grad_norm = 1.0;    // global gradient-norm clip
  int ranking_pairs = 2048;      // node pairs per graph for the ranking loss
  double scheduling_weight = 1;  // weights of the three losses
  double fusion_weight = 1;
  double placement_weight = 1;
  // The placement loss (default: cross-entropy over canonical labels).
  PlacementLoss placement_loss = PlacementLoss::kCrossEntropy;
  // kCoLocation: random node pairs per graph besides its dependencies.
  int co_location_pairs = 2048;
  // Weight of the co-location head's loss (default 1), added when the model
  // has the head (GoModelOptions::co_location_head) and placement is among
  // the tasks: per dependency edge, the binary cross-entropy of the head's
  // logit toward whether the target puts both ends on one device, the
  // weighted mean over "same" edges and over "cut" edges averaged (one
  // class's mean alone when the target has only that class). An edge's
  // weight is 0 when either end is a free node (no kernel: parameters,
  // constants, reshapes; the co-location decode puts them beside their
  // neighbours, and searched targets scatter them at no cost), else
  // 1 + ln(1 + bytes / 64 KiB).
  double co_location_head_weight = 1;
  // The fusion loss averages over every node (false), or only over the
  // nodes that can fuse (DistillTarget::fusible): a node that cannot fuse
  // gets the same plan at every level, and its "level 0" target teaches the
  // head to break the chains of similar nodes that can.
  bool fusion_fusible_only = false;
  uint64_t seed = 0;  // pair sampling
  // As PpoOptions::after_backward (data-parallel gradient averaging).
  std::function<absl::Status()> after_backward;
};

struct DistillStats {
  // Mean cross-entropy per node, or the co-location loss.
  double placement_loss = 0;
  double scheduling_loss = 0;     // mean pairwise logistic loss
  double fusion_loss = 0;         // mean cross-entropy per node (fusible only)
  double placement_accuracy = 0;  // greedy device == target, fraction
  // The co-location head's loss (DistillOptions::co_location_head_weight,
  // unweighted) and the weighted fraction of edges where (logit > 0)
  // matches the target's "same device"; batch means, 0 without the head or
  // placement.
  double co_location_head_loss = 0;
  double co_location_head_accuracy = 0;
};

// Supervised training of a GoModel toward DistillTargets: per graph the
// placement cross-entropy over canonical devices (node by node), or the
// co-location loss (DistillOptions::placement_loss; scheduling
// and fusion condition on the placement as at inference: the expected
// embedding under the placement head, or the target placement when
// placement is not among the tasks), a pairwise logistic
// ranking loss on the expected scheduling level of random node pairs whose
// target priorities differ (the node that runs first should get the higher
// expected level), and a cross-entropy between "never fuse" (level 0) and
// "fuse eagerly" (top level) for fusion, and with the co-location head its
// balanced edge loss (DistillOptions::co_location_head_weight); one Adam
// step per Step over the batch mean. Borrows `model` (which must outlive it)
// and mutates it; not thread-safe. Deterministic for options.seed.
class DistillationTrainer {
 public:
  DistillationTrainer(GoModel* model, const DistillOptions& options);
  ~DistillationTrainer();
  DistillationTrainer(const DistillationTrainer&) = delete;
  DistillationTrainer& operator=(const DistillationTrainer&) = delete;

  // One update. InvalidArgument for an empty batch or a target whose
  // lengths do not match its instance; Internal for a LibTorch failure; the
  // after_backward hook's error.
  absl::StatusOr<DistillStats> Step(
      const std::vector<const DistillTarget*>& batch);

 private:
  class State;
  GoModel* model_;
  DistillOptions options_;
  uint64_t steps_ = 0;
  std::unique_ptr<State> state_;
};

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_DISTILLATION_H_
