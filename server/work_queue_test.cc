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

// One thread held by a blocking item, and one abandonable item queued
// behind it.
struct BusyQueue {
  explicit BusyQueue(int max_queued) : queue(/*num_threads=*/1, max_queued) {
    EXPECT_TRUE(queue
                    .Submit([this] {
                      running.Notify();
                      release.WaitForNotification();
                    })
                    .ok());
    running.WaitForNotification();
    EXPECT_TRUE(queue
                    .Submit([this] { ++worked; },
                            [this] { return gave_up.load(); },
                            [this] { ++dropped; })
                    .ok());
  }
  // Lets the blocking item end and waits for the queue to drain.
  void Finish() {
    release.Notify();
    queue.Shutdown();
  }

  WorkQueue queue;
  absl::Notification running;
  absl::Notification release;
  std::atomic<bool> gave_up{false};
  std::atomic<int> worked{0};
  std::atomic<int> dropped{0};
};

TEST(WorkQueueTest, AbandonedItemsMakeRoomAndAreDroppedUnworked) {
  BusyQueue busy(/*max_queued=*/1);
  // The queue is full of a live request: a new one is refused.
  EXPECT_EQ(busy.queue.Submit([&] { ++busy.worked; }).code(),
            absl::StatusCode::kResourceExhausted);
  // Once its client gave up, the waiting request makes room unworked.
  busy.gave_up = true;
  ASSERT_TRUE(busy.queue.Submit([&] { ++busy.worked; }).ok());
  EXPECT_EQ(busy.dropped.load(), 1);
  busy.Finish();
  EXPECT_EQ(busy.worked.load(), 1);
}

TEST(WorkQueueTest, ItemAbandonedWhileQueuedIsDroppedWhenTaken) {
  BusyQueue busy(/*max_queued=*/4);
  busy.gave_up = true;
  busy.Finish();
  EXPECT_EQ(busy.worked.load(), 0);
  EXPECT_EQ(busy.dropped.load(), 1);
}

}  // namespace
}  // namespace gopt::server
