#include "simulator/bounded_run.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <random>

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/step_time_bound.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {
namespace {

class BoundedRunTest : public ::testing::Test {
 protected:
  BoundedRunTest() {
    std::mt19937_64 rng(11);
    graph_ = testing::RandomGraph(rng, /*nodes=*/300);
    simulator_ = std::make_unique<Simulator>(graph_, topology_, cost_model_);
    Plan plan = DefaultPlan(graph_);
    for (int i = 0; i < graph_.num_nodes(); ++i) plan.device[i] = i % 2;
    base_ = simulator_->Record(plan).value();
  }

  CandidateResult Run(const Plan& plan, double stop_above_s) {
    CandidateResult candidate;
    const absl::Status status =
        BoundedRun(*simulator_, plan, options_, workspace_, base_->data(),
                   stop_above_s)
            .Run(&candidate);
    EXPECT_TRUE(status.ok()) << status;
    return candidate;
  }

  graph::Graph graph_;
  Topology topology_ = testing::RoundNumberTopology(/*devices=*/2);
  RooflineCostModel cost_model_;
  std::unique_ptr<Simulator> simulator_;
  std::unique_ptr<Trajectory> base_;
  SimulationOptions options_;
  Workspace workspace_;
};

TEST_F(BoundedRunTest, WithoutAStopItIsTheFullRun) {
  Plan plan = base_->plan();
  plan.device[5] = 1 - plan.device[5];
  const CandidateResult candidate =
      Run(plan, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(candidate.slower_than_cutoff);
  EXPECT_FALSE(candidate.incremental);
  EXPECT_GT(candidate.events_simulated, 0);
  const SimulationResult full = simulator_->Simulate(plan).value();
  EXPECT_EQ(candidate.result.step_time_s, full.step_time_s);
  EXPECT_EQ(candidate.result.node_start_s, full.node_start_s);
  EXPECT_EQ(candidate.result.peak_memory_bytes, full.peak_memory_bytes);
}

TEST_F(BoundedRunTest, StopsOnceCertainlyAboveTheCutoff) {
  const double step_s = base_->result().step_time_s;
  const double cutoff_s = step_s / 2;
  const CandidateResult candidate =
      Run(base_->plan(), StepTimeBound::StopAbove(cutoff_s));
  EXPECT_TRUE(candidate.slower_than_cutoff);
  EXPECT_GT(candidate.step_time_lower_bound_s, cutoff_s);
  EXPECT_LE(candidate.step_time_lower_bound_s, step_s * (1 + 1e-9));
  EXPECT_LT(candidate.events_simulated, base_->num_events());
}

TEST_F(BoundedRunTest, CutoffAtTheStepTimeDoesNotStop) {
  const CandidateResult candidate =
      Run(base_->plan(), StepTimeBound::StopAbove(base_->result().step_time_s));
  EXPECT_FALSE(candidate.slower_than_cutoff);
  EXPECT_EQ(candidate.events_simulated, base_->num_events());
  EXPECT_EQ(candidate.result.step_time_s, base_->result().step_time_s);
}

}  // namespace
}  // namespace gopt::simulator::internal
