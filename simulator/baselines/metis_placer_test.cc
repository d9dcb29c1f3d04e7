#include "simulator/baselines/metis_placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using graph::NodeId;
using testing::FanOutGraph;
using testing::GraphMaker;
using testing::UniformTopology;

int64_t CutBytes(const graph::Graph& graph,
                 const std::vector<int32_t>& device) {
  int64_t bytes = 0;
  for (const graph::Edge& edge : graph.edges()) {
    if (device[edge.src] != device[edge.dst]) bytes += graph.EdgeBytes(edge);
  }
  return bytes;
}

TEST(MetisPlacerTest, CutsTheThinEdgeBetweenTwoClusters) {
  // Two chains of ten 4 MB tensors; the first feeds the second through a
  // 4-byte value.
  GraphMaker g("clusters");
  int previous = g.Param("pa", 1000);
  for (int i = 0; i < 10; ++i) {
    previous = g.Op(absl::StrCat("a", i), 1e9, {previous}, 1'000'000);
  }
  const int thin = g.Op("thin", 1e3, {previous}, /*elements=*/1);
  previous = g.Param("pb", 1000);
  previous = g.Op("b0", 1e9, {previous, thin}, 1'000'000);
  for (int i = 1; i < 10; ++i) {
    previous = g.Op(absl::StrCat("b", i), 1e9, {previous}, 1'000'000);
  }
  const graph::Graph graph = g.Build();
  const Topology topology = UniformTopology(2);
  const RooflineCostModel cost_model;
  const auto device =
      MetisPlacer().Place({graph, topology, cost_model, /*seed=*/1});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(CutBytes(graph, *device), 4);
  const int32_t a_device = (*device)[*graph.FindNode("a0")];
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ((*device)[*graph.FindNode(absl::StrCat("a", i))], a_device);
    EXPECT_NE((*device)[*graph.FindNode(absl::StrCat("b", i))], a_device);
  }
}

TEST(MetisPlacerTest, BalancesComputeWithinTolerance) {
  const graph::Graph graph = FanOutGraph(64);
  const Topology topology = UniformTopology(4);
  const RooflineCostModel cost_model;
  const auto device =
      MetisPlacer().Place({graph, topology, cost_model, /*seed=*/1});
  ASSERT_TRUE(device.ok()) << device.status();
  const CostTable costs(graph, topology, cost_model);
  std::vector<double> load(4, 0);
  double heaviest = 0;
  double total = 0;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    load[(*device)[id]] += costs.ComputeSeconds(id, 0);
    heaviest = std::max(heaviest, costs.ComputeSeconds(id, 0));
    total += costs.ComputeSeconds(id, 0);
  }
  // METIS's 3% tolerance, plus the granularity of one node.
  for (double l : load) EXPECT_LE(l, 1.03 * total / 4 + heaviest);
  EXPECT_GT(*std::min_element(load.begin(), load.end()), 0);
}

TEST(MetisPlacerTest, HandlesFewerNodesThanDevices) {
  GraphMaker g("tiny");
  const int a = g.Op("a", 1e6, {});
  g.Op("b", 1e6, {a});
  const graph::Graph graph = g.Build();
  const Topology topology = UniformTopology(8);
  const RooflineCostModel cost_model;
  const auto device =
      MetisPlacer().Place({graph, topology, cost_model, /*seed=*/1});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(device->size(), 2);
}

TEST(MetisPlacerTest, SameSeedSamePartition) {
  const graph::Graph graph = FanOutGraph(40);
  const Topology topology = UniformTopology(8);
  const RooflineCostModel cost_model;
  const auto first =
      MetisPlacer().Place({graph, topology, cost_model, /*seed=*/9});
  const auto second =
      MetisPlacer().Place({graph, topology, cost_model, /*seed=*/9});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
}

}  // namespace
}  // namespace gopt::simulator::baselines
