// The plan search on a fixed simulation budget (issue #19): for every graph
// x machine, the search runs from the best baseline plan (the best of
// DefaultBaselineMethods) for --rounds rounds of 16 candidates per seed,
// every task's moves allowed (placement, scheduling, fusion), no policy.
// Deterministic: seeds and simulation counts, not seconds, so the numbers
// do not depend on the host's load or the thread count.
//
// Prints per instance the best baseline, the simulator's lower bound over
// it, and per seed the best plan over the best baseline after each mark
// (rounds), the rounds between marks that improved it, the round of the
// last improvement, and per kind of move how many were proposed and how many
// became the incumbent by being faster; then per machine and mark the
// geometric mean over the instances. Instances whose best baseline does not
// fit memory are listed and left out. A benchmark: it prints numbers and
// asserts nothing.
//
//   gopt_plan_search_benchmark [--graph=SOURCE,...] [--data_dir=../shared/data]
//     [--topologies=v100x4-nvlink,h100x8-nvlink] [--rounds=256]
//     [--marks=16,64,256] [--seeds=1] [--threads=2]

#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy/go/plan_search.h"
#include "simulator/topology.h"
#include "training/go/corpus.h"
#include "training/go/expert_iteration.h"
#include "util/repeated_flags.h"

ABSL_FLAG(std::vector<std::string>, graph, {},
          "graph sources (files or gen:PRESET); default: the GO card's "
          "held-out real graphs under --data_dir, transformer_xl-small and "
          "-large");
ABSL_FLAG(std::string, data_dir, "../shared/data",
          "the shared data directory the default graphs are under");
ABSL_FLAG(std::vector<std::string>, topologies,
          std::vector<std::string>({"v100x4-nvlink", "h100x8-nvlink"}),
          "preset machines");
ABSL_FLAG(int32_t, rounds, 256, "rounds of 16 candidates per seed");
ABSL_FLAG(std::vector<std::string>, marks,
          std::vector<std::string>({"16", "64", "256"}),
          "rounds after which to report the best plan (the last should be "
          "--rounds)");
ABSL_FLAG(int32_t, seeds, 1, "seeds 1..N per instance");
ABSL_FLAG(int32_t, threads, 2,
          "simulation threads (the results are the same for any count)");

