#include "simulator/event_loop.h"

#include <gtest/gtest.h>

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {
namespace {

using graph::OpKind;

// Counts the hook calls; AfterEvent stops the loop after `stop_after`
// events (never when negative).
struct CountingHooks : LoopHooks {
  void OnUnitReady(int32_t) { ++ready; }
  void OnKernelStart(int32_t, int32_t, double) { ++kernels; }
  void OnFreeUnitStart(int32_t) { ++free_units; }
  void OnUnitFinish(int32_t) { ++finished; }
  void OnTransferMade(int32_t) { ++transfers; }
  void OnAllocate(int32_t) { ++allocations; }
  void OnStarted() { ++started; }
  bool AfterEvent(double, bool instant_done) {
    ++events;
    instants += instant_done;
    return events == stop_after;
  }

  int ready = 0, kernels = 0, free_units = 0, finished = 0, transfers = 0;
  int allocations = 0, started = 0, events = 0, instants = 0;
  int stop_after = -1;
};

// p -> a -> {b, c} -> d with c on device 1: 4 kernels and the parameter
// (free), a's output sent to device 1 and c's back, every event at its own
// time (see SimulatorTest.DiamondAcrossTwoDevicesPaysTransfers).
class EventLoopTest : public ::testing::Test {
 protected:
  EventLoopTest() {
    testing::TestGraphBuilder g;
    const int p = g.Param("p", 1000);
    const int a = g.AddOp("a", OpKind::kElementwiseBinary, 1e9, {p},
                          /*elements=*/1'000'000);
    const int b = g.AddOp("b", OpKind::kElementwiseBinary, 1e9, {a});
    const int c = g.AddOp("c", OpKind::kElementwiseBinary, 1e9, {a},
                          /*elements=*/1'000'000);
    g.AddOp("d", OpKind::kElementwiseBinary, 1e9, {b, c});
    graph_ = g.Build();
    plan_ = DefaultPlan(graph_);
    plan_.device[c] = 1;
  }

  graph::Graph graph_;
  Topology topology_ = testing::RoundNumberTopology(/*devices=*/2);
  RooflineCostModel cost_model_;
  Plan plan_;
  SimulationOptions options_;
  Workspace workspace_;
};

TEST_F(EventLoopTest, HooksSeeEveryUnitKernelTransferAndEvent) {
  const Simulator simulator(graph_, topology_, cost_model_);
  EventLoop loop(simulator, plan_, options_, workspace_);
  CountingHooks hooks;
  loop.SetUp();
  loop.Start(hooks);
  EXPECT_EQ(hooks.started, 1);
  loop.Run(hooks);
  ASSERT_TRUE(loop.CheckAllCompleted().ok());
  EXPECT_EQ(hooks.ready, 5);
  EXPECT_EQ(hooks.finished, 5);
  EXPECT_EQ(hooks.kernels, 4);
  EXPECT_EQ(hooks.free_units, 1);
  EXPECT_EQ(hooks.transfers, 2);
  // The four kernels' outputs and the two received copies.
  EXPECT_EQ(hooks.allocations, 6);
  EXPECT_EQ(hooks.events, 6);
  EXPECT_EQ(hooks.instants, 6);
  EXPECT_EQ(loop.counters().events, 6);
  const SimulationResult result = loop.Finish();
  EXPECT_EQ(result.step_time_s, simulator.Simulate(plan_)->step_time_s);
  EXPECT_EQ(result.num_transfers, 2);
}

TEST_F(EventLoopTest, RunStopsWhereTheHooksSayAndGoesOnWhenCalledAgain) {
  const Simulator simulator(graph_, topology_, cost_model_);
  EventLoop loop(simulator, plan_, options_, workspace_);
  CountingHooks hooks;
  hooks.stop_after = 2;
  loop.SetUp();
  loop.Start(hooks);
  loop.Run(hooks);
  EXPECT_EQ(loop.counters().events, 2);
  EXPECT_LT(loop.counters().completed_units, 5);
  loop.Run(hooks);
  ASSERT_TRUE(loop.CheckAllCompleted().ok());
  const SimulationResult result = loop.Finish();
  const SimulationResult full = *simulator.Simulate(plan_);
  EXPECT_EQ(result.step_time_s, full.step_time_s);
  EXPECT_EQ(result.node_start_s, full.node_start_s);
}

TEST_F(EventLoopTest, CheckpointMatchesOnlyTheStateItWasSavedFrom) {
  const Simulator simulator(graph_, topology_, cost_model_);
  EventLoop loop(simulator, plan_, options_, workspace_);
  CountingHooks hooks;
  hooks.stop_after = 2;
  loop.SetUp();
  loop.Start(hooks);
  loop.Run(hooks);
  Checkpoint checkpoint;
  loop.SaveCheckpoint(/*now=*/1.412e-3, checkpoint);
  EXPECT_EQ(checkpoint.counters.events, 2);
  EXPECT_EQ(checkpoint.counters.completed_units,
            loop.counters().completed_units);
  Trajectory::Data base;  // the ready units' times are compared with it
  base.units = workspace_.units;
  EXPECT_TRUE(loop.MatchesCheckpoint(base, checkpoint));
  hooks.stop_after = 3;
  loop.Run(hooks);
  EXPECT_FALSE(loop.MatchesCheckpoint(base, checkpoint));
}

TEST_F(EventLoopTest, FusionCycleNeverCompletes) {
  testing::TestGraphBuilder g;
  const int p = g.Param("p", 1000);
  const int a = g.AddOp("a", OpKind::kElementwiseBinary, 1e6, {p});
  const int b = g.AddOp("b", OpKind::kElementwiseBinary, 1e6, {a});
  const int c = g.AddOp("c", OpKind::kElementwiseBinary, 1e6, {b});
  const graph::Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.fusion_group.assign(graph.num_nodes(), -1);
  plan.fusion_group[a] = plan.fusion_group[c] = 0;  // around b
  const Simulator simulator(graph, topology_, cost_model_);
  EventLoop loop(simulator, plan, options_, workspace_);
  CountingHooks hooks;
  loop.SetUp();
  loop.Start(hooks);
  loop.Run(hooks);
  EXPECT_EQ(loop.CheckAllCompleted().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gopt::simulator::internal
