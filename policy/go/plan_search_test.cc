#include "policy/go/plan_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policy/go/ppo_trainer.h"
#include "policy/testing/go_instance.h"
#include "simulator/baselines/greedy_fusion.h"
#include "simulator/generators/generators.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::ChainGraph;
using simulator::baselines::testing::ColocatedFanOutGraph;
using simulator::baselines::testing::FanOutGraph;
using simulator::baselines::testing::GraphMaker;
using testing::TestInstance;

constexpr TaskSet kAllTasks{true, true, true, false};
constexpr TaskSet kSchedulingOnly{false, true, false, false};

ScoredPlan Start(const TrainingInstance& instance, simulator::Plan plan) {
  ScoredPlan scored = ScorePlan(instance, std::move(plan));
  EXPECT_TRUE(scored.valid);
  return scored;
}

PlanSearchOptions Options(TaskSet tasks, int threads = 2) {
  PlanSearchOptions options;
  options.tasks = tasks;
  options.threads = threads;
  options.seed = 7;
  return options;
}

// p -> x and p -> a -> b, each a 1-GFLOP dot (1 ms on the test GPUs); x and
// a on device 0, b on device 1. In topological order x runs first and b
// waits for it; running a first lets b overlap x.
graph::Graph InversionGraph() {
  GraphMaker g("inversion");
  const int p = g.Param("p", 1000);
  g.Op("x", graph::OpKind::kDot, 1e9, {p});
  const int a = g.Op("a", graph::OpKind::kDot, 1e9, {p});
  g.Op("b", graph::OpKind::kDot, 1e9, {a});
  return g.Build();
}

TEST(PlanSearchTest, SchedulingMoveFixesAPriorityInversion) {
  const graph::Graph graph = InversionGraph();
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.device = {0, 0, 0, 1};
  const ScoredPlan start = Start(*instance, plan);
  simulator::Plan a_first = plan;
  a_first.priority = {0, 0, 1, 0};
  const ScoredPlan optimum = Start(*instance, a_first);
  ASSERT_LT(optimum.step_time_s, start.step_time_s - 0.9e-3);

  PlanSearch search(*instance, start, Options(kSchedulingOnly));
  ASSERT_TRUE(search.Run(/*rounds=*/8, /*placement=*/nullptr).ok());
  EXPECT_DOUBLE_EQ(search.best().step_time_s, optimum.step_time_s);
  EXPECT_EQ(search.best().plan.device, plan.device);
  EXPECT_GE(search.improvements(), 1);
  EXPECT_EQ(search.best().plan.method, "go");
}

TEST(PlanSearchTest, PlacementMovesSpreadAFanOut) {
  // Four 1 ms branches all on device 0: spread over two devices they run
  // two at a time.
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  const ScoredPlan start = Start(*instance, simulator::DefaultPlan(graph));
  PlanSearch search(*instance, start, Options(kAllTasks));
  ASSERT_TRUE(search.Run(/*rounds=*/32, /*placement=*/nullptr).ok());
  EXPECT_LT(search.best().step_time_s, 0.7 * start.step_time_s);
  const std::vector<int32_t>& device = search.best().plan.device;
  EXPECT_NE(std::count(device.begin(), device.end(), 1), 0);
}

TEST(PlanSearchTest, SchedulingOnlyNeverMovesANode) {
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  for (size_t i = 0; i < plan.device.size(); ++i) plan.device[i] = i % 2;
  const ScoredPlan start = Start(*instance, plan);
  PlanSearch search(*instance, start, Options(kSchedulingOnly));
  ASSERT_TRUE(search.Run(/*rounds=*/16, /*placement=*/nullptr).ok());
  EXPECT_EQ(search.best().plan.device, plan.device);
  EXPECT_LE(search.best().step_time_s, start.step_time_s);
  EXPECT_EQ(search.candidates_simulated(), 16 * 16);
}

