#include "server/grpc_status.h"

#include "gtest/gtest.h"

namespace gopt::server {
namespace {

TEST(ToGrpcStatusTest, KeepsCodeAndMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  const grpc::Status status =
      ToGrpcStatus(absl::InvalidArgumentError("node 'x': field 'kind'"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "node 'x': field 'kind'");
  for (absl::StatusCode code :
       {absl::StatusCode::kNotFound, absl::StatusCode::kResourceExhausted,
        absl::StatusCode::kFailedPrecondition, absl::StatusCode::kUnavailable,
        absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kCancelled}) {
    EXPECT_EQ(
        static_cast<int>(ToGrpcStatus(absl::Status(code, "m")).error_code()),
        static_cast<int>(code));
  }
}

TEST(GrpcCodeNameTest, CanonicalNames) {
  EXPECT_EQ(GrpcCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(GrpcCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED),
            "RESOURCE_EXHAUSTED");
  EXPECT_EQ(GrpcCodeName(grpc::StatusCode::DEADLINE_EXCEEDED),
            "DEADLINE_EXCEEDED");
}

}  // namespace
}  // namespace gopt::server
