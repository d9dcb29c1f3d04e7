#include "server/grpc_status.h"

#include "absl/strings/str_cat.h"

namespace gopt::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  absl::string_view message = status.message();
  std::string wire;
  if (message.size() > kMaxErrorMessageBytes) {
    // The message travels in a trailer, whose size gRPC limits (8 KiB by
    // default): a longer one would reach the client as RESOURCE_EXHAUSTED
    // instead of the real code. Cut on a UTF-8 character boundary.
    const std::string suffix =
        absl::StrCat(" ... (", message.size(), " bytes, cut to ",
                     kMaxErrorMessageBytes, ")");
    size_t keep = kMaxErrorMessageBytes - suffix.size();
    while (keep > 0 &&
           (static_cast<unsigned char>(message[keep]) & 0xC0) == 0x80) {
      --keep;
    }
    wire = absl::StrCat(message.substr(0, keep), suffix);
  } else {
    wire = std::string(message);
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::move(wire));
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
