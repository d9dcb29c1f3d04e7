#ifndef GOPT_SERVER_GRPC_STATUS_H_
#define GOPT_SERVER_GRPC_STATUS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace gopt::server {

// Longest error message sent to a client, in bytes.
inline constexpr size_t kMaxErrorMessageBytes = 2048;

// The one conversion from the core's absl::Status to the wire: same
// canonical code (absl and gRPC share the numbering), same message, cut to
// kMaxErrorMessageBytes (saying so) when longer. OK stays OK.
//
//   call->Finish(ToGrpcStatus(engine.Optimize(request, context).status()));
grpc::Status ToGrpcStatus(const absl::Status& status);

// The canonical name of a gRPC code ("OK", "INVALID_ARGUMENT", ...), as
// used in metric labels and `gopt load` reports.
std::string GrpcCodeName(grpc::StatusCode code);

}  // namespace gopt::server

#endif  // GOPT_SERVER_GRPC_STATUS_H_
