#ifndef GOPT_WORKER_TESTING_FAKE_EXECUTOR_H_
#define GOPT_WORKER_TESTING_FAKE_EXECUTOR_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "worker/executor.h"

namespace gopt::worker::testing {

// What a FakeExecutor does when asked to run a plan.
enum class FakeBehavior {
  kMeasure,  // answers with step_time(plan) at once
  kFail,     // Internal error ("the fake worker failed")
  kHang,     // waits until cancelled (Cancelled) or past the timeout
             // (DeadlineExceeded)
  kBlock,    // signals started(), then waits for Release() and measures
};

// An Executor for tests: no LibTorch, scripted step times and failures,
// deterministic. Validates plans as the real one does (size and device
// range, InvalidArgument naming the node). Thread-safe.
class FakeExecutor : public Executor {
 public:
  // `num_devices` CPU devices; every plan measures `step_time_s` unless
  // set_step_time changes it (median), its fastest run 0.75 times that.
  explicit FakeExecutor(int num_devices = 2, double step_time_s = 0.01);

  absl::StatusOr<ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const ExecuteOptions& options) override;
  std::vector<DeviceDescription> Describe() const override;
  simulator::Topology HostTopology() const override;

  void set_behavior(FakeBehavior behavior);
  // Measured seconds of a plan (default: the constructor's step time).
  void set_step_time(std::function<double(const simulator::Plan&)> seconds);
  // kBlock: notified once a plan started; Release() lets it finish.
  absl::Notification& started() { return started_; }
  void Release() { released_.Notify(); }
  // Plans asked to run so far (failed ones too).
  int executions() const;

 private:
  const int num_devices_;
  mutable absl::Mutex mutex_;
  FakeBehavior behavior_ ABSL_GUARDED_BY(mutex_) = FakeBehavior::kMeasure;
  std::function<double(const simulator::Plan&)> step_time_
      ABSL_GUARDED_BY(mutex_);
  int executions_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::Notification started_;
  absl::Notification released_;
};

}  // namespace gopt::worker::testing

#endif  // GOPT_WORKER_TESTING_FAKE_EXECUTOR_H_
