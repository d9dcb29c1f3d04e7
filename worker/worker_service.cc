#include "worker/worker_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "graph/native/graph_proto.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "worker/worker_proto.h"

namespace gopt::worker {
namespace {

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// The reactor of one Execute call: remembers a client cancellation (an
// explicit cancel, or the call's deadline) so the running plan stops at its
// next node, and how many nodes the worker had started by then.
class ExecuteReactor : public grpc::ServerUnaryReactor {
 public:
  explicit ExecuteReactor(const std::atomic<int64_t>* node_executions)
      : node_executions_(node_executions) {}
  void OnCancel() override {
    // Read before the flag is set: every node started after it counts.
    nodes_at_cancel_.store(node_executions_->load());
    cancelled_.store(true);
  }
  void OnDone() override { delete this; }
  const std::atomic<bool>* cancelled() const { return &cancelled_; }
  int64_t nodes_at_cancel() const { return nodes_at_cancel_.load(); }

 private:
  const std::atomic<int64_t>* const node_executions_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> nodes_at_cancel_{0};
};

// Seconds until the call's deadline (a large number when it has none).
double SecondsLeft(const grpc::CallbackServerContext& context) {
  const auto left = context.deadline() - std::chrono::system_clock::now();
  return std::chrono::duration<double>(left).count();
}

}  // namespace

WorkerService::WorkerService(Executor* executor,
                             const WorkerServiceOptions& options)
    : executor_(executor), options_(options), thread_([this] { RunJobs(); }) {}

WorkerService::~WorkerService() { Stop(); }

void WorkerService::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void WorkerService::RunJobs() {
  while (true) {
    std::function<void(bool)> job;
    bool stopping = false;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(
          +[](WorkerService* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mutex_) {
            return self->stopping_ || !self->jobs_.empty();
          },
          this));
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      stopping = stopping_;
    }
    job(stopping);
  }
}

grpc::ServerUnaryReactor* WorkerService::Execute(
    grpc::CallbackServerContext* context,
    const gopt::v1::ExecuteRequest* request,
    gopt::v1::ExecuteResponse* response) {
  auto* reactor = new ExecuteReactor(&node_executions_);
  graph::GraphLimits limits;
  limits.max_nodes = options_.max_graph_nodes;
  if (request->graph().nodes_size() == 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "execute: request.graph has no nodes"));
    return reactor;
  }
  absl::StatusOr<graph::Graph> graph =
      graph::GraphFromProto(request->graph(), limits);
  if (!graph.ok()) {
    reactor->Finish(ToGrpc(absl::Status(
        graph.status().code(),
        absl::StrCat("execute: request.graph: ", graph.status().message()))));
    return reactor;
  }
  ExecuteOptions options = ExecuteOptionsFromProto(request->options());
  options.timeout_seconds =
      std::max(0.001, std::min(options.timeout_seconds, SecondsLeft(*context)));
  options.cancelled = reactor->cancelled();
  options.node_executions = &node_executions_;
  const bool per_node_times = request->options().per_node_times();
  auto job = [this, reactor, request, response, per_node_times, options,
              graph = std::make_shared<graph::Graph>(std::move(*graph))](
                 bool stopping) {
    if (stopping) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "execute: the worker is shutting down"));
      return;
    }
    const int64_t nodes_at_start = node_executions_.load();
    absl::StatusOr<ExecutionResult> result = executor_->Execute(
        *graph, simulator::PlanFromProto(request->plan()), options);
    if (absl::IsCancelled(result.status()) && reactor->cancelled()->load()) {
      const int64_t nodes_at_end = node_executions_.load();
      LOG(INFO) << "execute: plan of " << graph->num_nodes()
                << " nodes cancelled by the caller after "
                << nodes_at_end - nodes_at_start << " node executions, "
                << nodes_at_end -
                       std::max(nodes_at_start, reactor->nodes_at_cancel())
                << " of them after the cancellation reached this worker";
    }
    if (!result.ok()) {
      reactor->Finish(ToGrpc(
          absl::Status(result.status().code(),
                       absl::StrCat("execute: ", result.status().message()))));
      return;
    }
    *response = ExecutionResultToProto(*result, per_node_times);
    response->set_worker(options_.name);
    reactor->Finish(grpc::Status::OK);
  };
  absl::MutexLock lock(&mutex_);
  if (stopping_) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "execute: the worker is shutting down"));
  } else if (static_cast<int>(jobs_.size()) >= options_.queue_length) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("execute: ", jobs_.size(),
                     " plans already wait on this worker (--queue_length)")));
  } else {
    jobs_.push_back(std::move(job));
  }
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::Describe(
    grpc::CallbackServerContext* context,
    const gopt::v1::DescribeRequest* /*request*/,
    gopt::v1::DescribeResponse* response) {
  *response = DescribeToProto(*executor_);
  response->set_worker(options_.name);
  response->set_node_executions(node_executions_.load());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gopt::worker
