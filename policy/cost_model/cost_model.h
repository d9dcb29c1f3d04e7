#ifndef GOPT_POLICY_COST_MODEL_COST_MODEL_H_
#define GOPT_POLICY_COST_MODEL_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/cost_model/config_group.h"
#include "policy/cost_model/features.h"

namespace gopt::policy::cost_model {

// The architecture of a learned cost model (TpuGraphs style): opcode
// embedding + transformed node features (+ configuration features joined
// early: per configurable node for layout, at every node for tile) ->
// GraphSAGE (mean over producers and consumers separately, residual) ->
// pooling (mean and sum over all nodes, mean over configurable nodes) ->
// optional cross-configuration attention -> MLP -> one score per
// configuration. Stored in checkpoints.
struct CostModelOptions {
  Task task = Task::kLayout;
  int32_t hidden_dim = 32;            // GraphSAGE width
  int32_t opcode_embedding_dim = 16;  // per TpuGraphs opcode id
  int32_t sage_layers = 2;
  // Lets the configurations of one graph in a batch attend to each other
  // (the Kaggle winners' "compare configs" layer). Default on.
  bool cross_config_attention = true;
  // Graph pruning: keep the configurable nodes and their neighbours up to
  // this many hops (edges in either direction); -1 keeps every node. Tile
  // graphs (no configurable nodes) are never pruned. Default 2 (= layers).
  int32_t prune_hops = 2;
  // Graph Segment Training: graphs with more (kept) nodes than this are cut
  // into segments of this many nodes in node order; each segment runs the
  // GNN on its own induced subgraph and the pooled sums are added. 0 = one
  // segment per graph. Default 0.
  int32_t segment_size = 0;
  // Tile task: besides its own 24 features, each configuration is described
  // relative to the kernel's default tile configuration (its signed-log
  // features minus the default's) with an is-default flag, so a model can
  // learn how far from the default a configuration is. Needs the default
  // when scoring (see CostModel::Score); without one the relative part and
  // the flag are 0. Default false (checkpoints without the key read false).
  bool tile_relative_to_default = false;

  nlohmann::json ToJson() const;
  // InvalidArgument naming the field when `json` is malformed or a value
  // is out of range (dims 1..1024, layers 1..8, hops >= -1, segment >= 0).
  static absl::StatusOr<CostModelOptions> FromJson(const nlohmann::json& json);
};

// kHingeListMle is the sum of both losses.
enum class RankingLoss { kPairwiseHinge, kListMle, kHingeListMle };

// "hinge" / "listmle" / "hinge+listmle"; ParseRankingLoss is
// InvalidArgument otherwise.
absl::StatusOr<RankingLoss> ParseRankingLoss(absl::string_view name);
// The name ParseRankingLoss reads.
absl::string_view RankingLossName(RankingLoss loss);

struct TrainOptions {
  RankingLoss loss = RankingLoss::kListMle;
  int32_t steps = 300;
  // Configurations of one graph per step (sampled without replacement).
  int32_t configs_per_step = 16;
  double learning_rate = 2e-3;
  // Hinge margin, in units of the group's log-runtime spread (scores are
  // divided by the standard deviation of the group's log runtimes).
  double hinge_margin = 0.5;
  // Pairs whose runtimes differ by less than this fraction count as tied
  // (measurement noise) in the hinge loss. Default 0.
  double tie_tolerance = 0;
  // Weight of a regression term that pulls centred scores towards centred
  // log runtimes, so scores read as log relative runtimes (predicted
  // gains). Default 0.2.
  double regression_weight = 0.2;
  // GST: chance that a segment other than the one being trained is left out
  // of the graph embedding in a step (its historical embedding unused).
  double segment_dropout = 0.25;
  uint64_t seed = 0;
  // Torch intra-op threads. Default 1: on the 2 shared cores, OpenMP
  // barriers of a second thread cost more than they save on small graphs.
  int32_t num_threads = 1;
};

struct TrainReport {
  int32_t steps = 0;
  double wall_seconds = 0;
  double first_loss = 0;  // mean over the first 10% of steps
  double final_loss = 0;  // mean over the last 10% of steps
};

// How CostModel::Score runs.
struct ScoreOptions {
  // Configurations per pass of the head: cross-configuration attention sees
  // one batch. Default 128.
  int32_t batch_size = 128;
  // The kernel's default tile configuration (kTileConfigFeatures values)
  // for models with tile_relative_to_default, empty when unknown; other
  // models ignore it. Default empty.
  std::vector<float> default_tile_config;
  // Layout models: run the GraphSAGE layers once per distinct node state
  // across the configurations (a node's state after layer l depends only
  // on the configuration rows within l hops of it), sharing the
  // configuration-independent work. The scores equal the plain forward
  // pass over every (node, configuration) pair up to float round-off;
  // false runs that plain pass (for tests and benchmarks). Tile models
  // always run the plain pass. Default true.
  bool distinct_node_states = true;
};

// A graph converted for the network once (pruned, segmented, as tensors),
// then scored under many configurations. Immutable; safe to share between
// threads. Opaque outside the implementation.
class PreparedGraph;

// A learned cost model: scores configurations of a graph, lower = predicted
// faster. Scores of one graph are comparable; with a regression weight > 0
// their differences approximate log runtime ratios. Create or Load one, then
// Train (not thread-safe) or Score (const, thread-safe once trained).
// LibTorch errors are returned as Internal, never thrown.
class CostModel {
 public:
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // A freshly initialised model (weights from `seed`). InvalidArgument for
  // options out of range.
  static absl::StatusOr<std::unique_ptr<CostModel>> Create(
      const CostModelOptions& options, uint64_t seed);

