#include "simulator/baselines/greedy_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using graph::OpKind;
using ::testing::ElementsAre;
using testing::GraphMaker;
using ::testing::IsEmpty;
using testing::UniformTopology;

// p -> t (transpose, layout-configurable) -> d (dot, configurable) -> e,
// all with f32[100,10] outputs.
graph::Graph ConfigurableGraph() {
  GraphMaker g("layouts");
  const int p = g.Param("p", 1000);
  const int t = g.Op("t", OpKind::kTranspose, 0, {p});
  const int d = g.Op("d", OpKind::kDot, 1e9, {t});
  const int e = g.Op("e", 1e3, {d});
  for (int node : {t, d, e}) g.SetLayoutConfigurable(node, {100, 10});
  return g.Build();
}

TEST(GreedyLayoutTest, KeepsDefaultsWhenNothingIsPinned) {
  const graph::Graph graph = ConfigurableGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  const auto layout = GreedyLayouts(graph, topology, cost_model,
                                    std::vector<int32_t>(4, 0), /*pinned=*/{});
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_THAT(*layout, IsEmpty());
  const auto assigned = GreedyLayoutAssigner().AssignLayouts(
      {graph, topology, cost_model, 0}, std::vector<int32_t>(4, 0));
  ASSERT_TRUE(assigned.ok());
  EXPECT_THAT(*assigned, IsEmpty());
}

TEST(GreedyLayoutTest, PinnedNeighboursCauseNoCopies) {
  // t is pinned column-major. Under the simulator's model the default
  // layout never pays a copy, so d keeps it: no copies, full efficiency.
  const graph::Graph graph = ConfigurableGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  std::vector<std::vector<int32_t>> pinned(4);
  pinned[1] = {0, 1};
  const auto layout = GreedyLayouts(graph, topology, cost_model,
                                    std::vector<int32_t>(4, 0), pinned);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->size(), 4);
  EXPECT_THAT((*layout)[1], ElementsAre(0, 1));
  EXPECT_THAT((*layout)[2], IsEmpty());
  Plan plan = DefaultPlan(graph);
  plan.layout = *layout;
  const auto result = Simulator(graph, topology, cost_model).Simulate(plan);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->layout_copy_s, 0);
}

TEST(GreedyLayoutTest, RejectsBadPinnedLayouts) {
  const graph::Graph graph = ConfigurableGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  std::vector<std::vector<int32_t>> pinned(4);
  pinned[1] = {0, 0};
  EXPECT_EQ(GreedyLayouts(graph, topology, cost_model,
                          std::vector<int32_t>(4, 0), pinned)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GreedyLayouts(graph, topology, cost_model,
                          std::vector<int32_t>(4, 0), {{}, {}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DefaultLayoutAssignerTest, ReturnsNoLayouts) {
  const graph::Graph graph = ConfigurableGraph();
  const Topology topology = UniformTopology(1);
  const RooflineCostModel cost_model;
  const auto layout = DefaultLayoutAssigner().AssignLayouts(
      {graph, topology, cost_model, 0}, std::vector<int32_t>(4, 0));
  ASSERT_TRUE(layout.ok());
  EXPECT_THAT(*layout, IsEmpty());
}

}  // namespace
}  // namespace gopt::simulator::baselines