// Without fusion moves (options.tasks.fusion off) the groups are the
// start plan's, and each moves whole.
TEST(PlanSearchTest, FusionGroupsMoveWhole) {
  const graph::Graph graph = ChainGraph(/*length=*/6);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.fusion_group = {-1, 0, 0, -1, 1, 1, -1};
  const ScoredPlan start = Start(*instance, plan);
  PlanSearch search(*instance, start,
                    Options(TaskSet{true, true, false, false}));
  ASSERT_TRUE(search.Run(/*rounds=*/32, /*placement=*/nullptr).ok());
  const std::vector<int32_t>& device = search.best().plan.device;
  EXPECT_EQ(device[1], device[2]);
  EXPECT_EQ(device[4], device[5]);
  EXPECT_EQ(search.best().plan.fusion_group, plan.fusion_group);
}

TEST(PlanSearchTest, DeterministicForASeedWhateverTheThreadCount) {
  const graph::Graph graph = FanOutGraph(/*width=*/6);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 3);
  const ScoredPlan start = Start(*instance, simulator::DefaultPlan(graph));
  PlanSearch one(*instance, start, Options(kAllTasks, /*threads=*/1));
  PlanSearch two(*instance, start, Options(kAllTasks, /*threads=*/2));
  ASSERT_TRUE(one.Run(/*rounds=*/20, /*placement=*/nullptr).ok());
  ASSERT_TRUE(two.Run(/*rounds=*/20, /*placement=*/nullptr).ok());
  EXPECT_EQ(one.best().plan.device, two.best().plan.device);
  EXPECT_EQ(one.best().plan.priority, two.best().plan.priority);
  EXPECT_EQ(one.best().step_time_s, two.best().step_time_s);
}

TEST(PlanSearchTest, OfferedBetterPlanBecomesTheIncumbent) {
  const graph::Graph graph = InversionGraph();
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.device = {0, 0, 0, 1};
  PlanSearch search(*instance, Start(*instance, plan),
                    Options(kSchedulingOnly));
  ASSERT_TRUE(search.Run(/*rounds=*/0, /*placement=*/nullptr).ok());
  simulator::Plan better = plan;
  better.priority = {0, 0, 1, 0};
  const ScoredPlan offered = Start(*instance, better);
  search.Offer(offered);
  EXPECT_EQ(search.best().step_time_s, offered.step_time_s);
  EXPECT_EQ(search.best().plan.priority, better.priority);
  // A worse one is ignored.
  search.Offer(Start(*instance, plan));
  EXPECT_EQ(search.best().plan.priority, better.priority);
}

TEST(PlanSearchTest, OfferedPlanWithOtherFusionGroupsMovesThemWhole) {
  const graph::Graph graph = ChainGraph(/*length=*/6);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan unfused = simulator::DefaultPlan(graph);
  PlanSearch search(*instance, Start(*instance, unfused), Options(kAllTasks));
  ASSERT_TRUE(search.Run(/*rounds=*/0, /*placement=*/nullptr).ok());
  simulator::Plan fused = unfused;
  fused.fusion_group = {-1, 0, 0, 0, 0, 0, 0};
  const ScoredPlan offered = Start(*instance, fused);
  ASSERT_LT(offered.step_time_s, search.best().step_time_s);
  search.Offer(offered);
  ASSERT_TRUE(search.Run(/*rounds=*/16, /*placement=*/nullptr).ok());
  const std::vector<int32_t>& device = search.best().plan.device;
  for (int i = 2; i <= 6; ++i) EXPECT_EQ(device[i], device[1]) << i;
  EXPECT_EQ(search.best().plan.fusion_group, fused.fusion_group);
}

TEST(PlanSearchTest, PrioritiesNearTheInt32LimitAreRenumbered) {
  const graph::Graph graph = InversionGraph();
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.device = {0, 0, 0, 1};
  plan.priority = {0, std::numeric_limits<int32_t>::max(), 7, 0};
  const ScoredPlan start = Start(*instance, plan);
  PlanSearch search(*instance, start, Options(kSchedulingOnly));
  ASSERT_TRUE(search.Run(/*rounds=*/8, /*placement=*/nullptr).ok());
  // Renumbered 0..2 first, then raised by at most a few moves.
  const std::vector<int32_t>& priority = search.best().plan.priority;
  EXPECT_LT(*std::max_element(priority.begin(), priority.end()), 100);
  EXPECT_LE(search.best().step_time_s, start.step_time_s);
  EXPECT_GE(search.improvements(), 1);
}

