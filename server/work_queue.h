#ifndef GOPT_SERVER_WORK_QUEUE_H_
#define GOPT_SERVER_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gopt::server {

// Admission control: a fixed pool of threads that run submitted work, in
// arrival order, behind a bounded queue of work waiting for a thread. gRPC
// callback handlers submit the expensive part of a request here so that
// they never block a gRPC thread. Thread-safe.
//
//   WorkQueue queue(/*num_threads=*/4, /*max_queued=*/64);
//   absl::Status admitted = queue.Submit([=] { Serve(call); });
//   if (!admitted.ok()) call->Finish(ToGrpcStatus(admitted));
class WorkQueue {
 public:
  // num_threads >= 1; max_queued >= 0 (0: admit only when a thread is
  // idle).
  WorkQueue(int num_threads, int max_queued);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  // Shutdown().
  ~WorkQueue();

  // Queues `work`. ResourceExhausted when max_queued items already wait
  // for a thread; Unavailable after Shutdown.
  absl::Status Submit(std::function<void()> work);

  // Queues `work` for a request that may be abandoned while it waits (its
  // deadline passed, its client cancelled): `abandoned` is asked when a
  // thread takes the item and, when the queue is full, for every waiting
  // item before a new one is refused. An abandoned item is removed and its
  // `drop` runs instead of `work` (on a queue thread, or on the submitting
  // thread when pruned to make room), so it takes no thread's time and no
  // live request's place. `abandoned` must be cheap and thread-safe; it is
  // called with the queue's lock held and must not call back into it.
  absl::Status Submit(std::function<void()> work,
                      std::function<bool()> abandoned,
                      std::function<void()> drop);

  // Items waiting for a thread / running now.
  int64_t queued() const;
  int64_t running() const;

  // Refuses new work, runs what is queued, waits for the threads.
  // Idempotent.
  void Shutdown();

  // Called with the queue length whenever it changes (for a gauge); set
  // before the first Submit. Called with the queue's lock held: it must
  // not call back into the queue.
  void set_queue_length_observer(std::function<void(int64_t)> observer) {
    queue_length_observer_ = std::move(observer);
  }

 private:
  struct Item {
    std::function<void()> work;
    std::function<bool()> abandoned;  // may be empty: never abandoned
    std::function<void()> drop;
  };

  void Loop();
  // Moves the abandoned items out of the queue into `dropped`.
  void PruneAbandoned(std::vector<Item>* dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void ObserveLength() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const int max_queued_;
  std::function<void(int64_t)> queue_length_observer_;
  mutable absl::Mutex mutex_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mutex_);
  int64_t running_ ABSL_GUARDED_BY(mutex_) = 0;
  int idle_ ABSL_GUARDED_BY(mutex_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_WORK_QUEUE_H_
