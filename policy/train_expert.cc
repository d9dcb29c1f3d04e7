// gopt-train expert: expert iteration (search distillation) of a GO policy.
//
// Every round takes the next --instances_per_round training instances
// (graph x machine), runs the plan search from the best baseline and from
// the network's own plan, trains the network toward the best plan found
// (supervised losses), then PPO (policy/go/expert_iteration.h). Held-out
// graphs (--graph x --topologies) are evaluated zero-shot every
// --eval_every rounds, when the checkpoint is saved. Resumable (--resume).
// Under torchrun's variables (WORLD_SIZE > 1) the ranks share each round's
// instances and average gradients; rank 0 alone writes files.

#include "policy/train_expert.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/corpus.h"
#include "policy/go/data_parallel.h"
#include "policy/go/expert_iteration.h"
#include "policy/go/random_corpus.h"
#include "simulator/topology.h"

ABSL_DECLARE_FLAG(std::string, out_dir);
ABSL_DECLARE_FLAG(std::string, data_dir);
ABSL_DECLARE_FLAG(int32_t, max_nodes);
ABSL_DECLARE_FLAG(double, max_seconds);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(std::vector<std::string>, topologies);
ABSL_DECLARE_FLAG(std::vector<std::string>, graph);
ABSL_DECLARE_FLAG(int32_t, hidden);
ABSL_DECLARE_FLAG(int32_t, attention_layers);
ABSL_DECLARE_FLAG(int32_t, threads);

ABSL_FLAG(int32_t, rounds, 100000,
          "expert: rounds in total, resumed ones included");
ABSL_FLAG(int32_t, instances_per_round, 4,
          "expert: instances searched per round, over all ranks");
ABSL_FLAG(int32_t, search_rounds, 4,
          "expert: plan-search rounds (16 simulations each) from each start");
ABSL_FLAG(int32_t, distill_steps, 2, "expert: supervised updates per round");
ABSL_FLAG(int32_t, ppo_steps, 1, "expert: PPO updates per round");
ABSL_FLAG(double, distill_learning_rate, 1e-3,
          "expert: Adam learning rate of the supervised updates");
ABSL_FLAG(int32_t, eval_every, 10,
          "expert: rounds between held-out evaluations and checkpoints");
ABSL_FLAG(int32_t, random_graphs, 24,
          "expert: generated graphs of random sizes added to the corpus");
ABSL_FLAG(int32_t, random_topologies, 8,
          "expert: random machines (2-8 devices) added to --topologies");
ABSL_FLAG(int32_t, topologies_per_graph, 2,
          "expert: machines each training graph is paired with");
ABSL_FLAG(bool, resume, false,
          "expert: continue from --out_dir's checkpoint and card");
ABSL_FLAG(std::string, init_policy_dir, "",
          "expert: start from this policy's weights (default: fresh)");
ABSL_FLAG(double, init_prior_factor, 0,
          "expert: with --init_policy_dir, GoModel::ScalePlacementPriors("
          "factor) first (gate reset to 1: placements become trainable); 0 "
          "leaves the priors as loaded");
ABSL_FLAG(int32_t, rendezvous_seconds, 300,
          "expert: how long ranks wait for each other");

