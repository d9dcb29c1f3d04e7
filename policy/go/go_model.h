#ifndef GOPT_POLICY_GO_GO_MODEL_H_
#define GOPT_POLICY_GO_GO_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/go/actions.h"
#include "policy/go/features.h"
#include "policy/policy.h"

namespace gopt::policy::go {

// The architecture of a GO network. A checkpoint records it (as JSON), so
// Load rebuilds the network it saved.
struct GoModelOptions {
  int hidden = 128;          // width of every layer
  int sage_layers = 3;       // GraphSAGE layers of the shared encoder
  int message = 32;          // width of the messages GraphSAGE aggregates
  int attention_layers = 2;  // per task stack
  int attention_dim = 32;    // query/key/value width inside attention
  int heads = 1;             // attention heads (attention_dim % heads == 0)
  int feed_forward = 64;     // width of each attention layer's MLP
  int segment = 256;         // nodes per attention segment
  int graph_embedding = 64;  // width of the FiLM conditioning vector
  // Initial scale of the heads' heuristic priors (network.h), relative to
  // the designed values; 0 starts from the learned scores alone. Only
  // initialisation: a loaded checkpoint carries the trained scales.
  float prior_strength = 1.0f;
  // Adds the co-location head (network.h): per dependency edge, the logit
  // that both ends share a device. Default false: the networks trained
  // before it have none.
  bool co_location_head = false;
  // With the co-location head: its per-dependency hidden layer also reads
  // whether the HEFT hint and the METIS hint (GraphFeatures::heft_device,
  // metis_device) put the dependency's two ends on different devices, so
  // that it can learn which heuristic's cuts to follow on which graph and
  // machine. Default false (every network trained before it).
  bool co_location_hint_cuts = false;
  uint64_t seed = 0;  // parameter initialisation

  // Every field by name, as checkpoints record the architecture:
  // {"hidden": 128, "sage_layers": 3, ..., "seed": 0}.
  nlohmann::json ToJson() const;
  // Reads ToJson's output. InvalidArgument naming the field when `json` is
  // not an object or a field is missing or not a number (prior_strength may
  // be absent: it only initialises; co_location_head and
  // co_location_hint_cuts may be absent, meaning false, and must otherwise
  // be booleans). Ranges are checked by Create and Load.
  static absl::StatusOr<GoModelOptions> FromJson(const nlohmann::json& json);
};

// The multi-task GO network (see network.h for the layers) behind a
// LibTorch-free interface. A GoModel owns its parameters. Run is const and
// safe to call from many threads at once; Save, Load and Clone too. Training
// (PpoTrainer) mutates the parameters and needs exclusive access.
class GoModel {
 public:
  class Impl;  // LibTorch side, defined in network.h

  ~GoModel();
  GoModel(const GoModel&) = delete;
  GoModel& operator=(const GoModel&) = delete;

  // A freshly initialised network (deterministic for options.seed).
  // InvalidArgument for a non-positive width or attention_dim % heads != 0.
  static absl::StatusOr<std::unique_ptr<GoModel>> Create(
      const GoModelOptions& options);

  // Reads a checkpoint written by Save (format version
  // kCheckpointFormatVersion), or by the builds before it (version 2, whose
  // architecture is a positional tensor). NotFound for a missing file;
  // DataLoss for a file that is not a GO checkpoint, has another format
  // version, or whose tensors do not match the recorded architecture (the
  // message names the file and what is wrong).
  static absl::StatusOr<std::unique_ptr<GoModel>> Load(const std::string& path);

  // Writes the checkpoint header (policy/torch_checkpoint.h: format version
  // kCheckpointFormatVersion, options = {"model": options().ToJson(),
  // "node_features": ..., "device_features": ...}) and every parameter.
  // Internal when the file cannot be written.
  absl::Status Save(const std::string& path) const;

