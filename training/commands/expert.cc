// gopt-train expert: see training/train_commands.h.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/topology.h"
#include "training/commands/common.h"
#include "training/go/corpus.h"
#include "training/go/data_parallel.h"
#include "training/go/expert_iteration.h"
#include "training/go/random_corpus.h"
#include "training/train_commands.h"
#include "util/status_macros.h"

namespace gopt::policy {

namespace {

// The machines training graphs are paired with: `topologies`, then
// random_topologies random ones.
absl::StatusOr<std::vector<std::shared_ptr<const simulator::Topology>>>
ExpertTopologies(const ExpertCommandOptions& options) {
  std::vector<std::shared_ptr<const simulator::Topology>> topologies;
  for (const std::string& name : options.topologies) {
    ASSIGN_OR_RETURN(simulator::Topology topology,
                     simulator::PresetTopology(name));
    topologies.push_back(
        std::make_shared<const simulator::Topology>(std::move(topology)));
  }
  for (int i = 0; i < options.random_topologies; ++i) {
    ASSIGN_OR_RETURN(simulator::Topology topology,
                     go::RandomTopology(options.go.seed, i));
    topologies.push_back(
        std::make_shared<const simulator::Topology>(std::move(topology)));
  }
  if (topologies.empty()) {
    return absl::InvalidArgumentError(
        "expert: no machines to train on (--topologies is empty and "
        "--random_topologies=0)");
  }
  return topologies;
}

// The training instances: the corpus plus random generated graphs, graph g
// paired with machines (g + j * stride) mod M for j < topologies_per_graph;
// instances where no baseline plan fits memory (no target) are skipped.
// `data` lists them for the card.
absl::StatusOr<std::vector<std::unique_ptr<go::TrainingInstance>>>
ExpertInstances(const ExpertCommandOptions& options, nlohmann::json* data,
                std::vector<go::CorpusGraph>* validation) {
  ASSIGN_OR_RETURN(std::vector<go::CorpusGraph> all,
                   LoadCorpus(options.data_dir, options.max_nodes));
  ASSIGN_OR_RETURN(
      std::vector<go::CorpusGraph> random,
      go::RandomGeneratedGraphs(options.random_graphs, options.max_nodes,
                                options.go.seed));
  all.insert(all.end(), random.begin(), random.end());
  // The validation graphs leave the corpus; the selection graphs are
  // evaluated with them and stay.
  const auto listed = [](const std::vector<std::string>& names,
                         const std::string& label) {
    return std::find(names.begin(), names.end(), label) != names.end();
  };
  for (const std::string& name : options.selection_graphs) {
    if (listed(options.validation_graphs, name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", name,
          "' is both a --validation_graph (left out of training) and a "
          "--selection_graph (trained on); name it in one list"));
    }
  }
  std::vector<go::CorpusGraph> corpus;
  for (go::CorpusGraph& graph : all) {
    if (listed(options.validation_graphs, graph.label)) {
      validation->push_back(std::move(graph));
      continue;
    }
    if (listed(options.selection_graphs, graph.label)) {
      validation->push_back(graph);
    }
    corpus.push_back(std::move(graph));
  }
  const auto check_known = [&validation](const std::vector<std::string>& names,
                                         const char* flag) -> absl::Status {
    for (const std::string& name : names) {
      if (std::none_of(validation->begin(), validation->end(),
                       [&name](const go::CorpusGraph& graph) {
                         return graph.label == name;
                       })) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", flag, " '", name,
            "' is not a training corpus graph (labels as the card's "
            "training.data lists them, e.g. hlo/jaxmd_apply_fn.hlo or "
            "gen:gnmt2-small; held-out graphs and graphs over --max_nodes "
            "are not in the corpus)"));
      }
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check_known(options.validation_graphs, "validation_graph"));
  RETURN_IF_ERROR(check_known(options.selection_graphs, "selection_graph"));
  ASSIGN_OR_RETURN(auto topologies, ExpertTopologies(options));
  const int machines = static_cast<int>(topologies.size());
  const int per_graph = std::clamp(options.topologies_per_graph, 1, machines);
  const int stride = std::max(machines / per_graph, 1);
  std::vector<std::unique_ptr<go::TrainingInstance>> instances;
  for (size_t g = 0; g < corpus.size(); ++g) {
    const go::CorpusGraph& graph = corpus[g];
    nlohmann::json machines_used = nlohmann::json::array();
    for (int j = 0; j < per_graph; ++j) {
      const auto& topology = topologies[(g + j * stride) % machines];
      const std::string label = absl::StrCat(graph.label, "@", topology->name);
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(label, graph.graph, topology);
      if (!instance.ok()) {
        std::cerr << "skipped " << label << ": " << instance.status().message()
                  << "\n";
        continue;
      }
      absl::StatusOr<go::ScoredPlan> baseline =
          go::BestBaselinePlan(**instance, options.go.seed);
      if (!baseline.ok()) {
        std::cerr << "skipped " << baseline.status().message() << "\n";
        continue;
      }
      machines_used.push_back(topology->name);
      instances.push_back(*std::move(instance));
    }
    data->push_back({{"graph", graph.label},
                     {"nodes", graph.graph->num_nodes()},
                     {"topologies", machines_used}});
  }
  return instances;
}

