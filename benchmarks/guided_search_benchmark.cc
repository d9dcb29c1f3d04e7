// Policy-guided versus uniform plan search (issue #19): for every graph x
// machine and seed, the uniform search (moves drawn as without a policy)
// runs --rounds rounds from the best baseline plan; the guided search
// (PlanSearchOptions::guided, moves drawn from the GO policy's output) runs
// from the same plan with the same seed until it is at least as fast as the
// uniform search's final plan, or --rounds rounds. Prints, per instance and
// seed, the simulations each needed and their ratio, then the geometric
// mean of the ratios over the pairs the guided search reached (and how many
// it did not). Pairs where the uniform search improved nothing on the start
// plan are listed and left out. Last, per kind of move, the candidates
// proposed and the ones that won, over all uniform runs and over all guided
// runs (each up to the round that reached). A benchmark: it prints numbers
// and asserts nothing.
//
//   gopt_guided_search_benchmark --policy_dir=policy/pretrained
//     --graph=SOURCE,... --topologies=v100x4-nvlink,h100x8-nvlink
//
// --policy_dir is one policy's directory (it holds a card.json) or a
// directory of them, of which the newest GO policy guides (the one
// gopt-server serves: policy::NewestPolicyDirectory).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/go_model.h"
#include "policy/go/plan_search.h"
#include "simulator/topology.h"
#include "training/go/corpus.h"
#include "training/go/expert_iteration.h"

ABSL_FLAG(std::string, policy_dir, "policy/pretrained",
          "the GO policy whose output guides the search: its directory, or a "
          "directory of policies (then the newest GO policy there)");
ABSL_FLAG(std::vector<std::string>, graph, {}, "graph sources");
ABSL_FLAG(std::vector<std::string>, topologies,
          std::vector<std::string>({"v100x4-nvlink", "h100x8-nvlink"}),
          "preset machines");
ABSL_FLAG(int32_t, rounds, 32, "rounds of 16 simulations of the uniform run");
ABSL_FLAG(int32_t, seeds, 2, "seeds 1..N per instance");
ABSL_FLAG(double, uniform_share,
          gopt::policy::go::PlanSearchOptions().guided_uniform_share,
          "share of the guided search's candidates proposed uniformly "
          "(PlanSearchOptions::guided_uniform_share)");
ABSL_FLAG(bool, flat_policy, false,
          "the ablation: guide with uniform distributions of the network's "
          "shapes instead of its output (what the guided moves gain without "
          "the network)");

