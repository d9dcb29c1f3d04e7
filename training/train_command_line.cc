#include "training/train_command_line.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "policy/go/go_model.h"
#include "policy/policy.h"
#include "training/recipe.h"
#include "util/flag_set.h"
#include "util/status_macros.h"

namespace gopt::policy {
namespace {

using util::FlagSet;
namespace cm = cost_model;

constexpr char kOverview[] = R"(gopt-train: train and evaluate gopt policies.

usage: gopt-train COMMAND [FLAGS]
       gopt-train help COMMAND   (or gopt-train COMMAND --help): its flags

commands:
{commands}
SOURCE: a graph file, or gen:PRESET (gopt generate list). List flags
(--tasks, --topologies, --graph) take comma lists and may be repeated.

example (the shipped checkpoint; see policy/pretrained/go-multitask-v2):
  gopt-train pretrain --out_dir=policy/pretrained/go-multitask-v2 --seed=1)";

constexpr char kCostModelHelp[] =
    R"(Defaults are the recipe of --task that works (cost_model::DefaultRecipe;
the defaults above are --task=layout's). --task=tile starts from the
shipped tile model's recipe: --costmodel_tile_relative
--costmodel_loss=hinge+listmle --costmodel_steps=300
--costmodel_attention=false (costmodel-eval: --costmodel_default_margin_cv).
)";

// ---- Flags shared by several commands -------------------------------------

// --tasks, --samples, --epochs, --learning_rate, --entropy_coef into
// `go(options)`: PPO's choices.
template <typename O, typename Go>
void AddPpoFlags(FlagSet<O>* flags, Go go) {
  flags->Add(
      "tasks",
      "tasks to decide: placement, scheduling, fusion", [go](O & o) -> auto& {
        return go(o).tasks;
      });
  flags->Add(
      "samples", "plans sampled per graph per PPO step", [go](O & o) -> auto& {
        return go(o).samples;
      });
  flags->Add(
      "epochs", "PPO epochs per batch of samples", [go](O & o) -> auto& {
        return go(o).epochs;
      });
  flags->Add(
      "learning_rate", "Adam learning rate", [go](O & o) -> auto& {
        return go(o).learning_rate;
      });
  flags->Add(
      "entropy_coef",
      "PPO entropy bonus", [go](O & o) -> auto& { return go(o).entropy_coef; });
}

// --simulation_threads, --threads, --seed into `go(options)`.
template <typename O, typename Go>
void AddRunFlags(FlagSet<O>* flags, Go go) {
  flags->Add(
      "simulation_threads", "parallel simulations", [go](O & o) -> auto& {
        return go(o).simulation_threads;
      });
  flags->Add(
      "threads", "LibTorch intra-op threads", [go](O & o) -> auto& {
        return go(o).torch_threads;
      });
  flags->Add(
      "seed", "seed: initialisation, sampling, batches", [go](O & o) -> auto& {
        return go(o).seed;
      });
}

// Both of the above.
template <typename O, typename Go>
void AddGoFlags(FlagSet<O>* flags, Go go) {
  AddPpoFlags(flags, go);
  AddRunFlags(flags, go);
}

// --data_dir: the pre-training corpus's real graphs (pretrain, expert).
template <typename O>
void AddDataDirFlag(FlagSet<O>* flags) {
  flags->Add(
      "data_dir", "real graphs (held-out files are skipped)",
      [](O & o) -> auto& { return o.data_dir; });
}

// --max_nodes: the corpus's largest graph (pretrain, expert).
template <typename O>
void AddMaxNodesFlag(FlagSet<O>* flags) {
  flags->Add(
      "max_nodes", "largest graph trained on",
      [](O & o) -> auto& { return o.max_nodes; });
}

// --data_dir and --max_nodes: the pre-training corpus.
template <typename O>
void AddCorpusFlags(FlagSet<O>* flags) {
  AddDataDirFlag(flags);
  AddMaxNodesFlag(flags);
}

// --hidden and --attention_layers: a fresh network's shape (pretrain,
// expert).
template <typename O>
void AddModelFlags(FlagSet<O>* flags) {
  flags->Add(
      "hidden", "network width", [](O & o) -> auto& { return o.hidden; });
  flags->Add(
      "attention_layers", "layers per task stack",
      [](O & o) -> auto& { return o.attention_layers; });
}

// --policy_dir: the GO policy a command starts from (finetune, eval).
template <typename O>
void AddPolicyDirFlag(FlagSet<O>* flags) {
  flags->Add(
      "policy_dir", "a GO policy directory (card.json + checkpoint)",
      [](O & o) -> auto& { return o.policy_dir; });
}

