#include "worker/testing/fake_executor.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gopt::worker::testing {

FakeExecutor::FakeExecutor(int num_devices, double step_time_s)
    : num_devices_(num_devices),
      step_time_(
          [step_time_s](const simulator::Plan&) { return step_time_s; }) {}

void FakeExecutor::set_behavior(FakeBehavior behavior) {
  absl::MutexLock lock(&mutex_);
  behavior_ = behavior;
}

void FakeExecutor::set_step_time(
    std::function<double(const simulator::Plan&)> seconds) {
  absl::MutexLock lock(&mutex_);
  step_time_ = std::move(seconds);
}

int FakeExecutor::executions() const {
  absl::MutexLock lock(&mutex_);
  return executions_;
}

absl::StatusOr<ExecutionResult> FakeExecutor::Execute(
    const graph::Graph& graph, const simulator::Plan& plan,
    const ExecuteOptions& options) {
  FakeBehavior behavior;
  std::function<double(const simulator::Plan&)> step_time;
  {
    absl::MutexLock lock(&mutex_);
    ++executions_;
    behavior = behavior_;
    step_time = step_time_;
  }
  if (static_cast<int64_t>(plan.device.size()) != graph.num_nodes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan.device has ", plan.device.size(),
                     " entries; the graph has ", graph.num_nodes(), " nodes"));
  }
  for (size_t node = 0; node < plan.device.size(); ++node) {
    if (plan.device[node] < 0 || plan.device[node] >= num_devices_) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan.device[", node, "] = ", plan.device[node],
                       ": this worker has devices 0..", num_devices_ - 1));
    }
  }
  const absl::Time deadline =
      options.timeout_seconds > 0
          ? absl::Now() + absl::Seconds(options.timeout_seconds)
          : absl::InfiniteFuture();
  switch (behavior) {
    case FakeBehavior::kFail:
      return absl::InternalError("the fake worker failed");
    case FakeBehavior::kHang:
      while (absl::Now() < deadline) {
        if (options.cancelled != nullptr && options.cancelled->load()) {
          return absl::CancelledError("cancelled");
        }
        absl::SleepFor(absl::Milliseconds(5));
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "the plan ran over its timeout of ", options.timeout_seconds, " s"));
    case FakeBehavior::kBlock:
      if (!started_.HasBeenNotified()) started_.Notify();
      while (!released_.WaitForNotificationWithTimeout(absl::Milliseconds(5))) {
        if (options.cancelled != nullptr && options.cancelled->load()) {
          return absl::CancelledError("cancelled");
        }
      }
      break;
    case FakeBehavior::kMeasure:
      break;
  }
  ExecutionResult result;
  result.measured_step_time_s = step_time(plan);
  result.measured_spread = 0.01;
  result.measured_min_step_time_s = result.measured_step_time_s * 0.75;
  result.runs = options.min_repeats;
  result.run_seconds.assign(options.min_repeats, result.measured_step_time_s);
  result.peak_memory_bytes.assign(num_devices_, 0);
  result.total_nodes = graph.num_nodes();
  result.real_op_nodes = graph.num_nodes();
  result.real_op_flop_fraction = 1;
  return result;
}

std::vector<DeviceDescription> FakeExecutor::Describe() const {
  std::vector<DeviceDescription> devices(num_devices_);
  for (int i = 0; i < num_devices_; ++i) {
    devices[i].name = absl::StrCat("cpu:", i);
  }
  return devices;
}

simulator::Topology FakeExecutor::HostTopology() const {
  simulator::Topology topology = *simulator::PresetTopology("cpu-host");
  topology.name = "fake-host";
  return topology;
}

}  // namespace gopt::worker::testing
