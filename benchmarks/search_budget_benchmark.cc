// How far the plan search gets in a wall-clock budget, with candidates
// simulated from scratch ("full", the search before incremental
// simulation) and incrementally: on the GO card's held-out graphs
// (policy/pretrained/go-multitask-v2/card.json, Makefile GO_HELD_OUT) on
// v100x4-nvlink, from the HEFT plan, placement and scheduling moves, 16
// candidates a round on one thread, seed 1, no policy (devices drawn
// uniformly). Prints per graph and mode the best step time at each mark
// (the best of the rounds finished by then), the candidates simulated and
// the improvements. The two modes of a graph run back to back, so they share
// the host's load.
//
//   build/bin/gopt_search_budget_benchmark [--data_dir=../shared/data]
//       [--seconds=5,15,60] [--graphs=gen:transformer_xl-small,...]

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "policy/go/plan_search.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/heft_placer.h"
#include "training/go/corpus.h"
#include "util/repeated_flags.h"

ABSL_FLAG(std::string, data_dir, "../shared/data",
          "the shared data directory the held-out real graphs are under");
ABSL_FLAG(std::vector<std::string>, seconds,
          std::vector<std::string>({"5", "15", "60"}),
          "the marks (seconds of search) to report the best step time at");
ABSL_FLAG(std::vector<std::string>, graphs, {},
          "graph sources (files under --data_dir or gen:PRESET); default: "
          "the GO card's held-out graphs");

namespace gopt::policy::go {
namespace {

// The best step time at each mark, searching from `start` with candidates
// simulated incrementally or not.
void SearchFor(const TrainingInstance& instance, const ScoredPlan& start,
               const std::vector<double>& marks_s, bool incremental) {
  PlanSearchOptions options;
  options.tasks = TaskSet{true, true, false, false};
  options.threads = 1;
  options.seed = 1;
  options.incremental = incremental;
  const absl::Time begin = absl::Now();
  options.deadline = begin + absl::Seconds(marks_s.back());
  PlanSearch search(instance, start, options);
  std::vector<double> at_mark(marks_s.size(), -1);
  size_t mark = 0;
  while (mark < marks_s.size()) {
    const double before_s = search.best().step_time_s;
    if (!search.Run(1, nullptr).ok()) break;
    const double elapsed_s = absl::ToDoubleSeconds(absl::Now() - begin);
    while (mark < marks_s.size() && elapsed_s > marks_s[mark]) {
      at_mark[mark++] = before_s;  // the round that crossed it ended late
    }
    if (absl::Now() >= options.deadline) break;
  }
  for (; mark < marks_s.size(); ++mark) {
    at_mark[mark] = search.best().step_time_s;
  }
  std::printf("  %-11s", incremental ? "incremental" : "full");
  for (size_t m = 0; m < marks_s.size(); ++m) {
    std::printf("  %6.0fs: %.6f ms", marks_s[m], at_mark[m] * 1e3);
  }
  std::printf("  candidates %lld, improvements %d\n",
              static_cast<long long>(search.candidates_simulated()),
              search.improvements());
  std::fflush(stdout);
}

int Main() {
  std::vector<double> marks_s;
  for (const std::string& mark : absl::GetFlag(FLAGS_seconds)) {
    marks_s.push_back(std::stod(mark));
  }
  std::vector<std::string> sources = absl::GetFlag(FLAGS_graphs);
  if (sources.empty()) {
    for (const std::string& path : HeldOutRealGraphs()) {
      sources.push_back(absl::StrCat(absl::GetFlag(FLAGS_data_dir), "/", path));
    }
    sources.push_back("gen:transformer_xl-small");
    sources.push_back("gen:transformer_xl-large");
  }
  for (const std::string& source : sources) {
    absl::StatusOr<graph::Graph> graph = LoadGraphSource(source);
    if (!graph.ok()) {
      std::fprintf(stderr, "%s: %s\n", source.c_str(),
                   std::string(graph.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<std::unique_ptr<TrainingInstance>> instance =
        MakeTrainingInstance(
            source, std::make_shared<const graph::Graph>(*std::move(graph)),
            std::make_shared<const simulator::Topology>(
                simulator::PresetTopology("v100x4-nvlink").value()));
    if (!instance.ok()) {
      std::fprintf(stderr, "%s: %s\n", source.c_str(),
                   std::string(instance.status().message()).c_str());
      return 1;
    }
    const TrainingInstance& training = **instance;
    simulator::Plan plan = simulator::DefaultPlan(training.graph());
    simulator::RooflineCostModel cost_model;
    absl::StatusOr<std::vector<int32_t>> heft =
        simulator::baselines::HeftPlacer().Place(
            simulator::baselines::BaselineContext{
                training.graph(), training.simulator->topology(), cost_model,
                0});
    if (heft.ok()) plan.device = *std::move(heft);
    const ScoredPlan start = ScorePlan(training, plan);
    std::printf("%s: %d nodes, start (heft) %.6f ms\n", source.c_str(),
                training.graph().num_nodes(), start.step_time_s * 1e3);
    SearchFor(training, start, marks_s, /*incremental=*/false);
    SearchFor(training, start, marks_s, /*incremental=*/true);
  }
  return 0;
}

}  // namespace
}  // namespace gopt::policy::go

int main(int argc, char** argv) {
  if (absl::Status s = gopt::util::RefuseRepeatedFlags(argc, argv); !s.ok()) {
    std::cerr << "gopt_search_budget_benchmark: " << s.message() << "\n";
    return 64;
  }
  absl::ParseCommandLine(argc, argv);
  return gopt::policy::go::Main();
}