namespace gopt::policy {
namespace {

namespace go = gopt::policy::go;

// The machines training graphs are paired with: --topologies, then
// --random_topologies random ones.
absl::StatusOr<std::vector<std::shared_ptr<const simulator::Topology>>>
TrainingTopologies() {
  std::vector<std::shared_ptr<const simulator::Topology>> topologies;
  for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
    absl::StatusOr<simulator::Topology> topology =
        simulator::PresetTopology(name);
    if (!topology.ok()) return topology.status();
    topologies.push_back(
        std::make_shared<const simulator::Topology>(*std::move(topology)));
  }
  for (int i = 0; i < absl::GetFlag(FLAGS_random_topologies); ++i) {
    absl::StatusOr<simulator::Topology> topology =
        go::RandomTopology(absl::GetFlag(FLAGS_seed), i);
    if (!topology.ok()) return topology.status();
    topologies.push_back(
        std::make_shared<const simulator::Topology>(*std::move(topology)));
  }
  return topologies;
}

// The training instances: the pre-training corpus plus random generated
// graphs, graph g paired with machines (g + j * stride) mod M for j <
// topologies_per_graph. `data` lists them for the card.
absl::StatusOr<std::vector<std::unique_ptr<go::TrainingInstance>>>
TrainingInstances(nlohmann::json* data) {
  go::CorpusOptions corpus_options;
  corpus_options.data_dir = absl::GetFlag(FLAGS_data_dir);
  corpus_options.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<go::CorpusGraph>> corpus =
      go::BuildPretrainingCorpus(corpus_options, &skipped);
  if (!corpus.ok()) return corpus.status();
  absl::StatusOr<std::vector<go::CorpusGraph>> random =
      go::RandomGeneratedGraphs(absl::GetFlag(FLAGS_random_graphs),
                                corpus_options.max_nodes,
                                absl::GetFlag(FLAGS_seed));
  if (!random.ok()) return random.status();
  corpus->insert(corpus->end(), random->begin(), random->end());
  for (const std::string& why : skipped) std::cerr << "skipped " << why << "\n";
  absl::StatusOr<std::vector<std::shared_ptr<const simulator::Topology>>>
      topologies = TrainingTopologies();
  if (!topologies.ok()) return topologies.status();
  const int machines = static_cast<int>(topologies->size());
  const int per_graph =
      std::clamp(absl::GetFlag(FLAGS_topologies_per_graph), 1, machines);
  const int stride = std::max(machines / per_graph, 1);
  std::vector<std::unique_ptr<go::TrainingInstance>> instances;
  for (size_t g = 0; g < corpus->size(); ++g) {
    const go::CorpusGraph& graph = (*corpus)[g];
    nlohmann::json machines_used = nlohmann::json::array();
    for (int j = 0; j < per_graph; ++j) {
      const auto& topology = (*topologies)[(g + j * stride) % machines];
      const std::string label = absl::StrCat(graph.label, "@", topology->name);
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(label, graph.graph, topology);
      if (!instance.ok()) {
        std::cerr << "skipped " << label << ": " << instance.status().message()
                  << "\n";
        continue;
      }
      // Instances where no baseline plan fits memory give no target.
      absl::StatusOr<go::ScoredPlan> baseline =
          go::BestBaselinePlan(**instance, absl::GetFlag(FLAGS_seed));
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

// The held-out instances (--graph x --topologies) whose best baseline fits
// memory, with those baselines.
struct HeldOut {
  std::vector<std::unique_ptr<go::TrainingInstance>> instances;
  std::vector<const go::TrainingInstance*> views;
  std::vector<go::ScoredPlan> baselines;
  nlohmann::json rows = nlohmann::json::array();
};

absl::StatusOr<HeldOut> HeldOutInstances() {
  HeldOut held_out;
  for (const std::string& source : absl::GetFlag(FLAGS_graph)) {
    absl::StatusOr<graph::Graph> loaded = go::LoadGraphSource(source);
    if (!loaded.ok()) return loaded.status();
    auto graph = std::make_shared<const graph::Graph>(*std::move(loaded));
    for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
      absl::StatusOr<simulator::Topology> topology =
          simulator::PresetTopology(name);
      if (!topology.ok()) return topology.status();
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(absl::StrCat(source, "@", name), graph,
                                   std::make_shared<const simulator::Topology>(
                                       *std::move(topology)));
      if (!instance.ok()) return instance.status();
      absl::StatusOr<go::ScoredPlan> baseline =
          go::BestBaselinePlan(**instance, absl::GetFlag(FLAGS_seed));
      held_out.rows.push_back(
          {{"graph", source},
           {"topology", name},
           {"best_baseline_ms",
            baseline.ok() ? baseline->step_time_s * 1e3 : 0.0},
           {"in_curve", baseline.ok()}});
      if (!baseline.ok()) continue;
      held_out.baselines.push_back(*std::move(baseline));
      held_out.views.push_back(instance->get());
      held_out.instances.push_back(*std::move(instance));
    }
  }
  return held_out;
}

go::ExpertIterationOptions OptionsFromFlags(const go::PpoOptions& ppo) {
  go::ExpertIterationOptions options;
  options.tasks = ppo.tasks;
  options.rounds = absl::GetFlag(FLAGS_rounds);
  options.max_seconds = absl::GetFlag(FLAGS_max_seconds);
  options.instances_per_round = absl::GetFlag(FLAGS_instances_per_round);
  options.search_rounds = absl::GetFlag(FLAGS_search_rounds);
  options.distill_steps = absl::GetFlag(FLAGS_distill_steps);
  options.ppo_steps = absl::GetFlag(FLAGS_ppo_steps);
  options.simulation_threads = ppo.simulation_threads;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.ppo = ppo;
  options.distill.learning_rate = absl::GetFlag(FLAGS_distill_learning_rate);
  options.distill.seed = absl::GetFlag(FLAGS_seed);
  return options;
}

constexpr char kCsvHeader[] =
    "round,seconds,greedy_over_baseline,target_over_baseline,placement_loss,"
    "scheduling_loss,fusion_loss,placement_accuracy,ppo_reward,simulations,"
    "held_out_zero_shot_over_best_baseline";

}  // namespace

namespace {

// The model to train: --resume's checkpoint, --init_policy_dir's, or a
// fresh one; `card` gets what a resumed run recorded.
absl::StatusOr<std::unique_ptr<go::GoModel>> InitialModel(
    const ExpertCommandContext& context, const std::string& out_dir,
    nlohmann::json* card) {
  if (absl::GetFlag(FLAGS_resume)) {
    absl::StatusOr<nlohmann::json> previous = ReadCardFile(out_dir);
    if (!previous.ok()) return previous.status();
    *card = *std::move(previous);
    return context.load_policy(out_dir);
  }
  if (!absl::GetFlag(FLAGS_init_policy_dir).empty()) {
    absl::StatusOr<std::unique_ptr<go::GoModel>> model =
        context.load_policy(absl::GetFlag(FLAGS_init_policy_dir));
    const double factor = absl::GetFlag(FLAGS_init_prior_factor);
    if (model.ok() && factor > 0) {
      absl::Status scaled = (*model)->ScalePlacementPriors(factor);
      if (!scaled.ok()) return scaled;
    }
    return model;
  }
  go::GoModelOptions model_options;
  model_options.hidden = absl::GetFlag(FLAGS_hidden);
  model_options.attention_layers = absl::GetFlag(FLAGS_attention_layers);
  model_options.seed = absl::GetFlag(FLAGS_seed);
  return go::GoModel::Create(model_options);
}

// The card of a new run (a resumed run keeps its own).
nlohmann::json NewCard(const ExpertCommandContext& context,
                       const go::ExpertIterationOptions& options,
                       const nlohmann::json& data, const HeldOut& held_out,
                       const go::GoModel& model, int world_size) {
  return {
      {"format_version", 1},
      {"kind", "go"},
      {"name", "go-multitask"},
      {"version", "3"},
      {"checkpoint", "go-multitask.pt"},
      {"training",
       {{"method", "expert iteration (search distillation) + PPO"},
        {"command", context.command_line},
        {"init_policy_dir", absl::GetFlag(FLAGS_init_policy_dir)},
        {"init_prior_factor", absl::GetFlag(FLAGS_init_prior_factor)},
        {"data",
         {{"graphs", data},
          {"topologies", absl::GetFlag(FLAGS_topologies)},
          {"random_topologies", absl::GetFlag(FLAGS_random_topologies)},
          {"held_out",
           {{"real_graphs", go::HeldOutRealGraphs()},
            {"generator_family", go::kHeldOutFamily},
            {"curve_instances", held_out.rows}}}}},
        {"seed", options.seed},
        {"rounds", 0},
        {"wall_seconds", 0},
        {"world_size", world_size},
        {"git_revision", context.git_revision},
        {"device", absl::StrCat("CPU, ", absl::GetFlag(FLAGS_threads),
                                " LibTorch threads per rank (shared host)")},
        {"parameters", model.num_parameters()},
        {"expert_iteration",
         {{"instances_per_round", options.instances_per_round},
          {"search_rounds", options.search_rounds},
          {"candidates_per_round", options.candidates_per_round},
          {"distill_steps", options.distill_steps},
          {"distill_learning_rate", options.distill.learning_rate},
          {"ppo_steps", options.ppo_steps},
          {"ppo_samples_per_graph", options.ppo.samples_per_graph},
          {"ppo_learning_rate", options.ppo.learning_rate}}}}},
      {"metrics", {{"held_out_curve", nlohmann::json::array()}}}};
}

}  // namespace

int RunExpertCommand(const ExpertCommandContext& context) {
  auto fail = [](const absl::Status& status) {
    std::cerr << "gopt-train expert: " << status.message() << "\n";
    return 1;
  };
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty()) {
    return fail(absl::InvalidArgumentError("--out_dir is required"));
  }
  absl::StatusOr<go::DistributedEnv> env = go::DistributedEnvFromEnvironment();
  if (!env.ok()) return fail(env.status());
  absl::StatusOr<std::unique_ptr<go::DataParallel>> group =
      go::DataParallel::Connect(
          *env, absl::Seconds(absl::GetFlag(FLAGS_rendezvous_seconds)));
  if (!group.ok()) return fail(group.status());
  const bool writer = env->rank == 0;
  if (writer) std::filesystem::create_directories(out_dir);
  nlohmann::json card;
  absl::StatusOr<std::unique_ptr<go::GoModel>> model =
      InitialModel(context, out_dir, &card);
  if (!model.ok()) return fail(model.status());
  nlohmann::json data = nlohmann::json::array();
  absl::StatusOr<std::vector<std::unique_ptr<go::TrainingInstance>>> owned =
      TrainingInstances(&data);
  if (!owned.ok()) return fail(owned.status());
  std::vector<const go::TrainingInstance*> instances;
  for (const auto& instance : *owned) instances.push_back(instance.get());
  absl::StatusOr<HeldOut> held_out =
      writer ? HeldOutInstances() : absl::StatusOr<HeldOut>(HeldOut());
  if (!held_out.ok()) return fail(held_out.status());
  std::cerr << "expert: rank " << env->rank << " of " << env->world_size << ", "
            << instances.size() << " training instances, "
            << held_out->views.size() << " held-out instances\n";

  go::ExpertIterationOptions options = OptionsFromFlags(context.ppo);
  options.data_parallel = group->get();
  if (absl::GetFlag(FLAGS_resume)) {
    options.start_round = card["training"].value("rounds", 0);
    options.start_seconds = card["training"].value("wall_seconds", 0.0);
  } else {
    card = NewCard(context, options, data, *held_out, **model, env->world_size);
  }
  const std::string csv_path = out_dir + "/train.csv";
  std::ofstream csv;
  if (writer) {
    csv.open(csv_path,
             absl::GetFlag(FLAGS_resume) ? std::ios::app : std::ios::trunc);
    if (!absl::GetFlag(FLAGS_resume)) csv << kCsvHeader << "\n";
  }
  auto save = [&](int rounds, double seconds) -> absl::Status {
    absl::Status status = (*model)->Save(out_dir + "/go-multitask.pt");
    if (!status.ok()) return status;
    status = RecordCheckpointSha256(
        out_dir, "gopt-train expert (when it saved the checkpoint)", &card);
    if (!status.ok()) return status;
    card["training"]["rounds"] = rounds;
    card["training"]["wall_seconds"] = std::round(seconds);
    return WriteCardFile(out_dir, card);
  };
  auto evaluate = [&](double seconds) -> absl::StatusOr<double> {
    if (held_out->views.empty()) return 0.0;
    absl::StatusOr<double> ratio = go::ZeroShotOverBaseline(
        **model, held_out->views, held_out->baselines, options.tasks, 16,
        options.seed, options.simulation_threads);
    if (!ratio.ok()) return ratio.status();
    card["metrics"]["held_out_curve"].push_back(
        {{"seconds", std::round(seconds)}, {"zero_shot_over_best", *ratio}});
    return *ratio;
  };
  if (writer && !absl::GetFlag(FLAGS_resume) && !held_out->views.empty()) {
    absl::StatusOr<double> initial = evaluate(0);
    if (!initial.ok()) return fail(initial.status());
    csv << absl::StrFormat("-1,0,,,,,,,,0,%.5f\n", *initial);
    std::cerr << absl::StrFormat("held-out zero-shot / best baseline: %.4f\n",
                                 *initial);
  }
  const int eval_every = std::max(absl::GetFlag(FLAGS_eval_every), 1);
  options.on_round = [&](const go::ExpertRoundStats& s) -> absl::Status {
    std::string held = "";
    if ((s.round + 1) % eval_every == 0) {
      absl::StatusOr<double> ratio = evaluate(s.seconds);
      if (!ratio.ok()) return ratio.status();
      held = absl::StrFormat("%.5f", *ratio);
      absl::Status saved = save(s.round + 1, s.seconds);
      if (!saved.ok()) return saved;
    }
    csv << absl::StrFormat("%d,%.1f,%.5f,%.5f,%.5f,%.5f,%.5f,%.4f,%.5f,%d,%s\n",
                           s.round, s.seconds, s.greedy_over_baseline,
                           s.target_over_baseline, s.distill.placement_loss,
                           s.distill.scheduling_loss, s.distill.fusion_loss,
                           s.distill.placement_accuracy, s.ppo_reward,
                           s.simulations, held);
    csv.flush();
    std::cerr << absl::StrFormat(
        "round %d %.0fs greedy/baseline %.4f target/baseline %.4f "
        "placement acc %.3f%s\n",
        s.round, s.seconds, s.greedy_over_baseline, s.target_over_baseline,
        s.distill.placement_accuracy,
        held.empty() ? "" : absl::StrCat(" held-out ", held));
    return absl::OkStatus();
  };
  absl::StatusOr<go::ExpertIterationResult> result =
      go::RunExpertIteration(model->get(), instances, options);
  if (!result.ok()) return fail(result.status());
  const double total = options.start_seconds + result->seconds;
  if (writer) {
    absl::StatusOr<double> final_ratio = evaluate(total);
    if (!final_ratio.ok()) return fail(final_ratio.status());
    absl::Status saved = save(result->rounds, total);
    if (!saved.ok()) return fail(saved);
    if (!held_out->views.empty()) {
      std::cerr << absl::StrFormat(
          "held-out zero-shot / best baseline: %.4f\n", *final_ratio);
    }
  }
  std::cerr << absl::StrFormat(
      "expert: rank %d ran %.1f s this run (%.1f s in total), rounds %d of "
      "%d, %d plan-search simulations this run\n",
      env->rank, result->seconds, total, result->rounds, options.rounds,
      result->simulations);
  return 0;
}

}  // namespace gopt::policy
