#include "simulator/baselines/baseline_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using testing::FanOutGraph;
using testing::GraphMaker;
using ::testing::HasSubstr;
using testing::SmallGraphs;
using testing::TwoChainsGraph;
using testing::UniformTopology;

BaselineRegistry& Registry() {
  static BaselineRegistry* registry = [] {
    auto* r = new BaselineRegistry();
    RegisterBuiltinBaselines(r);
    return r;
  }();
  return *registry;
}

std::vector<std::string> AllMethods() {
  std::vector<std::string> methods;
  const BaselineRegistry& r = Registry();
  for (const std::string& p : r.PlacerNames()) {
    std::vector<std::string> schedulings = r.SchedulerNames();
    if ((*r.FindPlacer(p))->AssumesOrder()) {
      schedulings.emplace_back(kPlacementOrder);
    }
    for (const std::string& s : schedulings) {
      for (const std::string& f : r.FuserNames()) {
        for (const std::string& l : r.LayoutAssignerNames()) {
          methods.push_back(absl::StrCat(p, "+", s, "+", f, "+", l));
        }
      }
    }
  }
  return methods;
}

TEST(BaselinePlanTest, EveryMethodGivesAValidPlanOnSmallGraphs) {
  const RooflineCostModel cost_model;
  for (const bool with_cpu : {false, true}) {
    for (const int devices : {1, 2, 4, 8}) {
      const Topology topology =
          UniformTopology(devices, /*memory_bytes=*/1'000'000'000, with_cpu);
      for (const auto& [name, graph] : SmallGraphs()) {
        const BaselineContext context{graph, topology, cost_model,
                                      /*seed=*/3};
        const Simulator simulator(graph, topology, cost_model);
        for (const std::string& method : AllMethods()) {
          SCOPED_TRACE(absl::StrCat(name, " on ", devices, " devices (cpu: ",
                                    with_cpu, ") with ", method));
          absl::StatusOr<Plan> plan =
              MakeBaselinePlan(Registry(), method, context);
          ASSERT_TRUE(plan.ok()) << plan.status();
          EXPECT_EQ(plan->method, method);
          EXPECT_TRUE(ValidatePlan(*plan, graph, topology).ok());
          absl::StatusOr<SimulationResult> result = simulator.Simulate(*plan);
          ASSERT_TRUE(result.ok()) << result.status();
          EXPECT_FALSE(result->oom);
        }
      }
    }
  }
}

TEST(BaselinePlanTest, SameSeedGivesSamePlan) {
  const RooflineCostModel cost_model;
  const graph::Graph graph = FanOutGraph(12);
  const Topology topology = UniformTopology(4);
  for (const std::string& method : AllMethods()) {
    SCOPED_TRACE(method);
    const BaselineContext context{graph, topology, cost_model, /*seed=*/11};
    absl::StatusOr<Plan> first = MakeBaselinePlan(Registry(), method, context);
    absl::StatusOr<Plan> second = MakeBaselinePlan(Registry(), method, context);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(first->device, second->device);
    EXPECT_EQ(first->priority, second->priority);
    EXPECT_EQ(first->fusion_group, second->fusion_group);
    EXPECT_EQ(first->layout, second->layout);
  }
}

TEST(BaselinePlanTest, MissingPartsTakeFrameworkDefaults) {
  absl::StatusOr<BaselineMethod> method =
      ParseBaselineMethod(Registry(), "expert");
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_EQ(method->FullName(), "expert+fifo+none+default");
  method = ParseBaselineMethod(Registry(), "metis+critical-path+greedy");
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_EQ(method->FullName(), "metis+critical-path+greedy+default");
  // A placement that decides an order runs in it unless told otherwise.
  method = ParseBaselineMethod(Registry(), "m-sct");
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_EQ(method->FullName(), "m-sct+placement-order+none+default");
  method = ParseBaselineMethod(Registry(), "m-etf+fifo");
  ASSERT_TRUE(method.ok()) << method.status();
  EXPECT_EQ(method->FullName(), "m-etf+fifo+none+default");
}

TEST(BaselinePlanTest, MemoryConstrainedPlansRunInThePlacersOrder) {
  // One 1 GB device; FIFO runs a1 and b1 before either reader and
  // overflows.
  const graph::Graph graph = TwoChainsGraph();
  const Topology topology = UniformTopology(1, /*memory_bytes=*/1'000'000'000);
  const RooflineCostModel cost_model;
  const BaselineContext context{graph, topology, cost_model, /*seed=*/0};
  const Simulator simulator(graph, topology, cost_model);
  for (const char* placement : {"m-etf", "m-sct"}) {
    SCOPED_TRACE(placement);
    absl::StatusOr<Plan> plan =
        MakeBaselinePlan(Registry(), placement, context);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->method,
              absl::StrCat(placement, "+placement-order+none+default"));
    EXPECT_FALSE(simulator.Simulate(*plan)->oom);
    // A scheduler named explicitly replaces the placer's order.
    plan =
        MakeBaselinePlan(Registry(), absl::StrCat(placement, "+fifo"), context);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->priority.empty());
    EXPECT_TRUE(simulator.Simulate(*plan)->oom);
  }
}

