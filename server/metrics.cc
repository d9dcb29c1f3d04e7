#include "server/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "prometheus/text_serializer.h"

namespace gopt::server {
namespace {

prometheus::MetricFamily OneValue(const std::string& name,
                                  const std::string& help,
                                  prometheus::MetricType type, double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(metric);
  return family;
}

// The standard process_* metrics, read from /proc at each scrape.
class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families;
    std::ifstream stat_file("/proc/self/stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)),
                     std::istreambuf_iterator<char>());
    // Fields after the parenthesised command name (which may hold spaces).
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return families;
    const std::vector<std::string> fields =
        absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
    // fields[0] is field 3 (state) of proc(5).
    const auto field = [&](int number) -> double {
      double value = 0;
      const size_t index = static_cast<size_t>(number - 3);
      if (index < fields.size()) (void)absl::SimpleAtod(fields[index], &value);
      return value;
    };
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    families.push_back(OneValue(
        "process_cpu_seconds_total", "User and system CPU time, in seconds.",
        prometheus::MetricType::Counter, (field(14) + field(15)) / ticks));
    families.push_back(OneValue(
        "process_resident_memory_bytes", "Resident memory size, in bytes.",
        prometheus::MetricType::Gauge, field(24) * page));
    families.push_back(OneValue("process_virtual_memory_bytes",
                                "Virtual memory size, in bytes.",
                                prometheus::MetricType::Gauge, field(23)));
    families.push_back(OneValue("process_threads", "Number of OS threads.",
                                prometheus::MetricType::Gauge, field(20)));
    std::error_code error;
    int64_t fds = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
         !error && it != std::filesystem::directory_iterator();
         it.increment(error)) {
      ++fds;
    }
    families.push_back(
        OneValue("process_open_fds", "Number of open file descriptors.",
                 prometheus::MetricType::Gauge, static_cast<double>(fds)));
    families.push_back(OneValue("process_start_time_seconds",
                                "Start time since the Unix epoch, in seconds.",
                                prometheus::MetricType::Gauge,
                                BootTimeSeconds() + field(22) / ticks));
    return families;
  }

 private:
  static double BootTimeSeconds() {
    std::ifstream file("/proc/stat");
    std::string line;
    while (std::getline(file, line)) {
      double value = 0;
      if (absl::StartsWith(line, "btime ") &&
          absl::SimpleAtod(line.substr(6), &value)) {
        return value;
      }
    }
    return 0;
  }
};

prometheus::Histogram::BucketBoundaries DurationBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

}  // namespace

std::vector<std::string> MetricNames() {
  std::vector<std::string> names = {
      "gopt_build_info",
      "gopt_graph_nodes",
      "gopt_inflight_requests",
      "gopt_plan_store_bytes",
      "gopt_plan_store_entries",
      "gopt_plan_store_improvements_total",
      "gopt_plan_store_lookup_seconds",
      "gopt_plan_store_requests_total",
      "gopt_policy_inference_seconds",
      "gopt_predicted_speedup_ratio",
      "gopt_queued_requests",
      "gopt_request_duration_seconds",
      "gopt_requests_total",
      "gopt_simulations_total",
      "gopt_worker_execution_seconds",
      "gopt_worker_executions_total",
      "gopt_worker_queue_depth",
      "process_cpu_seconds_total",
      "process_open_fds",
      "process_resident_memory_bytes",
      "process_start_time_seconds",
      "process_threads",
      "process_virtual_memory_bytes",
  };
  std::sort(names.begin(), names.end());
  return names;
}