// The model and training flags of both cost-model commands.
template <typename O, typename Model, typename Train>
void AddCostModelFlags(FlagSet<O>* flags, Model model, Train train) {
  flags->AddCustom("task", "layout or tile (sets every default: see below)",
                   "layout", [model](O* o, absl::string_view text) {
                     absl::StatusOr<cm::Task> task = cm::ParseTask(text);
                     if (!task.ok()) return task.status();
                     model(*o).task = *task;
                     return absl::OkStatus();
                   });
  flags->Add(
      "seed",
      "seed: initialisation, batches, hash splits", [train](O & o) -> auto& {
        return train(o).seed;
      });
  flags->Add(
      "costmodel_steps",
      "training steps", [train](O & o) -> auto& { return train(o).steps; });
  flags->Add(
      "costmodel_configs_per_step",
      "configurations per step", [train](O & o) -> auto& {
        return train(o).configs_per_step;
      });
  flags->AddCustom("costmodel_loss", "listmle|hinge|hinge+listmle",
                   std::string(cm::RankingLossName(O().request.train.loss)),
                   [train](O* o, absl::string_view text) {
                     absl::StatusOr<cm::RankingLoss> loss =
                         cm::ParseRankingLoss(text);
                     if (!loss.ok()) return loss.status();
                     train(*o).loss = *loss;
                     return absl::OkStatus();
                   });
  flags->Add(
      "costmodel_lr", "Adam learning rate", [train](O & o) -> auto& {
        return train(o).learning_rate;
      });
  flags->Add(
      "costmodel_tie_tolerance",
      "relative runtime difference counted as a tie (hinge)",
      [train](O & o) -> auto& { return train(o).tie_tolerance; });
  flags->Add(
      "costmodel_regression_weight",
      "weight of the centred log-runtime regression term",
      [train](O & o) -> auto& { return train(o).regression_weight; });
  flags->Add(
      "costmodel_threads", "LibTorch threads", [train](O & o) -> auto& {
        return train(o).num_threads;
      });
  flags->Add(
      "costmodel_hidden", "GraphSAGE width", [model](O & o) -> auto& {
        return model(o).hidden_dim;
      });
  flags->Add(
      "costmodel_prune_hops",
      "keep configurable nodes + this many hops (-1 = all)",
      [model](O & o) -> auto& { return model(o).prune_hops; });
  flags->Add(
      "costmodel_segment_size",
      "GST segment size in nodes (0 = whole graph)", [model](O & o) -> auto& {
        return model(o).segment_size;
      });
  flags->Add(
      "costmodel_attention",
      "cross-configuration attention", [model](O & o) -> auto& {
        return model(o).cross_config_attention;
      });
  flags->Add(
      "costmodel_tile_relative",
      "tile configs also relative to the kernel's default (+ "
      "is-default flag)",
      [model](O & o) -> auto& { return model(o).tile_relative_to_default; });
  flags->Add(
      "json", "print one line of JSON",
      [](auto& o) -> auto& { return o.json; });
}

// The value of --task in `args` ("" when absent), so that the recipe of
// the task is where the other flags start from.
cm::Task TaskIn(const std::vector<std::string>& args) {
  std::string task;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("--task=", 0) == 0) task = args[i].substr(7);
    if (args[i] == "--task" && i + 1 < args.size()) task = args[i + 1];
  }
  return task == "tile" ? cm::Task::kTile : cm::Task::kLayout;
}

absl::Status NoOperands(const std::vector<std::string>& operands) {
  if (!operands.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected operand '", operands[0], "' (flags only)"));
  }
  return absl::OkStatus();
}

absl::Status Require(const std::string& value, absl::string_view flag) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
  }
  return absl::OkStatus();
}

// ---- Per command: its flags, and its checks --------------------------------