// The held-out instances (graphs x topologies) whose best baseline fits
// memory, with those baselines; `rows` lists every pair for the card.
struct HeldOut {
  std::vector<std::unique_ptr<go::TrainingInstance>> instances;
  std::vector<const go::TrainingInstance*> views;
  std::vector<go::ScoredPlan> baselines;
  nlohmann::json rows = nlohmann::json::array();
};

// `graphs` (label, graph) on each of options.topologies, as HeldOut.
absl::StatusOr<HeldOut> EvaluationInstances(
    const ExpertCommandOptions& options,
    const std::vector<go::CorpusGraph>& graphs) {
  HeldOut held_out;
  for (const go::CorpusGraph& corpus_graph : graphs) {
    const std::string& source = corpus_graph.label;
    const std::shared_ptr<const graph::Graph> graph = corpus_graph.graph;
    for (const std::string& name : options.topologies) {
      ASSIGN_OR_RETURN(simulator::Topology topology,
                       simulator::PresetTopology(name));
      ASSIGN_OR_RETURN(
          std::unique_ptr<go::TrainingInstance> instance,
          go::MakeTrainingInstance(absl::StrCat(source, "@", name), graph,
                                   std::make_shared<const simulator::Topology>(
                                       std::move(topology))));
      absl::StatusOr<go::ScoredPlan> baseline =
          go::BestBaselinePlan(*instance, options.go.seed);
      held_out.rows.push_back(
          {{"graph", source},
           {"topology", name},
           {"best_baseline_ms",
            baseline.ok() ? baseline->step_time_s * 1e3 : 0.0},
           {"in_curve", baseline.ok()}});
      if (!baseline.ok()) continue;
      held_out.baselines.push_back(*std::move(baseline));
      held_out.views.push_back(instance.get());
      held_out.instances.push_back(std::move(instance));
    }
  }
  return held_out;
}

absl::StatusOr<HeldOut> HeldOutInstances(const ExpertCommandOptions& options) {
  std::vector<go::CorpusGraph> graphs;
  for (const std::string& source : options.graphs) {
    ASSIGN_OR_RETURN(graph::Graph loaded, go::LoadGraphSource(source));
    graphs.push_back(
        {source, std::make_shared<graph::Graph>(std::move(loaded))});
  }
  return EvaluationInstances(options, graphs);
}

