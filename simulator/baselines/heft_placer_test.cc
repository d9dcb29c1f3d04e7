#include "simulator/baselines/heft_placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using testing::ChainGraph;
using ::testing::Each;
using testing::FanOutGraph;
using testing::UniformTopology;

TEST(HeftPlacerTest, IndependentHeavyBranchesGoToDifferentDevices) {
  const graph::Graph graph = FanOutGraph(2);
  const Topology topology = UniformTopology(2);
  const RooflineCostModel cost_model;
  const auto device =
      HeftPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_NE((*device)[*graph.FindNode("dot0")],
            (*device)[*graph.FindNode("dot1")]);
  // Each branch's weights sit with its dot.
  EXPECT_EQ((*device)[*graph.FindNode("w1")],
            (*device)[*graph.FindNode("dot1")]);
}

TEST(HeftPlacerTest, KeepsAChainOnOneDevice) {
  const graph::Graph graph = ChainGraph(6);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  const auto device =
      HeftPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT(*device, Each((*device)[0]));
}

TEST(HeftPlacerTest, BeatsSingleDeviceOnAWideGraph) {
  const graph::Graph graph = FanOutGraph(8);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  auto device = HeftPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  const Simulator simulator(graph, topology, cost_model);
  Plan plan = DefaultPlan(graph);
  const double single = simulator.Simulate(plan)->step_time_s;
  plan.device = *device;
  // Eight 10 ms dots: 80 ms on one device, 20 ms on four.
  EXPECT_LT(simulator.Simulate(plan)->step_time_s, 0.3 * single);
}

// A topology that bypassed validation with an infinite launch overhead
// makes every finish time infinite: HEFT must still choose a device for
// every node (it once wrote device_free[-1] and corrupted the heap).
TEST(HeftPlacerTest, InfiniteFinishTimesStillChooseADevice) {
  const graph::Graph graph = FanOutGraph(4);
  Topology topology = UniformTopology(2);
  for (DeviceProfile& device : topology.devices) {
    device.launch_overhead_s = std::numeric_limits<double>::infinity();
  }
  const RooflineCostModel cost_model;
  const auto device =
      HeftPlacer().Place({graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(device.ok()) << device.status();
  for (int32_t d : *device) {
    EXPECT_GE(d, 0);
    EXPECT_LT(d, 2);
  }
}

}  // namespace
}  // namespace gopt::simulator::baselines
