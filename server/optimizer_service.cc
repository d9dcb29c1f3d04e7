#include "server/optimizer_service.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "server/grpc_status.h"

namespace gopt::server {
namespace {

using gopt::v1::OptimizeStreamResponse;

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  // gRPC reports "no deadline" as the largest time point.
  if (deadline >= std::chrono::system_clock::time_point::max() -
                      std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// What every call records: in-flight gauge, request counter and latency.
class CallMetrics {
 public:
  CallMetrics(Metrics* metrics, const char* method)
      : metrics_(metrics), method_(method), start_(absl::Now()) {
    if (metrics_ != nullptr) metrics_->RequestStarted();
  }

  // Once per call, before the status goes on the wire (so a client that
  // scrapes after its answer sees it counted).
  void Finished(const grpc::Status& status) {
    if (metrics_ == nullptr) return;
    metrics_->RecordRequest(method_, GrpcCodeName(status.error_code()),
                            absl::ToDoubleSeconds(absl::Now() - start_));
    metrics_->RequestFinished();
  }

 private:
  Metrics* const metrics_;
  const char* const method_;
  const absl::Time start_;
};

// A unary call; deletes itself when gRPC is done with it.
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(Metrics* metrics, const char* method) : metrics_(metrics, method) {}

  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override { delete this; }

  // Sends `status` (the response message is already filled). Call once.
  void Answer(const absl::Status& status) {
    const grpc::Status wire = ToGrpcStatus(status);
    metrics_.Finished(wire);
    Finish(wire);
  }

  const std::atomic<bool>* cancelled() const { return &cancelled_; }

 private:
  CallMetrics metrics_;
  std::atomic<bool> cancelled_{false};
};

// OptimizeStream: progress events, then the result. Writes go out one at a
// time (gRPC allows one outstanding write); a newer progress event replaces
// one still waiting. Deletes itself when gRPC is done with it.
class StreamCall final
    : public grpc::ServerWriteReactor<OptimizeStreamResponse> {
 public:
  explicit StreamCall(Metrics* metrics) : metrics_(metrics, "OptimizeStream") {}

  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override { delete this; }
  void OnWriteDone(bool ok) override {
    Next next = Next::kNothing;
    {
      absl::MutexLock lock(&mutex_);
      writing_ = false;
      if (!ok) pending_.clear();
      next = Pump();
    }
    Run(next);
  }

  void Progress(const gopt::v1::OptimizeProgress& progress) {
    Next next = Next::kNothing;
    {
      absl::MutexLock lock(&mutex_);
      if (done_) return;
      if (!pending_.empty() && pending_.back().has_progress()) {
        pending_.pop_back();
      }
      OptimizeStreamResponse message;
      *message.mutable_progress() = progress;
      pending_.push_back(std::move(message));
      next = Pump();
    }
    Run(next);
  }

  // The last message (when `status` is OK) and the end of the stream.
  void Answer(const absl::Status& status,
              std::optional<gopt::v1::OptimizeResponse> result) {
    Next next = Next::kNothing;
    {
      absl::MutexLock lock(&mutex_);
      if (result.has_value()) {
        OptimizeStreamResponse message;
        *message.mutable_result() = *std::move(result);
        pending_.push_back(std::move(message));
      }
      status_ = ToGrpcStatus(status);
      done_ = true;
      next = Pump();
    }
    Run(next);
  }

  const std::atomic<bool>* cancelled() const { return &cancelled_; }

 private:
  enum class Next { kNothing, kWrite, kFinish };

  // Decides the next step: write `current_`, finish once everything is
  // written, or nothing while a write is in flight.
  Next Pump() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (writing_ || finished_) return Next::kNothing;
    if (!pending_.empty()) {
      writing_ = true;
      current_ = std::move(pending_.front());
      pending_.pop_front();
      return Next::kWrite;
    }
    if (!done_) return Next::kNothing;
    finished_ = true;
    return Next::kFinish;
  }

  // Performs `next` without the lock: after Finish, gRPC may delete this
  // call (OnDone) on another thread at any moment.
  void Run(Next next) {
    if (next == Next::kWrite) {
      // Only this thread touches current_ until OnWriteDone.
      StartWrite(&current_);
    } else if (next == Next::kFinish) {
      grpc::Status status;
      {
        absl::MutexLock lock(&mutex_);
        status = status_;
      }
      metrics_.Finished(status);
      Finish(status);
    }
  }

