#ifndef GOPT_SERVER_HEAP_TRIMMER_H_
#define GOPT_SERVER_HEAP_TRIMMER_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gopt::server {

// Hands free heap pages back to the system (glibc's malloc_trim) a moment
// after it is asked to, on a thread of its own. gopt-server keeps freed
// memory for reuse (gopt::KeepFreedMemory, util/malloc_tuning.h, raises glibc's
// trim threshold to 1 GiB), so the copies of a large request would stay
// resident after it is refused; and gRPC frees a call's message after the
// last hook the service sees, so the trim waits `delay` for it. Requests to
// trim while one is pending are merged. Besides, every `idle_poll` it trims
// when no call is in flight (CallStarted / CallDone) and the heap holds more
// than kIdleFreeBytes free: a stream that gRPC resets (a message over its
// memory quota) never reaches the service, yet leaves its buffers in the
// heap. Thread-safe; the destructor stops the thread (a pending trim is
// dropped).
class HeapTrimmer {
 public:
  static constexpr int64_t kIdleFreeBytes = int64_t{8} << 20;

  explicit HeapTrimmer(absl::Duration delay = absl::Milliseconds(200),
                       absl::Duration idle_poll = absl::Seconds(1));
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;
  ~HeapTrimmer();

  // Trims `delay` from now (or with the trim already pending).
  void TrimSoon();

  // A call started / ended: no idle trim while any is in flight.
  void CallStarted();
  void CallDone();

  // Trims done so far (for tests).
  int64_t trims() const;

 private:
  void Run();

  const absl::Duration delay_;
  const absl::Duration idle_poll_;
  std::atomic<int64_t> calls_in_flight_{0};
  mutable absl::Mutex mutex_;
  bool pending_ ABSL_GUARDED_BY(mutex_) = false;
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
  int64_t trims_ ABSL_GUARDED_BY(mutex_) = 0;
  std::thread thread_;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_HEAP_TRIMMER_H_
