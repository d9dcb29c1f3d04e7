#include "worker/executor.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "graph/status_macros.h"

namespace gopt::worker {
namespace {

// The executor's devices, described; plan execution follows in plan_run.cc.
class TorchExecutor final : public Executor {
 public:
  explicit TorchExecutor(const ExecutorOptions& options) {
    for (int i = 0; i < options.cpu_executors; ++i) {
      DeviceDescription d;
      d.name = absl::StrCat("cpu:", i);
      d.kind = simulator::DeviceKind::kCpu;
      d.threads = options.threads_per_executor;
      devices_.push_back(d);
    }
  }

  absl::StatusOr<ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const ExecuteOptions& options) override {
    RETURN_IF_ERROR(simulator::ValidatePlan(plan, graph, HostTopology()));
    return absl::FailedPreconditionError(
        "the executor cannot run plans in this build yet");
  }

  std::vector<DeviceDescription> Describe() const override { return devices_; }

  simulator::Topology HostTopology() const override {
    simulator::Topology preset = *simulator::PresetTopology("cpu-host");
    simulator::Topology t;
    t.name = "executor-host";
    t.source = "nominal cpu-host numbers (run gopt calibrate to measure)";
    for (int i = 0; i < static_cast<int>(devices_.size()); ++i) {
      t.devices.push_back(preset.devices[0]);
    }
    t.links.assign(devices_.size() * devices_.size(), preset.links[1]);
    return t;
  }

 private:
  std::vector<DeviceDescription> devices_;
};

}  // namespace

int DefaultCpuExecutors() {
  const int threads = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(threads, 1, 8);
}

bool ExecutorHasCuda() {
#ifdef GOPT_WORKER_CUDA
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(
    const ExecutorOptions& options) {
  ExecutorOptions resolved = options;
  if (resolved.cpu_executors == 0)
    resolved.cpu_executors = DefaultCpuExecutors();
  if (resolved.cpu_executors < 0 || resolved.cpu_executors > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExecutorOptions.cpu_executors: expected 0..64, got ",
                     options.cpu_executors));
  }
  if (resolved.threads_per_executor < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ExecutorOptions.threads_per_executor: expected >= 1, got ",
        options.threads_per_executor));
  }
  if (resolved.cuda_devices > 0 && !ExecutorHasCuda()) {
    return absl::FailedPreconditionError(
        "ExecutorOptions.cuda_devices > 0, but this build's LibTorch has no "
        "CUDA (see scripts/gpu-check.sh)");
  }
  return std::unique_ptr<Executor>(new TorchExecutor(resolved));
}

}  // namespace gopt::worker
