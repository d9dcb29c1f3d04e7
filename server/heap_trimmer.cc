#include "server/heap_trimmer.h"

#include <malloc.h>

#include "absl/time/clock.h"

namespace gopt::server {

HeapTrimmer::HeapTrimmer(absl::Duration delay, absl::Duration idle_poll,
                         absl::Duration idle_after)
    : delay_(delay),
      idle_poll_(idle_poll),
      idle_after_(idle_after),
      last_activity_ns_(absl::ToUnixNanos(absl::Now())),
      thread_([this] { Run(); }) {}

void HeapTrimmer::CallStarted() {
  ++calls_in_flight_;
  NoteActivity();
}

void HeapTrimmer::CallDone() {
  --calls_in_flight_;
  NoteActivity();
}

void HeapTrimmer::NoteActivity() {
  last_activity_ns_.store(absl::ToUnixNanos(absl::Now()));
}

bool HeapTrimmer::IdleTrimDue() const {
  if (calls_in_flight_.load() != 0) return false;
  const absl::Time last = absl::FromUnixNanos(last_activity_ns_.load());
  // mallinfo2: free bytes in the arenas.
  return absl::Now() - last >= idle_after_ &&
         static_cast<int64_t>(mallinfo2().fordblks) > kIdleFreeBytes;
}

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
      // Nothing asked for: trim when the server has gone quiet.
      mutex_.Unlock();
      const bool trim = IdleTrimDue();
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