TEST(PlanSearchTest, OfferedPlanReplacesAnInvalidStartBeforeTheFirstRun) {
  // Fine-tuning may start from an invalid zero-shot plan and find a valid
  // one with PPO before the search first runs.
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  ScoredPlan invalid;
  invalid.plan = simulator::DefaultPlan(graph);
  invalid.plan.device.assign(graph.num_nodes(), 5);  // no device 5
  PlanSearch search(*instance, invalid, Options(kAllTasks));
  const ScoredPlan valid = Start(*instance, simulator::DefaultPlan(graph));
  search.Offer(valid);
  ASSERT_TRUE(search.Run(/*rounds=*/4, /*placement=*/nullptr).ok());
  EXPECT_TRUE(search.best().valid);
  EXPECT_LE(search.best().step_time_s, valid.step_time_s);
}

TEST(PlanSearchTest, StopsAtTheDeadline) {
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  const ScoredPlan start = Start(*instance, simulator::DefaultPlan(graph));
  PlanSearchOptions options = Options(kAllTasks);
  options.deadline = absl::InfinitePast();
  PlanSearch search(*instance, start, options);
  ASSERT_TRUE(search.Run(/*rounds=*/8, /*placement=*/nullptr).ok());
  EXPECT_EQ(search.candidates_simulated(), 0);
  EXPECT_EQ(search.best().step_time_s, start.step_time_s);
}

TEST(PlanSearchTest, StopsOnceWithinTheStopStepTime) {
  // The stop check is a lower bound times a tolerance: once the best plan
  // reaches it, no further round runs.
  const graph::Graph graph = InversionGraph();
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.device = {0, 0, 0, 1};
  const ScoredPlan start = Start(*instance, plan);
  PlanSearchOptions options = Options(kSchedulingOnly);
  options.stop_at_step_time_s = start.step_time_s;
  PlanSearch already(*instance, start, options);
  ASSERT_TRUE(already.Run(/*rounds=*/8, /*placement=*/nullptr).ok());
  EXPECT_EQ(already.candidates_simulated(), 0);

  simulator::Plan a_first = plan;
  a_first.priority = {0, 0, 1, 0};
  options.stop_at_step_time_s = Start(*instance, a_first).step_time_s;
  PlanSearch search(*instance, start, options);
  ASSERT_TRUE(search.Run(/*rounds=*/8, /*placement=*/nullptr).ok());
  EXPECT_DOUBLE_EQ(search.best().step_time_s, options.stop_at_step_time_s);
  EXPECT_LT(search.candidates_simulated(),
            int64_t{8} * options.candidates_per_round);
}

TEST(PlanSearchTest, RejectsAPlacementDistributionOfAnotherShape) {
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  PlanSearch search(*instance, Start(*instance, simulator::DefaultPlan(graph)),
                    Options(kAllTasks));
  PolicyOutput wrong;
  wrong.num_nodes = graph.num_nodes();
  wrong.num_devices = 3;
  wrong.placement.assign(graph.num_nodes() * 3, -1.0986f);
  const absl::Status status = search.Run(/*rounds=*/1, &wrong);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("3 devices"), std::string::npos) << status;
}

// A policy output for `graph` on `devices` devices: placement uniform,
// scheduling and fusion rows putting all mass on `level`.
PolicyOutput FlatPolicy(const graph::Graph& graph, int devices, int level) {
  PolicyOutput policy;
  policy.num_nodes = graph.num_nodes();
  policy.num_devices = devices;
  policy.placement.assign(graph.num_nodes() * devices,
                          -std::log(static_cast<float>(devices)));
  std::vector<float> row(kPriorityLevels, -1e9f);
  row[level] = 0;
  for (int i = 0; i < graph.num_nodes(); ++i) {
    policy.scheduling.insert(policy.scheduling.end(), row.begin(), row.end());
    policy.fusion.insert(policy.fusion.end(), row.begin(), row.end());
  }
  return policy;
}

