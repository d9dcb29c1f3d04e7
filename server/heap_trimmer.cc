#include "server/heap_trimmer.h"

#include <malloc.h>

namespace gopt::server {

HeapTrimmer::HeapTrimmer(absl::Duration delay, absl::Duration idle_poll)
    : delay_(delay), idle_poll_(idle_poll), thread_([this] { Run(); }) {}

void HeapTrimmer::CallStarted() { ++calls_in_flight_; }
void HeapTrimmer::CallDone() { --calls_in_flight_; }

HeapTrimmer::~HeapTrimmer() {
  {
    absl::MutexLock lock(&mutex_);
    stop_ = true;
  }
  thread_.join();
}

void HeapTrimmer::TrimSoon() {
  absl::MutexLock lock(&mutex_);
  pending_ = true;
}

int64_t HeapTrimmer::trims() const {
  absl::MutexLock lock(&mutex_);
  return trims_;
}

void HeapTrimmer::Run() {
  absl::MutexLock lock(&mutex_);
  const absl::Condition pending_or_stop(
      +[](HeapTrimmer* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mutex_) {
        return self->pending_ || self->stop_;
      },
      this);
  while (true) {
    if (!mutex_.AwaitWithTimeout(pending_or_stop, idle_poll_)) {
      // Nothing asked for: trim if no call is in flight and the heap holds
      // much free memory (mallinfo2: free bytes in the arenas).
      mutex_.Unlock();
      const bool trim =
          calls_in_flight_.load() == 0 &&
          static_cast<int64_t>(mallinfo2().fordblks) > kIdleFreeBytes;
      if (trim) malloc_trim(0);
      mutex_.Lock();
      trims_ += trim;
      continue;
    }
    if (stop_) return;
    // Wait out the delay (waking early only to stop), then trim outside
    // the lock; a request that comes meanwhile is served by this trim.
    mutex_.AwaitWithTimeout(absl::Condition(&stop_), delay_);
    if (stop_) return;
    pending_ = false;
    mutex_.Unlock();
    malloc_trim(0);
    mutex_.Lock();
    ++trims_;
  }
}

}  // namespace gopt::server
