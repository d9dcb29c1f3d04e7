#include "simulator/event_queue.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::simulator {
namespace {

TEST(EventTest, EqualTimesOrderBySeq) {
  const Event early = Event::Make(1.0, /*seq=*/3, /*id=*/9, false);
  const Event late = Event::Make(1.0, /*seq=*/4, /*id=*/0, true);
  EXPECT_TRUE(early.Before(late));
  EXPECT_FALSE(late.Before(early));
  EXPECT_FALSE(early.Before(early));
  EXPECT_EQ(early.id(), 9);
  EXPECT_FALSE(early.is_transfer());
  EXPECT_EQ(late.id(), 0);
  EXPECT_TRUE(late.is_transfer());
}

// Pops every event of `queue` and returns their seqs, earliest first.
std::vector<uint64_t> Drain(EventQueue& queue) {
  std::vector<uint64_t> seqs;
  while (!queue.empty()) seqs.push_back(queue.Pop().tag >> 32);
  return seqs;
}

TEST(EventQueueTest, PopsInTimeThenSeqOrder) {
  EventQueue queue;
  queue.Push(Event::Make(2.0, /*seq=*/0, /*id=*/0, false));
  queue.Push(Event::Make(1.0, /*seq=*/1, /*id=*/1, false));
  queue.Push(Event::Make(2.0, /*seq=*/2, /*id=*/2, true));
  queue.Push(Event::Make(0.5, /*seq=*/3, /*id=*/3, false));
  EXPECT_EQ(queue.top().id(), 3);
  EXPECT_THAT(Drain(queue), ::testing::ElementsAre(3, 1, 0, 2));
}

TEST(EventQueueTest, ReplaceTopKeepsHeapOrderAtEverySize) {
  // Random pushes, pops and top replacements against a sorted reference,
  // for every size from empty up (a replaced top sinks past the last,
  // child-less parent without reading beyond the heap).
  std::mt19937 rng(5);
  EventQueue queue;
  std::vector<Event> reference;
  int64_t seq = 0;
  auto earliest = [&] {
    return std::min_element(
        reference.begin(), reference.end(),
        [](const Event& a, const Event& b) { return a.Before(b); });
  };
  for (int step = 0; step < 5000; ++step) {
    const Event event = Event::Make(static_cast<double>(rng() % 50), seq++,
                                    static_cast<int32_t>(rng() % 1000), false);
    const int action = reference.empty() ? 0 : static_cast<int>(rng() % 3);
    if (action == 0) {
      queue.Push(event);
      reference.push_back(event);
    } else if (action == 1) {
      const auto it = earliest();
      EXPECT_EQ(queue.Pop().tag, it->tag);
      reference.erase(it);
    } else {
      EXPECT_EQ(queue.top().tag, earliest()->tag);
      queue.ReplaceTop(event);
      *earliest() = event;
    }
    if (!reference.empty()) {
      ASSERT_EQ(queue.top().tag, earliest()->tag) << "step " << step;
    }
  }
}

TEST(EventQueueTest, AllLaterThanCanSkipTheEarliest) {
  EventQueue queue;
  EXPECT_TRUE(queue.AllLaterThan(1.0, /*skip_earliest=*/false));
  queue.Push(Event::Make(1.0, /*seq=*/0, /*id=*/0, false));
  EXPECT_FALSE(queue.AllLaterThan(1.0, /*skip_earliest=*/false));
  EXPECT_TRUE(queue.AllLaterThan(1.0, /*skip_earliest=*/true));
  queue.Push(Event::Make(1.0, /*seq=*/1, /*id=*/1, false));
  EXPECT_FALSE(queue.AllLaterThan(1.0, /*skip_earliest=*/true));
  queue.Clear();
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace gopt::simulator