FlagSet<PretrainCommandOptions> PretrainFlags() {
  using O = PretrainCommandOptions;
  FlagSet<O> flags;
  AddGoFlags(
      &flags, [](auto& o) -> auto& { return o.go; });
  flags.Add(
      "out_dir", "output policy directory (required)",
      [](auto& o) -> auto& { return o.out_dir; });
  AddCorpusFlags(&flags);
  flags.Add(
      "topologies", "topologies trained on",
      [](auto& o) -> auto& { return o.topologies; });
  flags.Add(
      "max_steps", "PPO steps", [](auto& o) -> auto& { return o.max_steps; });
  flags.Add(
      "max_seconds", "wall-clock budget",
      [](auto& o) -> auto& { return o.max_seconds; });
  flags.Add(
      "graphs_per_step", "graphs per PPO update",
      [](auto& o) -> auto& { return o.graphs_per_step; });
  flags.Add(
      "pool_size", "graphs in the current pool",
      [](auto& o) -> auto& { return o.pool_size; });
  flags.Add(
      "switch_every", "steps between pool switches",
      [](auto& o) -> auto& { return o.switch_every; });
  flags.Add(
      "checkpoint_every", "steps between saves",
      [](auto& o) -> auto& { return o.checkpoint_every; });
  AddModelFlags(&flags);
  flags.Add(
      "csv", "training log CSV (empty: OUT_DIR/train.csv)",
      [](auto& o) -> auto& { return o.csv; });
  return flags;
}

absl::Status FinishPretrain(std::vector<std::string> operands,
                            PretrainCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  return Require(o->out_dir, "out_dir");
}

FlagSet<FinetuneCommandOptions> FinetuneFlags() {
  using O = FinetuneCommandOptions;
  FlagSet<O> flags;
  AddGoFlags(
      &flags, [](auto& o) -> auto& { return o.go; });
  AddPolicyDirFlag(&flags);
  flags.Add(
      "graph", "the graph file or gen:PRESET (required)",
      [](auto& o) -> auto& { return o.graph; });
  flags.Add(
      "topologies", "the topology (the first one)",
      [](auto& o) -> auto& { return o.topologies; });
  flags.Add(
      "max_steps", "PPO steps", [](auto& o) -> auto& { return o.max_steps; });
  flags.Add(
      "max_seconds", "wall-clock budget",
      [](auto& o) -> auto& { return o.max_seconds; });
  flags.Add(
      "csv", "training log CSV (empty: none)",
      [](auto& o) -> auto& { return o.csv; });
  flags.Add(
      "placement_prior_factor",
      "reset the placement priors' gate and multiply their learned "
      "scales by this before fine-tuning (below 1 = samples stray "
      "further from the priors' placement)",
      [](auto& o) -> auto& { return o.placement_prior_factor; });
  flags.Add(
      "search_simulations",
      "plans the critical-path plan search simulates after each PPO "
      "step, around the best plan so far (0 = PPO alone)",
      [](auto& o) -> auto& { return o.search_simulations; });
  flags.Add(
      "reward",
      "PPO's reward: simulated (the simulator's step times) or measured "
      "(plans run on this host's CPU executors; small graphs)",
      [](auto& o) -> auto& { return o.reward; });
  flags.Add(
      "max_reward_measurements",
      "with --reward=measured: most plans measured (0 = 64, at most 1024)",
      [](auto& o) -> auto& { return o.max_reward_measurements; });
  return flags;
}

absl::Status FinishFinetune(std::vector<std::string> operands,
                            FinetuneCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  if (o->graph.empty() || o->topologies.empty()) {
    return absl::InvalidArgumentError(
        "expected one --graph and a --topologies");
  }
  if (o->search_simulations < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--search_simulations must be 0 or more, got ", o->search_simulations));
  }
  if (o->reward != "simulated" && o->reward != "measured") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reward=", o->reward, ": expected simulated or measured"));
  }
  if (o->max_reward_measurements < 0 ||
      o->max_reward_measurements > kMaxRewardMeasurements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_reward_measurements must be in 0..", kMaxRewardMeasurements,
        ", got ", o->max_reward_measurements));
  }
  return absl::OkStatus();
}

FlagSet<EvalCommandOptions> EvalFlags() {
  using O = EvalCommandOptions;
  FlagSet<O> flags;
  AddGoFlags(
      &flags, [](auto& o) -> auto& { return o.go; });
  AddPolicyDirFlag(&flags);
  flags.Add(
      "graph", "graph files or gen:PRESET (at least one)",
      [](auto& o) -> auto& { return o.graphs; });
  flags.Add(
      "topologies", "topologies to evaluate on",
      [](auto& o) -> auto& { return o.topologies; });
  flags.Add(
      "update_card", "write the results into the policy card's metrics",
      [](auto& o) -> auto& { return o.update_card; });
  return flags;
}

absl::Status FinishEval(std::vector<std::string> operands,
                        EvalCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  if (o->graphs.empty()) {
    return absl::InvalidArgumentError("expected --graph=SOURCE,...");
  }
  return absl::OkStatus();
}