Metrics::Metrics(const std::string& version, const std::string& revision)
    : registry_(std::make_shared<prometheus::Registry>()),
      process_(std::make_shared<ProcessCollector>()),
      requests_(prometheus::BuildCounter()
                    .Name("gopt_requests_total")
                    .Help("RPCs answered, by method and gRPC status code.")
                    .Register(*registry_)),
      request_duration_(prometheus::BuildHistogram()
                            .Name("gopt_request_duration_seconds")
                            .Help("RPC latency from arrival to answer, in "
                                  "seconds, by method.")
                            .Register(*registry_)),
      graph_nodes_(prometheus::BuildHistogram()
                       .Name("gopt_graph_nodes")
                       .Help("Nodes of the graphs optimized or evaluated.")
                       .Register(*registry_)
                       .Add({},
                            prometheus::Histogram::BucketBoundaries{
                                10, 100, 1'000, 10'000, 100'000, 1'000'000})),
      speedup_(prometheus::BuildHistogram()
                   .Name("gopt_predicted_speedup_ratio")
                   .Help("Predicted default step time / chosen plan's step "
                         "time, by requested task set.")
                   .Register(*registry_)),
      policy_inference_(
          prometheus::BuildHistogram()
              .Name("gopt_policy_inference_seconds")
              .Help("Zero-shot policy inference time per request, in "
                    "seconds.")
              .Register(*registry_)
              .Add({},
                   prometheus::Histogram::BucketBoundaries{
                       0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60})),
      simulations_(prometheus::BuildCounter()
                       .Name("gopt_simulations_total")
                       .Help("Plans simulated.")
                       .Register(*registry_)
                       .Add({})),
      worker_executions_(prometheus::BuildCounter()
                             .Name("gopt_worker_executions_total")
                             .Help("Plans executed on real devices by the "
                                   "worker pool, by outcome.")
                             .Register(*registry_)),
      worker_execution_seconds_(
          prometheus::BuildHistogram()
              .Name("gopt_worker_execution_seconds")
              .Help("Wall time of one plan on a worker (set-up, warm-up and "
                    "measured runs), in seconds.")
              .Register(*registry_)
              .Add({},
                   prometheus::Histogram::BucketBoundaries{
                       0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300})),
      worker_queue_depth_(prometheus::BuildGauge()
                              .Name("gopt_worker_queue_depth")
                              .Help("Plans waiting for a free worker.")
                              .Register(*registry_)
                              .Add({})),
      inflight_(prometheus::BuildGauge()
                    .Name("gopt_inflight_requests")
                    .Help("RPCs received and not yet answered.")
                    .Register(*registry_)
                    .Add({})),
      queued_(prometheus::BuildGauge()
                  .Name("gopt_queued_requests")
                  .Help("Admitted requests waiting for a worker thread.")
                  .Register(*registry_)
                  .Add({})),
      plan_store_requests_(
          prometheus::BuildCounter()
              .Name("gopt_plan_store_requests_total")
              .Help("Optimize requests that used the plan store, by "
                    "result (hit, miss, warm_start, error).")
              .Register(*registry_)),
      plan_store_lookup_(prometheus::BuildHistogram()
                             .Name("gopt_plan_store_lookup_seconds")
                             .Help("Plan store lookup latency, in seconds.")
                             .Register(*registry_)
                             .Add({},
                                  prometheus::Histogram::BucketBoundaries{
                                      0.0001, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01, 0.025, 0.05, 0.1, 0.5})),
      plan_store_improvements_(
          prometheus::BuildCounter()
              .Name("gopt_plan_store_improvements_total")
              .Help("Answers that stored a new plan or a faster one.")
              .Register(*registry_)
              .Add({})),
      plan_store_entries_(prometheus::BuildGauge()
                              .Name("gopt_plan_store_entries")
                              .Help("Entries in the plan store.")
                              .Register(*registry_)
                              .Add({})),
      plan_store_bytes_(prometheus::BuildGauge()
                            .Name("gopt_plan_store_bytes")
                            .Help("Bytes of the plan store's values.")
                            .Register(*registry_)
                            .Add({})) {
  prometheus::BuildGauge()
      .Name("gopt_build_info")
      .Help("Always 1; labels name the build.")
      .Register(*registry_)
      .Add({{"version", version}, {"revision", revision}})
      .Set(1);
  // Outcomes are known up front, so a dashboard sees zeros, not gaps.
  for (const char* status :
       {"ok", "failed", "timeout", "invalid", "cancelled"}) {
    worker_executions_.Add({{"status", status}});
  }
  for (const char* result : {"hit", "miss", "warm_start", "error"}) {
    plan_store_requests_.Add({{"result", result}});
  }
}

Metrics::~Metrics() = default;

absl::Status Metrics::StartExposer(const std::string& address) {
  if (http_ != nullptr) {
    return absl::FailedPreconditionError("the metrics exposer already runs");
  }
  auto http = std::make_unique<MetricsHttpServer>([this] { return Scrape(); });
  absl::StatusOr<int> port = http->Start(address);
  if (!port.ok()) return port.status();
  port_ = *port;
  http_ = std::move(http);
  return absl::OkStatus();
}

int Metrics::exposer_port() const { return port_; }

std::string Metrics::Scrape() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (prometheus::MetricFamily& family : process_->Collect()) {
    families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

void Metrics::RecordRequest(absl::string_view method, absl::string_view code,
                            double seconds) {
  requests_.Add({{"method", std::string(method)}, {"code", std::string(code)}})
      .Increment();
  request_duration_.Add({{"method", std::string(method)}}, DurationBuckets())
      .Observe(seconds);
}

void Metrics::RecordGraphNodes(int64_t nodes) {
  graph_nodes_.Observe(static_cast<double>(nodes));
}

void Metrics::RecordPredictedSpeedup(absl::string_view tasks, double ratio) {
  speedup_
      .Add({{"task", std::string(tasks)}},
           prometheus::Histogram::BucketBoundaries{1, 1.05, 1.1, 1.25, 1.5, 2,
                                                   3, 5, 10})
      .Observe(ratio);
}

void Metrics::RecordPolicyInference(double seconds) {
  policy_inference_.Observe(seconds);
}

void Metrics::AddSimulations(int64_t count) {
  simulations_.Increment(static_cast<double>(count));
}

void Metrics::RecordWorkerExecution(absl::string_view status) {
  worker_executions_.Add({{"status", std::string(status)}}).Increment();
}

void Metrics::RecordWorkerExecutionSeconds(double seconds) {
  worker_execution_seconds_.Observe(seconds);
}

void Metrics::SetWorkerQueueDepth(int64_t waiting) {
  worker_queue_depth_.Set(static_cast<double>(waiting));
}

void Metrics::RequestStarted() { inflight_.Increment(); }

void Metrics::RequestFinished() { inflight_.Decrement(); }

void Metrics::SetQueuedRequests(int64_t queued) {
  queued_.Set(static_cast<double>(queued));
}

void Metrics::RecordPlanStore(absl::string_view result, double lookup_seconds,
                              bool improved) {
  const std::string label = result == "refresh" ? "miss" : std::string(result);
  plan_store_requests_.Add({{"result", label}}).Increment();
  if (lookup_seconds > 0) plan_store_lookup_.Observe(lookup_seconds);
  if (improved) plan_store_improvements_.Increment();
}

void Metrics::AddPlanStoreImprovement() {
  plan_store_improvements_.Increment();
}

int64_t Metrics::InflightRequests() const {
  return static_cast<int64_t>(inflight_.Value());
}

void Metrics::SetPlanStoreSize(int64_t entries, int64_t bytes) {
  plan_store_entries_.Set(static_cast<double>(entries));
  plan_store_bytes_.Set(static_cast<double>(bytes));
}

}  // namespace gopt::server
