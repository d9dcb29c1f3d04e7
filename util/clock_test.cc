#include "util/clock.h"

#include "gtest/gtest.h"

namespace gopt {
namespace {

TEST(FakeClockTest, StandsStillUntilMovedOn) {
  const FakeClock clock;
  const absl::Time start = clock.Now();
  EXPECT_EQ(start, absl::UnixEpoch());
  EXPECT_EQ(clock.Now(), start);
  clock.SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(clock.Now(), start + absl::Milliseconds(5));
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(clock.Now(), start + absl::Milliseconds(2005));
}

TEST(FakeClockTest, TickAdvancesAfterEveryReading) {
  const FakeClock clock(/*tick=*/absl::Milliseconds(10));
  EXPECT_EQ(clock.Now(), absl::UnixEpoch());
  EXPECT_EQ(clock.Now(), absl::UnixEpoch() + absl::Milliseconds(10));
  EXPECT_EQ(clock.Now(), absl::UnixEpoch() + absl::Milliseconds(20));
}

TEST(RealClockTest, IsOneProcessWideClock) {
  EXPECT_EQ(&Clock::Real(), &Clock::Real());
  EXPECT_GT(Clock::Real().Now(), absl::UnixEpoch());
}

}  // namespace
}  // namespace gopt
