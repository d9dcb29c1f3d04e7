#ifndef GOPT_TESTS_UTIL_HTTP_GET_H_
#define GOPT_TESTS_UTIL_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"

namespace gopt::testing {

// The body of http://127.0.0.1:PORT/PATH (HTTP/1.0 GET, no redirects).
// Unavailable when the connection fails; Internal for a non-200 answer.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// The value of the first sample line of a Prometheus text exposition that
// starts with `series` (a name with its labels as exposed, e.g.
// `gopt_requests_total{code="OK",method="Optimize"}`); -1 when absent.
double PrometheusValue(const std::string& exposition,
                       const std::string& series);

}  // namespace gopt::testing

#endif  // GOPT_TESTS_UTIL_HTTP_GET_H_
