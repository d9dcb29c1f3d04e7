#include "simulator/resume_point.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/trajectory.h"

namespace gopt::simulator::internal {
namespace {

constexpr int kChain = 300;

// A parameter and a chain of kChain kernels after it (node i + 1 reads
// node i), all on device 0 of two: one event per kernel, so the recording
// keeps several checkpoints (one every 64 events).
graph::Graph Chain() {
  testing::TestGraphBuilder g;
  int previous = g.Param("p", 1000);
  for (int i = 0; i < kChain; ++i) {
    previous = g.AddOp("n" + std::to_string(i),
                       graph::OpKind::kElementwiseBinary, 1e6, {previous});
  }
  return g.Build();
}

class ResumePointTest : public ::testing::Test {
 protected:
  ResumePointTest() {
    Plan plan = DefaultPlan(graph_);
    plan.priority.assign(graph_.num_nodes(), 1);
    base_ = simulator_->Record(plan).value();
  }

  const Trajectory::Data& base() const { return base_->data(); }
  // The last checkpoint of the base before `time_s`.
  int LastCheckpointBefore(double time_s) const {
    int last = -1;
    for (int c = 0; c < base_->num_checkpoints(); ++c) {
      if (base().checkpoints[c].time_s < time_s) last = c;
    }
    return last;
  }

  graph::Graph graph_ = Chain();
  Topology topology_ = testing::RoundNumberTopology(/*devices=*/2);
  RooflineCostModel cost_model_;
  std::unique_ptr<Simulator> simulator_ =
      std::make_unique<Simulator>(graph_, topology_, cost_model_);
  std::unique_ptr<Trajectory> base_;
};

TEST_F(ResumePointTest, UnchangedPlanResumesFromTheLastCheckpoint) {
  ASSERT_GE(base_->num_checkpoints(), 4);
  const ResumePoint start = ResumePoint::Find(*simulator_, base(), base().plan);
  EXPECT_TRUE(start.same_kernels);
  EXPECT_TRUE(start.changed_units.empty());
  EXPECT_EQ(start.checkpoint, base_->num_checkpoints() - 1);
}

TEST_F(ResumePointTest, RaisedPriorityResumesBeforeTheUnitIsReady) {
  const int node = 200;
  Plan plan = base().plan;
  plan.priority[node] = 2;
  const ResumePoint start = ResumePoint::Find(*simulator_, base(), plan);
  EXPECT_EQ(start.changed_units, (std::vector<int32_t>{node}));
  const int expected = LastCheckpointBefore(base().units[node].ready_at);
  EXPECT_GT(expected, 0);
  EXPECT_EQ(start.checkpoint, expected);
}

TEST_F(ResumePointTest, MovedNodeResumesBeforeItsProducerFinishes) {
  const int node = 150;
  Plan plan = base().plan;
  plan.device[node] = 1;
  const ResumePoint start = ResumePoint::Find(*simulator_, base(), plan);
  EXPECT_EQ(start.changed_units, (std::vector<int32_t>{node}));
  const int expected = LastCheckpointBefore(base().units[node - 1].end);
  EXPECT_GT(expected, 0);
  EXPECT_EQ(start.checkpoint, expected);
}

TEST_F(ResumePointTest, PriorityNotAboveEveryOtherRunsFromTheStart) {
  Plan plan = base().plan;
  plan.priority[200] = 0;  // lowered
  EXPECT_EQ(ResumePoint::Find(*simulator_, base(), plan).checkpoint, -1);
}

TEST_F(ResumePointTest, MovedParameterRunsFromTheStart) {
  Plan plan = base().plan;
  plan.device[0] = 1;
  const ResumePoint start = ResumePoint::Find(*simulator_, base(), plan);
  EXPECT_TRUE(start.same_kernels);
  EXPECT_EQ(start.checkpoint, -1);
}

TEST_F(ResumePointTest, OtherKernelsRunFromTheStart) {
  Plan fused = base().plan;
  fused.fusion_group.assign(graph_.num_nodes(), -1);
  fused.fusion_group[10] = fused.fusion_group[11] = 0;
  const ResumePoint start = ResumePoint::Find(*simulator_, base(), fused);
  EXPECT_FALSE(start.same_kernels);
  EXPECT_EQ(start.checkpoint, -1);
}

TEST_F(ResumePointTest, DevicesThatCostDifferentlyRunFromTheStart) {
  Topology topology = topology_;
  topology.devices[1].peak_f32_flops *= 2;
  const Simulator simulator(graph_, topology, cost_model_);
  const std::unique_ptr<Trajectory> base =
      simulator.Record(base_->plan()).value();
  const ResumePoint start =
      ResumePoint::Find(simulator, base->data(), base->plan());
  EXPECT_FALSE(start.same_kernels);
  EXPECT_EQ(start.checkpoint, -1);
}

TEST_F(ResumePointTest, LinksThatTakeDeviceTimeRunFromTheStart) {
  Topology topology = topology_;
  for (Link& link : topology.links) link.device_overhead_s = 1e-6;
  const Simulator simulator(graph_, topology, cost_model_);
  const std::unique_ptr<Trajectory> base =
      simulator.Record(base_->plan()).value();
  const ResumePoint start =
      ResumePoint::Find(simulator, base->data(), base->plan());
  EXPECT_FALSE(start.same_kernels);
  EXPECT_EQ(start.checkpoint, -1);
}

}  // namespace
}  // namespace gopt::simulator::internal
