#ifndef GOPT_WORKER_WORKER_SERVICE_H_
#define GOPT_WORKER_WORKER_SERVICE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gopt/v1/worker.grpc.pb.h"
#include "worker/executor.h"

namespace gopt::worker {

// How WorkerService admits plans. Defaults are gopt-worker's flag defaults.
struct WorkerServiceOptions {
  // Plans waiting while one runs (plans run one at a time: they share the
  // devices); more are RESOURCE_EXHAUSTED. Default 8.
  int queue_length = 8;
  // Largest graph accepted, in nodes (INVALID_ARGUMENT above). Default 1M.
  int64_t max_graph_nodes = 1'000'000;
  // Names this worker in responses ("host:port"). Default empty.
  std::string name;
};

// The gopt.v1.Worker gRPC service (callback API) over an Executor: Execute
// imports the request's graph, hands graph and plan to the executor on the
// service's own thread (one plan at a time, in arrival order) and answers
// with the measured result; Describe lists the executor's devices. The
// executor's timeout is the smaller of options.timeout_seconds and the
// call's deadline; a cancelled call (the client's TryCancel, or its
// deadline) cancels its plan at the plan's next node, and the worker logs
// how many nodes ran after the cancellation arrived. Errors map from the
// executor's absl codes to the same gRPC codes.
//
// Borrows `executor`, which must outlive the service. Thread-safe. Call
// Stop() (or destroy the service) after grpc::Server::Shutdown: it cancels
// queued plans and joins the thread.
class WorkerService final : public gopt::v1::Worker::CallbackService {
 public:
  WorkerService(Executor* executor, const WorkerServiceOptions& options);
  ~WorkerService() override;
  WorkerService(const WorkerService&) = delete;
  WorkerService& operator=(const WorkerService&) = delete;

  grpc::ServerUnaryReactor* Execute(
      grpc::CallbackServerContext* context,
      const gopt::v1::ExecuteRequest* request,
      gopt::v1::ExecuteResponse* response) override;
  grpc::ServerUnaryReactor* Describe(
      grpc::CallbackServerContext* context,
      const gopt::v1::DescribeRequest* request,
      gopt::v1::DescribeResponse* response) override;

  // Finishes queued plans with UNAVAILABLE, waits for the running one and
  // joins the thread. Idempotent.
  void Stop();

 private:
  void RunJobs();

  Executor* const executor_;
  const WorkerServiceOptions options_;
  absl::Mutex mutex_;
  std::deque<std::function<void(bool stopping)>> jobs_ ABSL_GUARDED_BY(mutex_);
  // Nodes started by every plan so far (DescribeResponse.node_executions).
  std::atomic<int64_t> node_executions_{0};
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace gopt::worker

#endif  // GOPT_WORKER_WORKER_SERVICE_H_
