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
// trim while one is pending are merged. Besides, it trims once the server
// has been quiet for `idle_after` (no call in flight and none started or
// ended since; checked every `idle_poll`) and the heap holds more than
// kIdleFreeBytes free: a stream that gRPC resets (a message over its memory
// quota) never reaches the service, yet leaves its buffers in the heap. The
// quiet period keeps a busy server's heap warm: a trim hands every free page
// back, and the next request faults them in again, which made a 2 MB HLO
// import take 60 ms instead of 21 ms when calls came a second apart.
// Thread-safe; the destructor stops the thread (a pending trim is dropped).
class HeapTrimmer {
 public:
  static constexpr int64_t kIdleFreeBytes = int64_t{8} << 20;

  explicit HeapTrimmer(absl::Duration delay = absl::Milliseconds(200),
                       absl::Duration idle_poll = absl::Seconds(1),
                       absl::Duration idle_after = absl::Seconds(10));
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;
  ~HeapTrimmer();

  // Trims `delay` from now (or with the trim already pending).
  void TrimSoon();

  // A call started / ended: no idle trim while any is in flight, nor within
  // `idle_after` of either.
  void CallStarted();
  void CallDone();

  // Trims done so far (for tests).
  int64_t trims() const;

 private:
  void Run();
  // Notes a call starting or ending (the quiet period starts again).
  void NoteActivity();
  // No call in flight, none for `idle_after`, and much free heap.
  bool IdleTrimDue() const;

  const absl::Duration delay_;
  const absl::Duration idle_poll_;
  const absl::Duration idle_after_;
  std::atomic<int64_t> calls_in_flight_{0};
  // When a call last started or ended (absl::ToUnixNanos).
  std::atomic<int64_t> last_activity_ns_;
  mutable absl::Mutex mutex_;
  bool pending_ ABSL_GUARDED_BY(mutex_) = false;
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
  int64_t trims_ ABSL_GUARDED_BY(mutex_) = 0;
  std::thread thread_;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_HEAP_TRIMMER_H_
