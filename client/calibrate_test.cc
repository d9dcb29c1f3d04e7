#include "client/calibrate.h"

#include <cstdio>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/topology.h"

namespace gopt::client {
namespace {

TEST(CalibrateTest, WritesATopologyThatLoads) {
  CalibrateOptions options;
  options.out_path = ::testing::TempDir() + "/calibrate_test.json";
  options.cpu_executors = 2;
  options.quick = true;
  options.min_measure_seconds = 0.001;
  std::ostringstream out;
  ASSERT_TRUE(RunCalibrate(options, out).ok());
  EXPECT_THAT(out.str(), ::testing::HasSubstr("dispatch"));
  absl::StatusOr<simulator::Topology> topology =
      simulator::LoadTopology(options.out_path);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->num_devices(), 2);
  std::remove(options.out_path.c_str());
}

TEST(CalibrateTest, OutIsRequired) {
  std::ostringstream out;
  const absl::Status status = RunCalibrate(CalibrateOptions(), out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("--out"));
}

}  // namespace
}  // namespace gopt::client
