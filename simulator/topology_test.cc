#include "simulator/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "simulator/op_cost_model.h"
#include "simulator/topology_proto.h"

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

// Values that once crashed gopt-server (HEFT indexed device -1 when every
// finish time was inf or NaN) or made it answer nonsense: each is refused,
// naming the field.
TEST(TopologyTest, RejectsNonFiniteDenormalAndAbsurdValues) {
  gopt::v1::Topology good;
  good.set_name("two");
  for (int i = 0; i < 2; ++i) {
    auto* device = good.add_devices();
    device->set_peak_f32_flops(1e12);
    device->set_memory_bandwidth_bytes_per_s(1e11);
    device->set_memory_bytes(1 << 30);
    device->set_launch_overhead_s(5e-6);
  }
  good.mutable_default_link()->set_bandwidth_bytes_per_s(1e9);
  good.mutable_default_link()->set_latency_s(1e-6);
  ASSERT_TRUE(TopologyFromProto(good).ok());
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::function<void(gopt::v1::Topology*)> spoil;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[&](auto* t) { t->mutable_devices(1)->set_launch_overhead_s(inf); },
       "device 1 ('') field 'launch_overhead_s'"},
      {[&](auto* t) { t->mutable_devices(1)->set_launch_overhead_s(nan); },
       "field 'launch_overhead_s'"},
      {[](auto* t) { t->mutable_devices(0)->set_peak_f32_flops(1e-320); },
       "field 'peak_f32_flops'"},
      {[](auto* t) { t->mutable_devices(0)->set_peak_f16_flops(1e-320); },
       "field 'peak_f16_flops'"},
      {[](auto* t) {
         t->mutable_devices(0)->set_memory_bandwidth_bytes_per_s(1e-320);
       },
       "field 'memory_bandwidth_bytes_per_s'"},
      {[&](auto* t) { t->mutable_devices(0)->set_peak_f32_flops(inf); },
       "field 'peak_f32_flops'"},
      {[](auto* t) { t->mutable_devices(0)->set_max_efficiency(1e-300); },
       "field 'max_efficiency'"},
      {[](auto* t) { t->mutable_devices(0)->set_max_efficiency(-0.5); },
       "field 'max_efficiency'"},
      {[&](auto* t) { t->mutable_default_link()->set_latency_s(nan); },
       "default_link field 'latency_s'"},
      {[](auto* t) {
         t->mutable_default_link()->set_bandwidth_bytes_per_s(1e-320);
       },
       "default_link field 'bandwidth_bytes_per_s'"},
      {[&](auto* t) {
         auto* link = t->add_links();
         link->set_src(0);
         link->set_dst(1);
         link->set_bandwidth_bytes_per_s(1e9);
         link->set_latency_s(nan);
       },
       "link 0 (0 -> 1) field 'latency_s'"},
  };
  for (const Case& c : cases) {
    gopt::v1::Topology bad = good;
    c.spoil(&bad);
    const absl::Status status = TopologyFromProto(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.field));
  }
}

}  // namespace
}  // namespace gopt::simulator

namespace gopt::simulator {
namespace {

TEST(TopologyTest, CalibratedOpCurvesRoundTripAndPriceTheirClass) {
  Topology topology = *PresetTopology("cpu-host");
  OpClassCurve& dot =
      topology.devices[0].op_curves[static_cast<int>(OpCostClass::kDot)];
  dot = OpClassCurve{/*max_efficiency=*/0.5, /*half_efficiency_s=*/2e-6,
                     /*bandwidth_efficiency=*/0.8, /*launch_overhead_s=*/3e-6};
  absl::StatusOr<Topology> back = TopologyFromProto(TopologyToProto(topology));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->devices[0].op_curves, topology.devices[0].op_curves);
  EXPECT_EQ(back->devices[1].op_curves, topology.devices[1].op_curves);