TEST(BaselinePlanTest, BadMethodNamesNameThePartAndListValidNames) {
  struct Case {
    const char* method;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"", "expected PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]]"},
           {"a+b+c+d+e", "expected PLACEMENT"},
           {"metis++greedy", "the scheduling part is empty"},
           {"nope", "unknown placement 'nope'; known: single, round-robin"},
           {"metis+lifo",
            "unknown scheduling 'lifo'; known: fifo, "
            "critical-path"},
           {"expert+placement-order",
            "scheduling 'placement-order' needs a placement that decides an "
            "order"},
           {"heft+fifo+all", "unknown fusion 'all'; known: none, greedy"},
           {"heft+fifo+none+nchw",
            "unknown layout 'nchw'; known: default, "
            "greedy"}}) {
    SCOPED_TRACE(c.method);
    absl::StatusOr<BaselineMethod> method =
        ParseBaselineMethod(Registry(), c.method);
    ASSERT_FALSE(method.ok());
    EXPECT_EQ(method.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(method.status().message(), HasSubstr(c.message));
    EXPECT_THAT(method.status().message(),
                HasSubstr(absl::StrCat("method '", c.method, "'")));
  }
}

TEST(BaselinePlanTest, DefaultMethodsAllParse) {
  for (const std::string& method : DefaultBaselineMethods()) {
    EXPECT_TRUE(ParseBaselineMethod(Registry(), method).ok()) << method;
  }
}

TEST(BaselinePlanTest, BestBaselineIsNeverWorseThanSingle) {
  const RooflineCostModel cost_model;
  const graph::Graph graph = FanOutGraph(8);
  const Topology topology = UniformTopology(4);
  const BaselineContext context{graph, topology, cost_model, /*seed=*/1};
  absl::StatusOr<BestBaselineResult> best = BestBaseline(Registry(), context);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->trials.size(), AllMethods().size());
  const Simulator simulator(graph, topology, cost_model);
  const SimulationResult single = *simulator.Simulate(DefaultPlan(graph));
  EXPECT_LE(best->result.step_time_s, single.step_time_s);
  // Eight independent 10-GFLOP branches spread over four devices.
  EXPECT_LT(best->result.step_time_s, 0.5 * single.step_time_s);
  EXPECT_FALSE(best->plan.method.empty());
  double best_trial = 1e30;
  for (const BaselineTrial& trial : best->trials) {
    EXPECT_TRUE(trial.valid) << trial.method << ": " << trial.error;
    if (!trial.oom) best_trial = std::min(best_trial, trial.step_time_s);
    EXPECT_GE(trial.method_seconds, 0);
  }
  EXPECT_DOUBLE_EQ(best->result.step_time_s, best_trial);
}

TEST(BaselinePlanTest, BestBaselineTriesOnlyTheGivenMethods) {
  const RooflineCostModel cost_model;
  const graph::Graph graph = FanOutGraph(4);
  const Topology topology = UniformTopology(2);
  const BaselineContext context{graph, topology, cost_model, /*seed=*/1};
  BestBaselineOptions options;
  options.methods = {"single", "heft+critical-path"};
  absl::StatusOr<BestBaselineResult> best =
      BestBaseline(Registry(), context, options);
  ASSERT_TRUE(best.ok()) << best.status();
  ASSERT_EQ(best->trials.size(), 2);
  EXPECT_EQ(best->trials[0].method, "single+fifo+none+default");
  EXPECT_EQ(best->trials[1].method, "heft+critical-path+none+default");
  EXPECT_EQ(best->plan.method, "heft+critical-path+none+default");

  options.methods = {"single", "bogus"};
  EXPECT_EQ(BestBaseline(Registry(), context, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BaselinePlanTest, BestBaselineFailsWhenNothingFits) {
  GraphMaker g;
  const int w = g.Param("huge-weights", 300'000'000);  // 1.2 GB
  g.Op("a", 1e6, {w});
  const graph::Graph graph = g.Build();
  const RooflineCostModel cost_model;
  const Topology topology = UniformTopology(2);  // 1 GB each
  const BaselineContext context{graph, topology, cost_model, /*seed=*/1};
  absl::StatusOr<BestBaselineResult> best = BestBaseline(Registry(), context);
  ASSERT_FALSE(best.ok());
  EXPECT_EQ(best.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(best.status().message(), HasSubstr("out of memory"));
  EXPECT_THAT(best.status().message(), HasSubstr("m-etf"));
}

}  // namespace
}  // namespace gopt::simulator::baselines
