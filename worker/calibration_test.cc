#include "worker/calibration.h"

#include <cstdio>
#include <memory>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"

namespace gopt::worker {
namespace {

TEST(CalibrationTest, FitRelativeLineRecoversALine) {
  absl::StatusOr<std::pair<double, double>> fit = FitRelativeLine(
      {1, 2, 4, 8}, {3e-6 + 1e-6, 3e-6 + 2e-6, 3e-6 + 4e-6, 3e-6 + 8e-6});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->first, 1e-6, 1e-12);
  EXPECT_NEAR(fit->second, 3e-6, 1e-12);
}

TEST(CalibrationTest, FitGrowingLineKeepsAGrowingLineAndMendsAFallingOne) {
  bool noisy = false;
  absl::StatusOr<std::pair<double, double>> fit =
      FitGrowingLine({1, 2, 4}, {3, 5, 9}, &noisy);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->first, 2, 1e-9);
  EXPECT_NEAR(fit->second, 1, 1e-9);
  EXPECT_FALSE(noisy);
  // Times that fall with size (a loaded host): through (4, 2) and 0.
  fit = FitGrowingLine({1, 4}, {3, 2}, &noisy);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_DOUBLE_EQ(fit->first, 0.5);
  EXPECT_DOUBLE_EQ(fit->second, 0);
  EXPECT_TRUE(noisy);
  // One size timed at 0 (too few points for a line): through the other.
  noisy = false;
  fit = FitGrowingLine({1, 4}, {3, 0}, &noisy);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_DOUBLE_EQ(fit->first, 3);
  EXPECT_TRUE(noisy);
  EXPECT_EQ(FitGrowingLine({1, 4}, {0, -1}, &noisy).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CalibrationTest, FitRelativeLineNeedsTwoDistinctPoints) {
  EXPECT_EQ(FitRelativeLine({5, 5}, {1, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Two CPU executors and the quick calibration, with the shortest
// measurements: what the tests that really measure share.
class QuickCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExecutorOptions executor_options;
    executor_options.cpu_executors = 2;
    executor_options.cuda_devices = 0;
    absl::StatusOr<std::unique_ptr<Executor>> executor =
        Executor::Create(executor_options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
    options_.quick = true;
    options_.min_measure_seconds = 0.001;
  }

  std::unique_ptr<Executor> executor_;
  CalibrationOptions options_;
};

TEST_F(QuickCalibrationTest, WritesATopologyThatLoads) {
  absl::StatusOr<CalibrationResult> result = Calibrate(*executor_, options_);
  ASSERT_TRUE(result.ok()) << result.status();
  const simulator::Topology& topology = result->topology;
  ASSERT_EQ(topology.num_devices(), 2);
  for (const simulator::DeviceProfile& d : topology.devices) {
    for (simulator::OpCostClass c :
         {simulator::OpCostClass::kDot, simulator::OpCostClass::kConvolution,
          simulator::OpCostClass::kElementwise,
          simulator::OpCostClass::kReduction,
          simulator::OpCostClass::kDataMovement}) {
      EXPECT_GT(d.op_curves[static_cast<int>(c)].max_efficiency, 0)
          << simulator::OpCostClassName(c);
    }
  }
  EXPECT_GT(topology.link(0, 1).bandwidth_bytes_per_s, 0);
  EXPECT_GE(topology.link(0, 1).device_overhead_s, 0);
  EXPECT_EQ(topology.link(1, 0).device_overhead_s,
            topology.link(0, 1).device_overhead_s);
  EXPECT_THAT(result->points, ::testing::Contains(::testing::Field(
                                  &CalibrationPoint::op_class, "transfer")));
  EXPECT_THAT(result->points, ::testing::Contains(::testing::Field(
                                  &CalibrationPoint::op_class, "dispatch")));

  const std::string path =
      ::testing::TempDir() + "/calibration_test_topology.json";
  ASSERT_TRUE(WriteTopologyJson(topology, path).ok());
  absl::StatusOr<simulator::Topology> loaded = simulator::LoadTopology(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->devices[0].op_curves, topology.devices[0].op_curves);
  EXPECT_DOUBLE_EQ(loaded->devices[1].peak_f32_flops,
                   topology.devices[1].peak_f32_flops);
  std::remove(path.c_str());
}

TEST_F(QuickCalibrationTest, OnePartUpdatesAnEarlierCalibration) {
  const simulator::Topology base = *simulator::PresetTopology("cpu-host");
  absl::StatusOr<CalibrationResult> result =
      CalibratePart(*executor_, options_, "transfer-overhead", base);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->topology.devices[0].peak_f32_flops,
            base.devices[0].peak_f32_flops);
  EXPECT_EQ(result->topology.link(0, 1).bandwidth_bytes_per_s,
            base.link(0, 1).bandwidth_bytes_per_s);
  EXPECT_THAT(
      result->notes,
      ::testing::Contains(::testing::HasSubstr("of device time per transfer")));

  EXPECT_THAT(
      CalibratePart(*executor_, options_, "matmul", base).status().message(),
      ::testing::HasSubstr("unknown calibration part 'matmul'"));
  const simulator::Topology eight = *simulator::PresetTopology("a100x8-nvlink");
  EXPECT_THAT(
      CalibratePart(*executor_, options_, "links", eight).status().message(),
      ::testing::HasSubstr("has 8 device(s); the executor has 2"));
}

TEST(CalibrationTest, WritingToAMissingFolderNamesThePath) {
  const absl::Status status = WriteTopologyJson(
      *simulator::PresetTopology("cpu-host"), "/nonexistent-dir/t.json");
  EXPECT_THAT(status.message(),
              ::testing::HasSubstr("/nonexistent-dir/t.json"));
}

}  // namespace
}  // namespace gopt::worker