  // Resets the graph-conditioned gate of the placement head's heuristic
  // priors (network.h) to 1 and multiplies their learned scales by `factor`
  // (> 0): sampled placements then stray from the heuristics' choices with
  // a few percent probability per node at factor 1, more below 1 (used to
  // make fine-tuning explore). InvalidArgument for factor <= 0; Internal
  // for a LibTorch failure.
  absl::Status ScalePlacementPriors(float factor);

  // Sets the learned scale of every heuristic prior (network.h: placement's
  // expert, HEFT and METIS bonuses, scheduling's upward-rank and fusion's
  // eagerness prior) to 0, so the heads decide from their learned scores
  // alone: the priors-off ablation. The scales stay trainable (training
  // can grow them again). Internal for a LibTorch failure.
  absl::Status DisableHeuristicPriors();

  // Which heuristic placements the placement head's priors read (network.h:
  // the HEFT and METIS bonuses): a hint whose learned scale is 0, as after
  // DisableHeuristicPriors, is not used. ZeroShot decodes the hints in use.
  struct PlacementHints {
    bool heft = false;
    bool metis = false;
  };
  PlacementHints PlacementHintsUsed() const;

  // Adds the co-location head (network.h) to a network that lacks it,
  // freshly initialised (deterministic for options().seed; its last layer
  // is zero, so every logit starts at 0), and sets
  // options().co_location_head, so that Save records it and a trained
  // network without the head can be given one and trained further. A no-op
  // when the head is present. Call it before constructing a trainer over
  // the model (the trainer's optimiser holds the parameters it saw).
  // `hint_cuts` sets options().co_location_hint_cuts for the new head (it
  // is ignored when the head is present). Internal for a LibTorch failure.
  absl::Status EnableCoLocationHead(bool hint_cuts = false);

  // InvalidArgument unless `decay` is in [0, 1): the decays AverageToward
  // takes.
  static absl::Status CheckAverageDecay(double decay);

  // Moves every parameter toward `model`'s: p = decay * p + (1 - decay) *
  // model's p, so that calling it after every update keeps an exponential
  // moving average of the weights a training run visits (expert
  // iteration's ExpertIterationOptions::averaged). InvalidArgument when
  // `decay` is outside [0, 1) or the two networks' parameters differ in
  // names or shapes; Internal for a LibTorch failure.
  absl::Status AverageToward(const GoModel& model, double decay);

  // A deep copy (independent parameters), e.g. for a per-request fine-tune.
  absl::StatusOr<std::unique_ptr<GoModel>> Clone() const;

  // Inference (eval mode, no gradients): per-node log-probabilities of the
  // tasks in `tasks` (layout is ignored), and with the co-location head and
  // placement among the tasks, its per-edge logits (PolicyOutput).
  // `fixed_placement`, when given, is the placement the scheduling and fusion
  // stacks condition on when placement is not decided (otherwise device 0
  // everywhere, the default). InvalidArgument when the features do not match
  // the network's input widths, an edge names a node outside the graph, or
  // `fixed_placement` has the wrong length; Internal for a LibTorch failure.
  absl::StatusOr<PolicyOutput> Run(
      const GraphFeatures& features, const TaskSet& tasks,
      const std::vector<int32_t>* fixed_placement = nullptr) const;

  const GoModelOptions& options() const { return options_; }
  int64_t num_parameters() const;
  Impl& impl() const { return *impl_; }

 private:
  GoModel(const GoModelOptions& options, std::unique_ptr<Impl> impl);

  GoModelOptions options_;
  std::unique_ptr<Impl> impl_;
};

// The checkpoint format Save writes (Load also reads version 2).
inline constexpr int64_t kCheckpointFormatVersion = 3;

// Sets LibTorch's intra-op thread count (process-wide) and keeps OpenBLAS,
// when it is the BLAS, on the calling thread (its own pool on top of
// LibTorch's oversubscribes small hosts; creating or loading a GoModel does
// that too). Inference shares the network's row and segment blocks among
// these threads; training runs them on the calling thread. Set
// OMP_WAIT_POLICY=PASSIVE in the environment on a shared host: spinning OpenMP
// workers burn the cores other processes need.
void SetTorchThreads(int threads);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_GO_MODEL_H_