go::ExpertIterationOptions ExpertIterationOptionsOf(
    const ExpertCommandOptions& options, const go::PpoOptions& ppo) {
  go::ExpertIterationOptions expert;
  expert.tasks = ppo.tasks;
  expert.rounds = options.rounds;
  expert.max_seconds = options.max_seconds;
  expert.instances_per_round = options.instances_per_round;
  expert.search_rounds = options.search_rounds;
  expert.distill_steps = options.distill_steps;
  expert.ppo_steps = options.ppo_steps;
  expert.simulation_threads = ppo.simulation_threads;
  expert.seed = options.go.seed;
  expert.ppo = ppo;
  expert.distill.learning_rate = options.distill_learning_rate;
  expert.distill.fusion_weight = options.fusion_weight;
  expert.distill.placement_weight = options.placement_weight;
  expert.distill.fusion_fusible_only = options.fusion_fusible_only;
  expert.relabel_to_greedy = options.relabel_to_greedy;
  expert.keep_best = options.keep_best;
  expert.distill.prior_learning_rate = options.prior_learning_rate;
  expert.replay_targets = options.replay_targets;
  expert.average_decay = options.average_decay;
  expert.distill.placement_loss = options.co_location_loss
                                      ? go::PlacementLoss::kCoLocation
                                      : go::PlacementLoss::kCrossEntropy;
  expert.distill.seed = options.go.seed;
  return expert;
}

// The model to train: `resume`'s checkpoint, init_policy_dir's, or a fresh
// one (priors zeroed with priors_off); `card` gets what a resumed run
// recorded.
absl::StatusOr<std::unique_ptr<go::GoModel>> ExpertInitialModel(
    const ExpertCommandOptions& options, nlohmann::json* card) {
  if (options.resume) {
    ASSIGN_OR_RETURN(*card, ReadCardFile(options.out_dir));
    return LoadPolicyModel(options.out_dir);
  }
  std::unique_ptr<go::GoModel> model;
  if (!options.init_policy_dir.empty()) {
    ASSIGN_OR_RETURN(model, LoadPolicyModel(options.init_policy_dir));
    if (options.init_prior_factor > 0) {
      RETURN_IF_ERROR(model->ScalePlacementPriors(options.init_prior_factor));
    }
    if (options.co_location_head) {
      RETURN_IF_ERROR(
          model->EnableCoLocationHead(options.co_location_hint_cuts));
    }
  } else {
    go::GoModelOptions model_options;
    model_options.hidden = options.hidden;
    model_options.attention_layers = options.attention_layers;
    model_options.co_location_head = options.co_location_head;
    model_options.co_location_hint_cuts = options.co_location_hint_cuts;
    model_options.seed = options.go.seed;
    ASSIGN_OR_RETURN(model, go::GoModel::Create(model_options));
  }
  if (options.priors_off) RETURN_IF_ERROR(model->DisableHeuristicPriors());
  return model;
}

// The version a new run's card gets: --policy_version, else one more than
// the initial policy's numeric version (ParseCard's: a string or an
// integer; a card without one is version "1"), else "1". InvalidArgument
// when the initial policy's version is not a whole number; ReadCardFile's
// and ParseCard's errors.
absl::StatusOr<std::string> ExpertPolicyVersion(
    const ExpertCommandOptions& options) {
  if (!options.policy_version.empty()) return options.policy_version;
  if (options.init_policy_dir.empty()) return std::string("1");
  ASSIGN_OR_RETURN(const nlohmann::json init,
                   ReadCardFile(options.init_policy_dir));
  ASSIGN_OR_RETURN(const PolicyCard fields, ParseCard(init));
  const std::string version = fields.version.empty() ? "1" : fields.version;
  int number = 0;
  if (!absl::SimpleAtoi(version, &number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--init_policy_dir '", options.init_policy_dir,
                     "': its card's version '", version,
                     "' is not a whole number; set --policy_version"));
  }
  return absl::StrCat(number + 1);
}