// gopt-train expert's recipe keys: its training choices and research
// switches, given by --recipe=FILE (training/recipe.h) and listed after the
// flags by `gopt-train help expert`. Each is also accepted as a flag (after
// --recipe, it overrides the recipe's key).
FlagSet<ExpertCommandOptions> ExpertRecipeKeys() {
  using O = ExpertCommandOptions;
  FlagSet<O> flags;
  AddPpoFlags(
      &flags, [](auto& o) -> auto& { return o.go; });
  AddMaxNodesFlag(&flags);
  AddModelFlags(&flags);
  flags.Add(
      "topologies",
      "preset machines trained on, and the held-out curve's machines",
      [](auto& o) -> auto& { return o.topologies; });
  flags.Add(
      "max_seconds", "wall-clock budget, resumed time included",
      [](auto& o) -> auto& { return o.max_seconds; });
  flags.Add(
      "rounds", "rounds in total, resumed ones included",
      [](auto& o) -> auto& { return o.rounds; });
  flags.Add(
      "instances_per_round",
      "instances searched per round, over all ranks (a multiple of them)",
      [](auto& o) -> auto& { return o.instances_per_round; });
  flags.Add(
      "search_rounds",
      "plan-search rounds (16 simulations each) from each start",
      [](auto& o) -> auto& { return o.search_rounds; });
  flags.Add(
      "distill_steps", "supervised updates per round",
      [](auto& o) -> auto& { return o.distill_steps; });
  flags.Add(
      "ppo_steps", "PPO updates per round",
      [](auto& o) -> auto& { return o.ppo_steps; });
  flags.Add(
      "distill_learning_rate", "Adam learning rate of the supervised updates",
      [](auto& o) -> auto& { return o.distill_learning_rate; });
  flags.Add(
      "eval_every", "rounds between held-out evaluations and checkpoints",
      [](auto& o) -> auto& { return o.eval_every; });
  flags.Add(
      "random_graphs", "generated graphs of random sizes added to the corpus",
      [](auto& o) -> auto& { return o.random_graphs; });
  flags.Add(
      "random_topologies",
      "random machines (2-8 devices) added to --topologies",
      [](auto& o) -> auto& { return o.random_topologies; });
  flags.Add(
      "topologies_per_graph", "machines each training graph is paired with",
      [](auto& o) -> auto& { return o.topologies_per_graph; });
  flags.Add(
      "init_prior_factor",
      "with --init_policy_dir, scale the placement priors by this first "
      "(gate reset to 1: placements become trainable); 0 leaves them",
      [](auto& o) -> auto& { return o.init_prior_factor; });
  flags.Add(
      "priors_off",
      "zero the initial network's heuristic prior scales (the ablation)",
      [](auto& o) -> auto& { return o.priors_off; });
  flags.Add(
      "fusion_weight", "weight of the fusion distillation loss (0 = off)",
      [](auto& o) -> auto& { return o.fusion_weight; });
  flags.Add(
      "placement_weight",
      "weight of the per-node placement distillation loss (0 = off; "
      "the co-location head's loss keeps its own weight)",
      [](auto& o) -> auto& { return o.placement_weight; });
  flags.Add(
      "fusion_fusible_only",
      "average the fusion loss over the nodes that can fuse only",
      [](auto& o) -> auto& { return o.fusion_fusible_only; });
  flags.Add(
      "relabel_to_greedy",
      "label targets' symmetric devices as the network's greedy plan has "
      "them (false: by first use)",
      [](auto& o) -> auto& { return o.relabel_to_greedy; });
  flags.Add(
      "prior_learning_rate",
      "Adam learning rate of the heuristic priors' scales and gate in the "
      "supervised updates (0 = --distill_learning_rate)",
      [](auto& o) -> auto& { return o.prior_learning_rate; });
  flags.Add(
      "keep_best",
      "search each instance from the best plan found for it so far; its "
      "target is the best ever found (this run's memory, not checkpointed)",
      [](auto& o) -> auto& { return o.keep_best; });
  flags.Add(
      "replay_targets",
      "targets of earlier rounds added to every supervised update",
      [](auto& o) -> auto& { return o.replay_targets; });
  flags.Add(
      "validation_graph",
      "corpus graphs (as the card lists them: hlo/x.hlo, gen:PRESET) left "
      "out of training; the checkpoint kept is the evaluation with the best "
      "zero-shot geomean on them (empty: the last)",
      [](auto& o) -> auto& { return o.validation_graphs; });
  flags.Add(
      "selection_graph",
      "corpus graphs that stay in training and are evaluated zero-shot with "
      "the validation graphs: the checkpoint kept is the best geomean over "
      "both lists (in-sample fit; the held-out set never chooses)",
      [](auto& o) -> auto& { return o.selection_graphs; });
  flags.Add(
      "policy_version",
      "the card's version (default: one more than --init_policy_dir's, or 1 "
      "for a fresh network)",
      [](auto& o) -> auto& { return o.policy_version; });
  flags.Add(
      "keep_evaluated_checkpoints",
      "also write every evaluated network to OUT_DIR/evaluated/round-NNNN/ "
      "(a policy directory gopt bench can run), not only the kept one",
      [](auto& o) -> auto& { return o.keep_evaluated_checkpoints; });
  flags.Add(
      "average_decay",
      "checkpoint (and evaluate) the exponential moving average of the "
      "weights, this decay per round, instead of the last round's weights "
      "(0 = off; a resumed run trains on from the average)",
      [](auto& o) -> auto& { return o.average_decay; });
  flags.Add(
      "co_location_loss",
      "train placement by whether node pairs share a device and each node's "
      "device class (invariant under relabelling symmetric devices) instead "
      "of cross-entropy over canonical labels",
      [](auto& o) -> auto& { return o.co_location_loss; });
  flags.Add(
      "co_location_head",
      "give the initial network (fresh or --init_policy_dir's) the "
      "co-location head: per dependency edge the logit that both ends share "
      "a device, distilled from the targets' partitions",
      [](auto& o) -> auto& { return o.co_location_head; });
  flags.Add(
      "co_location_hint_cuts",
      "with --co_location_head: the new head also reads, per dependency, "
      "whether the HEFT and METIS hints cut it (needs --co_location_head)",
      [](auto& o) -> auto& { return o.co_location_hint_cuts; });
  return flags;
}

