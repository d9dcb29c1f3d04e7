#include "server/work_queue.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace gopt::server {
namespace {

TEST(WorkQueueTest, RefusesWorkBeyondQueueLength) {
  WorkQueue queue(/*num_threads=*/1, /*max_queued=*/1);
  absl::Notification running;
  absl::Notification release;
  std::atomic<int> done{0};
  ASSERT_TRUE(queue
                  .Submit([&] {
                    running.Notify();
                    release.WaitForNotification();
                    ++done;
                  })
                  .ok());
  running.WaitForNotification();
  ASSERT_TRUE(queue.Submit([&] { ++done; }).ok());
  EXPECT_EQ(queue.queued(), 1);
  EXPECT_EQ(queue.running(), 1);
  const absl::Status full = queue.Submit([&] { ++done; });
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  release.Notify();
  queue.Shutdown();
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(queue.Submit([] {}).code(), absl::StatusCode::kUnavailable);
}

TEST(WorkQueueTest, ObserverSeesQueueLength) {
  std::atomic<int64_t> last{-1};
  WorkQueue queue(/*num_threads=*/1, /*max_queued=*/4);
  queue.set_queue_length_observer([&](int64_t length) { last = length; });
  absl::Notification ran;
  ASSERT_TRUE(queue.Submit([&] { ran.Notify(); }).ok());
  ran.WaitForNotification();
  queue.Shutdown();
  EXPECT_EQ(last.load(), 0);
}

TEST(WorkQueueTest, AbandonedItemsMakeRoomAndAreDroppedUnworked) {
  WorkQueue queue(/*num_threads=*/1, /*max_queued=*/1);
  absl::Notification running;
  absl::Notification release;
  ASSERT_TRUE(queue
                  .Submit([&] {
                    running.Notify();
                    release.WaitForNotification();
                  })
                  .ok());
  running.WaitForNotification();
  std::atomic<bool> gave_up{false};
  std::atomic<int> worked{0};
  std::atomic<int> dropped{0};
  ASSERT_TRUE(queue
                  .Submit([&] { ++worked; }, [&] { return gave_up.load(); },
                          [&] { ++dropped; })
                  .ok());
  // The queue is full of a live request: a new one is refused.
  EXPECT_EQ(queue.Submit([&] { ++worked; }).code(),
            absl::StatusCode::kResourceExhausted);
  // Once its client gave up, the waiting request makes room unworked.
  gave_up = true;
  ASSERT_TRUE(queue.Submit([&] { ++worked; }).ok());
  EXPECT_EQ(dropped.load(), 1);
  release.Notify();
  queue.Shutdown();
  EXPECT_EQ(worked.load(), 1);
}

TEST(WorkQueueTest, ItemAbandonedWhileQueuedIsDroppedWhenTaken) {
  WorkQueue queue(/*num_threads=*/1, /*max_queued=*/4);
  absl::Notification running;
  absl::Notification release;
  ASSERT_TRUE(queue
                  .Submit([&] {
                    running.Notify();
                    release.WaitForNotification();
                  })
                  .ok());
  running.WaitForNotification();
  std::atomic<bool> gave_up{false};
  std::atomic<int> worked{0};
  std::atomic<int> dropped{0};
  ASSERT_TRUE(queue
                  .Submit([&] { ++worked; }, [&] { return gave_up.load(); },
                          [&] { ++dropped; })
                  .ok());
  gave_up = true;
  release.Notify();
  queue.Shutdown();
  EXPECT_EQ(worked.load(), 0);
  EXPECT_EQ(dropped.load(), 1);
}

}  // namespace
}  // namespace gopt::server
