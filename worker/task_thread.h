#ifndef GOPT_WORKER_TASK_THREAD_H_
#define GOPT_WORKER_TASK_THREAD_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gopt::worker {

// One long-lived thread that runs posted tasks in order: an executor's
// device thread or a link's copy thread. Pins itself to `cores` (when
// non-empty) and runs `init` first on the new thread. Thread-safe: Post may
// be called from any thread. The destructor runs the tasks already posted,
// then joins.
class TaskThread {
 public:
  TaskThread(std::vector<int> cores, std::function<void()> init);
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues `task` to run on this thread.
  void Post(std::function<void()> task);

  // Whether pinning to the cores succeeded (false when none were given).
  // Blocks until the thread has started.
  bool pinned();

 private:
  void Loop(std::vector<int> cores, std::function<void()> init);

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool pinned_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gopt::worker

#endif  // GOPT_WORKER_TASK_THREAD_H_
