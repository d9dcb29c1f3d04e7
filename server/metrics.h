#ifndef GOPT_SERVER_METRICS_H_
#define GOPT_SERVER_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/metrics_http_server.h"

namespace gopt::server {

// Every metric family gopt-server exports, sorted: the gopt_* families of
// DESIGN.md and the process_* families read from /proc. Dashboards and
// alert rules must use only these names (a deploy test checks them).
std::vector<std::string> MetricNames();

// gopt-server's Prometheus metrics. Labels never carry graph or client
// identifiers: only the RPC method, its gRPC code, the task set and a
// worker status. Histograms are in seconds (durations), nodes (graph size)
// and plain ratios (speedup). All methods are thread-safe.
//
//   Metrics metrics(/*version=*/"0.1.0", /*revision=*/"abc123");
//   RETURN_IF_ERROR(metrics.StartExposer("0.0.0.0:9464"));
//   metrics.RecordRequest("Optimize", "OK", /*seconds=*/0.42);
class Metrics {
 public:
  Metrics(const std::string& version, const std::string& revision);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;
  ~Metrics();

  // Serves the metrics as Prometheus text at http://ADDRESS/metrics
  // ("0.0.0.0:9464"; port 0 picks a free port, see exposer_port()).
  // Unavailable when the address cannot be bound; FailedPrecondition when
  // called twice.
  absl::Status StartExposer(const std::string& address);
  // The port the exposer listens on; 0 before StartExposer.
  int exposer_port() const;

  // The current text exposition (what a scrape returns).
  std::string Scrape() const;

  // One finished RPC: gopt_requests_total{method,code} and
  // gopt_request_duration_seconds{method}.
  void RecordRequest(absl::string_view method, absl::string_view code,
                     double seconds);
  // gopt_graph_nodes.
  void RecordGraphNodes(int64_t nodes);
  // gopt_predicted_speedup_ratio{task}: `tasks` is the request's task set
  // ("placement+scheduling+fusion").
  void RecordPredictedSpeedup(absl::string_view tasks, double ratio);
  // gopt_policy_inference_seconds.
  void RecordPolicyInference(double seconds);
  // gopt_simulations_total.
  void AddSimulations(int64_t count);
  // gopt_worker_executions_total{status}: plans run on real devices.
  void RecordWorkerExecution(absl::string_view status);
  // gopt_worker_execution_seconds: one plan's wall time on a worker.
  void RecordWorkerExecutionSeconds(double seconds);
  // gopt_worker_queue_depth: plans waiting for a free worker.
  void SetWorkerQueueDepth(int64_t waiting);
  // gopt_inflight_requests: RPCs between arrival and answer.
  void RequestStarted();
  void RequestFinished();
  // gopt_queued_requests: admitted requests waiting for a worker thread.
  void SetQueuedRequests(int64_t queued);

  // One Optimize's use of the plan store (OptimizeResponse.store_result):
  // gopt_plan_store_requests_total{result} (hit, miss, warm_start, error;
  // a REFRESH counts as a miss), gopt_plan_store_lookup_seconds, and
  // gopt_plan_store_improvements_total when the answer improved the store.
  void RecordPlanStore(absl::string_view result, double lookup_seconds,
                       bool improved);
  // gopt_plan_store_improvements_total, for an idle refinement (not a
  // request) that stored a faster plan.
  void AddPlanStoreImprovement();
  // RPCs between arrival and answer now (gopt_inflight_requests).
  int64_t InflightRequests() const;
  // gopt_plan_store_entries and gopt_plan_store_bytes.
  void SetPlanStoreSize(int64_t entries, int64_t bytes);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> process_;
  std::unique_ptr<MetricsHttpServer> http_;  // serves Scrape()
  int port_ = 0;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& request_duration_;
  prometheus::Histogram& graph_nodes_;
  prometheus::Family<prometheus::Histogram>& speedup_;
  prometheus::Histogram& policy_inference_;
  prometheus::Counter& simulations_;
  prometheus::Family<prometheus::Counter>& worker_executions_;
  prometheus::Histogram& worker_execution_seconds_;
  prometheus::Gauge& worker_queue_depth_;
  prometheus::Gauge& inflight_;
  prometheus::Gauge& queued_;
  prometheus::Family<prometheus::Counter>& plan_store_requests_;
  prometheus::Histogram& plan_store_lookup_;
  prometheus::Counter& plan_store_improvements_;
  prometheus::Gauge& plan_store_entries_;
  prometheus::Gauge& plan_store_bytes_;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_METRICS_H_
