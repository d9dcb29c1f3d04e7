#include "worker/executor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "simulator/simulator.h"
#include "util/status_macros.h"
#include "worker/measurement.h"
#include "worker/plan_run.h"
#include "worker/task_thread.h"

#ifdef GOPT_WORKER_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gopt::worker {
namespace {

// Median over runs of each node's seconds.
std::vector<double> PerNodeMedians(
    const std::vector<std::vector<double>>& runs) {
  if (runs.empty()) return {};
  std::vector<double> medians(runs[0].size());
  std::vector<double> column(runs.size());
  for (size_t node = 0; node < medians.size(); ++node) {
    for (size_t r = 0; r < runs.size(); ++r) column[r] = runs[r][node];
    medians[node] = Median(column);
  }
  return medians;
}

// CPU executors on their own (pinned) threads, then CUDA devices; one copy
// thread per directed pair of devices.
class TorchExecutor final : public Executor {
 public:
  TorchExecutor(const ExecutorOptions& options, int cuda_devices) {
    const int hardware = std::max(1u, std::thread::hardware_concurrency());
    for (int i = 0; i < options.cpu_executors; ++i) {
      DeviceDescription d;
      d.name = absl::StrCat("cpu:", i);
      d.kind = simulator::DeviceKind::kCpu;
      d.threads = options.threads_per_executor;
      if (options.pin_threads) {
        for (int t = 0; t < d.threads; ++t) {
          d.cores.push_back((i * d.threads + t) % hardware);
        }
      }
      const int threads = d.threads;
      devices_.push_back(std::make_unique<TaskThread>(d.cores, [threads] {
        at::init_num_threads();
        at::set_num_threads(threads);
      }));
      d.pinned = devices_.back()->pinned();
      descriptions_.push_back(d);
      torch_devices_.emplace_back(at::kCPU);
      synchronize_.emplace_back();
    }
    for (int i = 0; i < cuda_devices; ++i) AddCudaDevice(i);
    const int n = static_cast<int>(devices_.size());
    links_.resize(static_cast<size_t>(n) * n);
    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        if (s != d) {
          links_[s * n + d] = std::make_unique<TaskThread>(
              std::vector<int>{}, [] { at::set_num_threads(1); });
        }
      }
    }
  }

  absl::StatusOr<ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const ExecuteOptions& options) override;

  std::vector<DeviceDescription> Describe() const override {
    return descriptions_;
  }

  simulator::Topology HostTopology() const override;

 private:
  void AddCudaDevice(int index) {
#ifdef GOPT_WORKER_CUDA
    DeviceDescription d;
    d.name = absl::StrCat("cuda:", index);
    d.kind = simulator::DeviceKind::kGpu;
    descriptions_.push_back(d);
    devices_.push_back(
        std::make_unique<TaskThread>(std::vector<int>{}, [index] {
          c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
        }));
    torch_devices_.emplace_back(at::kCUDA,
                                static_cast<c10::DeviceIndex>(index));
    synchronize_.emplace_back([] { c10::cuda::device_synchronize(); });
#else
    (void)index;
#endif
  }

  internal::RunThreads Threads() const {
    internal::RunThreads threads;
    for (const auto& d : devices_) threads.devices.push_back(d.get());
    for (const auto& l : links_) threads.links.push_back(l.get());
    threads.torch_devices = torch_devices_;
    threads.synchronize = synchronize_;
    return threads;
  }

  // One plan at a time: plans share the devices.
  absl::Mutex execute_mu_;
  std::vector<DeviceDescription> descriptions_;
  std::vector<std::unique_ptr<TaskThread>> devices_;
  std::vector<std::unique_ptr<TaskThread>> links_;
  std::vector<at::Device> torch_devices_;
  std::vector<std::function<void()>> synchronize_;
};

simulator::Topology TorchExecutor::HostTopology() const {
  const simulator::Topology cpu = *simulator::PresetTopology("cpu-host");
  const simulator::Topology gpu = *simulator::PresetTopology("v100x2-pcie");
  simulator::Topology t;
  t.name = "executor-host";
  t.source =
      "nominal numbers of the cpu-host preset (CPU executors) and a V100 "
      "(CUDA devices); gopt calibrate measures this host's";
  for (const DeviceDescription& d : descriptions_) {
    simulator::DeviceProfile profile =
        d.kind == simulator::DeviceKind::kCpu ? cpu.devices[0] : gpu.devices[0];
    if (d.kind == simulator::DeviceKind::kCpu) {
      profile.peak_f32_flops *= d.threads;
      profile.peak_f64_flops *= d.threads;
    }
    t.devices.push_back(profile);
  }
  t.links.assign(descriptions_.size() * descriptions_.size(), cpu.links[1]);
  return t;
}