namespace {

namespace go = gopt::policy::go;

absl::StatusOr<std::unique_ptr<go::GoModel>> LoadModel(std::string dir) {
  if (!std::filesystem::exists(std::filesystem::path(dir) / "card.json")) {
    absl::StatusOr<std::string> newest =
        gopt::policy::NewestPolicyDirectory(dir, "go");
    if (!newest.ok()) return newest.status();
    dir = *newest;
  }
  std::cerr << "guiding with " << dir << "\n";
  absl::StatusOr<nlohmann::json> card = gopt::policy::ReadCardFile(dir);
  if (!card.ok()) return card.status();
  absl::StatusOr<std::string> path =
      gopt::policy::VerifiedCheckpointPath(dir, *card);
  if (!path.ok()) return path.status();
  return go::GoModel::Load(*path);
}

// Adds `search`'s proposals and wins per kind of move to `totals`.
void AddMoveStats(const go::PlanSearch& search,
                  std::vector<go::MoveKindStats>* totals) {
  for (int k = 0; k < go::kNumMoveKinds; ++k) {
    (*totals)[k].proposed += search.move_stats()[k].proposed;
    (*totals)[k].improved += search.move_stats()[k].improved;
  }
}

// Rounds the guided search needed to reach `goal_s` (or -1); adds its moves
// to `totals`.
absl::StatusOr<int> GuidedRounds(const go::TrainingInstance& instance,
                                 const go::ScoredPlan& start,
                                 const go::PlanSearchOptions& options,
                                 const go::PolicyOutput& policy, int rounds,
                                 double goal_s,
                                 std::vector<go::MoveKindStats>* totals) {
  go::PlanSearch search(instance, start, options);
  int reached = -1;
  for (int r = 1; r <= rounds && reached < 0; ++r) {
    absl::Status status = search.Run(1, &policy);
    if (!status.ok()) return status;
    if (!search.best().oom && search.best().step_time_s <= goal_s) reached = r;
  }
  AddMoveStats(search, totals);
  return reached;
}

// Makes every row of `policy` uniform (the --flat_policy ablation).
void Flatten(go::PolicyOutput* policy) {
  for (std::vector<float>* head :
       {&policy->placement, &policy->scheduling, &policy->fusion}) {
    if (head->empty()) continue;
    const size_t width = head->size() / policy->num_nodes;
    std::fill(head->begin(), head->end(), -std::log(static_cast<float>(width)));
  }
}

// "kind proposed/won, ..." for every kind proposed.
std::string MoveStatsLine(const std::vector<go::MoveKindStats>& totals) {
  std::string line;
  for (int k = 0; k < go::kNumMoveKinds; ++k) {
    if (totals[k].proposed == 0) continue;
    absl::StrAppend(&line, line.empty() ? "" : ", ",
                    go::MoveKindName(static_cast<go::MoveKind>(k)), " ",
                    totals[k].proposed, "/", totals[k].improved);
  }
  return line;
}

int Run() {
  absl::StatusOr<std::unique_ptr<go::GoModel>> model =
      LoadModel(absl::GetFlag(FLAGS_policy_dir));
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  const gopt::policy::TaskSet tasks{true, true, true, false};
  const int rounds = absl::GetFlag(FLAGS_rounds);
  double log_ratio = 0;
  int reached = 0;
  int missed = 0;
  int unimproved = 0;  // pairs where the uniform search improved nothing
  std::vector<go::MoveKindStats> uniform_moves(go::kNumMoveKinds);
  std::vector<go::MoveKindStats> guided_moves(go::kNumMoveKinds);
  std::cout << absl::StrFormat("%-45s %-14s %4s %10s %10s %9s %9s %7s\n",
                               "graph", "topology", "seed", "uniform ms",
                               "start ms", "uni sims", "gui sims", "ratio");
  for (const std::string& source : absl::GetFlag(FLAGS_graph)) {
    absl::StatusOr<gopt::graph::Graph> loaded = go::LoadGraphSource(source);
    if (!loaded.ok()) {
      std::cerr << loaded.status() << "\n";
      return 1;
    }
    auto graph = std::make_shared<const gopt::graph::Graph>(*std::move(loaded));
    for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
      absl::StatusOr<gopt::simulator::Topology> topology =
          gopt::simulator::PresetTopology(name);
      if (!topology.ok()) return 1;
      absl::StatusOr<std::unique_ptr<go::TrainingInstance>> instance =
          go::MakeTrainingInstance(
              source, graph,
              std::make_shared<const gopt::simulator::Topology>(*topology));
      if (!instance.ok()) return 1;
      absl::StatusOr<go::ScoredPlan> start =
          go::BestBaselinePlan(**instance, 0);
      if (!start.ok()) {
        std::cout << absl::StrFormat("%-45s %-14s no baseline fits memory\n",
                                     source, name);
        continue;
      }
      absl::StatusOr<go::PolicyOutput> policy =
          (*model)->Run((*instance)->features, tasks);
      if (!policy.ok()) return 1;
      if (absl::GetFlag(FLAGS_flat_policy)) Flatten(&*policy);
      for (int seed = 1; seed <= absl::GetFlag(FLAGS_seeds); ++seed) {
        go::PlanSearchOptions options;
        options.tasks = tasks;
        options.seed = seed;
        go::PlanSearch uniform(**instance, *start, options);
        if (!uniform.Run(rounds, nullptr).ok()) return 1;
        AddMoveStats(uniform, &uniform_moves);
        const double goal_s = uniform.best().step_time_s;
        if (!(goal_s < start->step_time_s)) {
          // Nothing to reach: the uniform search found no better plan.
          ++unimproved;
          std::cout << absl::StrFormat(
              "%-45s %-14s %4d %10.4f %10.4f %9d %9s %7s\n", source, name, seed,
              goal_s * 1e3, start->step_time_s * 1e3,
              rounds * options.candidates_per_round, "-", "no gain");
          continue;
        }
        options.guided = true;
        options.guided_uniform_share = absl::GetFlag(FLAGS_uniform_share);
        absl::StatusOr<int> guided =
            GuidedRounds(**instance, *start, options, *policy, rounds, goal_s,
                         &guided_moves);
        if (!guided.ok()) return 1;
        const int uniform_sims = rounds * options.candidates_per_round;
        const int guided_sims = *guided * options.candidates_per_round;
        if (*guided > 0) {
          log_ratio +=
              std::log(static_cast<double>(guided_sims) / uniform_sims);
          ++reached;
        } else {
          ++missed;
        }
        std::cout << absl::StrFormat(
            "%-45s %-14s %4d %10.4f %10.4f %9d %9s %7s\n", source, name, seed,
            goal_s * 1e3, start->step_time_s * 1e3, uniform_sims,
            *guided > 0 ? absl::StrCat(guided_sims) : "-",
            *guided > 0
                ? absl::StrFormat(
                      "%.3f", static_cast<double>(guided_sims) / uniform_sims)
                : "not");
      }
    }
  }
  std::cout << absl::StrFormat(
      "\nguided/uniform simulations to reach the uniform search's final "
      "plan: geomean %.3f over %d pairs reached; %d not reached in %d "
      "rounds; %d pairs left out (the uniform search improved nothing)\n",
      reached ? std::exp(log_ratio / reached) : 0.0, reached, missed, rounds,
      unimproved);
  std::cout << "moves proposed/won, uniform runs: "
            << MoveStatsLine(uniform_moves)
            << "\nmoves proposed/won, guided runs (until reached): "
            << MoveStatsLine(guided_moves) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  go::SetTorchThreads(2);
  return Run();
}
