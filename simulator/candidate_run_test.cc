#include "simulator/candidate_run.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/resume_point.h"
#include "simulator/simulator.h"
#include "simulator/step_time_bound.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {
namespace {

constexpr double kNoCutoff = std::numeric_limits<double>::infinity();

// Two chains of 200 kernels each, from parameters p (node 0) and q (node
// 201), both on device 0 of two: the recording keeps several checkpoints.
// Chain p runs first (lower NodeIds), then chain q; a node moved to device
// 1 waits for its input's transfer while device 0 runs the other chain.
graph::Graph TwoChains() {
  testing::TestGraphBuilder g;
  for (const char* chain : {"p", "q"}) {
    int previous = g.Param(chain, 1000);
    for (int i = 0; i < 200; ++i) {
      previous = g.AddOp(std::string(chain) + std::to_string(i),
                         graph::OpKind::kElementwiseBinary, 1e6, {previous});
    }
  }
  return g.Build();
}

class CandidateRunTest : public ::testing::Test {
 protected:
  CandidateRunTest() {
    Plan plan = DefaultPlan(graph_);
    plan.priority.assign(graph_.num_nodes(), 0);
    base_ = simulator_.Record(plan).value();
  }

  // The candidate simulated from its resume point on `workspace_`.
  CandidateResult RunCandidate(const Plan& plan, double cutoff_s) {
    const ResumePoint start = ResumePoint::Find(simulator_, base(), plan);
    EXPECT_GE(start.checkpoint, 0);
    CandidateResult candidate;
    const absl::Status status =
        CandidateRun(simulator_, plan, options_, workspace_, base(),
                     StepTimeBound::StopAbove(cutoff_s))
            .Run(start, &candidate);
    EXPECT_TRUE(status.ok()) << status;
    return candidate;
  }
  const Trajectory::Data& base() const { return base_->data(); }
  // The base plan with `node` raised above every priority.
  Plan Raised(int node) const {
    Plan plan = base().plan;
    plan.priority[node] = 1;
    return plan;
  }
  // The base plan with `node` moved to device 1.
  Plan Moved(int node) const {
    Plan plan = base().plan;
    plan.device[node] = 1;
    return plan;
  }

  graph::Graph graph_ = TwoChains();
  Topology topology_ = testing::RoundNumberTopology(/*devices=*/2);
  RooflineCostModel cost_model_;
  Simulator simulator_{graph_, topology_, cost_model_};
  std::unique_ptr<Trajectory> base_;
  SimulationOptions options_;
  Workspace workspace_;
};

TEST_F(CandidateRunTest, HarmlessChangeRejoinsTheBase) {
  // Node 150 (of chain p) waits for its own producer either way: raising it
  // changes the run only while it is ready, and the run rejoins after.
  const Plan plan = Raised(150);
  const CandidateResult candidate = RunCandidate(plan, kNoCutoff);
  EXPECT_TRUE(candidate.incremental);
  EXPECT_TRUE(candidate.rejoined_base);
  EXPECT_GT(candidate.events_skipped, 0);
  EXPECT_LT(candidate.events_skipped + candidate.events_simulated,
            base_->num_events());
  const SimulationResult full = simulator_.Simulate(plan).value();
  EXPECT_EQ(candidate.result.step_time_s, full.step_time_s);
  EXPECT_EQ(candidate.result.node_start_s, full.node_start_s);
  EXPECT_EQ(candidate.result.peak_memory_bytes, full.peak_memory_bytes);
  EXPECT_EQ(candidate.result.critical_path, full.critical_path);
}

TEST_F(CandidateRunTest, MovedNodeRunsToTheEnd) {
  const Plan plan = Moved(150);
  const CandidateResult candidate = RunCandidate(plan, kNoCutoff);
  EXPECT_TRUE(candidate.incremental);
  EXPECT_FALSE(candidate.rejoined_base);
  EXPECT_FALSE(candidate.slower_than_cutoff);
  EXPECT_EQ(candidate.events_skipped + candidate.events_simulated,
            base_->num_events() + 2);  // and its two transfers
  const SimulationResult full = simulator_.Simulate(plan).value();
  EXPECT_EQ(candidate.result.step_time_s, full.step_time_s);
  EXPECT_EQ(candidate.result.node_start_s, full.node_start_s);
  EXPECT_EQ(candidate.result.bytes_moved, full.bytes_moved);
}

TEST_F(CandidateRunTest, StopsOnceCertainlyAboveTheCutoff) {
  // The last kernel of chain q, moved to device 1, ends the run after its
  // input's transfer: slower than the base.
  const Plan plan = Moved(401);
  const double full_s = simulator_.Simulate(plan).value().step_time_s;
  const double cutoff_s = base_->result().step_time_s;
  ASSERT_GT(full_s, cutoff_s);
  const CandidateResult candidate = RunCandidate(plan, cutoff_s);
  EXPECT_TRUE(candidate.slower_than_cutoff);
  EXPECT_GT(candidate.step_time_lower_bound_s, cutoff_s);
  EXPECT_LE(candidate.step_time_lower_bound_s, full_s * (1 + 1e-9));
}

TEST_F(CandidateRunTest, WorkspaceUndoesEachCandidateForTheNext) {
  const Plan moved = Moved(120);
  const Plan raised = Raised(80);
  const CandidateResult first = RunCandidate(moved, kNoCutoff);
  const CandidateResult other = RunCandidate(raised, kNoCutoff);
  const CandidateResult again = RunCandidate(moved, kNoCutoff);
  EXPECT_EQ(first.result.node_start_s, again.result.node_start_s);
  EXPECT_EQ(first.result.transfers.size(), again.result.transfers.size());
  EXPECT_EQ(other.result.node_start_s,
            simulator_.Simulate(raised).value().node_start_s);
  EXPECT_EQ(again.result.node_start_s,
            simulator_.Simulate(moved).value().node_start_s);
}

}  // namespace
}  // namespace gopt::simulator::internal
