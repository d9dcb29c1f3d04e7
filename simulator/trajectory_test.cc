#include "simulator/trajectory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace gopt::simulator {
namespace {

TEST(TrajectoryTest, ReadsItsData) {
  auto data = std::make_unique<Trajectory::Data>();
  data->plan.device = {0, 1};
  data->result.step_time_s = 2.5;
  data->checkpoints.resize(3);
  data->total_events = 17;
  const Trajectory trajectory(std::move(data));
  EXPECT_EQ(trajectory.plan().device, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(trajectory.result().step_time_s, 2.5);
  EXPECT_EQ(trajectory.num_checkpoints(), 3);
  EXPECT_EQ(trajectory.num_events(), 17);
}

TEST(TrajectoryTest, TakeDataHandsTheBuffersOver) {
  auto data = std::make_unique<Trajectory::Data>();
  const Trajectory::Data* raw = data.get();
  Trajectory trajectory(std::move(data));
  EXPECT_EQ(trajectory.TakeData().get(), raw);
}

TEST(TrajectoryTest, IdsAreUniqueAcrossThreads) {
  std::vector<std::vector<uint64_t>> ids(4);
  std::vector<std::thread> threads;
  for (std::vector<uint64_t>& mine : ids) {
    threads.emplace_back([&mine] {
      for (int i = 0; i < 1000; ++i)
        mine.push_back(internal::NewTrajectoryId());
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<uint64_t> distinct;
  for (const std::vector<uint64_t>& mine : ids) {
    distinct.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(distinct.size(), 4000u);
  EXPECT_EQ(distinct.count(0), 0u);  // 0 means "no trajectory"
}

}  // namespace
}  // namespace gopt::simulator
