#include "client/calibrate.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"

namespace gopt::client {
namespace {

TEST(CalibrateTest, WritesATopologyThatLoads) {
  CalibrateOptions options;
  // One file per process: runs of this test side by side do not share it.
  options.out_path =
      absl::StrCat(::testing::TempDir(), "/calibrate_test_", getpid(), ".json");
  options.cpu_executors = 2;
  options.quick = true;
  options.min_measure_seconds = 0.001;
  std::ostringstream out;
  const absl::Status status = RunCalibrate(options, out);
  ASSERT_TRUE(status.ok()) << status << "\n" << out.str();
  EXPECT_THAT(out.str(), ::testing::HasSubstr("dispatch"));
  absl::StatusOr<simulator::Topology> topology =
      simulator::LoadTopology(options.out_path);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->num_devices(), 2);
  std::remove(options.out_path.c_str());
}

TEST(CalibrateTest, LearnWritesAModelTheTopologyLoadsAndResumes) {
  CalibrateOptions options;
  const std::string stem =
      absl::StrCat(::testing::TempDir(), "/calibrate_learn_", getpid());
  options.out_path = stem + ".json";
  options.cpu_executors = 2;
  options.quick = true;
  options.min_measure_seconds = 0.001;
  options.learn = true;
  options.learn_plans = 4;
  std::ostringstream out;
  absl::Status status = RunCalibrate(options, out);
  ASSERT_TRUE(status.ok()) << status << "\n" << out.str();
  EXPECT_THAT(out.str(), ::testing::HasSubstr("measured 8 plans"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("rnnlm-tiny"));
  absl::StatusOr<simulator::Topology> topology =
      simulator::LoadTopology(options.out_path);
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->num_devices(), 2);
  EXPECT_NE(topology->devices[0].runtime_model, nullptr);
  EXPECT_EQ(topology->runtime_model_path,
            absl::StrCat("calibrate_learn_", getpid(), ".runtime-model.json"));
  EXPECT_TRUE(std::filesystem::exists(stem + ".runtime-data/calibrated.json"));
  // A second run measures nothing again.
  out.str("");
  status = RunCalibrate(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(out.str(), ::testing::HasSubstr("measured 0 plans (8 already"));
  std::filesystem::remove_all(stem + ".runtime-data");
  std::remove((stem + ".runtime-model.json").c_str());
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
