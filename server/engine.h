#ifndef GOPT_SERVER_ENGINE_H_
#define GOPT_SERVER_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gopt/v1/optimizer.pb.h"
#include "graph/importer.h"
#include "server/policy_registry.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/op_cost_model.h"

namespace gopt::server {

struct EngineOptions {
  // Largest graph accepted, in top-level nodes; larger graphs are
  // ResourceExhausted. Default: 5,000,000 (what the importers accept).
  int64_t max_graph_nodes = 5'000'000;
  // Part of the time left until the client's deadline that the engine keeps
  // for sending the answer: the work stops at
  // deadline - clamp(fraction * time_left, min, max). Defaults: 20%, at
  // least 20 ms, at most 2 s.
  double deadline_reserve_fraction = 0.2;
  absl::Duration min_deadline_reserve = absl::Milliseconds(20);
  absl::Duration max_deadline_reserve = absl::Seconds(2);
  // Plans a policy samples for zero-shot best-of-K. Default 8.
  int32_t policy_samples = 8;
};

// What the transport knows about one request.
struct RequestContext {
  // The client's deadline; InfiniteFuture when it set none.
  absl::Time deadline = absl::InfiniteFuture();
  // Set (by another thread) when the client cancelled; the engine then
  // stops at the next stage boundary and returns Cancelled. May be null.
  const std::atomic<bool>* cancelled = nullptr;
  // Called with best-so-far after each stage (and on each policy progress
  // event), on the calling thread. May be empty.
  std::function<void(const gopt::v1::OptimizeProgress&)> on_progress;
};

// The Optimize / Evaluate core, shared by gopt-server and the `gopt` CLI's
// in-process mode. Optimize imports the graph, builds the topology, tries
// the baseline heuristics (grouped per placement, via BestBaseline), runs
// every loaded policy that decides one of the requested tasks (or the one
// the request names), and answers with the fastest plan that fits in
// memory; that plan is never predicted slower than the default plan. With
// no policy loaded it answers with the best baseline, says so in `method`
// ("best-baseline:PLAN") and adds a warning.
//
// Errors (absl codes, converted once to gRPC by the server):
//   InvalidArgument  bad graph (naming node and field), bad topology, plan,
//                    task, budget, method or format;
//   ResourceExhausted graph over max_graph_nodes (or importer limits);
//   NotFound          unknown policy;
//   FailedPrecondition no plan fits in the topology's memory;
//   DeadlineExceeded  the deadline passed and the request did not allow a
//                     partial result (or nothing was found yet);
//   Cancelled         the client cancelled.
//
// The Engine is immutable after construction and safe to use from many
// threads at once; the policies it borrows must be too.
class Engine {
 public:
  // `policies` may be null (no policy: baselines only).
  Engine(const EngineOptions& options,
         std::shared_ptr<const PolicyRegistry> policies);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  absl::StatusOr<gopt::v1::OptimizeResponse> Optimize(
      const gopt::v1::OptimizeRequest& request,
      const RequestContext& context) const;

  // Simulates the request's plan; with include_trace, the response carries
  // a Chrome trace. InvalidArgument for a plan that does not fit the graph
  // or topology (naming node and field); import errors as Optimize.
  absl::StatusOr<gopt::v1::EvaluateResponse> Evaluate(
      const gopt::v1::EvaluateRequest& request,
      const RequestContext& context) const;

  gopt::v1::ListPoliciesResponse ListPolicies() const;

  const EngineOptions& options() const { return options_; }

 private:
  const EngineOptions options_;
  const std::shared_ptr<const PolicyRegistry> policies_;
  graph::ImporterRegistry importers_;
  simulator::baselines::BaselineRegistry baselines_;
  simulator::RooflineCostModel cost_model_;
};

// The tasks a request asks for; none set means placement, scheduling and
// fusion (what GO decides jointly).
policy::TaskSet RequestedTasks(const gopt::v1::Tasks& tasks);

}  // namespace gopt::server

#endif  // GOPT_SERVER_ENGINE_H_