// The keys a recipe may not set: where this run writes and whether it
// continues one.
bool CommandLineOnly(const std::string& flag) {
  return flag == "out_dir" || flag == "resume" || flag == "recipe";
}

FlagSet<ExpertCommandOptions> ExpertFlags() {
  using O = ExpertCommandOptions;
  FlagSet<O> flags;
  flags.AddCustom(
      "recipe",
      "a recipe file (JSON: the keys below and these flags but --out_dir and "
      "--resume), e.g. policy/pretrained/go-multitask-v4/recipe.json; "
      "flags after it override its keys",
      "", [](O* o, absl::string_view path) -> absl::Status {
        // InvalidArgument only: NotFound would read as an unknown flag.
        absl::StatusOr<std::vector<std::string>> read =
            ReadRecipeFlags(std::string(path));
        if (!read.ok()) {
          return absl::InvalidArgumentError(read.status().message());
        }
        const std::vector<std::string>& recipe = *read;
        for (const std::string& flag : recipe) {
          const std::string key = flag.substr(2, flag.find('=') - 2);
          if (CommandLineOnly(key)) {
            return absl::InvalidArgumentError(absl::StrCat(
                path, ": key '", key, "' belongs on the command line"));
          }
        }
        std::vector<std::string> operands;
        absl::Status status = ExpertFlags().Parse(recipe, o, &operands);
        if (absl::IsNotFound(status)) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": unknown key '", status.message().substr(2),
                           "' (see gopt-train help expert)"));
        }
        if (!status.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": ", status.message()));
        }
        return absl::OkStatus();
      });
  flags.Add(
      "out_dir", "output policy directory (required)",
      [](auto& o) -> auto& { return o.out_dir; });
  flags.Add(
      "resume", "continue from --out_dir's checkpoint and card",
      [](auto& o) -> auto& { return o.resume; });
  AddDataDirFlag(&flags);
  flags.Add(
      "graph", "held-out graphs of the zero-shot curve (files or gen:PRESET)",
      [](auto& o) -> auto& { return o.graphs; });
  flags.Add(
      "init_policy_dir", "start from this policy's weights (default: fresh)",
      [](auto& o) -> auto& { return o.init_policy_dir; });
  AddRunFlags(
      &flags, [](auto& o) -> auto& { return o.go; });
  flags.Add(
      "rendezvous_seconds", "how long data-parallel ranks wait for each other",
      [](auto& o) -> auto& { return o.rendezvous_seconds; });
  flags.AddUnlisted(ExpertRecipeKeys());
  return flags;
}

// A count flag's lower bound.
absl::Status AtLeast(int value, int least, absl::string_view flag) {
  if (value < least) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " must be ", least, " or more, got ", value));
  }
  return absl::OkStatus();
}

