#include "policy/go/memory_fit.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policy/go/actions.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::GraphMaker;
using simulator::baselines::testing::UniformTopology;

constexpr int64_t kGB = 1'000'000'000;
constexpr int kPairs = 4;
constexpr int64_t kBigElements = 100'000'000;  // f32: 400 MB

// A weight p, then kPairs pairs: b_i makes a 400 MB tensor from p alone
// (as a broadcast does), c_i reduces it to a small one and feeds c_{i+1}.
// In NodeId order: p, b_1, c_1, b_2, c_2, ... On one device FIFO runs each
// b_i just before its c_i (the lower NodeId among the ready ops), so one
// big tensor lives at a time.
graph::Graph BroadcastPairsGraph() {
  GraphMaker g("broadcast_pairs");
  const int p = g.Param("p", 1000);
  int chain = p;
  for (int i = 1; i <= kPairs; ++i) {
    const int big = g.Op(absl::StrCat("b", i), 1e6, {p}, kBigElements);
    chain = g.Op(absl::StrCat("c", i), 1e9, {big, chain}, 1000);
  }
  return g.Build();
}

std::unique_ptr<TrainingInstance> Instance(const graph::Graph& graph,
                                           int64_t memory_bytes) {
  absl::StatusOr<std::unique_ptr<TrainingInstance>> instance =
      MakeTrainingInstance(graph.name(),
                           std::make_shared<const graph::Graph>(graph),
                           std::make_shared<const simulator::Topology>(
                               UniformTopology(/*devices=*/2, memory_bytes)));
  EXPECT_TRUE(instance.ok()) << instance.status();
  if (!instance.ok()) return nullptr;
  return *std::move(instance);
}

// Placement log-probabilities whose argmax puts p and every b_i on device
// 1 and every c_i on device 0 (probability 0.8 each).
PolicyOutput SpreadOutput(const graph::Graph& graph) {
  PolicyOutput output;
  output.num_nodes = graph.num_nodes();
  output.num_devices = 2;
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const bool on_one = graph.node(id).name[0] != 'c';
    output.placement.push_back(std::log(on_one ? 0.2f : 0.8f));
    output.placement.push_back(std::log(on_one ? 0.8f : 0.2f));
  }
  return output;
}

ScoredPlan Plain(const TrainingInstance& instance, const Actions& actions) {
  absl::StatusOr<simulator::Plan> plan =
      ActionsToPlan(instance.graph(), actions, /*base_plan=*/nullptr);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return ScorePlan(instance, *std::move(plan));
}

TEST(MemoryFitTest, ArgmaxDecodeOverflowsAndTheMemoryFittingDecodeFits) {
  const graph::Graph graph = BroadcastPairsGraph();
  std::unique_ptr<TrainingInstance> instance = Instance(graph, kGB);
  ASSERT_NE(instance, nullptr);
  const Actions greedy = SampleActions(SpreadOutput(graph), nullptr);
  // The b_i run back to back on device 1; their tensors queue on the link,
  // each held by the sender until it arrives and by device 0 from the
  // moment it is queued until its c_i runs.
  const ScoredPlan plain = Plain(*instance, greedy);
  ASSERT_TRUE(plain.valid);
  EXPECT_TRUE(plain.oom);
  // Every node on one device fits.
  Actions single = greedy;
  single.device.assign(graph.num_nodes(), 0);
  EXPECT_FALSE(Plain(*instance, single).oom);

  const ScoredPlan fitted = ScoreActions(*instance, greedy);
  ASSERT_TRUE(fitted.valid);
  EXPECT_FALSE(fitted.oom);
  EXPECT_NE(fitted.plan.device, greedy.device);
  // The big tensors follow their consumers: no 400 MB transfer is left.
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (graph.node(id).name[0] == 'b') {
      EXPECT_EQ(fitted.plan.device[id], 0) << graph.node(id).name;
    }
  }
  // Deterministic.
  EXPECT_EQ(ScoreActions(*instance, greedy).plan.device, fitted.plan.device);
}

