#include "simulator/full_run.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {
namespace {

using ::testing::HasSubstr;

// A run on a workspace of its own is Simulate's, which runs on the
// thread's.
TEST(FullRunTest, AnyWorkspaceGivesSimulatesResult) {
  std::mt19937_64 rng(3);
  const graph::Graph graph = testing::RandomGraph(rng, /*nodes=*/200);
  const Topology topology = testing::RoundNumberTopology(/*devices=*/3);
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  Plan plan = DefaultPlan(graph);
  for (int i = 0; i < graph.num_nodes(); ++i) plan.device[i] = i % 3;
  const SimulationOptions options;
  Workspace workspace;
  const SimulationResult run =
      FullRun(simulator, plan, options, workspace).Run().value();
  const SimulationResult simulated = simulator.Simulate(plan).value();
  EXPECT_EQ(run.step_time_s, simulated.step_time_s);
  EXPECT_EQ(run.peak_memory_bytes, simulated.peak_memory_bytes);
  EXPECT_EQ(run.node_start_s, simulated.node_start_s);
  EXPECT_EQ(run.critical_path, simulated.critical_path);
  EXPECT_GT(run.num_transfers, 0);
  EXPECT_EQ(run.num_transfers, simulated.num_transfers);
}

TEST(FullRunTest, FusionCycleIsInvalidArgument) {
  testing::TestGraphBuilder g;
  const int p = g.Param("p", 1000);
  const int a = g.AddOp("a", graph::OpKind::kElementwiseBinary, 1e6, {p});
  const int b = g.AddOp("b", graph::OpKind::kElementwiseBinary, 1e6, {a});
  const int c = g.AddOp("c", graph::OpKind::kElementwiseBinary, 1e6, {b});
  const graph::Graph graph = g.Build();
  const Topology topology = testing::RoundNumberTopology();
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  Plan plan = DefaultPlan(graph);
  plan.fusion_group.assign(graph.num_nodes(), -1);
  plan.fusion_group[a] = plan.fusion_group[c] = 0;  // around b
  const SimulationOptions options;
  Workspace workspace;
  const absl::StatusOr<SimulationResult> run =
      FullRun(simulator, plan, options, workspace).Run();
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("form a cycle"));
}

}  // namespace
}  // namespace gopt::simulator::internal