  CallMetrics metrics_;
  std::atomic<bool> cancelled_{false};
  absl::Mutex mutex_;
  std::deque<OptimizeStreamResponse> pending_ ABSL_GUARDED_BY(mutex_);
  OptimizeStreamResponse current_;  // being written; see Run
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  bool done_ ABSL_GUARDED_BY(mutex_) = false;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace

OptimizerService::OptimizerService(WorkQueue* queue, Metrics* metrics)
    : queue_(queue), metrics_(metrics) {}

void OptimizerService::SetEngine(std::shared_ptr<const Engine> engine) {
  absl::MutexLock lock(&mutex_);
  engine_ = std::move(engine);
}

void OptimizerService::StopAccepting() {
  absl::MutexLock lock(&mutex_);
  accepting_ = false;
}

absl::StatusOr<std::shared_ptr<const Engine>> OptimizerService::Ready() const {
  absl::MutexLock lock(&mutex_);
  if (!accepting_) {
    return absl::UnavailableError("the server is shutting down");
  }
  if (engine_ == nullptr) {
    return absl::UnavailableError("the server is still loading its policies");
  }
  return engine_;
}

void OptimizerService::RecordOptimize(
    const gopt::v1::OptimizeRequest& request,
    const gopt::v1::OptimizeResponse& response) {
  if (metrics_ == nullptr) return;
  metrics_->RecordGraphNodes(response.num_nodes());
  metrics_->AddSimulations(response.num_simulations());
  if (response.speedup_over_default() > 0) {
    metrics_->RecordPredictedSpeedup(
        TaskSetName(RequestedTasks(request.tasks())),
        response.speedup_over_default());
  }
  if (response.policy_results_size() > 0) {
    metrics_->RecordPolicyInference(response.policy_inference_seconds());
  }
}

grpc::ServerUnaryReactor* OptimizerService::Optimize(
    grpc::CallbackServerContext* context,
    const gopt::v1::OptimizeRequest* request,
    gopt::v1::OptimizeResponse* response) {
  auto* call = new UnaryCall(metrics_, "Optimize");
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Ready();
  if (!engine.ok()) {
    call->Answer(engine.status());
    return call;
  }
  const absl::Time deadline = DeadlineOf(*context);
  absl::Status admitted = queue_->Submit(
      [this, call, request, response, deadline, engine = *std::move(engine)] {
        RequestContext request_context;
        request_context.deadline = deadline;
        request_context.cancelled = call->cancelled();
        absl::StatusOr<gopt::v1::OptimizeResponse> result =
            engine->Optimize(*request, request_context);
        if (result.ok()) {
          RecordOptimize(*request, *result);
          *response = *std::move(result);
        }
        call->Answer(result.status());
      });
  if (!admitted.ok()) call->Answer(admitted);
  return call;
}

grpc::ServerWriteReactor<OptimizeStreamResponse>*
OptimizerService::OptimizeStream(grpc::CallbackServerContext* context,
                                 const gopt::v1::OptimizeRequest* request) {
  auto* call = new StreamCall(metrics_);
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Ready();
  if (!engine.ok()) {
    call->Answer(engine.status(), std::nullopt);
    return call;
  }
  const absl::Time deadline = DeadlineOf(*context);
  absl::Status admitted = queue_->Submit(
      [this, call, request, deadline, engine = *std::move(engine)] {
        RequestContext request_context;
        request_context.deadline = deadline;
        request_context.cancelled = call->cancelled();
        request_context.on_progress =
            [call](const gopt::v1::OptimizeProgress& progress) {
              call->Progress(progress);
            };
        absl::StatusOr<gopt::v1::OptimizeResponse> result =
            engine->Optimize(*request, request_context);
        if (!result.ok()) {
          call->Answer(result.status(), std::nullopt);
          return;
        }
        RecordOptimize(*request, *result);
        call->Answer(absl::OkStatus(), *std::move(result));
      });
  if (!admitted.ok()) call->Answer(admitted, std::nullopt);
  return call;
}

grpc::ServerUnaryReactor* OptimizerService::Evaluate(
    grpc::CallbackServerContext* context,
    const gopt::v1::EvaluateRequest* request,
    gopt::v1::EvaluateResponse* response) {
  auto* call = new UnaryCall(metrics_, "Evaluate");
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Ready();
  if (!engine.ok()) {
    call->Answer(engine.status());
    return call;
  }
  const absl::Time deadline = DeadlineOf(*context);
  absl::Status admitted = queue_->Submit(
      [this, call, request, response, deadline, engine = *std::move(engine)] {
        RequestContext request_context;
        request_context.deadline = deadline;
        request_context.cancelled = call->cancelled();
        absl::StatusOr<gopt::v1::EvaluateResponse> result =
            engine->Evaluate(*request, request_context);
        if (result.ok()) {
          if (metrics_ != nullptr) {
            metrics_->RecordGraphNodes(result->num_nodes());
            metrics_->AddSimulations(2);
          }
          *response = *std::move(result);
        }
        call->Answer(result.status());
      });
  if (!admitted.ok()) call->Answer(admitted);
  return call;
}

grpc::ServerUnaryReactor* OptimizerService::ListPolicies(
    grpc::CallbackServerContext* /*context*/,
    const gopt::v1::ListPoliciesRequest* /*request*/,
    gopt::v1::ListPoliciesResponse* response) {
  auto* call = new UnaryCall(metrics_, "ListPolicies");
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Ready();
  if (engine.ok()) *response = (*engine)->ListPolicies();
  call->Answer(engine.status());
  return call;
}

}  // namespace gopt::server