TEST(PlanSearchTest, GuidedSearchSpreadsAFanOutAndIsDeterministic) {
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  const ScoredPlan start = Start(*instance, simulator::DefaultPlan(graph));
  const PolicyOutput policy = FlatPolicy(graph, 2, kPriorityLevels - 1);
  PlanSearchOptions options = Options(kAllTasks);
  options.guided = true;
  PlanSearch search(*instance, start, options);
  ASSERT_TRUE(search.Run(/*rounds=*/32, &policy).ok());
  EXPECT_LT(search.best().step_time_s, 0.7 * start.step_time_s);
  options.threads = 1;
  PlanSearch again(*instance, start, options);
  ASSERT_TRUE(again.Run(/*rounds=*/32, &policy).ok());
  EXPECT_EQ(again.best().plan.device, search.best().plan.device);
  EXPECT_EQ(again.best().step_time_s, search.best().step_time_s);
}

TEST(PlanSearchTest, GuidedFusionMovesMakeGreedyGroups) {
  // A chain on one device: a policy that wants every node fused makes the
  // search fuse along the chain, with groups the greedy rules allow.
  const graph::Graph graph = ChainGraph(6);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 1);
  const ScoredPlan start = Start(*instance, simulator::DefaultPlan(graph));
  const PolicyOutput policy = FlatPolicy(graph, 1, kPriorityLevels - 1);
  PlanSearchOptions options = Options(TaskSet{false, true, true, false});
  options.guided = true;
  PlanSearch search(*instance, start, options);
  ASSERT_TRUE(search.Run(/*rounds=*/16, &policy).ok());
  const std::vector<int32_t>& groups = search.best().plan.fusion_group;
  ASSERT_FALSE(groups.empty());
  EXPECT_GT(std::count_if(groups.begin(), groups.end(),
                          [](int32_t g) { return g >= 0; }),
            1);
  EXPECT_LE(search.best().step_time_s, start.step_time_s);
  EXPECT_TRUE(search.best().valid);
}

