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
  return Submit(std::move(work), nullptr, nullptr);
}

absl::Status WorkQueue::Submit(std::function<void()> work,
                               std::function<bool()> abandoned,
                               std::function<void()> drop) {
  std::vector<Item> dropped;
  absl::Status status;
  {
    absl::MutexLock lock(&mutex_);
    if (shutting_down_) {
      return absl::UnavailableError("the server is shutting down");
    }
    // Each idle thread takes one queued item; the rest wait, at most
    // max_queued_ of them. Requests nobody waits for any more make room
    // first.
    const auto full = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      return static_cast<int64_t>(queue_.size()) >= idle_ + max_queued_;
    };
    if (full()) PruneAbandoned(&dropped);
    if (full()) {
      status = absl::ResourceExhaustedError(absl::StrCat(
          "the server is busy: ", running_, " requests running and ",
          queue_.size(), " queued (queue length ", max_queued_,
          "); retry later"));
    } else {
      queue_.push_back(
          Item{std::move(work), std::move(abandoned), std::move(drop)});
      ObserveLength();
    }
  }
  // Outside the lock: a drop answers its call.
  for (Item& item : dropped) {
    if (item.drop) item.drop();
  }
  return status;
}

void WorkQueue::PruneAbandoned(std::vector<Item>* dropped) {
  auto keep = queue_.begin();
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->abandoned && it->abandoned()) {
      dropped->push_back(std::move(*it));
    } else {
      if (keep != it) *keep = std::move(*it);
      ++keep;
    }
  }
  queue_.erase(keep, queue_.end());
  ObserveLength();
}

void WorkQueue::ObserveLength() {
  if (queue_length_observer_) {
    queue_length_observer_(static_cast<int64_t>(queue_.size()));
  }
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
    Item item;
    bool abandoned = false;
    {
      absl::MutexLock lock(&mutex_);
      ++idle_;
      const auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mutex_) {
        return !queue_.empty() || shutting_down_;
      };
      mutex_.Await(absl::Condition(&ready));
      --idle_;
      if (queue_.empty()) return;  // shutting down, nothing left
      item = std::move(queue_.front());
      queue_.pop_front();
      abandoned = item.abandoned && item.abandoned();
      if (!abandoned) ++running_;
      ObserveLength();
    }
    if (abandoned) {
      if (item.drop) item.drop();
      continue;
    }
    item.work();
    absl::MutexLock lock(&mutex_);
    --running_;
  }
}

}  // namespace gopt::server
