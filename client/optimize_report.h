#ifndef GOPT_CLIENT_OPTIMIZE_REPORT_H_
#define GOPT_CLIENT_OPTIMIZE_REPORT_H_

#include <string>

#include "gopt/v1/optimizer.pb.h"

namespace gopt::client {

// A human table of an OptimizeResponse: the default plan, every baseline
// and policy that ran, sorted by step time, each with its ratio to the
// default, then the chosen plan, its speedup over the default, warnings
// and stage timings.
std::string OptimizeResponseToText(const gopt::v1::OptimizeResponse& response);

// The EvaluateResponse in a few lines (step time, lower bound, memory).
std::string EvaluateResponseToText(const gopt::v1::EvaluateResponse& response);

// Any message in the protobuf JSON mapping (field names as in the .proto),
// pretty-printed.
std::string MessageToJson(const google::protobuf::Message& message);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_OPTIMIZE_REPORT_H_
