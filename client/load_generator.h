#ifndef GOPT_CLIENT_LOAD_GENERATOR_H_
#define GOPT_CLIENT_LOAD_GENERATOR_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/optimizer_client.h"
#include "gopt/v1/optimizer.pb.h"
#include "nlohmann/json.hpp"

namespace gopt::client {

// What `gopt load` sends.
struct LoadOptions {
  int concurrency = 1;  // requests in flight at once (one thread each)
  // Stop after this long, or after max_requests in total (0 = no limit),
  // whichever comes first.
  absl::Duration duration = absl::Seconds(10);
  int64_t max_requests = 0;
};

struct LoadReport {
  int concurrency = 0;
  int64_t requests = 0;  // answered (any code)
  int64_t ok = 0;
  double seconds = 0;  // wall time of the run
  double requests_per_second = 0;
  // Latency of every request (any code), in seconds.
  double p50_s = 0;
  double p90_s = 0;
  double p99_s = 0;
  double max_s = 0;
  std::map<std::string, int64_t> errors_by_code;  // "RESOURCE_EXHAUSTED": 3
};

// Sends `request` with `options.concurrency` threads back to back until the
// duration or request count is reached, through `client` (its deadline and
// retries apply to each request). The request is serialized once and the
// answers are not parsed (an OK status counts), so that the generator's own
// CPU, often on the server's host, goes to gRPC alone. InvalidArgument for
// concurrency < 1 or a non-positive duration. Thread-safe with respect to the
// client.
absl::StatusOr<LoadReport> RunLoad(const OptimizerClient& client,
                                   const gopt::v1::OptimizeRequest& request,
                                   const LoadOptions& options);

// The q-quantile (0..1) of `sorted` by the nearest-rank method; 0 when empty.
double Quantile(const std::vector<double>& sorted, double q);

nlohmann::json LoadReportToJson(const LoadReport& report);
std::string LoadReportToText(const LoadReport& report);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_LOAD_GENERATOR_H_
