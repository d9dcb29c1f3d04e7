#include "simulator/step_time_bound.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "simulator/workspace.h"

namespace gopt::simulator::internal {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

UnitState Kernel(double start, double duration) {
  UnitState unit;
  unit.duration = duration;
  unit.start = start;
  unit.end = start + duration;
  return unit;
}

TEST(StepTimeBoundTest, CountWorkSumsKernelSecondsPerDevice) {
  Workspace ws;
  ws.units = {Kernel(0, 1), Kernel(0, 2), Kernel(0, 4)};
  ws.inputs.resize(3);
  ws.inputs[1].device = 1;
  StepTimeBound::CountWork(ws, /*num_units=*/3, /*num_devices=*/2);
  EXPECT_EQ(ws.remaining_work, (std::vector<double>{5, 2}));
}

TEST(StepTimeBoundTest, StartedKernelAddsItsDevicesRemainingWork) {
  std::vector<double> remaining = {5, 2};
  StepTimeBound bound(remaining, /*tail_s=*/nullptr, kInfinity);
  bound.KernelStarted(Kernel(0, 1), /*u=*/0, /*device=*/0, /*now=*/0);
  EXPECT_EQ(remaining, (std::vector<double>{4, 2}));
  EXPECT_EQ(bound.seconds(/*last_arrival_s=*/-kInfinity), 5);
  EXPECT_EQ(bound.seconds(/*last_arrival_s=*/7), 7);
}

TEST(StepTimeBoundTest, TailBoundsFromAKernelsStart) {
  std::vector<double> remaining = {1};
  const std::vector<double> tails = {10};
  StepTimeBound bound(remaining, tails.data(), kInfinity);
  bound.KernelStarted(Kernel(2, 1), /*u=*/0, /*device=*/0, /*now=*/2);
  EXPECT_EQ(bound.seconds(-kInfinity), 12);
}

TEST(StepTimeBoundTest, MovedWorkFollowsItsDevice) {
  std::vector<double> remaining = {5, 2};
  StepTimeBound bound(remaining, /*tail_s=*/nullptr, kInfinity);
  bound.MoveWork(/*duration_s=*/2, /*from=*/0, /*to=*/1);
  EXPECT_EQ(remaining, (std::vector<double>{3, 4}));
  bound.KernelRunning(/*end_s=*/3, /*device=*/1);
  EXPECT_EQ(bound.seconds(-kInfinity), 7);
}

TEST(StepTimeBoundTest, ExceededOnlyAboveTheThreshold) {
  std::vector<double> remaining = {4};
  StepTimeBound bound(remaining, /*tail_s=*/nullptr, /*stop_above_s=*/5);
  bound.KernelStarted(Kernel(0, 1), /*u=*/0, /*device=*/0, /*now=*/0);
  EXPECT_FALSE(bound.Exceeded(/*last_arrival_s=*/-kInfinity));
  EXPECT_TRUE(bound.Exceeded(/*last_arrival_s=*/5.5));
}

TEST(StepTimeBoundTest, StopAboveLeavesARelativeSlack) {
  EXPECT_EQ(StepTimeBound::StopAbove(1.0), 1.0 + 1e-9);
  EXPECT_EQ(StepTimeBound::StopAbove(-2.0), -2.0 + 2e-9);
  EXPECT_GT(StepTimeBound::StopAbove(0.0), 0.0);
  EXPECT_EQ(StepTimeBound::StopAbove(kInfinity), kInfinity);
}

}  // namespace
}  // namespace gopt::simulator::internal