TEST(MemoryFitTest, PlansThatFitAreUnchanged) {
  const graph::Graph graph = BroadcastPairsGraph();
  std::unique_ptr<TrainingInstance> instance = Instance(graph, 100 * kGB);
  ASSERT_NE(instance, nullptr);
  const Actions greedy = SampleActions(SpreadOutput(graph), nullptr);
  const ScoredPlan plain = Plain(*instance, greedy);
  ASSERT_TRUE(plain.valid);
  ASSERT_FALSE(plain.oom);
  const ScoredPlan scored = ScoreActions(*instance, greedy);
  EXPECT_EQ(scored.plan.device, greedy.device);
  EXPECT_EQ(scored.plan.fusion_group, plain.plan.fusion_group);
  EXPECT_EQ(scored.step_time_s, plain.step_time_s);
}

TEST(MemoryFitTest, SampledDecodesFitAndReportTheActionsPlayed) {
  const graph::Graph graph = BroadcastPairsGraph();
  std::unique_ptr<TrainingInstance> instance = Instance(graph, kGB);
  ASSERT_NE(instance, nullptr);
  std::mt19937_64 rng(7);
  std::vector<Actions> actions;
  const std::vector<ScoredPlan> scored =
      SampleAndScore(*instance, SpreadOutput(graph), /*count=*/8,
                     /*threads=*/2, &rng, &actions);
  ASSERT_EQ(scored.size(), 8u);
  for (size_t s = 0; s < scored.size(); ++s) {
    ASSERT_TRUE(scored[s].valid);
    EXPECT_FALSE(scored[s].oom) << "sample " << s;
    EXPECT_EQ(actions[s].device, scored[s].plan.device) << "sample " << s;
  }
}

TEST(MemoryFitTest, EstimateFollowsTheSimulatorsRuleOnOneDevice) {
  const graph::Graph graph = BroadcastPairsGraph();
  const PlacementMemoryFit fit(graph, /*num_devices=*/2);
  absl::StatusOr<std::vector<int64_t>> peaks =
      fit.EstimatePeakBytes(std::vector<int32_t>(graph.num_nodes(), 0));
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  // The weight, one big tensor, and c_{i-1}'s and c_i's small outputs
  // (4,000 bytes each) while c_i runs.
  EXPECT_EQ((*peaks)[0], 4000 + kBigElements * 4 + 2 * 4000);
  EXPECT_EQ((*peaks)[1], 0);
}

TEST(MemoryFitTest, NodesMoveOnlyToAllowedDevices) {
  const graph::Graph graph = BroadcastPairsGraph();
  const PlacementMemoryFit fit(graph, /*num_devices=*/2);
  std::vector<int32_t> device(graph.num_nodes(), 0);
  // Device 1 is allowed for nobody: nothing can move, whatever the budget.
  std::vector<uint8_t> allowed;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    allowed.push_back(1);
    allowed.push_back(0);
  }
  absl::StatusOr<PlacementMemoryFit::FitResult> result =
      fit.Fit({kGB / 2, 100 * kGB}, allowed, /*follow_inputs=*/true, &device);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->moved_nodes, 0);
  EXPECT_EQ(device, std::vector<int32_t>(graph.num_nodes(), 0));
  // With device 1 allowed, the nodes that pass the budget move there.
  allowed.assign(allowed.size(), 1);
  result =
      fit.Fit({kGB / 4, 100 * kGB}, allowed, /*follow_inputs=*/false, &device);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->moved_nodes, 0);
  EXPECT_LE(result->peak_bytes[0], kGB / 4);
}

TEST(MemoryFitTest, RejectsVectorsOfTheWrongShape) {
  const graph::Graph graph = BroadcastPairsGraph();
  const PlacementMemoryFit fit(graph, /*num_devices=*/2);
  std::vector<int32_t> device(graph.num_nodes(), 0);
  const std::vector<uint8_t> allowed(graph.num_nodes() * 2, 1);
  EXPECT_EQ(fit.Fit({kGB}, allowed, false, &device).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<int32_t> short_device(2, 0);
  EXPECT_EQ(fit.Fit({kGB, kGB}, allowed, false, &short_device).status().code(),
            absl::StatusCode::kInvalidArgument);
  const PlacementMemoryFit too_many(graph, /*num_devices=*/65);
  EXPECT_EQ(too_many.EstimatePeakBytes(device).status().code(),
            absl::StatusCode::kInvalidArgument);
  device[0] = 5;
  const absl::Status status = fit.EstimatePeakBytes(device).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("node 'p'"), std::string::npos) << status;
}

}  // namespace
}  // namespace gopt::policy::go
