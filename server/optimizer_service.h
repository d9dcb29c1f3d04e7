#ifndef GOPT_SERVER_OPTIMIZER_SERVICE_H_
#define GOPT_SERVER_OPTIMIZER_SERVICE_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gopt/v1/optimizer.grpc.pb.h"
#include "server/engine.h"
#include "server/metrics.h"
#include "server/work_queue.h"

namespace gopt::server {

// gopt.v1.GraphOptimizer over the callback API. Handlers are thin: they
// check that the server is ready, hand the request to the WorkQueue
// (RESOURCE_EXHAUSTED when it is full), run the Engine on a queue thread
// with the client's deadline and a cancellation flag, convert the status
// once (ToGrpcStatus) and record metrics. Before SetEngine (policies still
// loading) and after StopAccepting every call is UNAVAILABLE.
// Thread-safe. The queue and metrics are borrowed (metrics may be null)
// and must outlive the service.
class OptimizerService final
    : public gopt::v1::GraphOptimizer::CallbackService {
 public:
  OptimizerService(WorkQueue* queue, Metrics* metrics);

  // The engine that serves requests from now on.
  void SetEngine(std::shared_ptr<const Engine> engine);
  // New calls get UNAVAILABLE; calls already admitted run to the end.
  void StopAccepting();

  grpc::ServerUnaryReactor* Optimize(
      grpc::CallbackServerContext* context,
      const gopt::v1::OptimizeRequest* request,
      gopt::v1::OptimizeResponse* response) override;
  grpc::ServerWriteReactor<gopt::v1::OptimizeStreamResponse>* OptimizeStream(
      grpc::CallbackServerContext* context,
      const gopt::v1::OptimizeRequest* request) override;
  grpc::ServerUnaryReactor* Evaluate(
      grpc::CallbackServerContext* context,
      const gopt::v1::EvaluateRequest* request,
      gopt::v1::EvaluateResponse* response) override;
  grpc::ServerUnaryReactor* ListPolicies(
      grpc::CallbackServerContext* context,
      const gopt::v1::ListPoliciesRequest* request,
      gopt::v1::ListPoliciesResponse* response) override;

 private:
  // The engine, or Unavailable while loading / shutting down.
  absl::StatusOr<std::shared_ptr<const Engine>> Ready() const;
  // Metrics for a finished Optimize: graph size, speedup, simulations.
  void RecordOptimize(const gopt::v1::OptimizeRequest& request,
                      const gopt::v1::OptimizeResponse& response);

  WorkQueue* const queue_;
  Metrics* const metrics_;
  mutable absl::Mutex mutex_;
  std::shared_ptr<const Engine> engine_ ABSL_GUARDED_BY(mutex_);
  bool accepting_ ABSL_GUARDED_BY(mutex_) = true;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_OPTIMIZER_SERVICE_H_