// The card of a new run (a resumed run keeps its own).
nlohmann::json ExpertCard(const ExpertCommandOptions& options,
                          const std::string& version,
                          const go::ExpertIterationOptions& expert,
                          const nlohmann::json& data, const HeldOut& held_out,
                          const go::GoModel& model, int world_size) {
  return {
      {"format_version", 1},
      {"kind", "go"},
      {"name", "go-multitask"},
      {"version", version},
      {"checkpoint", "go-multitask.pt"},
      {"training",
       {{"method", "expert iteration (search distillation) + PPO"},
        {"command", options.command_line},
        {"init_policy_dir", options.init_policy_dir},
        {"init_prior_factor", options.init_prior_factor},
        {"priors_off", options.priors_off},
        {"co_location_head", options.co_location_head},
        {"co_location_hint_cuts", options.co_location_hint_cuts},
        {"data",
         {{"graphs", data},
          {"topologies", options.topologies},
          {"random_topologies", options.random_topologies},
          {"held_out",
           {{"real_graphs", go::HeldOutRealGraphs()},
            {"generator_family", go::kHeldOutFamily},
            {"curve_instances", held_out.rows}}}}},
        {"seed", expert.seed},
        {"rounds", 0},
        {"wall_seconds", 0},
        {"world_size", world_size},
        {"git_revision", GitRevision()},
        {"started_utc", UtcNow()},
        {"device", absl::StrCat("CPU, ", options.go.torch_threads,
                                " LibTorch threads per rank (shared host)")},
        {"parameters", model.num_parameters()},
        {"architecture", model.options().ToJson()},
        {"expert_iteration",
         {{"instances_per_round", expert.instances_per_round},
          {"search_rounds", expert.search_rounds},
          {"candidates_per_round", expert.candidates_per_round},
          {"distill_steps", expert.distill_steps},
          {"distill_learning_rate", expert.distill.learning_rate},
          {"prior_learning_rate", expert.distill.prior_learning_rate},
          {"fusion_weight", expert.distill.fusion_weight},
          {"placement_weight", expert.distill.placement_weight},
          {"fusion_fusible_only", expert.distill.fusion_fusible_only},
          {"relabel_to_greedy", expert.relabel_to_greedy},
          {"keep_best", expert.keep_best},
          {"replay_targets", expert.replay_targets},
          {"average_decay", options.average_decay},
          {"placement_loss",
           expert.distill.placement_loss == go::PlacementLoss::kCoLocation
               ? "co_location"
               : "cross_entropy"},
          {"ppo_steps", expert.ppo_steps},
          {"ppo_samples_per_graph", expert.ppo.samples_per_graph},
          {"ppo_learning_rate", expert.ppo.learning_rate}}}}},
      {"metrics", {{"held_out_curve", nlohmann::json::array()}}}};
}

constexpr char kExpertCsvHeader[] =
    "round,seconds,greedy_over_baseline,target_over_baseline,placement_loss,"
    "scheduling_loss,fusion_loss,placement_accuracy,ppo_reward,simulations,"
    "held_out_zero_shot_over_best_baseline,co_location_head_loss,"
    "co_location_head_accuracy,validation_zero_shot_over_best_baseline";

// The best validation geomean a (resumed) card records; infinity when it
// records none (a new run, a run without validation, or a card without a
// numeric metrics.validation_best).
double RecordedValidationBest(const nlohmann::json& card) {
  const auto metrics = card.find("metrics");
  if (metrics == card.end() || !metrics->is_object()) {
    return std::numeric_limits<double>::infinity();
  }
  const auto best = metrics->find("validation_best");
  return best != metrics->end() && best->is_number()
             ? best->get<double>()
             : std::numeric_limits<double>::infinity();
}

