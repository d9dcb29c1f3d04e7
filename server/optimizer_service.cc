#include "server/optimizer_service.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "server/grpc_status.h"
#include "server/request_wire.h"
#include "util/status_macros.h"

namespace gopt::server {
namespace {

using gopt::v1::OptimizeStreamResponse;

// The client's deadline, or `default_deadline` from now when it set none.
absl::Time DeadlineOf(const grpc::CallbackServerContext& context,
                      absl::Duration default_deadline) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  // gRPC reports "no deadline" as the largest time point.
  if (deadline >= std::chrono::system_clock::time_point::max() -
                      std::chrono::hours(24 * 365)) {
    return absl::Now() + default_deadline;
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
  // scrapes after its answer sees it counted), under the code the client
  // gets: an answer finished after the client cancelled or its deadline
  // passed never reaches it, and counts as CANCELLED / DEADLINE_EXCEEDED.
  void Finished(const grpc::Status& status, bool cancelled,
                absl::Time deadline) {
    if (metrics_ == nullptr) return;
    grpc::StatusCode code = status.error_code();
    if (code == grpc::StatusCode::OK && cancelled) {
      code = grpc::StatusCode::CANCELLED;
    } else if (code == grpc::StatusCode::OK && absl::Now() > deadline) {
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
    }
    metrics_->RecordRequest(method_, GrpcCodeName(code),
                            absl::ToDoubleSeconds(absl::Now() - start_));
    metrics_->RequestFinished();
  }

 private:
  Metrics* const metrics_;
  const char* const method_;
  const absl::Time start_;
};

// A request at least this large leaves the heap trimmed when its call is
// done (HeapTrimmer says why).
constexpr size_t kTrimAfterRequestBytes = size_t{16} << 20;

// A call starts (for HeapTrimmer's idle trims).
void CallStarted(HeapTrimmer* trimmer) {
  if (trimmer != nullptr) trimmer->CallStarted();
}

// A call is done: trims the heap after a large one.
void CallDone(HeapTrimmer* trimmer, size_t request_bytes) {
  if (trimmer == nullptr) return;
  trimmer->CallDone();
  if (request_bytes >= kTrimAfterRequestBytes) trimmer->TrimSoon();
}

// What a request's client no longer waits for gets instead of an answer.
absl::Status AbandonedStatus(bool cancelled) {
  return cancelled ? absl::CancelledError(
                         "the client cancelled the request before it ran")
                   : absl::DeadlineExceededError(
                         "the deadline passed while the request was queued");
}

// A response's bytes for the wire.
absl::StatusOr<grpc::ByteBuffer> ResponseBytes(
    const google::protobuf::MessageLite& message) {
  return SerializeResponse(message);
}
absl::StatusOr<grpc::ByteBuffer> ResponseBytes(
    const engine::SerializedResponse& response) {
  return SharedBytesBuffer(response.body, response.tail);
}

// A unary call; deletes itself when gRPC is done with it.
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(Metrics* metrics, const char* method, absl::Time deadline,
            HeapTrimmer* trimmer, size_t request_bytes)
      : metrics_(metrics, method),
        deadline_(deadline),
        trimmer_(trimmer),
        request_bytes_(request_bytes) {
    CallStarted(trimmer_);
  }

  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override {
    CallDone(trimmer_, request_bytes_);
    delete this;
  }

  // Sends `status` (the response message is already filled). Call once.
  void Answer(const absl::Status& status) {
    const grpc::Status wire = ToGrpcStatus(status);
    metrics_.Finished(wire, cancelled_.load(), deadline_);
    Finish(wire);
  }

  // Whether the client stopped waiting (thread-safe).
  bool Abandoned() const {
    return cancelled_.load() || absl::Now() >= deadline_;
  }
  void AnswerAbandoned() { Answer(AbandonedStatus(cancelled_.load())); }

  const std::atomic<bool>* cancelled() const { return &cancelled_; }
  absl::Time deadline() const { return deadline_; }