  // Reads a checkpoint written by Save. NotFound when `path` does not exist;
  // InvalidArgument when it is not a cost model checkpoint, has another
  // format version, or its tensors do not match its options.
  static absl::StatusOr<std::unique_ptr<CostModel>> Load(
      const std::string& path);

  // Writes weights, options and format version to `path`. Internal on an
  // I/O failure.
  absl::Status Save(const std::string& path) const;

  const CostModelOptions& options() const;

  // Trains on `groups` (all of the model's task) with a ranking loss over
  // configurations of the same graph. InvalidArgument for an empty set, a
  // group of the other task or an invalid group.
  absl::StatusOr<TrainReport> Train(const std::vector<ConfigGroup>& groups,
                                    const TrainOptions& options);

  // Prunes and segments `graph` for this model. InvalidArgument for an
  // invalid graph.
  absl::StatusOr<std::shared_ptr<const PreparedGraph>> Prepare(
      const FeaturizedGraph& graph) const;

  // Scores `num_configs` configurations (config_features laid out as in
  // ConfigGroup) of a prepared graph. InvalidArgument when a feature count
  // does not match.
  absl::StatusOr<std::vector<double>> Score(
      const PreparedGraph& graph, const std::vector<float>& config_features,
      int32_t num_configs, const ScoreOptions& options = ScoreOptions()) const;

  // Prepare + Score for a whole group (its default configuration, when it
  // has one, as the tile default).
  absl::StatusOr<std::vector<double>> ScoreGroup(
      const ConfigGroup& group) const;

  // Nodes a prepared graph keeps after pruning, and its segment count.
  static int32_t PreparedNodes(const PreparedGraph& graph);
  static int32_t PreparedSegments(const PreparedGraph& graph);

  struct Impl;

 private:
  explicit CostModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The ranking losses on plain vectors (scores: lower = predicted faster),
// for tests and tools: pairwise hinge sums max(0, margin - (s_j - s_i)) over
// pairs with runtime_i < runtime_j, averaged over those pairs; ListMLE is
// the negative log-likelihood of the true fastest-first order under a
// Plackett-Luce model of -score.
double PairwiseHingeLossValue(const std::vector<double>& scores,
                              const std::vector<double>& runtimes,
                              double margin);
double ListMleLossValue(const std::vector<double>& scores,
                        const std::vector<double>& runtimes);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_COST_MODEL_H_