// Rank 0's files of an expert run: the checkpoint and card (save), the
// held-out and validation curves (Evaluate, recorded in the card) and
// train.csv (Log). With validation instances, only an evaluation that
// improves the best validation geomean writes the checkpoint.
class ExpertRecorder {
 public:
  ExpertRecorder(const ExpertCommandOptions& options, go::GoModel* model,
                 const HeldOut& held_out, const HeldOut& validation,
                 const go::ExpertIterationOptions& e, nlohmann::json card)
      : options_(options),
        model_(model),
        held_out_(held_out),
        validation_(validation),
        expert_(e),
        card_(std::move(card)) {
    csv_.open(options.out_dir + "/train.csv",
              options.resume ? std::ios::app : std::ios::trunc);
    if (!options.resume) csv_ << kExpertCsvHeader << "\n";
    best_validation_ = RecordedValidationBest(card_);
  }

  // Writes the checkpoint and the card (`rounds` and `seconds`: where the
  // checkpoint was taken, where a resumed run starts).
  absl::Status Save(int rounds, double seconds) {
    return SaveTo(options_.out_dir, rounds, seconds, &card_);
  }

  // Writes the checkpoint and `card` (its checkpoint hash, `rounds` and
  // `seconds` set) into `dir`, a policy directory of its own.
  absl::Status SaveTo(const std::string& dir, int rounds, double seconds,
                      nlohmann::json* card) {
    RETURN_IF_ERROR(model_->Save(dir + "/go-multitask.pt"));
    RETURN_IF_ERROR(RecordCheckpointSha256(
        dir, "gopt-train expert (when it saved the checkpoint)", card));
    (*card)["training"]["rounds"] = rounds;
    (*card)["training"]["wall_seconds"] = std::round(seconds);
    return WriteCardFile(dir, *card);
  }

