#ifndef GOPT_ENGINE_CHILD_WORKER_H_
#define GOPT_ENGINE_CHILD_WORKER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/worker_pool.h"
#include "worker/executor.h"

namespace gopt::engine {

// How a ChildWorker starts and supervises its gopt-worker process.
struct ChildWorkerOptions {
  // The gopt-worker binary. Empty (default): "gopt-worker" in the folder of
  // this process's own executable (/proc/self/exe), as the build (build/bin)
  // and the image (/usr/local/bin) lay them out.
  std::string binary;
  // The child's executors, passed as gopt-worker's --cpu_executors,
  // --threads_per_executor, --pin_threads and --cuda_devices.
  worker::ExecutorOptions executor;
  // The child's RLIMIT_DATA in bytes; 0 (default) = none. RLIMIT_DATA, not
  // RLIMIT_AS: it counts the private writable memory a plan's tensors take
  // (malloc'd heap and anonymous mappings), while RLIMIT_AS also counts the
  // address space LibTorch, OpenBLAS and glibc reserve without using (and
  // CUDA maps tens of GB of it), so an AS limit either fails at start-up or
  // must be so large it limits nothing. Past the limit an allocation fails:
  // the plan fails with LibTorch's out-of-memory error, the child lives.
  int64_t data_limit_bytes = 0;
  // Seconds a child may take to print its port. Default 60.
  double start_timeout_seconds = 60;
  // Wait before starting a child again after one died: min_backoff_seconds,
  // doubled after each child that died within a minute of its start, at
  // most max_backoff_seconds. Defaults 0.1 s and 10 s.
  double min_backoff_seconds = 0.1;
  double max_backoff_seconds = 10;
};

// "gopt-worker" beside /proc/self/exe; NotFound when it is not there.
absl::StatusOr<std::string> WorkerBinaryBesideSelf();

// A PoolWorker that is a gopt-worker child process of this one, as TVM's
// runners isolate measurements: a plan that crashes its worker, exhausts its
// memory or hangs in a kernel takes down the child, never the caller. The
// child listens on a free loopback port (its --listen=127.0.0.1:0, read back
// from the line it prints), is killed when this process dies
// (PR_SET_PDEATHSIG) and runs under options.data_limit_bytes.
//
// A supervisor thread starts the child, reaps it when it dies and starts the
// next one after a backoff. Execute waits (until its deadline) for a
// running child, sends it the plan as a remote worker would, and kills the
// child (SIGKILL; the supervisor starts another) when the plan is still
// running past its deadline: a kernel that never returns to the worker's
// between-node checks cannot overrun the per-plan timeout. Errors name the
// child's pid and, when it died, how (signal or exit code).
//
// Thread-safe. The destructor kills the child and joins the supervisor.
class ChildWorker final : public PoolWorker {
 public:
  // Starts the first child and waits until it listens. FailedPrecondition
  // (naming the binary and what the child printed) when it cannot start.
  static absl::StatusOr<std::unique_ptr<ChildWorker>> Start(
      const ChildWorkerOptions& options);
  ~ChildWorker() override;
  ChildWorker(const ChildWorker&) = delete;
  ChildWorker& operator=(const ChildWorker&) = delete;

  const std::string& name() const override { return name_; }
  absl::StatusOr<worker::ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const worker::ExecuteOptions& options, absl::Time deadline) override;
  // OK while a child serves or the next one is being started; Unavailable
  // with the last start error when starting keeps failing.
  absl::Status CheckHealth(absl::Time deadline) override;
  absl::StatusOr<simulator::Topology> Devices(absl::Time deadline) override;
  absl::Status WaitReady(absl::Time deadline) override;

  // The running child's pid; -1 while none runs.
  pid_t pid() const;
  // The running child's host:port; "" while none runs.
  std::string address() const;
  // Children started so far (1 after Start; each respawn adds one).
  int64_t starts() const;

 private:
  // The running child and the remote worker that reaches it.
  struct Child {
    pid_t pid = -1;
    int stdout_fd = -1;  // the read end of the child's stdout
    std::shared_ptr<PoolWorker> remote;
  };

  explicit ChildWorker(const ChildWorkerOptions& options, std::string binary);
  void Supervise();
  // Starts a child and reads its port; the child is reaped on failure.
  absl::StatusOr<Child> Spawn();
  // The running child, waiting for one until `deadline`.
  absl::StatusOr<Child> Running(absl::Time deadline);
  // How child `pid` ended ("" while it runs or when unknown), waiting up to
  // a second for the supervisor to reap it.
  std::string DeathOf(pid_t pid);

  const ChildWorkerOptions options_;
  const std::string binary_;
  const std::string name_ = "local";
  mutable absl::Mutex mutex_;
  Child child_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  int64_t starts_ ABSL_GUARDED_BY(mutex_) = 0;
  // Why the last start failed ("" after one succeeded).
  std::string start_error_ ABSL_GUARDED_BY(mutex_);
  // The last child that died and how.
  pid_t dead_pid_ ABSL_GUARDED_BY(mutex_) = -1;
  std::string death_ ABSL_GUARDED_BY(mutex_);
  std::thread supervisor_;
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_CHILD_WORKER_H_
