#include "worker/task_thread.h"

#include <utility>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

namespace gopt::worker {
namespace {

// Pins the calling thread to `cores`; false where the OS refuses (or is
// not Linux).
bool PinCurrentThread(const std::vector<int>& cores) {
#ifdef __linux__
  if (cores.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
#else
  return false;
#endif
}

}  // namespace

TaskThread::TaskThread(std::vector<int> cores, std::function<void()> init)
    : thread_([this, cores = std::move(cores), init = std::move(init)] {
        Loop(cores, init);
      }) {}

TaskThread::~TaskThread() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void TaskThread::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

bool TaskThread::pinned() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&started_));
  return pinned_;
}

void TaskThread::Loop(std::vector<int> cores, std::function<void()> init) {
  const bool pinned = PinCurrentThread(cores);
  if (init) init();
  {
    absl::MutexLock lock(&mu_);
    pinned_ = pinned;
    started_ = true;
  }
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !tasks_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace gopt::worker
