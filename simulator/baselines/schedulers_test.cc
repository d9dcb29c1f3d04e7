#include "simulator/baselines/schedulers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using ::testing::ElementsAre;
using testing::GraphMaker;
using ::testing::IsEmpty;
using testing::UniformTopology;

// root feeds a short branch (one op, inserted first) and a long branch of
// three ops; everything on one device.
graph::Graph TwoBranchGraph() {
  GraphMaker g("two-branch");
  const int p = g.Param("p", 1000);
  const int root = g.Op("root", 1e6, {p});
  g.Op("short", 1e9, {root});
  const int l1 = g.Op("long1", 1e9, {root});
  const int l2 = g.Op("long2", 1e9, {l1});
  g.Op("long3", 1e9, {l2});
  return g.Build();
}

TEST(CriticalPathSchedulerTest, RunsTheLongBranchFirst) {
  const graph::Graph graph = TwoBranchGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  Plan plan = DefaultPlan(graph);
  const auto priority = CriticalPathScheduler().Schedule(
      {graph, topology, cost_model, 0}, plan.device);
  ASSERT_TRUE(priority.ok()) << priority.status();
  const graph::NodeId short_id = *graph.FindNode("short");
  const graph::NodeId long1 = *graph.FindNode("long1");
  EXPECT_GT((*priority)[long1], (*priority)[short_id]);

  const Simulator simulator(graph, topology, cost_model);
  const SimulationResult fifo = *simulator.Simulate(plan);
  EXPECT_LT(fifo.node_start_s[short_id], fifo.node_start_s[long1]);
  plan.priority = *priority;
  const SimulationResult critical = *simulator.Simulate(plan);
  EXPECT_LT(critical.node_start_s[long1], critical.node_start_s[short_id]);
}

TEST(CriticalPathSchedulerTest, CrossDeviceEdgesLengthenThePath) {
  // With long1 on another device, its transfers make the long branch even
  // more urgent; priorities still follow the upward rank.
  const graph::Graph graph = TwoBranchGraph();
  const Topology topology = UniformTopology(2);
  const RooflineCostModel cost_model;
  std::vector<int32_t> device(graph.num_nodes(), 0);
  device[*graph.FindNode("long2")] = 1;
  const auto priority = CriticalPathScheduler().Schedule(
      {graph, topology, cost_model, 0}, device);
  ASSERT_TRUE(priority.ok()) << priority.status();
  EXPECT_GT((*priority)[*graph.FindNode("long1")],
            (*priority)[*graph.FindNode("short")]);
  EXPECT_GT((*priority)[*graph.FindNode("root")],
            (*priority)[*graph.FindNode("long1")]);
}

TEST(FifoSchedulerTest, ReturnsTheFrameworkDefault) {
  const graph::Graph graph = TwoBranchGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  const auto priority =
      FifoScheduler().Schedule({graph, topology, cost_model, 0},
                               std::vector<int32_t>(graph.num_nodes(), 0));
  ASSERT_TRUE(priority.ok());
  EXPECT_THAT(*priority, IsEmpty());
}

TEST(SchedulerTest, RejectsABadPlacement) {
  const graph::Graph graph = TwoBranchGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  EXPECT_EQ(CriticalPathScheduler()
                .Schedule({graph, topology, cost_model, 0}, {0, 0})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FifoScheduler()
                .Schedule({graph, topology, cost_model, 0},
                          std::vector<int32_t>(graph.num_nodes(), 3))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DenseRanksTest, PreservesOrderAndTies) {
  EXPECT_THAT(DenseRanks({0.5, 2.0, 0.5, -1.0}), ElementsAre(1, 2, 1, 0));
  EXPECT_THAT(DenseRanks({}), IsEmpty());
}

}  // namespace
}  // namespace gopt::simulator::baselines