absl::StatusOr<ExecutionResult> TorchExecutor::Execute(
    const graph::Graph& graph, const simulator::Plan& plan,
    const ExecuteOptions& options) {
  if (options.min_repeats < 1 || options.max_repeats < options.min_repeats ||
      options.warmup_runs < 0 || options.timeout_seconds < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ExecuteOptions: expected warmup_runs >= 0, 1 <= min_repeats <= "
        "max_repeats, timeout_seconds >= 0; got ",
        options.warmup_runs, ", ", options.min_repeats, ", ",
        options.max_repeats, ", ", options.timeout_seconds));
  }
  const simulator::Topology topology = HostTopology();
  RETURN_IF_ERROR(simulator::ValidatePlan(plan, graph, topology));
  {
    // Catches fusion groups that form a cycle (the simulator's check).
    const simulator::RooflineCostModel roofline;
    const simulator::Simulator simulator(graph, topology, roofline);
    simulator::SimulationOptions sim_options;
    sim_options.record_timeline = false;
    RETURN_IF_ERROR(simulator.Simulate(plan, sim_options).status());
  }
  absl::MutexLock lock(&execute_mu_);
  const absl::Time deadline =
      options.timeout_seconds > 0
          ? absl::Now() + absl::Seconds(options.timeout_seconds)
          : absl::InfiniteFuture();
  internal::PlanRun run(graph, plan, Threads(), options.seed, deadline,
                        options.cancelled, options.node_executions);
  internal::SetupReport report;
  RETURN_IF_ERROR(run.Setup(&report, options.setup_only));
  if (options.setup_only) {
    ExecutionResult result;
    result.per_node_seconds = std::move(report.node_seconds);
    result.real_op_nodes = report.real_op_nodes;
    result.not_run_nodes = report.not_run_nodes;
    result.total_nodes = graph.num_nodes();
    result.real_op_flop_fraction =
        graph.total_flops() > 0 ? report.real_flops / graph.total_flops() : 1.0;
    result.warnings = std::move(report.warnings);
    return result;
  }
  double step_s = 0;
  for (int i = 0; i < options.warmup_runs; ++i) {
    RETURN_IF_ERROR(run.RunOnce(&step_s, nullptr));
  }
  std::vector<double> runs;
  std::vector<std::vector<double>> node_runs;
  double measured_s = 0;
  while (static_cast<int>(runs.size()) < options.max_repeats &&
         (static_cast<int>(runs.size()) < options.min_repeats ||
          measured_s < options.min_measure_seconds)) {
    std::vector<double> node_s;
    RETURN_IF_ERROR(
        run.RunOnce(&step_s, options.per_node_times ? &node_s : nullptr));
    runs.push_back(step_s);
    measured_s += step_s;
    if (options.per_node_times) node_runs.push_back(std::move(node_s));
  }
  const RunSummary summary = SummarizeRuns(runs);
  ExecutionResult result;
  result.measured_step_time_s = summary.median_s;
  result.measured_spread = summary.spread;
  result.measured_min_step_time_s =
      runs.empty() ? 0 : *std::min_element(runs.begin(), runs.end());
  result.runs = static_cast<int>(summary.kept_s.size());
  result.outliers_discarded = summary.outliers;
  result.run_seconds = summary.kept_s;
  result.per_node_seconds = PerNodeMedians(node_runs);
  result.peak_memory_bytes = run.PeakMemoryBytes();
  result.real_op_nodes = report.real_op_nodes;
  result.total_nodes = graph.num_nodes();
  result.real_op_flop_fraction =
      graph.total_flops() > 0 ? report.real_flops / graph.total_flops() : 1.0;
  std::vector<int32_t> groups;
  for (int32_t g : plan.fusion_group) {
    if (g >= 0) groups.push_back(g);
  }
  std::sort(groups.begin(), groups.end());
  result.fused_groups = static_cast<int>(
      std::unique(groups.begin(), groups.end()) - groups.begin());
  result.fused_groups_run_fused = 0;
  result.bytes_copied = run.bytes_copied();
  result.num_copies = run.num_copies();
  result.warnings = std::move(report.warnings);
  if (result.fused_groups > 0) {
    result.warnings.push_back(absl::StrCat(
        result.fused_groups,
        " fusion group(s) ran as units, op after op (no fused kernels)"));
  }
  for (const DeviceDescription& d : descriptions_) {
    if (!d.cores.empty() && !d.pinned) {
      result.warnings.push_back(
          absl::StrCat(d.name, ": the OS refused pinning its thread(s)"));
    }
  }
  if (options.keep_outputs) result.output_checksums = run.OutputChecksums();
  return result;
}

}  // namespace

int DefaultCpuExecutors() {
  const int threads = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(threads, 1, 8);
}

int CudaDeviceCount() {
#ifdef GOPT_WORKER_CUDA
  return static_cast<int>(c10::cuda::device_count());
#else
  return 0;
#endif
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
  if (resolved.cpu_executors == 0) {
    resolved.cpu_executors = DefaultCpuExecutors();
  }
  if (resolved.cpu_executors < 0 || resolved.cpu_executors > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExecutorOptions.cpu_executors: expected 0..64, got ",
                     options.cpu_executors));
  }
  if (resolved.threads_per_executor < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExecutorOptions.threads_per_executor: expected >= 1, "
                     "got ",
                     options.threads_per_executor));
  }
  const int available = CudaDeviceCount();
  int cuda = resolved.cuda_devices < 0 ? available : resolved.cuda_devices;
  if (cuda > 0 && !ExecutorHasCuda()) {
    return absl::FailedPreconditionError(
        "ExecutorOptions.cuda_devices > 0, but this build's LibTorch has no "
        "CUDA (see scripts/gpu-check.sh)");
  }
  if (cuda > available) {
    return absl::FailedPreconditionError(
        absl::StrCat("ExecutorOptions.cuda_devices = ", cuda, ", but ",
                     available, " CUDA device(s) are visible"));
  }
  if (resolved.cpu_executors + cuda > 64) {
    return absl::InvalidArgumentError("more than 64 devices");
  }
  return std::unique_ptr<Executor>(new TorchExecutor(resolved, cuda));
}

}  // namespace gopt::worker
