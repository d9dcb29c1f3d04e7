#ifndef GOPT_ENGINE_WORKER_POOL_H_
#define GOPT_ENGINE_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/memory_budget.h"
#include "engine/plan_measurer.h"
#include "simulator/topology.h"
#include "worker/executor.h"

namespace gopt::engine {

// One worker the pool sends plans to: an in-process Executor or a remote
// gopt-worker. Implementations are thread-safe; the pool sends a worker
// one plan at a time.
class PoolWorker {
 public:
  virtual ~PoolWorker() = default;
  // "in-process" or the worker's host:port.
  virtual const std::string& name() const = 0;
  // Runs and measures one plan, finishing by `deadline`; stops when
  // options.cancelled reads true (a remote worker's call is cancelled, so
  // the plan stops on the worker too). Errors as worker::Executor::Execute,
  // plus Unavailable (and others) when the worker cannot be reached or dies
  // mid-plan.
  virtual absl::StatusOr<worker::ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const worker::ExecuteOptions& options, absl::Time deadline) = 0;
  // OK when the worker serves (grpc.health.v1 SERVING); else why not.
  virtual absl::Status CheckHealth(absl::Time deadline) = 0;
  // The worker's devices as the topology plans for it are simulated on
  // (Executor::HostTopology; a remote worker's Describe, asked once).
  // Unavailable (and others) when the worker cannot be reached.
  virtual absl::StatusOr<simulator::Topology> Devices(absl::Time deadline) = 0;
  // Blocks until the worker can take a plan or `deadline` passes: a local
  // child being restarted is waited for here, so that its start-up never
  // counts against a plan's timeout. OK right away for workers that are
  // always ready (the default); Unavailable when none came up in time.
  virtual absl::Status WaitReady(absl::Time /*deadline*/) {
    return absl::OkStatus();
  }
};

// The child's RLIMIT_DATA over WorkerPoolOptions::worker_memory_bytes: what
// a gopt-worker holds besides a plan's tensors (LibTorch, OpenBLAS and gRPC
// buffers, thread stacks, the imported graph). 2 GiB.
inline constexpr int64_t kChildRuntimeBytes = int64_t{2} << 30;

// A worker over an Executor in this process (shared: tests keep a handle).
std::unique_ptr<PoolWorker> MakeInProcessWorker(
    std::shared_ptr<worker::Executor> executor);
// A worker reached over gRPC (plaintext) at host:port. Connects lazily: an
// unreachable address fails its plans and health checks, not this call.
std::unique_ptr<PoolWorker> MakeRemoteWorker(const std::string& address);

// Every address `name` (host:port, without the dns:/// prefix) resolves to,
// as ip:port, sorted. NotFound when it resolves to none, InvalidArgument
// when it has no port.
absl::StatusOr<std::vector<std::string>> ResolveWorkerAddresses(
    const std::string& name);

// What measuring a plan would hold at its peak on a worker, by the
// simulator (weights resident, each value freed after its last use).
struct PlanMemoryEstimate {
  std::vector<int64_t> device_bytes;  // per plan device
  // The worker's CPU devices together: its executors share the host's
  // memory, so their peaks add up.
  int64_t host_bytes = 0;
};

// Simulates `plan` of `graph` on `topology` (the worker's devices) for its
// peak memory. InvalidArgument (naming node and field) for a plan that does
// not fit the graph or the worker's devices.
absl::StatusOr<PlanMemoryEstimate> EstimatePlanMemory(
    const graph::Graph& graph, const simulator::Plan& plan,
    const simulator::Topology& topology);

// OK when `estimate` fits on the worker: host_bytes at most
// `worker_memory_bytes` (0 = no host limit) and each GPU device's peak at
// most its memory_bytes in `topology`. Else ResourceExhausted with the
// numbers (per device, the sum, the limit and the flag that sets it).
absl::Status CheckPlanMemory(const PlanMemoryEstimate& estimate,
                             const simulator::Topology& topology,
                             int64_t worker_memory_bytes);

// `text` (a worker's error) without a C++ backtrace or code addresses:
// drops every line from one starting "Exception raised from" or
// "frame #N:" on, and replaces each 0x... address with "0x?". LibTorch's
// c10::Error::what() carries both; no client should see them.
//
// Example: "boom\nException raised from f at a.cpp:3 (most recent call
// first):\nframe #0: 0x7f12 ..." -> "boom".
std::string WithoutBacktrace(absl::string_view text);