  // With --keep_evaluated_checkpoints: the network as evaluated after
  // `rounds` rounds, in out_dir/evaluated/round-NNNN/ (a policy directory
  // `gopt bench --policy_dir=out_dir/evaluated` can run).
  absl::Status KeepEvaluated(int rounds, double seconds) {
    if (!options_.keep_evaluated_checkpoints) return absl::OkStatus();
    const std::string dir =
        absl::StrFormat("%s/evaluated/round-%04d", options_.out_dir, rounds);
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      return absl::InternalError(
          absl::StrCat("cannot create '", dir, "': ", error.message()));
    }
    nlohmann::json card = card_;
    return SaveTo(dir, rounds, seconds, &card);
  }

  // Evaluates after `rounds` rounds (`seconds`): the held-out zero-shot
  // geomean over the best baselines (0 without held-out instances); with
  // validation instances, also theirs, writing the checkpoint only when it
  // is the best so far (else only the card's curves); without, always.
  absl::StatusOr<double> EvaluateAndSave(int rounds, double seconds,
                                         double* validation) {
    ASSIGN_OR_RETURN(const double ratio,
                     Evaluate(held_out_, seconds, "held_out_curve"));
    card_["training"]["rounds_run"] = rounds;
    card_["training"]["wall_seconds_run"] = std::round(seconds);
    if (validation_.views.empty()) {
      RETURN_IF_ERROR(KeepEvaluated(rounds, seconds));
      RETURN_IF_ERROR(Save(rounds, seconds));
      return ratio;
    }
    ASSIGN_OR_RETURN(*validation,
                     Evaluate(validation_, seconds, "validation_curve"));
    RETURN_IF_ERROR(KeepEvaluated(rounds, seconds));
    if (*validation < best_validation_) {
      best_validation_ = *validation;
      card_["metrics"]["validation_best"] = best_validation_;
      card_["metrics"]["held_out_at_validation_best"] = ratio;
      RETURN_IF_ERROR(Save(rounds, seconds));
    } else {
      RETURN_IF_ERROR(WriteCardFile(options_.out_dir, card_));
    }
    return ratio;
  }

  // The zero-shot geomean over `set`'s best baselines (0 for an empty
  // set), appended to the card's metrics[curve].
  absl::StatusOr<double> Evaluate(const HeldOut& set, double seconds,
                                  const char* curve) {
    if (set.views.empty()) return 0.0;
    ASSIGN_OR_RETURN(double ratio,
                     go::ZeroShotOverBaseline(*model_, set.views, set.baselines,
                                              expert_.tasks, 16, expert_.seed,
                                              expert_.simulation_threads));
    card_["metrics"][curve].push_back(
        {{"seconds", std::round(seconds)}, {"zero_shot_over_best", ratio}});
    return ratio;
  }

  absl::Status EvaluateInitial() {
    if (options_.resume) return absl::OkStatus();
    if (!validation_.views.empty()) {
      // The starting network is a candidate too: training that never
      // improves validation keeps it.
      double validation = 0;
      ASSIGN_OR_RETURN(double ratio, EvaluateAndSave(0, 0, &validation));
      csv_ << absl::StrFormat("-1,0,,,,,,,,0,%.5f,,,%.5f\n", ratio, validation);
      std::cerr << absl::StrFormat(
          "held-out zero-shot / best baseline: %.4f, validation %.4f\n", ratio,
          validation);
      return absl::OkStatus();
    }
    if (held_out_.views.empty()) return absl::OkStatus();
    ASSIGN_OR_RETURN(double ratio, Evaluate(held_out_, 0, "held_out_curve"));
    csv_ << absl::StrFormat("-1,0,,,,,,,,0,%.5f,,,\n", ratio);
    std::cerr << absl::StrFormat("held-out zero-shot / best baseline: %.4f\n",
                                 ratio);
    return absl::OkStatus();
  }

  // After round s: every eval_every rounds evaluates and saves; logs the
  // round to train.csv and stderr.
  absl::Status Log(const go::ExpertRoundStats& s) {
    std::string held;
    std::string validated;
    if ((s.round + 1) % std::max(options_.eval_every, 1) == 0) {
      double validation = 0;
      ASSIGN_OR_RETURN(double ratio,
                       EvaluateAndSave(s.round + 1, s.seconds, &validation));
      held = absl::StrFormat("%.5f", ratio);
      if (!validation_.views.empty()) {
        validated = absl::StrFormat("%.5f", validation);
      }
    }
    csv_ << absl::StrFormat(
        "%d,%.1f,%.5f,%.5f,%.5f,%.5f,%.5f,%.4f,%.5f,%d,%s,%.5f,%.4f,%s\n",
        s.round, s.seconds, s.greedy_over_baseline, s.target_over_baseline,
        s.distill.placement_loss, s.distill.scheduling_loss,
        s.distill.fusion_loss, s.distill.placement_accuracy, s.ppo_reward,
        s.simulations, held, s.distill.co_location_head_loss,
        s.distill.co_location_head_accuracy, validated);
    csv_.flush();
    const std::string head =
        model_->options().co_location_head
            ? absl::StrFormat(" co-location head loss %.4f acc %.3f",
                              s.distill.co_location_head_loss,
                              s.distill.co_location_head_accuracy)
            : "";
    std::cerr << absl::StrFormat(
        "round %d %.0fs greedy/baseline %.4f target/baseline %.4f "
        "placement acc %.3f%s%s%s\n",
        s.round, s.seconds, s.greedy_over_baseline, s.target_over_baseline,
        s.distill.placement_accuracy, head,
        held.empty() ? "" : absl::StrCat(" held-out ", held),
        validated.empty() ? "" : absl::StrCat(" validation ", validated));
    return absl::OkStatus();
  }

 private:
  const ExpertCommandOptions& options_;
  go::GoModel* model_;
  const HeldOut& held_out_;
  const HeldOut& validation_;
  // The best validation geomean a checkpoint was written for (a resumed
  // run's from its card).
  double best_validation_;
  const go::ExpertIterationOptions& expert_;
  nlohmann::json card_;
  std::ofstream csv_;
};

}  // namespace

