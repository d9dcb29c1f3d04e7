#include "client/load_generator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace gopt::client {
namespace {

std::string CodeName(absl::StatusCode code) {
  return absl::StatusCodeToString(code);
}

}  // namespace

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t index =
      std::min(sorted.size() - 1, static_cast<size_t>(std::max(rank, 1.0)) - 1);
  return sorted[index];
}

absl::StatusOr<LoadReport> RunLoad(const OptimizerClient& client,
                                   const gopt::v1::OptimizeRequest& request,
                                   const LoadOptions& options) {
  if (options.concurrency < 1 || options.duration <= absl::ZeroDuration() ||
      options.max_requests < 0) {
    return absl::InvalidArgumentError(
        "load needs concurrency >= 1, duration > 0 and requests >= 0");
  }
  // Serialized once; each call shares these bytes (a ByteBuffer copy only
  // takes references to its slices).
  grpc::Slice slice(request.SerializeAsString());
  const grpc::ByteBuffer request_bytes(&slice, 1);
  absl::Mutex mutex;
  std::vector<double> latencies;
  std::map<std::string, int64_t> errors;
  int64_t ok = 0;
  std::atomic<int64_t> started{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + options.duration;
  std::vector<std::thread> threads;
  for (int t = 0; t < options.concurrency; ++t) {
    threads.emplace_back([&] {
      while (absl::Now() < end) {
        if (options.max_requests > 0 &&
            started.fetch_add(1) >= options.max_requests) {
          return;
        }
        const absl::Time sent = absl::Now();
        const absl::StatusOr<grpc::ByteBuffer> response =
            client.OptimizeSerialized(request_bytes);
        const double seconds = absl::ToDoubleSeconds(absl::Now() - sent);
        absl::MutexLock lock(&mutex);
        latencies.push_back(seconds);
        if (response.ok()) {
          ++ok;
        } else {
          ++errors[CodeName(response.status().code())];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  LoadReport report;
  report.concurrency = options.concurrency;
  report.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::sort(latencies.begin(), latencies.end());
  report.requests = static_cast<int64_t>(latencies.size());
  report.ok = ok;
  report.requests_per_second =
      report.seconds > 0 ? static_cast<double>(report.requests) / report.seconds
                         : 0;
  report.p50_s = Quantile(latencies, 0.50);
  report.p90_s = Quantile(latencies, 0.90);
  report.p99_s = Quantile(latencies, 0.99);
  report.max_s = latencies.empty() ? 0 : latencies.back();
  report.errors_by_code = std::move(errors);
  return report;
}

nlohmann::json LoadReportToJson(const LoadReport& report) {
  return {{"concurrency", report.concurrency},
          {"requests", report.requests},
          {"ok", report.ok},
          {"seconds", report.seconds},
          {"requests_per_second", report.requests_per_second},
          {"p50_s", report.p50_s},
          {"p90_s", report.p90_s},
          {"p99_s", report.p99_s},
          {"max_s", report.max_s},
          {"errors_by_code", report.errors_by_code}};
}

std::string LoadReportToText(const LoadReport& report) {
  std::string text = absl::StrFormat(
      "concurrency %d: %d requests in %.1f s (%d ok) = %.2f requests/s\n"
      "latency: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms\n",
      report.concurrency, report.requests, report.seconds, report.ok,
      report.requests_per_second, report.p50_s * 1e3, report.p90_s * 1e3,
      report.p99_s * 1e3, report.max_s * 1e3);
  if (report.errors_by_code.empty()) {
    absl::StrAppend(&text, "errors: none\n");
  } else {
    absl::StrAppend(&text, "errors:");
    for (const auto& [code, count] : report.errors_by_code) {
      absl::StrAppend(&text, " ", code, "=", count);
    }
    absl::StrAppend(&text, "\n");
  }
  return text;
}

}  // namespace gopt::client