absl::Status FinishExpert(std::vector<std::string> operands,
                          ExpertCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  RETURN_IF_ERROR(Require(o->out_dir, "out_dir"));
  RETURN_IF_ERROR(AtLeast(o->rounds, 0, "rounds"));
  RETURN_IF_ERROR(AtLeast(o->instances_per_round, 1, "instances_per_round"));
  RETURN_IF_ERROR(AtLeast(o->search_rounds, 0, "search_rounds"));
  RETURN_IF_ERROR(AtLeast(o->distill_steps, 0, "distill_steps"));
  RETURN_IF_ERROR(AtLeast(o->ppo_steps, 0, "ppo_steps"));
  RETURN_IF_ERROR(AtLeast(o->replay_targets, 0, "replay_targets"));
  if (absl::Status decay = go::GoModel::CheckAverageDecay(o->average_decay);
      !decay.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--average_decay (0 = off): ", decay.message()));
  }
  if (o->co_location_hint_cuts && !o->co_location_head) {
    return absl::InvalidArgumentError(
        "--co_location_hint_cuts needs --co_location_head (the hint inputs "
        "belong to the new co-location head)");
  }
  if (!(o->prior_learning_rate >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prior_learning_rate must be 0 or more, got ",
                     o->prior_learning_rate));
  }
  RETURN_IF_ERROR(AtLeast(o->eval_every, 1, "eval_every"));
  RETURN_IF_ERROR(AtLeast(o->random_graphs, 0, "random_graphs"));
  RETURN_IF_ERROR(AtLeast(o->random_topologies, 0, "random_topologies"));
  RETURN_IF_ERROR(AtLeast(o->topologies_per_graph, 1, "topologies_per_graph"));
  RETURN_IF_ERROR(AtLeast(o->rendezvous_seconds, 1, "rendezvous_seconds"));
  if (o->topologies.empty() && o->random_topologies == 0) {
    return absl::InvalidArgumentError(
        "no machines to train on: give --topologies or --random_topologies");
  }
  if (o->resume && !o->init_policy_dir.empty()) {
    return absl::InvalidArgumentError(
        "--resume continues --out_dir's own checkpoint; it takes no "
        "--init_policy_dir");
  }
  if (o->resume && o->priors_off) {
    return absl::InvalidArgumentError(
        "--priors_off zeroes a new run's initial network; a resumed run keeps "
        "its checkpoint's priors");
  }
  if (o->placement_weight < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--placement_weight must be 0 or more, got ", o->placement_weight));
  }
  if (o->fusion_weight < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--fusion_weight must be 0 or more, got ", o->fusion_weight));
  }
  if (o->init_prior_factor < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--init_prior_factor must be 0 or more, got ", o->init_prior_factor));
  }
  return absl::OkStatus();
}

FlagSet<CardHashOptions> CardHashFlags() {
  using O = CardHashOptions;
  FlagSet<O> flags;
  flags.Add(
      "policy_dir", "the policy directory whose card records the hash",
      [](auto& o) -> auto& { return o.policy_dir; });
  flags.Add(
      "replace_hash",
      "overwrite a recorded checkpoint hash that differs from the "
      "checkpoint's (by default that is an error: the weights changed "
      "after the card was made)",
      [](auto& o) -> auto& { return o.replace_hash; });
  return flags;
}

absl::Status FinishCardHash(std::vector<std::string> operands,
                            CardHashOptions*) {
  return NoOperands(operands);
}

FlagSet<CostModelTrainCommandOptions> CostModelTrainFlags() {
  using O = CostModelTrainCommandOptions;
  FlagSet<O> flags;
  AddCostModelFlags(
      &flags, [](auto& o) -> auto& { return o.request.model; },
      [](auto& o) -> auto& { return o.request.train; });
  flags.Add(
      "data",
      "comma-separated sources: tuning .pb, .npz file or directory, "
      "sim:PRESET+... / sim:train-families / sim:heldout (required)",
      [](auto& o) -> auto& { return o.request.data; });
  flags.Add(
      "eval_data", "sources evaluated after training",
      [](auto& o) -> auto& { return o.request.eval_data; });
  flags.Add(
      "costmodel_out", "write model.pt + card.json to this directory",
      [](auto& o) -> auto& { return o.request.output_dir; });
  flags.Add(
      "costmodel_name", "name recorded in the card",
      [](auto& o) -> auto& { return o.request.name; });
  flags.Add(
      "costmodel_half_split",
      "train on one hash half of tuning-data layout groups, evaluate "
      "on the other",
      [](auto& o) -> auto& { return o.request.layout_half_split; });
  flags.Add(
      "costmodel_tile_protocol",
      "tile: run the tile protocol first; its metrics and default "
      "margin go into the card",
      [](auto& o) -> auto& { return o.request.tile_protocol; });
  return flags;
}