absl::Status RunExpert(const ExpertCommandOptions& options, std::ostream& out) {
  go::SetTorchThreads(options.go.torch_threads);
  ASSIGN_OR_RETURN(go::PpoOptions ppo, PpoOptionsOf(options.go));
  ASSIGN_OR_RETURN(go::DistributedEnv env, go::DistributedEnvFromEnvironment());
  ASSIGN_OR_RETURN(std::unique_ptr<go::DataParallel> group,
                   go::DataParallel::Connect(
                       env, absl::Seconds(options.rendezvous_seconds)));
  const bool writer = env.rank == 0;
  if (writer) std::filesystem::create_directories(options.out_dir);
  nlohmann::json card;
  ASSIGN_OR_RETURN(std::unique_ptr<go::GoModel> model,
                   ExpertInitialModel(options, &card));
  nlohmann::json data = nlohmann::json::array();
  std::vector<go::CorpusGraph> validation_graphs;
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<go::TrainingInstance>> owned,
                   ExpertInstances(options, &data, &validation_graphs));
  std::vector<const go::TrainingInstance*> instances;
  for (const auto& instance : owned) instances.push_back(instance.get());
  HeldOut held_out;
  HeldOut validation;
  if (writer) {
    ASSIGN_OR_RETURN(held_out, HeldOutInstances(options));
    ASSIGN_OR_RETURN(validation,
                     EvaluationInstances(options, validation_graphs));
  }
  std::cerr << "expert: rank " << env.rank << " of " << env.world_size << ", "
            << instances.size() << " training instances, "
            << held_out.views.size() << " held-out instances, "
            << validation.views.size() << " validation instances\n";

  go::ExpertIterationOptions expert = ExpertIterationOptionsOf(options, ppo);
  expert.data_parallel = group.get();
  if (options.resume) {
    expert.start_round = card["training"].value("rounds", 0);
    expert.start_seconds = card["training"].value("wall_seconds", 0.0);
  } else {
    ASSIGN_OR_RETURN(const std::string version, ExpertPolicyVersion(options));
    card = ExpertCard(options, version, expert, data, held_out, *model,
                      env.world_size);
    card["training"]["data"]["validation"] = {
        {"graphs", options.validation_graphs},
        {"trained_graphs", options.selection_graphs},
        {"instances", validation.rows},
        {"selects_checkpoint", !validation.views.empty()}};
  }
  // With --average_decay the checkpoints (and the held-out curve) are the
  // weights' moving average; a resumed run trains on from them.
  std::unique_ptr<go::GoModel> averaged;
  if (options.average_decay > 0) {
    ASSIGN_OR_RETURN(averaged, model->Clone());
    expert.averaged = averaged.get();
  }
  go::GoModel* recorded = averaged != nullptr ? averaged.get() : model.get();
  std::unique_ptr<ExpertRecorder> recorder;
  if (writer) {
    recorder = std::make_unique<ExpertRecorder>(
        options, recorded, held_out, validation, expert, std::move(card));
    RETURN_IF_ERROR(recorder->EvaluateInitial());
    expert.on_round = [&recorder](const go::ExpertRoundStats& s) {
      return recorder->Log(s);
    };
  }
  ASSIGN_OR_RETURN(go::ExpertIterationResult result,
                   go::RunExpertIteration(model.get(), instances, expert));
  const double total = expert.start_seconds + result.seconds;
  if (writer) {
    double final_validation = 0;
    ASSIGN_OR_RETURN(
        double final_ratio,
        recorder->EvaluateAndSave(result.rounds, total, &final_validation));
    if (!held_out.views.empty()) {
      out << absl::StrFormat("held-out zero-shot / best baseline: %.4f\n",
                             final_ratio);
    }
  }
  out << absl::StrFormat(
      "expert: rank %d ran %.1f s this run (%.1f s in total), rounds %d of "
      "%d, %d plan-search simulations this run\n",
      env.rank, result.seconds, total, result.rounds, options.rounds,
      result.simulations);
  return absl::OkStatus();
}

}  // namespace gopt::policy
