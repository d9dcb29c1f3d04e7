#ifndef GOPT_TRAINING_TRAIN_COMMANDS_H_
#define GOPT_TRAINING_TRAIN_COMMANDS_H_

// The `gopt-train` commands: one Options struct and one
// `absl::Status RunX(const XOptions&, std::ostream& out)` body each (filled
// by ParseTrainCli, training/train_command_line.h, or by a test). Reports go
// to `out`, progress to std::cerr. Errors are the Status of the step that
// failed. Training only (gopt-train); not linked into the server. Each call
// is independent, but LibTorch's thread count is process-wide: run one at a
// time.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "training/cost_model/experiments.h"

namespace gopt::policy {

// What every GO command shares: the tasks decided, PPO's sampling and
// optimiser, threads and the seed.
struct GoTrainingOptions {
  // placement, scheduling, fusion.
  std::vector<std::string> tasks = {"placement", "scheduling", "fusion"};
  int samples = 16;             // plans sampled per graph per PPO step
  int epochs = 2;               // PPO epochs per batch of samples
  double learning_rate = 5e-4;  // Adam
  double entropy_coef = 0.001;  // PPO entropy bonus
  int simulation_threads = 2;   // parallel simulations
  int torch_threads = 2;        // LibTorch intra-op threads (--threads)
  uint64_t seed = 1;            // initialisation, sampling, batches
};

// The default topologies of pretrain and eval.
inline const std::vector<std::string>& DefaultTrainingTopologies() {
  static const auto* const kTopologies = new std::vector<std::string>{
      "v100x4-nvlink", "h100x8-nvlink", "v100x2-pcie", "a100x8-nvlink"};
  return *kTopologies;
}

// The shipped GO policy, relative to the source tree: the default of
// --policy_dir.
inline constexpr char kDefaultGoPolicyDir[] =
    "policy/pretrained/go-multitask-v2";

// gopt-train pretrain: PPO over the generated + real-graph corpus ->
// checkpoint, card.json and train.csv in out_dir.
struct PretrainCommandOptions {
  GoTrainingOptions go;
  std::string out_dir;                      // required
  std::string data_dir = "../shared/data";  // real graphs (held-out skipped)
  std::vector<std::string> topologies = DefaultTrainingTopologies();
  int max_nodes = 8000;       // largest graph trained on
  int max_steps = 100000;     // PPO steps
  double max_seconds = 2400;  // wall-clock budget
  int graphs_per_step = 2;    // graphs per PPO update
  int pool_size = 8;          // graphs in the current pool
  int switch_every = 25;      // steps between pool switches
  int checkpoint_every = 50;  // steps between saves
  int hidden = 128;           // network width
  int attention_layers = 2;   // layers per task stack
  std::string csv;            // "" = out_dir/train.csv
  std::string command_line;   // recorded in the card
};
absl::Status RunPretrain(const PretrainCommandOptions& options,
                         std::ostream& out);

// gopt-train finetune: PPO on one graph from a pre-trained policy.
struct FinetuneCommandOptions {
  GoTrainingOptions go;
  std::string policy_dir = kDefaultGoPolicyDir;
  std::string graph;  // a graph file or gen:PRESET (required)
  std::vector<std::string> topologies = DefaultTrainingTopologies();  // 1st
  int max_steps = 100000;
  double max_seconds = 2400;
  std::string csv;  // "" = no training log
  // Resets the placement priors' gate and multiplies their learned scales
  // by this before fine-tuning (below 1 = samples stray further).
  double placement_prior_factor = 1.0;
  int search_simulations = 512;  // plans searched per PPO step (>= 0)
  // --reward: "simulated" (default: PPO's rewards from the simulator) or
  // "measured" (from the plans' step times measured on this host's CPU
  // executors, in process: graphs of at most
  // policy::kDefaultMeasuredRewardMaxNodes nodes, topologies of at most the
  // executors' device count; the plan search is then off).
  std::string reward = "simulated";
  // --max_reward_measurements with --reward=measured: the most plans
  // measured (0 = policy::kDefaultRewardMeasurements, at most
  // policy::kMaxRewardMeasurements). Default 0.
  int max_reward_measurements = 0;
};
// Fine-tunes the policy on the graph and prints the default, zero-shot and
// fine-tuned step times (with --reward=measured also what was measured).
// InvalidArgument for a graph or topology measured rewards refuse; the
// loaders', the executor's and FineTune's errors.
absl::Status RunFinetune(const FinetuneCommandOptions& options,
                         std::ostream& out);

// gopt-train eval: zero-shot decisions on graphs vs the baselines.
struct EvalCommandOptions {
  GoTrainingOptions go;
  std::string policy_dir = kDefaultGoPolicyDir;
  std::vector<std::string> graphs;  // graph files or gen:PRESET
  std::vector<std::string> topologies = DefaultTrainingTopologies();
  bool update_card = false;  // record the results in the card's metrics
};
absl::Status RunEval(const EvalCommandOptions& options, std::ostream& out);

// gopt-train expert: expert iteration (search distillation + PPO,
// training/go/expert_iteration.h) of a GO policy over the pre-training corpus
// plus random graphs, each paired with topologies_per_graph machines of
// `topologies` plus random ones. The held-out `graphs` x `topologies` are
// evaluated zero-shot against the best baseline every eval_every rounds,
// when the checkpoint, card.json and train.csv in out_dir are saved.
// Resumable (`resume`). Under torchrun's variables (WORLD_SIZE > 1) the
// ranks share each round's instances and average gradients; rank 0 alone
// evaluates and writes files.
struct ExpertCommandOptions {
  GoTrainingOptions go;
  std::string out_dir;                      // required
  std::string data_dir = "../shared/data";  // real graphs (held-out skipped)
  std::vector<std::string> topologies = DefaultTrainingTopologies();
  std::vector<std::string> graphs;  // held-out curve: files or gen:PRESET
  int max_nodes = 8000;             // largest graph trained on
  double max_seconds = 2400;        // wall-clock budget, resumed time included
  int hidden = 128;                 // network width (fresh model)
  int attention_layers = 2;         // layers per task stack (fresh model)
  int rounds = 100000;              // rounds in total, resumed ones included
  int instances_per_round = 4;      // over all ranks (a multiple of them)
  int search_rounds = 4;            // plan-search rounds from each start
  int distill_steps = 2;            // supervised updates per round
  int ppo_steps = 1;                // PPO updates per round
  double distill_learning_rate = 1e-3;  // Adam, supervised updates
  int eval_every = 10;                  // rounds between evaluations and saves
  int random_graphs = 24;               // generated graphs added to the corpus
  int random_topologies = 8;            // random machines added to `topologies`
  int topologies_per_graph = 2;  // machines each training graph is paired with
  bool resume = false;           // continue from out_dir's checkpoint and card
  std::string init_policy_dir;   // start from these weights ("" = fresh)
  // With init_policy_dir: GoModel::ScalePlacementPriors(factor) first; 0
  // leaves the priors as loaded.
  double init_prior_factor = 0;
  // Zero every heuristic prior's scale of the initial network (fresh or
  // init_policy_dir's; GoModel::DisableHeuristicPriors): the priors-off
  // ablation, e.g. with rounds = 0 to write the network for `gopt bench`.
  bool priors_off = false;
  double fusion_weight = 1;          // weight of the fusion distillation loss
  double placement_weight = 1;       // weight of the per-node placement loss
  bool fusion_fusible_only = false;  // DistillOptions::fusion_fusible_only
  // ExpertIterationOptions::relabel_to_greedy.
  bool relabel_to_greedy = true;
  // ExpertIterationOptions::keep_best and ::replay_targets.
  bool keep_best = false;
  // DistillOptions::prior_learning_rate (0 = --distill_learning_rate).
  double prior_learning_rate = 0;
  int replay_targets = 0;
  // Corpus graphs (labels as the card's data lists them: "hlo/x.hlo",
  // "gen:PRESET") left out of training and evaluated zero-shot on
  // `topologies` at every evaluation: the checkpoint written is then the
  // one with the best validation geomean (early stopping; the held-out
  // curve stays a report), and a resumed run continues from it. Empty =
  // every evaluation writes the checkpoint.
  std::vector<std::string> validation_graphs;
  // Corpus graphs that stay in training and are also evaluated zero-shot
  // with the validation graphs, their geomean taken together: the
  // checkpoint is then chosen by how well the network still decides graphs
  // it trains on (in-sample fit of, e.g., the real graphs, which a drift
  // toward the generated graphs' decisions loses), never by the held-out
  // set. A label may not be in both lists. Empty = validation alone.
  std::vector<std::string> selection_graphs;
  // Also write every evaluated network (each --eval_every rounds, the
  // start and the end) to out_dir/evaluated/round-NNNN/ with its card, so
  // the whole curve can be benchmarked afterwards, not only the kept
  // checkpoint. Default off (a checkpoint is ~2.5 MB).
  bool keep_evaluated_checkpoints = false;
  // ExpertIterationOptions::average_decay: > 0 checkpoints the moving
  // average of the weights (decay per round) instead of the last round's;
  // 0 = off. In [0, 1).
  double average_decay = 0;
  // DistillOptions::placement_loss: kCoLocation (true) or kCrossEntropy.
  bool co_location_loss = false;
  // Give the initial network the co-location head (GoModelOptions::
  // co_location_head for a fresh one, GoModel::EnableCoLocationHead for
  // init_policy_dir's); a resumed run keeps its checkpoint's architecture.
  bool co_location_head = false;
  // With co_location_head: the new head also reads the HEFT and METIS
  // hints' cuts (GoModelOptions::co_location_hint_cuts). Refused without
  // co_location_head.
  bool co_location_hint_cuts = false;
  // The card's version (gopt-server serves the highest of a name). Empty =
  // one more than init_policy_dir's card version, or "1" for a fresh
  // network.
  std::string policy_version;
  int rendezvous_seconds = 300;  // how long ranks wait for each other
  std::string command_line;      // recorded in the card
};
absl::Status RunExpert(const ExpertCommandOptions& options, std::ostream& out);

// gopt-train card-hash: records the checkpoint's SHA-256 in the card. A
// card recording another hash is FailedPrecondition unless replace_hash.
struct CardHashOptions {
  std::string policy_dir = kDefaultGoPolicyDir;
  bool replace_hash = false;
  std::string command_line;  // recorded in the card
};
absl::Status RunCardHash(const CardHashOptions& options, std::ostream& out);

// gopt-train costmodel: trains a learned cost model (and ships it with
// request.output_dir). Model and training options default to
// cost_model::DefaultRecipe(task), the name to "costmodel-<task>".
struct CostModelTrainCommandOptions {
  explicit CostModelTrainCommandOptions(
      cost_model::Task task = cost_model::Task::kLayout);
  cost_model::CostModelTrainRequest request;
  bool json = false;  // one line of JSON instead of indented JSON
};
absl::Status RunCostModelTrainCommand(
    const CostModelTrainCommandOptions& options, std::ostream& out);

// gopt-train costmodel-eval: the real-data and simulator protocols.
// Defaults: cost_model::DefaultRecipe(task), default_margin_cv included.
struct CostModelEvalCommandOptions {
  explicit CostModelEvalCommandOptions(
      cost_model::Task task = cost_model::Task::kLayout);
  cost_model::CostModelEvalRequest request;
  bool json = false;
};
absl::Status RunCostModelEvalCommand(const CostModelEvalCommandOptions& options,
                                     std::ostream& out);

// gopt-train costmodel-runtime (also `costmodel --task=runtime`): trains
// the learned runtime model (simulator/learned_cost_model.h) from a
// dataset `gopt calibrate --learn` collected, as that command does.
struct RuntimeModelTrainCommandOptions {
  std::string data;  // the dataset directory (required)
  // The calibrated topology it was measured on (default: data +
  // "/calibrated.json").
  std::string topology;
  std::vector<std::string> held_out;  // graph ids judged, never trained on
  std::string out;                    // the model JSON to write (required)
  std::string topology_out;  // optional: a topology file referencing it
  uint64_t seed = 1;
  int epochs = 600;
  int hidden = 32;
  bool per_plan = false;     // print every plan's figures too
  std::string command_line;  // recorded in the model's card
};
absl::Status RunRuntimeModelTrainCommand(
    const RuntimeModelTrainCommandOptions& options, std::ostream& out);

}  // namespace gopt::policy

#endif  // GOPT_TRAINING_TRAIN_COMMANDS_H_