 private:
  CallMetrics metrics_;
  const absl::Time deadline_;
  HeapTrimmer* const trimmer_;
  const size_t request_bytes_;
  std::atomic<bool> cancelled_{false};
};

// OptimizeStream: progress events, then the result. Writes go out one at a
// time (gRPC allows one outstanding write); a newer progress event replaces
// one still waiting. Deletes itself when gRPC is done with it.
class StreamCall final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  StreamCall(Metrics* metrics, absl::Time deadline, HeapTrimmer* trimmer,
             size_t request_bytes)
      : metrics_(metrics, "OptimizeStream"),
        deadline_(deadline),
        trimmer_(trimmer),
        request_bytes_(request_bytes) {
    CallStarted(trimmer_);
  }

  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override {
    CallDone(trimmer_, request_bytes_);
    delete this;
  }
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
    OptimizeStreamResponse message;
    *message.mutable_progress() = progress;
    absl::StatusOr<grpc::ByteBuffer> bytes = SerializeResponse(message);
    if (!bytes.ok()) return;
    Next next = Next::kNothing;
    {
      absl::MutexLock lock(&mutex_);
      if (done_) return;
      if (!pending_.empty() && pending_.back().progress) pending_.pop_back();
      pending_.push_back(Pending{/*progress=*/true, *std::move(bytes)});
      next = Pump();
    }
    Run(next);
  }

  // The last message (when `status` is OK) and the end of the stream.
  void Answer(absl::Status status,
              std::optional<gopt::v1::OptimizeResponse> result) {
    std::optional<grpc::ByteBuffer> last;
    if (status.ok() && result.has_value()) {
      OptimizeStreamResponse message;
      *message.mutable_result() = *std::move(result);
      absl::StatusOr<grpc::ByteBuffer> bytes = SerializeResponse(message);
      if (bytes.ok()) {
        last = *std::move(bytes);
      } else {
        status = bytes.status();
      }
    }
    Next next = Next::kNothing;
    {
      absl::MutexLock lock(&mutex_);
      if (last.has_value()) {
        pending_.push_back(Pending{/*progress=*/false, *std::move(last)});
      }
      status_ = ToGrpcStatus(status);
      done_ = true;
      next = Pump();
    }
    Run(next);
  }

  bool Abandoned() const {
    return cancelled_.load() || absl::Now() >= deadline_;
  }
  void AnswerAbandoned() {
    Answer(AbandonedStatus(cancelled_.load()), std::nullopt);
  }

  const std::atomic<bool>* cancelled() const { return &cancelled_; }
  absl::Time deadline() const { return deadline_; }

 private:
  enum class Next { kNothing, kWrite, kFinish };
  struct Pending {
    bool progress;  // a progress event (replaceable), not the result
    grpc::ByteBuffer bytes;
  };

  // Decides the next step: write `current_`, finish once everything is
  // written, or nothing while a write is in flight.
  Next Pump() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (writing_ || finished_) return Next::kNothing;
    if (!pending_.empty()) {
      writing_ = true;
      current_ = std::move(pending_.front().bytes);
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
      metrics_.Finished(status, cancelled_.load(), deadline_);
      Finish(status);
    }
  }

  CallMetrics metrics_;
  const absl::Time deadline_;
  HeapTrimmer* const trimmer_;
  const size_t request_bytes_;
  std::atomic<bool> cancelled_{false};
  absl::Mutex mutex_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mutex_);
  grpc::ByteBuffer current_;  // being written; see Run
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  bool done_ ABSL_GUARDED_BY(mutex_) = false;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace

OptimizerService::OptimizerService(const ServiceOptions& options,
                                   WorkQueue* queue, Metrics* metrics)
    : options_(options), queue_(queue), metrics_(metrics) {}

void OptimizerService::SetEngine(std::shared_ptr<const engine::Engine> engine) {
  absl::MutexLock lock(&mutex_);
  engine_ = std::move(engine);
}

void OptimizerService::StopAccepting() {
  absl::MutexLock lock(&mutex_);
  accepting_ = false;
}

absl::StatusOr<std::shared_ptr<const engine::Engine>> OptimizerService::Ready()
    const {
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
        engine::TaskSetName(engine::RequestedTasks(request.tasks())),
        response.speedup_over_default());
  }
  if (response.policy_results_size() > 0) {
    metrics_->RecordPolicyInference(response.policy_inference_seconds());
  }
  if (!response.store_result().empty() && response.store_result() != "skip") {
    double lookup_seconds = 0;
    for (const gopt::v1::StageTiming& timing : response.timings()) {
      if (timing.stage() == "store") lookup_seconds = timing.seconds();
    }
    metrics_->RecordPlanStore(response.store_result(), lookup_seconds,
                              response.stored());
  }
}

void OptimizerService::RecordOptimizeSerialized(
    const gopt::v1::OptimizeRequest& request,
    const engine::SerializedResponse& response) {
  RecordOptimize(request, response.summary);
}

void OptimizerService::RecordEvaluate(
    const gopt::v1::EvaluateRequest& /*request*/,
    const gopt::v1::EvaluateResponse& response) {
  if (metrics_ == nullptr) return;
  metrics_->RecordGraphNodes(response.num_nodes());
  metrics_->AddSimulations(2);
}

