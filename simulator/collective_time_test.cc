#include "simulator/collective_time.h"

#include <gtest/gtest.h>

namespace gopt::simulator {
namespace {

// Four devices on a ring of 100 GB/s links with 1 us latency.
Topology RingOfFour() {
  Topology topology;
  topology.name = "ring4";
  topology.devices.resize(4);
  topology.links.assign(16, Link{/*bandwidth_bytes_per_s=*/100e9,
                                 /*latency_s=*/1e-6});
  return topology;
}

graph::Node Collective(graph::OpKind kind, int64_t bytes, int64_t group) {
  graph::Node node;
  node.kind = kind;
  node.bytes_communicated = bytes;
  node.attributes.collective_group_size = group;
  return node;
}

TEST(CollectiveTimeTest, AllReducePaysTwiceTheStepsOfAllGather) {
  const Topology topology = RingOfFour();
  // 1.5 MB sent per device (a 1 MB buffer: 2 * 3/4 of it) over 100 GB/s,
  // 2 * (4 - 1) = 6 steps of 1 us.
  EXPECT_DOUBLE_EQ(
      CollectiveLinkSeconds(Collective(graph::OpKind::kAllReduce, 1'500'000,
                                       /*group=*/4),
                            /*default_group_size=*/4, topology),
      1'500'000 / 100e9 + 6e-6);
  // 0.75 MB, 3 steps.
  EXPECT_DOUBLE_EQ(
      CollectiveLinkSeconds(Collective(graph::OpKind::kAllGather, 750'000,
                                       /*group=*/4),
                            /*default_group_size=*/4, topology),
      750'000 / 100e9 + 3e-6);
  // A permute is one step.
  EXPECT_DOUBLE_EQ(
      CollectiveLinkSeconds(
          Collective(graph::OpKind::kCollectivePermute, 1000, /*group=*/2),
          /*default_group_size=*/4, topology),
      1000 / 100e9 + 1e-6);
}

TEST(CollectiveTimeTest, GroupDefaultsToTheProgramAndSlowestLinkRules) {
  Topology topology = RingOfFour();
  topology.links[1 * 4 + 2].bandwidth_bytes_per_s = 10e9;  // 1 -> 2
  // No group size: the default (4) applies; the ring 0-1-2-3 holds the
  // slow link.
  EXPECT_DOUBLE_EQ(
      CollectiveLinkSeconds(Collective(graph::OpKind::kAllGather, 1000, 0),
                            /*default_group_size=*/4, topology),
      1000 / 10e9 + 3e-6);
  // A group of two uses the ring 0-1 only.
  EXPECT_DOUBLE_EQ(
      CollectiveLinkSeconds(Collective(graph::OpKind::kAllGather, 1000, 2),
                            /*default_group_size=*/4, topology),
      1000 / 100e9 + 1e-6);
}

TEST(CollectiveTimeTest, NothingToPriceIsFree) {
  const Topology topology = RingOfFour();
  EXPECT_EQ(CollectiveLinkSeconds(Collective(graph::OpKind::kDot, 1000, 4), 4,
                                  topology),
            0);
  EXPECT_EQ(CollectiveLinkSeconds(Collective(graph::OpKind::kAllReduce, 0, 4),
                                  4, topology),
            0);
  EXPECT_EQ(CollectiveLinkSeconds(
                Collective(graph::OpKind::kAllReduce, 1000, 1), 4, topology),
            0);
  Topology one = topology;
  one.devices.resize(1);
  one.links.resize(1);
  EXPECT_EQ(CollectiveLinkSeconds(
                Collective(graph::OpKind::kAllReduce, 1000, 4), 4, one),
            0);
}

}  // namespace
}  // namespace gopt::simulator
