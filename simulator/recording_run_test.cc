#include "simulator/recording_run.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "graph/graph.h"
#include "simulator/full_run.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {
namespace {

// A parameter and a chain of `length` kernels after it on one device: one
// event per kernel.
graph::Graph Chain(int length) {
  testing::TestGraphBuilder g;
  int previous = g.Param("p", 1000);
  for (int i = 0; i < length; ++i) {
    previous =
        g.AddOp("n" + std::to_string(i), graph::OpKind::kElementwiseBinary,
                1e6 * (1 + i % 3), {previous});
  }
  return g.Build();
}

TEST(RecordingRunTest, ResultIsTheFullRunsBitForBit) {
  std::mt19937_64 rng(5);
  const graph::Graph graph = testing::RandomGraph(rng, /*nodes=*/300);
  const Topology topology = testing::RoundNumberTopology(/*devices=*/3);
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  Plan plan = DefaultPlan(graph);
  for (int i = 0; i < graph.num_nodes(); ++i) plan.device[i] = rng() % 3;
  const SimulationOptions options;
  Workspace workspace;
  Trajectory::Data trajectory;
  const SimulationResult recorded =
      RecordingRun(simulator, plan, options, workspace, trajectory)
          .Run()
          .value();
  const SimulationResult full =
      FullRun(simulator, plan, options, workspace).Run().value();
  EXPECT_EQ(recorded.step_time_s, full.step_time_s);
  EXPECT_EQ(recorded.peak_memory_bytes, full.peak_memory_bytes);
  EXPECT_EQ(recorded.device_busy_s, full.device_busy_s);
  EXPECT_EQ(recorded.node_start_s, full.node_start_s);
  EXPECT_EQ(recorded.node_end_s, full.node_end_s);
  EXPECT_EQ(recorded.critical_path, full.critical_path);
  EXPECT_EQ(trajectory.plan.device, plan.device);
  EXPECT_EQ(trajectory.transfers.size(), recorded.transfers.size());
  EXPECT_EQ(trajectory.simulator, &simulator);
}

TEST(RecordingRunTest, CheckpointsAreSpacedByTheInterval) {
  const graph::Graph graph = Chain(/*length=*/1000);
  const Topology topology = testing::RoundNumberTopology(/*devices=*/1);
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  const SimulationOptions options;
  Workspace workspace;
  Trajectory::Data trajectory;
  ASSERT_TRUE(RecordingRun(simulator, DefaultPlan(graph), options, workspace,
                           trajectory)
                  .Run()
                  .ok());
  EXPECT_EQ(trajectory.total_events, 1000);
  EXPECT_EQ(trajectory.checkpoint_interval, 64);  // at least 64 events
  ASSERT_EQ(trajectory.checkpoints.size(), 16u);  // 0, 64, ..., 960
  EXPECT_EQ(trajectory.checkpoints[0].time_s, 0);
  for (size_t k = 0; k < trajectory.checkpoints.size(); ++k) {
    EXPECT_EQ(trajectory.checkpoints[k].counters.events,
              static_cast<int64_t>(64 * k));
  }
}

TEST(RecordingRunTest, LaterPeaksNeverRiseAlongTheRun) {
  const graph::Graph graph = Chain(/*length=*/500);
  const Topology topology = testing::RoundNumberTopology(/*devices=*/1);
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  const SimulationOptions options;
  Workspace workspace;
  Trajectory::Data trajectory;
  const SimulationResult result = RecordingRun(simulator, DefaultPlan(graph),
                                               options, workspace, trajectory)
                                      .Run()
                                      .value();
  const std::vector<Checkpoint>& kept = trajectory.checkpoints;
  ASSERT_GT(kept.size(), 2u);
  // Kernels start after instant 0, so the peak comes after the first
  // checkpoint.
  EXPECT_EQ(kept[0].later_peak_bytes, result.peak_memory_bytes);
  for (size_t k = 1; k < kept.size(); ++k) {
    EXPECT_LE(kept[k].later_peak_bytes[0], kept[k - 1].later_peak_bytes[0]);
    EXPECT_GE(kept[k].later_peak_bytes[0], kept[k].memory[0]);
  }
}

TEST(RecordingRunTest, FinalStateLeavesRanksForRaisedUnits) {
  const graph::Graph graph = Chain(/*length=*/10);
  const Topology topology = testing::RoundNumberTopology(/*devices=*/1);
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  const SimulationOptions options;
  Workspace workspace;
  Trajectory::Data trajectory;
  ASSERT_TRUE(RecordingRun(simulator, DefaultPlan(graph), options, workspace,
                           trajectory)
                  .Run()
                  .ok());
  const int n = graph.num_nodes();
  EXPECT_EQ(trajectory.rank_offset, kRaisedRanks);
  ASSERT_EQ(trajectory.unit_of_rank.size(),
            static_cast<size_t>(n + kRaisedRanks));
  for (int r = 0; r < kRaisedRanks; ++r) {
    EXPECT_EQ(trajectory.unit_of_rank[r], -1);
  }
  double chain_s = 0;
  for (int u = 0; u < n; ++u) {
    EXPECT_EQ(trajectory.units[u].rank, u + kRaisedRanks);
    chain_s += trajectory.units[u].duration;
  }
  // Without fusion each unit's tail is the chain of kernels from it on.
  ASSERT_EQ(trajectory.tail.size(), static_cast<size_t>(n));
  EXPECT_EQ(trajectory.tail[n - 1], trajectory.units[n - 1].duration);
  EXPECT_DOUBLE_EQ(trajectory.tail[0], chain_s);
}

TEST(RecordingRunTest, RecordingAgainReusesTheCheckpoints) {
  const graph::Graph graph = Chain(/*length=*/300);
  const Topology topology = testing::RoundNumberTopology(/*devices=*/1);
  RooflineCostModel cost_model;
  const Simulator simulator(graph, topology, cost_model);
  const SimulationOptions options;
  Workspace workspace;
  Trajectory::Data trajectory;
  const Plan plan = DefaultPlan(graph);
  ASSERT_TRUE(
      RecordingRun(simulator, plan, options, workspace, trajectory).Run().ok());
  const uint64_t first_id = trajectory.id;
  const size_t checkpoints = trajectory.checkpoints.size();
  const int64_t* first_buffer = trajectory.checkpoints[1].memory.data();
  ASSERT_TRUE(
      RecordingRun(simulator, plan, options, workspace, trajectory).Run().ok());
  EXPECT_NE(trajectory.id, first_id);
  EXPECT_EQ(trajectory.checkpoints.size(), checkpoints);
  EXPECT_TRUE(trajectory.spare_checkpoints.empty());
  bool reused = false;
  for (const Checkpoint& checkpoint : trajectory.checkpoints) {
    reused = reused || checkpoint.memory.data() == first_buffer;
  }
  EXPECT_TRUE(reused);
}

}  // namespace
}  // namespace gopt::simulator::internal