TEST(PlanSearchTest, RejectsASchedulingDistributionOfAnotherShape) {
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  PlanSearchOptions options = Options(kAllTasks);
  options.guided = true;
  PlanSearch search(*instance, Start(*instance, simulator::DefaultPlan(graph)),
                    options);
  PolicyOutput wrong = FlatPolicy(graph, 2, 0);
  wrong.scheduling.resize(3);
  EXPECT_EQ(search.Run(/*rounds=*/1, &wrong).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PlanSearchTest, RejectsAStartPlanOfAnotherGraph) {
  const graph::Graph graph = FanOutGraph(/*width=*/4);
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  ScoredPlan foreign;
  foreign.plan = simulator::DefaultPlan(ChainGraph(/*length=*/2));
  PlanSearch search(*instance, foreign, Options(kAllTasks));
  const absl::Status status = search.Run(/*rounds=*/1, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a valid plan"), std::string::npos)
      << status;
}

// Incremental candidate simulation changes nothing but speed: on a gnmt
// training-step graph (3,579 nodes) from a random placement, the search
// takes the same path with it as with a full simulation per candidate (same
// incumbents, same final plan and step time), placement and scheduling
// moves alike.
TEST(PlanSearchTest, IncrementalCandidatesTakeTheSamePath) {
  absl::StatusOr<graph::Graph> graph =
      simulator::generators::GenerateModelGraph(
          simulator::generators::FindGeneratorPreset("gnmt2-small")->options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::unique_ptr<TrainingInstance> instance = TestInstance(*graph, 4);
  simulator::Plan plan = simulator::DefaultPlan(*graph);
  for (int i = 0; i < graph->num_nodes(); ++i) plan.device[i] = i * 7 % 4;
  const ScoredPlan start = Start(*instance, plan);
  PlanSearchOptions options = Options(kAllTasks);
  options.incremental = false;
  PlanSearch full(*instance, start, options);
  ASSERT_TRUE(full.Run(40, nullptr).ok());
  options.incremental = true;
  PlanSearch incremental(*instance, start, options);
  ASSERT_TRUE(incremental.Run(40, nullptr).ok());
  EXPECT_GT(full.improvements(), 0);
  EXPECT_EQ(incremental.improvements(), full.improvements());
  EXPECT_EQ(incremental.candidates_simulated(), full.candidates_simulated());
  EXPECT_EQ(incremental.best().step_time_s, full.best().step_time_s);
  EXPECT_EQ(incremental.best().plan.device, full.best().plan.device);
  EXPECT_EQ(incremental.best().plan.priority, full.best().plan.priority);
  EXPECT_LT(full.best().step_time_s, start.step_time_s);
}

// p -> a (dot) -> b (1 ms elementwise) and a -> c (dot) on the other
// device: with a and b fused, c waits for the whole kernel (3 ms); split,
// b and c run side by side (2 ms). Only scheduling and fusion moves.
TEST(PlanSearchTest, SplitFusionMoveUnfusesAKernelThatDelaysAnotherDevice) {
  GraphMaker g("split");
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", graph::OpKind::kDot, 1e9, {p});
  g.Op("b", 1e9, {a});
  g.Op("c", graph::OpKind::kDot, 1e9, {a});
  const graph::Graph graph = g.Build();
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.device = {0, 0, 0, 1};
  plan.fusion_group = {-1, 0, 0, -1};
  const ScoredPlan start = Start(*instance, plan);
  PlanSearch search(*instance, start,
                    Options(TaskSet{false, true, true, false}));
  ASSERT_TRUE(search.Run(/*rounds=*/16, /*placement=*/nullptr).ok());
  const simulator::Plan& best = search.best().plan;
  EXPECT_LT(search.best().step_time_s, start.step_time_s - 0.9e-3);
  EXPECT_TRUE(best.fusion_group[1] < 0 ||
              best.fusion_group[1] != best.fusion_group[2]);
  EXPECT_EQ(best.device, plan.device);
  EXPECT_GE(
      search.move_stats()[static_cast<int>(MoveKind::kSplitFusion)].improved,
      1);
  EXPECT_TRUE(
      simulator::ValidatePlan(best, graph, instance->simulator->topology())
          .ok());
}

// Two independent chains of 12 ops on device 0 whose edges carry 100 MB
// (10 ms on a test link, each op about 2 ms): a region move carries a
// whole chain to the other device, halving the step.
TEST(PlanSearchTest, RegionMoveCarriesAChainWhole) {
  GraphMaker g("two-long-chains");
  const int input = g.Param("input", 1000);
  std::vector<int> chains[2];
  for (int c = 0; c < 2; ++c) {
    int last = input;
    for (int i = 0; i < 12; ++i) {
      last = g.Op(absl::StrCat(c == 0 ? "a" : "b", i), graph::OpKind::kDot, 1e9,
                  {last}, /*elements=*/25'000'000);
      chains[c].push_back(last);
    }
  }
  const graph::Graph graph = g.Build();
  std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 2);
  const ScoredPlan start = Start(*instance, simulator::DefaultPlan(graph));
  PlanSearch search(*instance, start,
                    Options(TaskSet{true, false, false, false}));
  ASSERT_TRUE(search.Run(/*rounds=*/32, /*placement=*/nullptr).ok());
  const simulator::Plan& best = search.best().plan;
  EXPECT_LT(search.best().step_time_s, 0.6 * start.step_time_s);
  for (const std::vector<int>& chain : chains) {
    for (int id : chain) EXPECT_EQ(best.device[id], best.device[chain[0]]);
  }
  EXPECT_NE(best.device[chains[0][0]], best.device[chains[1][0]]);
  const int region = static_cast<int>(MoveKind::kPlaceRegion);
  const int swap = static_cast<int>(MoveKind::kSwapRegions);
  EXPECT_GE(
      search.move_stats()[region].improved + search.move_stats()[swap].improved,
      1);
}

// A policy output for `graph` on `devices` devices whose rows are random
// distributions drawn from `seed` (every head).
PolicyOutput RandomPolicy(const graph::Graph& graph, int devices,
                          uint64_t seed) {
  std::mt19937_64 rng(seed);
  PolicyOutput policy;
  policy.num_nodes = graph.num_nodes();
  policy.num_devices = devices;
  auto fill = [&](int width, std::vector<float>* head) {
    for (int i = 0; i < graph.num_nodes(); ++i) {
      std::vector<double> p(width);
      double total = 0;
      for (double& x : p) total += x = 0.05 + UniformDouble(&rng);
      for (double x : p)
        head->push_back(static_cast<float>(std::log(x / total)));
    }
  };
  fill(devices, &policy.placement);
  fill(kPriorityLevels, &policy.scheduling);
  fill(kPriorityLevels, &policy.fusion);
  return policy;
}

// Searches 24 rounds of one candidate batch each, with 1 and with 3 threads,
// from a scattered placement with greedy fusion, on a gnmt training-step
// graph and on a fan-out whose weights are colocated; `guided`: every move
// drawn from a random policy (no uniform share). Expects every best plan
// legal (fusion and colocation groups on one device, fusion groups within
// the kernel rules), both searches identical, and every move kind of the
// mode proposed.
void ExpectMovesLegalAndDeterministic(bool guided) {
  absl::StatusOr<graph::Graph> gnmt = simulator::generators::GenerateModelGraph(
      simulator::generators::FindGeneratorPreset("gnmt2-small")->options);
  ASSERT_TRUE(gnmt.ok()) << gnmt.status();
  const graph::Graph graphs[] = {*std::move(gnmt),
                                 ColocatedFanOutGraph(/*width=*/8)};
  // Both fusion rules: a greedy-join start keeps its rule in fusion moves.
  for (const auto join : {simulator::baselines::FusionJoin::kOneProducer,
                          simulator::baselines::FusionJoin::kAllProducers}) {
    for (const graph::Graph& graph : graphs) {
      std::unique_ptr<TrainingInstance> instance = TestInstance(graph, 4);
      const simulator::Topology& topology = instance->simulator->topology();
      simulator::Plan plan = simulator::DefaultPlan(graph, topology);
      for (int i = 0; i < graph.num_nodes(); ++i) plan.device[i] = i * 7 % 4;
      simulator::ColocateGroups(graph, topology, &plan.device);
      absl::StatusOr<std::vector<int32_t>> groups =
          simulator::baselines::GreedyFusionGroups(graph, plan.device, nullptr,
                                                   join);
      ASSERT_TRUE(groups.ok());
      plan.fusion_group = *groups;
      plan.method = join == simulator::baselines::FusionJoin::kAllProducers
                        ? "test+fifo+greedy-join"
                        : "test+fifo+greedy";
      const ScoredPlan start = Start(*instance, plan);
      PolicyOutput policy = RandomPolicy(graph, 4, /*seed=*/3);
      // Co-location logits on every dependency (the head's path of the guide).
      for (size_t e = 0; e < instance->features.edge_src.size(); ++e) {
        policy.co_location.push_back(static_cast<float>(e % 7) - 3.0f);
      }
      const PolicyOutput* guide = guided ? &policy : nullptr;
      PlanSearchOptions options = Options(kAllTasks, /*threads=*/1);
      options.guided = guided;
      options.guided_uniform_share = 0;
      PlanSearch one(*instance, start, options);
      options.threads = 3;
      PlanSearch three(*instance, start, options);
      for (int round = 0; round < 24; ++round) {
        ASSERT_TRUE(one.Run(1, guide).ok());
        ASSERT_TRUE(three.Run(1, guide).ok());
        EXPECT_TRUE(
            simulator::ValidatePlan(one.best().plan, graph, topology).ok())
            << graph.name() << " round " << round;
      }
      EXPECT_LE(one.best().step_time_s, start.step_time_s);
      EXPECT_EQ(one.best().step_time_s, three.best().step_time_s);
      EXPECT_EQ(one.best().plan.device, three.best().plan.device);
      EXPECT_EQ(one.best().plan.priority, three.best().plan.priority);
      EXPECT_EQ(one.best().plan.fusion_group, three.best().plan.fusion_group);
      for (int k = 0; k < kNumMoveKinds; ++k) {
        const MoveKind kind = static_cast<MoveKind>(k);
        EXPECT_EQ(one.move_stats()[k].proposed, three.move_stats()[k].proposed);
        EXPECT_EQ(one.move_stats()[k].improved, three.move_stats()[k].improved);
        if (guided || kind != MoveKind::kGuidedFusion) {
          EXPECT_GT(one.move_stats()[k].proposed, 0) << MoveKindName(kind);
        }
      }
    }
  }
}

TEST(PlanSearchTest, EveryMoveKindKeepsPlansLegalAndIsDeterministic) {
  ExpectMovesLegalAndDeterministic(/*guided=*/false);
}

TEST(PlanSearchTest, EveryGuidedMoveKindKeepsPlansLegalAndIsDeterministic) {
  ExpectMovesLegalAndDeterministic(/*guided=*/true);
}

// Rounds of `options` (one Run per round, at most `max_rounds`) until the
// best plan is at or below `goal_s`; max_rounds + 1 when it never is.
int RoundsToReach(const TrainingInstance& instance, const ScoredPlan& start,
                  const PlanSearchOptions& options, const PolicyOutput* policy,
                  double goal_s, int max_rounds) {
  PlanSearch search(instance, start, options);
  for (int round = 1; round <= max_rounds; ++round) {
    EXPECT_TRUE(search.Run(1, policy).ok());
    if (search.best().step_time_s <= goal_s) return round;
  }
  return max_rounds + 1;
}

// A chain of eight 1-GFLOP dots on device 0 of eight test GPUs, device 5
// four times as fast as the others: the chain belongs on device 5 (about a
// quarter of the step), and no byte count says so. A policy that puts 93%
// of every node's placement on device 5 leads the guided search there in
// fewer than half the simulations the uniform search needs (one candidate
// a round, summed over seeds 1 to 8: 54 against 137; a single seed's count
// is mostly luck).
TEST(PlanSearchTest, GuidedSearchFindsTheDeviceThePolicyPointsAtSooner) {
  GraphMaker g("chain-for-the-fast-device");
  int last = g.Param("p", 1000);
  for (int i = 0; i < 8; ++i) {
    last = g.Op(absl::StrCat("dot", i), graph::OpKind::kDot, 1e9, {last});
  }
  const graph::Graph graph = g.Build();
  simulator::Topology topology =
      simulator::baselines::testing::UniformTopology(8);
  topology.devices[5].name = "test-gpu-fast";
  topology.devices[5].peak_f32_flops *= 4;
  absl::StatusOr<std::unique_ptr<TrainingInstance>> instance =
      MakeTrainingInstance(
          graph.name(), std::make_shared<const graph::Graph>(graph),
          std::make_shared<const simulator::Topology>(topology));
  ASSERT_TRUE(instance.ok()) << instance.status();
  const ScoredPlan start =
      Start(**instance, simulator::DefaultPlan(graph, topology));
  simulator::Plan on_fast = start.plan;
  on_fast.device.assign(graph.num_nodes(), 5);
  // Within 1% of it: where the parameter lives costs one small transfer.
  const double goal_s = 1.01 * Start(**instance, on_fast).step_time_s;
  ASSERT_LT(goal_s, 0.3 * start.step_time_s);

  PolicyOutput policy = FlatPolicy(graph, 8, /*level=*/0);
  for (int i = 0; i < graph.num_nodes(); ++i) {
    for (int d = 0; d < 8; ++d) {
      policy.placement[i * 8 + d] = std::log(d == 5 ? 0.93f : 0.01f);
    }
  }
  constexpr int kMaxRounds = 256;
  int uniform_total = 0;
  int guided_total = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    PlanSearchOptions options = Options(TaskSet{true, true, false, false});
    options.seed = seed;
    options.candidates_per_round = 1;
    uniform_total +=
        RoundsToReach(**instance, start, options, nullptr, goal_s, kMaxRounds);
    options.guided = true;
    const int guided =
        RoundsToReach(**instance, start, options, &policy, goal_s, kMaxRounds);
    EXPECT_LE(guided, kMaxRounds) << "seed " << seed;
    guided_total += guided;
  }
  EXPECT_LT(2 * guided_total, uniform_total)
      << "simulations over seeds 1-8: guided " << guided_total << ", uniform "
      << uniform_total;
}

}  // namespace
}  // namespace gopt::policy::go
