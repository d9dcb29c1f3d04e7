#include "simulator/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gopt::simulator {
namespace {

using ::testing::HasSubstr;

TEST(TopologyTest, EveryPresetIsValidAndRoundTrips) {
  for (const std::string& name : PresetTopologyNames()) {
    auto topology = PresetTopology(name);
    ASSERT_TRUE(topology.ok()) << name;
    EXPECT_EQ(topology->name, name);
    auto again = TopologyFromProto(TopologyToProto(*topology));
    ASSERT_TRUE(again.ok()) << name << ": " << again.status();
    EXPECT_EQ(again->num_devices(), topology->num_devices());
    EXPECT_EQ(
        again->link(0, topology->num_devices() - 1).bandwidth_bytes_per_s,
        topology->link(0, topology->num_devices() - 1).bandwidth_bytes_per_s);
  }
  EXPECT_EQ(PresetTopology("h100x8-nvlink")->num_devices(), 8);
  EXPECT_EQ(PresetTopology("v100x4-nvlink")->devices[0].peak_f16_flops, 125e12);
}

TEST(TopologyTest, UnknownPresetListsTheNames) {
  auto topology = LoadTopology("v200x3");
  ASSERT_FALSE(topology.ok());
  EXPECT_THAT(std::string(topology.status().message()),
              HasSubstr("h100x8-nvlink"));
}

TEST(TopologyTest, PeakFallsBackToF32) {
  const Topology cpu = *PresetTopology("cpu-host");
  EXPECT_EQ(cpu.devices[0].PeakFlops(graph::DType::kBF16),
            cpu.devices[0].peak_f32_flops);
}

TEST(TopologyTest, RejectsBadDevicesAndLinks) {
  gopt::v1::Topology proto;
  proto.set_name("bad");
  auto* device = proto.add_devices();
  device->set_name("g0");
  device->set_peak_f32_flops(1e12);
  device->set_memory_bandwidth_bytes_per_s(1e11);
  device->set_memory_bytes(1 << 30);
  *proto.add_devices() = *device;
  EXPECT_THAT(std::string(TopologyFromProto(proto).status().message()),
              HasSubstr("no link from device 0 to device 1"));
  auto* link = proto.add_links();
  link->set_src(0);
  link->set_dst(5);
  link->set_bandwidth_bytes_per_s(1e9);
  EXPECT_THAT(std::string(TopologyFromProto(proto).status().message()),
              HasSubstr("link 0 connects devices 0 -> 5"));
  proto.clear_links();
  proto.mutable_default_link()->set_bandwidth_bytes_per_s(1e9);
  proto.mutable_devices(1)->set_memory_bytes(0);
  EXPECT_THAT(std::string(TopologyFromProto(proto).status().message()),
              HasSubstr("device 1 ('g0') field 'memory_bytes'"));
  proto.mutable_devices(1)->set_memory_bytes(1 << 30);
  EXPECT_TRUE(TopologyFromProto(proto).ok());
}

}  // namespace
}  // namespace gopt::simulator
