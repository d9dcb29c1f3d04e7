#include "server/grpc_status.h"

#include "absl/strings/str_cat.h"

namespace gopt::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

std::string GrpcCodeName(grpc::StatusCode code) {
  if (code == grpc::StatusCode::OK) return "OK";
  // absl and gRPC share the codes and their spelling ("INVALID_ARGUMENT").
  const std::string name =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  if (name.empty()) return absl::StrCat("CODE_", static_cast<int>(code));
  return name;
}

}  // namespace gopt::server