absl::Status FinishCostModelTrain(std::vector<std::string> operands,
                                  CostModelTrainCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  return Require(o->request.data, "data");
}

FlagSet<CostModelEvalCommandOptions> CostModelEvalFlags() {
  using O = CostModelEvalCommandOptions;
  FlagSet<O> flags;
  AddCostModelFlags(
      &flags, [](auto& o) -> auto& { return o.request.model; },
      [](auto& o) -> auto& { return o.request.train; });
  flags.Add(
      "data", "one source (see costmodel --help) (required)",
      [](auto& o) -> auto& { return o.request.data; });
  flags.Add(
      "checkpoint", "score --data with this model instead of training",
      [](auto& o) -> auto& { return o.request.checkpoint; });
  flags.Add(
      "costmodel_ensemble",
      "models trained per fold (tile) or per split (layout), seeds "
      "seed, seed+1, ...; their scores are averaged",
      [](auto& o) -> auto& { return o.request.ensemble; });
  flags.Add(
      "costmodel_default_margin_cv",
      "tile: default margin chosen by inner leave-one-kernel-out on "
      "the training kernels",
      [](auto& o) -> auto& { return o.request.default_margin_cv; });
  return flags;
}

absl::Status FinishCostModelEval(std::vector<std::string> operands,
                                 CostModelEvalCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  RETURN_IF_ERROR(Require(o->request.data, "data"));
  o->request.task = o->request.model.task;
  if (o->request.ensemble < 1 ||
      (!o->request.checkpoint.empty() && o->request.ensemble != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--costmodel_ensemble=", o->request.ensemble,
        ": must be >= 1, and 1 with --checkpoint (it scores with that one "
        "model)"));
  }
  return absl::OkStatus();
}

FlagSet<RuntimeModelTrainCommandOptions> RuntimeModelTrainFlags() {
  using O = RuntimeModelTrainCommandOptions;
  FlagSet<O> flags;
  flags.Add(
      "data",
      "the measurements directory gopt calibrate --learn wrote "
      "(required)",
      [](O & o) -> auto& { return o.data; });
  flags.Add(
      "topology",
      "the calibrated topology they were measured on (default: DATA/"
      "calibrated.json, which gopt calibrate --learn writes)",
      [](O & o) -> auto& { return o.topology; });
  flags.Add(
      "held_out", "graph ids judged, never trained on (comma list)",
      [](O & o) -> auto& { return o.held_out; });
  flags.Add(
      "out", "the model JSON to write (required)",
      [](O & o) -> auto& { return o.out; });
  flags.Add(
      "topology_out", "also write a topology JSON that references the model",
      [](O & o) -> auto& { return o.topology_out; });
  flags.Add(
      "seed", "parameter initialisation",
      [](O & o) -> auto& { return o.seed; });
  flags.Add(
      "epochs", "full-batch Adam steps",
      [](O & o) -> auto& { return o.epochs; });
  flags.Add(
      "hidden", "units per hidden layer",
      [](O & o) -> auto& { return o.hidden; });
  flags.Add(
      "per_plan", "also print each plan's measured and predicted times",
      [](O & o) -> auto& { return o.per_plan; });
  return flags;
}

absl::Status FinishRuntimeModelTrain(std::vector<std::string> operands,
                                     RuntimeModelTrainCommandOptions* o) {
  RETURN_IF_ERROR(NoOperands(operands));
  RETURN_IF_ERROR(Require(o->data, "data"));
  if (o->topology.empty()) o->topology = o->data + "/calibrated.json";
  RETURN_IF_ERROR(Require(o->out, "out"));
  if (o->epochs < 1 || o->hidden < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--epochs and --hidden must be >= 1, got ", o->epochs,
                     " and ", o->hidden));
  }
  return absl::OkStatus();
}

// ---- The command table -----------------------------------------------------

using Table = util::CommandTable<TrainCommandOptions>;

