#include "simulator/baselines/simple_placers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using testing::ChainGraph;
using testing::CpuOnlyGraph;
using ::testing::Each;
using ::testing::ElementsAre;
using testing::FanOutGraph;
using testing::UniformTopology;

TEST(SinglePlacerTest, PutsEverythingOnDeviceZero) {
  const graph::Graph graph = FanOutGraph(4);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  const auto device =
      SinglePlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT(*device, Each(0));
}

TEST(SinglePlacerTest, CpuOnlyNodeGoesToTheCpu) {
  const graph::Graph graph = CpuOnlyGraph();
  const Topology topology =
      UniformTopology(3, /*memory_bytes=*/1'000'000'000, /*last_is_cpu=*/true);
  const RooflineCostModel cost_model;
  const auto device =
      SinglePlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)[*graph.FindNode("decode")], 2);
  EXPECT_EQ((*device)[*graph.FindNode("a")], 0);
}

TEST(SinglePlacerTest, TopologyWithoutDevicesIsAnError) {
  const graph::Graph graph = ChainGraph(2);
  Topology topology;
  topology.name = "none";
  const RooflineCostModel cost_model;
  EXPECT_EQ(SinglePlacer()
                .Place({graph, topology, cost_model, /*seed=*/0})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RoundRobinPlacerTest, CyclesThroughDevicesInTopologicalOrder) {
  const graph::Graph graph = ChainGraph(5);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  const auto device =
      RoundRobinPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT(*device, ElementsAre(0, 1, 2, 3, 0, 1));
}

TEST(RandomPlacerTest, SeedDecidesThePlacement) {
  const graph::Graph graph = FanOutGraph(16);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  const RandomPlacer placer;
  const auto first = placer.Place({graph, topology, cost_model, /*seed=*/5});
  const auto again = placer.Place({graph, topology, cost_model, /*seed=*/5});
  const auto other = placer.Place({graph, topology, cost_model, /*seed=*/6});
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, *other);
  std::vector<int> used(4, 0);
  for (int32_t d : *first) ++used[d];
  EXPECT_THAT(used, Each(::testing::Gt(0)));
}

TEST(ExpertPlacerTest, SplitsTheTopologicalOrderIntoBalancedChunks) {
  // Eight equal ops on four devices: two consecutive ops per device; the
  // parameter joins its consumer.
  const graph::Graph graph = ChainGraph(8);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  const auto device =
      ExpertPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT(*device, ElementsAre(0, 0, 0, 1, 1, 2, 2, 3, 3));
}

TEST(ExpertPlacerTest, LeavesTheCpuToCpuOnlyNodes) {
  const graph::Graph graph = ChainGraph(8);
  const Topology topology =
      UniformTopology(3, /*memory_bytes=*/1'000'000'000, /*last_is_cpu=*/true);
  const RooflineCostModel cost_model;
  const auto device =
      ExpertPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT(*device, ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1));
}

}  // namespace
}  // namespace gopt::simulator::baselines
