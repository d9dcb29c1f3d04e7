#ifndef GOPT_SERVER_OPTIMIZER_SERVICE_H_
#define GOPT_SERVER_OPTIMIZER_SERVICE_H_

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "engine/memory_budget.h"
#include "gopt/v1/optimizer.grpc.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/heap_trimmer.h"
#include "server/metrics.h"
#include "server/work_queue.h"

namespace gopt::server {

// What the service applies to every call.
struct ServiceOptions {
  // Deadline of a call whose client set none. Default 10 minutes: no
  // request runs unbounded.
  absl::Duration default_deadline = absl::Minutes(10);
  // The server's memory budget, borrowed (must outlive the service); null
  // = unlimited.
  engine::MemoryBudget* memory = nullptr;
};

// The generated service with Optimize, OptimizeStream and Evaluate taking
// their requests as raw bytes (see request_wire.h: an oversized inline
// graph is refused before it is parsed).
using GraphOptimizerRawService =
    gopt::v1::GraphOptimizer::WithRawCallbackMethod_Optimize<
        gopt::v1::GraphOptimizer::WithRawCallbackMethod_OptimizeStream<
            gopt::v1::GraphOptimizer::WithRawCallbackMethod_Evaluate<
                gopt::v1::GraphOptimizer::WithRawCallbackMethod_ListPolicies<
                    gopt::v1::GraphOptimizer::Service>>>>;

// gopt.v1.GraphOptimizer over the callback API. Handlers are thin: they
// check that the server is ready, parse the request (ParseRequest:
// RESOURCE_EXHAUSTED for an inline graph over the engine's
// max_graph_nodes, INVALID_ARGUMENT for bytes that do not parse), hand it
// to the WorkQueue (RESOURCE_EXHAUSTED when it is full), run the Engine on
// a queue thread with the deadline (the client's, else
// options.default_deadline), a cancellation flag and the memory budget,
// convert the status once (ToGrpcStatus) and record metrics under the code
// the client gets. A request whose client gave up while it waited in the
// queue is dropped unworked (DEADLINE_EXCEEDED / CANCELLED). Before
// SetEngine (policies still loading) and after StopAccepting every call is
// UNAVAILABLE. Thread-safe. The queue and metrics are borrowed (metrics
// may be null) and must outlive the service.
class OptimizerService final : public GraphOptimizerRawService {
 public:
  OptimizerService(const ServiceOptions& options, WorkQueue* queue,
                   Metrics* metrics);

  // The engine that serves requests from now on.
  void SetEngine(std::shared_ptr<const engine::Engine> engine);
  // New calls get UNAVAILABLE; calls already admitted run to the end.
  void StopAccepting();

  grpc::ServerUnaryReactor* Optimize(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* OptimizeStream(
      grpc::CallbackServerContext* context,
      const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  // Raw like the others, so that bytes that are not a ListPoliciesRequest
  // get InvalidArgument (gRPC's own deserializer answers UNIMPLEMENTED).
  grpc::ServerUnaryReactor* ListPolicies(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

 private:
  // The engine, or Unavailable while loading / shutting down.
  absl::StatusOr<std::shared_ptr<const engine::Engine>> Ready() const;
  // Ready() and ParseRequest; the call's abandonment status when its client
  // already gave up (a cancelled call's request bytes cannot be read: that
  // is Cancelled, not a parse error).
  template <typename Call, typename Request>
  absl::StatusOr<std::shared_ptr<const engine::Engine>> Admit(
      grpc::CallbackServerContext* context, Call* call,
      const grpc::ByteBuffer& bytes, absl::string_view type_name,
      Request* request);
  engine::RequestContext ContextFor(absl::Time deadline,
                                    const std::atomic<bool>* cancelled) const;
  // Parses, admits and runs a unary call: `run` on a queue thread, then
  // `record` for a successful answer.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* ServeUnary(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
      grpc::ByteBuffer* response, const char* method,
      absl::string_view type_name,
      absl::StatusOr<Response> (engine::Engine::*run)(
          const Request&, const engine::RequestContext&) const,
      void (OptimizerService::*record)(const Request&, const Response&));
  // Metrics for a finished Optimize: graph size, speedup, simulations.
  void RecordOptimize(const gopt::v1::OptimizeRequest& request,
                      const gopt::v1::OptimizeResponse& response);
  void RecordOptimizeSerialized(const gopt::v1::OptimizeRequest& request,
                                const engine::SerializedResponse& response);
  // Metrics for a finished Evaluate: graph size, simulations.
  void RecordEvaluate(const gopt::v1::EvaluateRequest& request,
                      const gopt::v1::EvaluateResponse& response);

  const ServiceOptions options_;
  WorkQueue* const queue_;
  Metrics* const metrics_;
  // Trims the heap after each large request.
  HeapTrimmer trimmer_;
  mutable absl::Mutex mutex_;
  std::shared_ptr<const engine::Engine> engine_ ABSL_GUARDED_BY(mutex_);
  bool accepting_ ABSL_GUARDED_BY(mutex_) = true;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_OPTIMIZER_SERVICE_H_
