#include "server/heap_trimmer.h"

#include <malloc.h>

#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gopt::server {
namespace {

void WaitForTrims(const HeapTrimmer& trimmer, int64_t trims) {
  while (trimmer.trims() < trims) absl::SleepFor(absl::Milliseconds(1));
}

TEST(HeapTrimmerTest, TrimsAfterEachRequest) {
  HeapTrimmer trimmer(/*delay=*/absl::Milliseconds(10));
  EXPECT_EQ(trimmer.trims(), 0);
  trimmer.TrimSoon();
  trimmer.TrimSoon();
  WaitForTrims(trimmer, 1);
  const int64_t after_first = trimmer.trims();
  trimmer.TrimSoon();
  WaitForTrims(trimmer, after_first + 1);
}

// glibc's heap statistics (mallinfo2) are what the idle trim reads; under
// AddressSanitizer malloc is the sanitizer's and reports none.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

// Leaves over 64 MiB free in the heap, as gopt-server's malloc settings
// (gopt::KeepFreedMemory, util/malloc_tuning.h) do: nothing mapped on its own,
// no trim on free.
void LeaveFreeHeap() {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::vector<std::vector<char>> blocks;
  for (int i = 0; i < 64; ++i) blocks.emplace_back(size_t{1} << 20, 'x');
}

TEST(HeapTrimmerTest, TrimsWhenIdleWithMuchFreeHeap) {
  if (!kGlibcMalloc) GTEST_SKIP() << "needs glibc's malloc statistics";
  LeaveFreeHeap();
  HeapTrimmer trimmer(/*delay=*/absl::Milliseconds(10),
                      /*idle_poll=*/absl::Milliseconds(10),
                      /*idle_after=*/absl::Milliseconds(10));
  WaitForTrims(trimmer, 1);
}

TEST(HeapTrimmerTest, KeepsTheHeapUntilTheServerHasBeenQuiet) {
  if (!kGlibcMalloc) GTEST_SKIP() << "needs glibc's malloc statistics";
  HeapTrimmer trimmer(/*delay=*/absl::Milliseconds(10),
                      /*idle_poll=*/absl::Milliseconds(1),
                      /*idle_after=*/absl::Hours(1));
  trimmer.CallStarted();
  LeaveFreeHeap();
  trimmer.CallDone();
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(trimmer.trims(), 0);
}

TEST(HeapTrimmerTest, NeverTrimsOnItsOwnWhileACallIsInFlight) {
  if (!kGlibcMalloc) GTEST_SKIP() << "needs glibc's malloc statistics";
  HeapTrimmer trimmer(/*delay=*/absl::Milliseconds(10),
                      /*idle_poll=*/absl::Milliseconds(1),
                      /*idle_after=*/absl::ZeroDuration());
  trimmer.CallStarted();
  LeaveFreeHeap();
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(trimmer.trims(), 0);
  trimmer.CallDone();
  WaitForTrims(trimmer, 1);
}

TEST(HeapTrimmerTest, StopsWithATrimPending) {
  HeapTrimmer trimmer(/*delay=*/absl::Hours(1));
  trimmer.TrimSoon();
  // The destructor returns without waiting out the delay.
}

}  // namespace
}  // namespace gopt::server