const Table& Commands() {
  static const Table* const kTable = [] {
    auto* table = new Table("gopt-train", kOverview);
    table->Add<PretrainCommandOptions>(
        "pretrain", "pretrain --out_dir=DIR",
        "GO: PPO over the generated + real-graph corpus -> checkpoint, "
        "card.json and train.csv in --out_dir",
        PretrainFlags(), FinishPretrain, RunPretrain);
    table->Add<FinetuneCommandOptions>(
        "finetune", "finetune --graph=SOURCE --topologies=T",
        "GO: PPO on one graph from a pretrained policy (--policy_dir)",
        FinetuneFlags(), FinishFinetune, RunFinetune);
    table->Add<EvalCommandOptions>(
        "eval", "eval --graph=SOURCE,...",
        "GO: zero-shot decisions on graphs vs the baselines; with "
        "--update_card, records them in the policy's card",
        EvalFlags(), FinishEval, RunEval);
    table->Add<ExpertCommandOptions>(
        "expert", "expert --out_dir=DIR [--graph=HELD_OUT,...]",
        "GO: expert iteration (plan-search distillation + PPO) over the "
        "corpus plus random graphs and machines, resumable (--resume), "
        "data-parallel under torchrun's variables (WORLD_SIZE > 1)",
        ExpertFlags(), FinishExpert, RunExpert, nullptr,
        absl::StrCat("recipe keys (--recipe=FILE, or each as a flag):\n",
                     ExpertRecipeKeys().Help()));
    table->Add<CardHashOptions>(
        "card-hash", "card-hash --policy_dir=DIR",
        "any policy: records the SHA-256 of the checkpoint in its card.json, "
        "which every policy load verifies",
        CardHashFlags(), FinishCardHash, RunCardHash);
    table->Add<CostModelTrainCommandOptions>(
        "costmodel", "costmodel --data=SOURCES [--task=layout|tile]",
        "learned cost model: train (and ship with --costmodel_out)",
        CostModelTrainFlags(), FinishCostModelTrain, RunCostModelTrainCommand,
        [](const std::vector<std::string>& args) {
          return CostModelTrainCommandOptions(TaskIn(args));
        },
        kCostModelHelp);
    table->Add<CostModelEvalCommandOptions>(
        "costmodel-eval", "costmodel-eval --data=SOURCE [--task=layout|tile]",
        "learned cost model: the real-data and simulator protocols, or "
        "--checkpoint's scores",
        CostModelEvalFlags(), FinishCostModelEval, RunCostModelEvalCommand,
        [](const std::vector<std::string>& args) {
          return CostModelEvalCommandOptions(TaskIn(args));
        },
        kCostModelHelp);
    table->Add<RuntimeModelTrainCommandOptions>(
        "costmodel-runtime",
        "costmodel-runtime --data=DIR --topology=FILE --out=MODEL.json "
        "(or costmodel --task=runtime ...)",
        "learned runtime model: trained from gopt calibrate --learn's "
        "measurements (docs/runtime-model.md)",
        RuntimeModelTrainFlags(), FinishRuntimeModelTrain,
        RunRuntimeModelTrainCommand);
    return table;
  }();
  return *kTable;
}

}  // namespace

absl::StatusOr<TrainCommand> ParseTrainCli(
    const std::vector<std::string>& given) {
  // `costmodel --task=runtime` is the costmodel-runtime command.
  std::vector<std::string> args = given;
  if (args.size() > 1 && args[1] == "costmodel" &&
      (std::find(args.begin(), args.end(), "--task=runtime") != args.end())) {
    args[1] = "costmodel-runtime";
    args.erase(std::find(args.begin(), args.end(), "--task=runtime"));
  }
  absl::StatusOr<TrainCommand> command = Commands().Parse(args);
  if (!command.ok()) return command;
  // What the cards record as the command that made them.
  const std::string line = absl::StrJoin(args, " ");
  if (auto* o = std::get_if<PretrainCommandOptions>(&command->options)) {
    o->command_line = line;
  } else if (auto* o = std::get_if<ExpertCommandOptions>(&command->options)) {
    o->command_line = line;
  } else if (auto* o = std::get_if<CardHashOptions>(&command->options)) {
    o->command_line = line;
  } else if (auto* o =
                 std::get_if<CostModelTrainCommandOptions>(&command->options)) {
    o->request.command = line;
  } else if (auto* o = std::get_if<RuntimeModelTrainCommandOptions>(
                 &command->options)) {
    o->command_line = line;
  }
  return command;
}

std::string TrainCliHelp(const std::string& command) {
  return Commands().Help(command);
}

absl::Status RunTrainCommand(const TrainCommand& command, std::ostream& out) {
  return Commands().Run(command, out);
}

}  // namespace gopt::policy
