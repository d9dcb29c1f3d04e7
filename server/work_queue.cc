#include "server/work_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gopt::server {

WorkQueue::WorkQueue(int num_threads, int max_queued)
    : max_queued_(std::max(max_queued, 0)) {
  const int threads = std::max(num_threads, 1);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() { Shutdown(); }

absl::Status WorkQueue::Submit(std::function<void()> work) {
  absl::MutexLock lock(&mutex_);
  if (shutting_down_) {
    return absl::UnavailableError("the server is shutting down");
  }
  // Each idle thread takes one queued item; the rest wait, at most
  // max_queued_ of them.
  if (static_cast<int64_t>(queue_.size()) >= idle_ + max_queued_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server is busy: ", running_, " requests running and ",
                     queue_.size(), " queued (queue length ", max_queued_,
                     "); retry later"));
  }
  queue_.push_back(std::move(work));
  if (queue_length_observer_) {
    queue_length_observer_(static_cast<int64_t>(queue_.size()));
  }
  return absl::OkStatus();
}

int64_t WorkQueue::queued() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int64_t>(queue_.size());
}

int64_t WorkQueue::running() const {
  absl::MutexLock lock(&mutex_);
  return running_;
}

void WorkQueue::Shutdown() {
  {
    absl::MutexLock lock(&mutex_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void WorkQueue::Loop() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mutex_);
      ++idle_;
      const auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mutex_) {
        return !queue_.empty() || shutting_down_;
      };
      mutex_.Await(absl::Condition(&ready));
      --idle_;
      if (queue_.empty()) return;  // shutting down, nothing left
      work = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      if (queue_length_observer_) {
        queue_length_observer_(static_cast<int64_t>(queue_.size()));
      }
    }
    work();
    absl::MutexLock lock(&mutex_);
    --running_;
  }
}

}  // namespace gopt::server