  const RooflineCostModel model;
  KernelWork work;
  work.flops = 1e9;
  work.op_class = OpCostClass::kDot;
  const DeviceProfile& d = topology.devices[0];
  const double peak = d.peak_f32_flops;
  const double efficiency = 0.5 * 1e9 / (1e9 + peak * 2e-6);
  EXPECT_DOUBLE_EQ(model.KernelSeconds(work, d),
                   1e9 / (peak * efficiency) + 3e-6);
  work.op_class = OpCostClass::kElementwise;  // uncalibrated: the defaults
  const double default_efficiency =
      d.max_efficiency * 1e9 / (1e9 + peak * 1e-6);
  EXPECT_DOUBLE_EQ(model.KernelSeconds(work, d),
                   1e9 / (peak * default_efficiency) + d.launch_overhead_s);
}

TEST(TopologyTest, OpByOpFusionRoundTripsAndIsOffByDefault) {
  for (const std::string& name : PresetTopologyNames()) {
    // Held by name: a range-for over a temporary's member would read it
    // after the temporary is gone.
    const absl::StatusOr<Topology> preset = PresetTopology(name);
    ASSERT_TRUE(preset.ok()) << preset.status();
    for (const DeviceProfile& d : preset->devices) {
      EXPECT_FALSE(d.fused_groups_run_op_by_op) << name;
    }
  }
  Topology topology = *PresetTopology("cpu-host");
  topology.devices[1].fused_groups_run_op_by_op = true;
  const gopt::v1::Topology proto = TopologyToProto(topology);
  EXPECT_TRUE(proto.devices(1).fused_groups_run_op_by_op());
  absl::StatusOr<Topology> back = TopologyFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->devices[0].fused_groups_run_op_by_op);
  EXPECT_TRUE(back->devices[1].fused_groups_run_op_by_op);
}

TEST(TopologyTest, LinkDeviceOverheadRoundTripsAndIsOffByDefault) {
  for (const std::string& name : PresetTopologyNames()) {
    const absl::StatusOr<Topology> preset = PresetTopology(name);
    ASSERT_TRUE(preset.ok()) << preset.status();
    for (const Link& link : preset->links) {
      EXPECT_EQ(link.device_overhead_s, 0) << name;
    }
  }
  Topology topology = *PresetTopology("cpu-host");
  topology.links[0 * 2 + 1].device_overhead_s = 2.5e-6;
  gopt::v1::Topology proto = TopologyToProto(topology);
  absl::StatusOr<Topology> back = TopologyFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->link(0, 1).device_overhead_s, 2.5e-6);
  EXPECT_EQ(back->link(1, 0).device_overhead_s, 0);

  // default_link carries it to the pairs without a link of their own.
  proto.clear_links();
  proto.mutable_default_link()->set_bandwidth_bytes_per_s(1e9);
  proto.mutable_default_link()->set_device_overhead_s(3e-6);
  back = TopologyFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->link(1, 0).device_overhead_s, 3e-6);

  proto.mutable_default_link()->set_device_overhead_s(-1e-6);
  EXPECT_THAT(TopologyFromProto(proto).status().message(),
              HasSubstr("default_link field 'device_overhead_s'"));
}

TEST(TopologyTest, RejectsUnknownAndRepeatedOpCurves) {
  gopt::v1::Topology proto = TopologyToProto(*PresetTopology("cpu-host"));
  gopt::v1::OpClassCurve* curve = proto.mutable_devices(0)->add_op_curves();
  curve->set_op_class("matmul");
  curve->set_max_efficiency(0.5);
  curve->set_bandwidth_efficiency(1);
  EXPECT_THAT(TopologyFromProto(proto).status().message(),
              ::testing::HasSubstr("'matmul' is not dot"));
  curve->set_op_class("dot");
  *proto.mutable_devices(0)->add_op_curves() = *curve;
  EXPECT_THAT(TopologyFromProto(proto).status().message(),
              ::testing::HasSubstr("a second curve for 'dot'"));
}

}  // namespace
}  // namespace gopt::simulator