template <typename Call, typename Request>
absl::StatusOr<std::shared_ptr<const engine::Engine>> OptimizerService::Admit(
    grpc::CallbackServerContext* context, Call* call,
    const grpc::ByteBuffer& bytes, absl::string_view type_name,
    Request* request) {
  ASSIGN_OR_RETURN(std::shared_ptr<const engine::Engine> engine, Ready());
  absl::Status parsed = ParseRequest(bytes, engine->options().max_graph_nodes,
                                     type_name, request);
  // The request now lives in `request`: hand gRPC's copy back at once, so
  // that its memory quota (ServerOptions::grpc_memory_bytes) is free for
  // the next message rather than when the call ends. gRPC reads the buffer
  // no more once the handler has it; it only destroys it.
  const_cast<grpc::ByteBuffer&>(bytes).Clear();
  if (!parsed.ok()) {
    if (context->IsCancelled() || call->cancelled()->load()) {
      return AbandonedStatus(/*cancelled=*/true);
    }
    return parsed;
  }
  if (call->Abandoned()) return AbandonedStatus(call->cancelled()->load());
  return engine;
}

engine::RequestContext OptimizerService::ContextFor(
    absl::Time deadline, const std::atomic<bool>* cancelled) const {
  engine::RequestContext context;
  context.deadline = deadline;
  context.cancelled = cancelled;
  context.memory = options_.memory;
  return context;
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* OptimizerService::ServeUnary(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
    grpc::ByteBuffer* response, const char* method, absl::string_view type_name,
    absl::StatusOr<Response> (engine::Engine::*run)(
        const Request&, const engine::RequestContext&) const,
    void (OptimizerService::*record)(const Request&, const Response&)) {
  auto* call = new UnaryCall(metrics_, method,
                             DeadlineOf(*context, options_.default_deadline),
                             &trimmer_, bytes->Valid() ? bytes->Length() : 0);
  auto request = std::make_shared<Request>();
  absl::StatusOr<std::shared_ptr<const engine::Engine>> engine =
      Admit(context, call, *bytes, type_name, request.get());
  if (!engine.ok()) {
    call->Answer(engine.status());
    return call;
  }
  absl::Status admitted = queue_->Submit(
      [this, call, request, response, run, record,
       engine = *std::move(engine)] {
        absl::StatusOr<Response> result = ((*engine).*run)(
            *request, ContextFor(call->deadline(), call->cancelled()));
        absl::Status status = result.status();
        if (result.ok()) {
          (this->*record)(*request, *result);
          absl::StatusOr<grpc::ByteBuffer> serialized = ResponseBytes(*result);
          status = serialized.status();
          if (serialized.ok()) *response = *std::move(serialized);
        }
        call->Answer(status);
      },
      [call] { return call->Abandoned(); },
      [call] { call->AnswerAbandoned(); });
  if (!admitted.ok()) call->Answer(admitted);
  return call;
}

grpc::ServerUnaryReactor* OptimizerService::Optimize(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
    grpc::ByteBuffer* response) {
  return ServeUnary(context, bytes, response, "Optimize",
                    "gopt.v1.OptimizeRequest",
                    &engine::Engine::OptimizeSerialized,
                    &OptimizerService::RecordOptimizeSerialized);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* OptimizerService::OptimizeStream(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes) {
  auto* call =
      new StreamCall(metrics_, DeadlineOf(*context, options_.default_deadline),
                     &trimmer_, bytes->Valid() ? bytes->Length() : 0);
  auto request = std::make_shared<gopt::v1::OptimizeRequest>();
  absl::StatusOr<std::shared_ptr<const engine::Engine>> engine =
      Admit(context, call, *bytes, "gopt.v1.OptimizeRequest", request.get());
  if (!engine.ok()) {
    call->Answer(engine.status(), std::nullopt);
    return call;
  }
  absl::Status admitted = queue_->Submit(
      [this, call, request, engine = *std::move(engine)] {
        engine::RequestContext request_context =
            ContextFor(call->deadline(), call->cancelled());
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
      },
      [call] { return call->Abandoned(); },
      [call] { call->AnswerAbandoned(); });
  if (!admitted.ok()) call->Answer(admitted, std::nullopt);
  return call;
}

grpc::ServerUnaryReactor* OptimizerService::Evaluate(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
    grpc::ByteBuffer* response) {
  return ServeUnary(context, bytes, response, "Evaluate",
                    "gopt.v1.EvaluateRequest", &engine::Engine::Evaluate,
                    &OptimizerService::RecordEvaluate);
}

grpc::ServerUnaryReactor* OptimizerService::ListPolicies(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
    grpc::ByteBuffer* response) {
  auto* call = new UnaryCall(metrics_, "ListPolicies", absl::InfiniteFuture(),
                             &trimmer_, /*request_bytes=*/0);
  gopt::v1::ListPoliciesRequest request;
  absl::StatusOr<std::shared_ptr<const engine::Engine>> engine =
      Admit(context, call, *bytes, "gopt.v1.ListPoliciesRequest", &request);
  absl::Status status = engine.status();
  if (engine.ok()) {
    absl::StatusOr<grpc::ByteBuffer> serialized =
        SerializeResponse((*engine)->ListPolicies());
    status = serialized.status();
    if (serialized.ok()) *response = *std::move(serialized);
  }
  call->Answer(status);
  return call;
}

}  // namespace gopt::server
