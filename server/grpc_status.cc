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
  const absl::StatusCode absl_code = static_cast<absl::StatusCode>(code);
  const std::string name = absl::StatusCodeToString(absl_code);
  if (name.empty()) return absl::StrCat("CODE_", static_cast<int>(code));
  // absl spells them like gRPC: "INVALID_ARGUMENT".
  return name;
}

}  // namespace gopt::server