// How the pool schedules plans. Defaults are gopt-server's flag defaults.
struct WorkerPoolOptions {
  // Measure calls that may wait for a free worker; more are
  // ResourceExhausted. Default 16.
  int queue_length = 16;
  // Most seconds one plan may run on one worker (the request's deadline
  // bounds it too); past it the plan is DeadlineExceeded. Default 120.
  double plan_timeout_seconds = 120;
  // A worker failing this many plans in a row is taken out for
  // eject_seconds. Defaults 3 and 30 s.
  int failures_to_eject = 3;
  double eject_seconds = 30;
  // Seconds between health checks of remote workers (and re-resolutions of
  // DNS names); 0 = none in the background (CheckHealthNow only).
  // Default 5.
  double health_check_interval_seconds = 5;
  // How each plan is measured (timeout_seconds and cancelled are set per
  // plan). Defaults: the executor's.
  worker::ExecuteOptions execute;
  // Host memory one plan may use on a worker, by the simulator's peak
  // (PlanMemoryEstimate::host_bytes); a plan over it, or over a GPU
  // device's memory, is refused before any worker sees it
  // (ResourceExhausted, not retried, counted as "refused"). 0 (default) =
  // no host limit. gopt-server's --worker_memory_bytes defaults to a
  // quarter of its memory budget. For the local gopt-worker child it also
  // sets the child's RLIMIT_DATA (this plus kChildRuntimeBytes).
  int64_t worker_memory_bytes = 0;
  // Charged with each plan's estimated host bytes while the plan runs
  // (the worker's memory is the server's container's too); a plan that
  // does not fit next to the requests in flight is ResourceExhausted.
  // Borrowed, must outlive the pool; null (default) = not charged.
  MemoryBudget* memory_budget = nullptr;
  // The gopt-worker binary of --workers=local; empty (default) = beside
  // this process's executable.
  std::string worker_binary;
  // Called after each plan a worker ran, with its status ("ok", "failed",
  // "timeout", "invalid", "cancelled") and seconds, and with "refused" and
  // 0 s for a plan refused before running; may be empty.
  std::function<void(absl::string_view status, double seconds)> on_execution;
  // Called with the number of Measure calls waiting for a worker whenever
  // it changes; may be empty.
  std::function<void(int64_t waiting)> on_queue_depth;
};

// What the pool knows about one worker (for tests and logs).
struct PoolWorkerState {
  std::string name;
  bool healthy = true;     // the last health check passed
  bool taken_out = false;  // failed too often; back after eject_seconds
  int consecutive_failures = 0;
  std::string last_error;
};

// gopt-server's worker pool: runs plans on workers and measures them. With
// worker_memory_bytes set, a plan is first simulated on the chosen worker's
// devices and refused when its peak memory is over what the worker may use
// (CheckPlanMemory); its estimated host bytes are charged to memory_budget
// while it runs. Every error text from a worker passes WithoutBacktrace. A
// plan goes to a free, healthy worker that is not taken out; when every
// such worker is busy the call waits (at most queue_length calls wait; more
// are ResourceExhausted). A plan that fails on one worker is retried once
// on another; a plan the worker refuses as invalid, one over its timeout,
// and one the caller cancelled are not retried. A worker that fails
// failures_to_eject plans in a row is taken out for eject_seconds; one
// whose health check fails is skipped until a check passes.
//
// Owns its workers. Thread-safe; the destructor stops the health thread
// (Measure calls must have returned).
class WorkerPool : public PlanMeasurer {
 public:
  // From gopt-server's --workers value: "local" (or empty) = one gopt-worker
  // child process (ChildWorker: options.worker_binary, with
  // `executor_options` and an RLIMIT_DATA of options.worker_memory_bytes +
  // kChildRuntimeBytes when that is set); "in-process" = an Executor with
  // `executor_options` in this process (no isolation: tests and the CLI);
  // otherwise a comma list of host:port and dns:///NAME:PORT entries (every
  // address NAME resolves to, re-resolved at each health check: a
  // Kubernetes headless service). InvalidArgument for a malformed entry;
  // FailedPrecondition when the child cannot start; the in-process
  // Executor's errors.
  static absl::StatusOr<std::unique_ptr<WorkerPool>> FromSpec(
      const std::string& spec, const worker::ExecutorOptions& executor_options,
      const WorkerPoolOptions& options);

  // `dns_names` (host:port) are re-resolved at each health check and the
  // new addresses added as remote workers.
  WorkerPool(std::vector<std::unique_ptr<PoolWorker>> workers,
             const WorkerPoolOptions& options,
             std::vector<std::string> dns_names = {});
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  absl::StatusOr<PlanMeasurement> Measure(
      const graph::Graph& graph, const simulator::Plan& plan,
      absl::Time deadline, const std::atomic<bool>* cancelled) override;

  // Checks every worker's health now (and re-resolves DNS names); blocks
  // for at most a few seconds per worker.
  void CheckHealthNow();
  std::vector<PoolWorkerState> Workers() const;

 private:
  struct Entry {
    std::shared_ptr<PoolWorker> worker;
    bool busy = false;
    PoolWorkerState state;
    absl::Time out_until = absl::InfinitePast();
  };

  // Reserves a free eligible worker other than `exclude` (-1 = none),
  // waiting for one when all are busy.
  absl::StatusOr<int> Acquire(int exclude, absl::Time deadline,
                              const std::atomic<bool>* cancelled);
  // Simulates `plan` on `worker`'s devices and, when worker_memory_bytes
  // or memory_budget is set, refuses it (ResourceExhausted with the
  // numbers; InvalidArgument for a plan that does not fit the devices) or
  // charges its host bytes to memory_budget into `charge`. OK without
  // either option (nothing is simulated). The worker's Devices errors pass
  // through (the worker's failure).
  absl::Status Admit(PoolWorker& worker, const graph::Graph& graph,
                     const simulator::Plan& plan, absl::Time deadline,
                     MemoryBudget::Reservation* charge);
  // Frees worker `index` and records how its plan went.
  void Release(int index, const absl::Status& status);
  bool Eligible(const Entry& entry, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  std::string WhyNoWorker(int exclude) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void AddResolvedWorkers();
  void HealthLoop();

  const WorkerPoolOptions options_;
  const std::vector<std::string> dns_names_;
  mutable absl::Mutex mutex_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mutex_);
  int waiting_ ABSL_GUARDED_BY(mutex_) = 0;
  // Counts workers freed: the calls waiting in Acquire wake when it moves.
  uint64_t releases_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::Notification stop_;
  std::thread health_thread_;
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_WORKER_POOL_H_