namespace gopt::policy::go {
namespace {

std::vector<std::string> DefaultSources() {
  std::vector<std::string> sources;
  for (const std::string& path : HeldOutRealGraphs()) {
    sources.push_back(absl::StrCat(absl::GetFlag(FLAGS_data_dir), "/", path));
  }
  sources.push_back("gen:transformer_xl-small");
  sources.push_back("gen:transformer_xl-large");
  return sources;
}

// Runs one seed's search and prints its line; adds log(best / baseline) at
// each mark to `log_ratios`.
absl::Status SearchOneSeed(const TrainingInstance& instance,
                           const ScoredPlan& start, int seed,
                           const std::vector<int>& marks,
                           std::vector<double>* log_ratios) {
  PlanSearchOptions options;
  options.tasks = TaskSet{true, true, true, false};
  options.threads = absl::GetFlag(FLAGS_threads);
  options.seed = seed;
  PlanSearch search(instance, start, options);
  std::string line = absl::StrFormat("    seed %d:", seed);
  int last_improvement_round = 0;
  int done = 0;
  for (size_t m = 0; m < marks.size(); ++m) {
    int better = 0;  // rounds that improved the best plan
    while (done < marks[m]) {
      const double before_s = search.best().step_time_s;
      if (absl::Status s = search.Run(1, nullptr); !s.ok()) return s;
      ++done;
      if (search.best().step_time_s < before_s) {
        last_improvement_round = done;
        ++better;
      }
    }
    const double ratio = search.best().step_time_s / start.step_time_s;
    (*log_ratios)[m] += std::log(ratio);
    absl::StrAppendFormat(&line, "  r%d %.4f (+%d)", marks[m], ratio, better);
  }
  absl::StrAppendFormat(&line, "  last improvement at round %d\n",
                        last_improvement_round);
  std::cout << line << "      moves (proposed/improved):";
  for (int k = 0; k < kNumMoveKinds; ++k) {
    const MoveKindStats& stats = search.move_stats()[k];
    if (stats.proposed == 0) continue;
    std::cout << absl::StrFormat(" %s %d/%d",
                                 MoveKindName(static_cast<MoveKind>(k)),
                                 stats.proposed, stats.improved);
  }
  std::cout << "\n";
  return absl::OkStatus();
}

int Run() {
  std::vector<int> marks;
  for (const std::string& mark : absl::GetFlag(FLAGS_marks)) {
    marks.push_back(std::stoi(mark));
  }
  if (marks.empty() || marks.back() != absl::GetFlag(FLAGS_rounds)) {
    marks.push_back(absl::GetFlag(FLAGS_rounds));
  }
  std::vector<std::string> sources = absl::GetFlag(FLAGS_graph);
  if (sources.empty()) sources = DefaultSources();
  // Per machine: sum over instances and seeds of log(best / baseline).
  std::map<std::string, std::vector<double>> log_ratios;
  std::map<std::string, int> counted;
  for (const std::string& source : sources) {
    absl::StatusOr<graph::Graph> loaded = LoadGraphSource(source);
    if (!loaded.ok()) {
      std::cerr << source << ": " << loaded.status() << "\n";
      return 1;
    }
    auto graph = std::make_shared<const graph::Graph>(*std::move(loaded));
    for (const std::string& name : absl::GetFlag(FLAGS_topologies)) {
      absl::StatusOr<simulator::Topology> topology =
          simulator::PresetTopology(name);
      if (!topology.ok()) {
        std::cerr << topology.status() << "\n";
        return 1;
      }
      absl::StatusOr<std::unique_ptr<TrainingInstance>> instance =
          MakeTrainingInstance(
              source, graph,
              std::make_shared<const simulator::Topology>(*topology));
      if (!instance.ok()) {
        std::cerr << source << ": " << instance.status() << "\n";
        return 1;
      }
      absl::StatusOr<ScoredPlan> start = BestBaselinePlan(**instance, 0);
      if (!start.ok() || !start->valid || start->oom) {
        std::cout << absl::StrFormat("%s on %s: no baseline fits memory\n",
                                     source, name);
        continue;
      }
      std::cout << absl::StrFormat(
          "%s on %s: %d nodes, best baseline %.4f ms (%s), lower bound / "
          "best baseline %.3f\n",
          source, name, graph->num_nodes(), start->step_time_s * 1e3,
          start->plan.method,
          (*instance)->simulator->LowerBound() / start->step_time_s);
      std::vector<double>& sums = log_ratios[name];
      sums.resize(marks.size(), 0);
      for (int seed = 1; seed <= absl::GetFlag(FLAGS_seeds); ++seed) {
        if (absl::Status s =
                SearchOneSeed(**instance, *start, seed, marks, &sums);
            !s.ok()) {
          std::cerr << s << "\n";
          return 1;
        }
        ++counted[name];
      }
    }
  }
  std::cout << "\ngeomean best / best baseline (instances x seeds):\n";
  for (const auto& [name, sums] : log_ratios) {
    std::cout << absl::StrFormat("  %-14s (%d)", name, counted[name]);
    for (size_t m = 0; m < marks.size(); ++m) {
      std::cout << absl::StrFormat("  r%d %.4f", marks[m],
                                   std::exp(sums[m] / counted[name]));
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace gopt::policy::go

int main(int argc, char** argv) {
  if (absl::Status s = gopt::util::RefuseRepeatedFlags(argc, argv); !s.ok()) {
    std::cerr << "gopt_plan_search_benchmark: " << s.message() << "\n";
    return 64;
  }
  absl::ParseCommandLine(argc, argv);
  return gopt::policy::go::Run();
}
