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

TEST(ToGrpcStatusTest, CutsLongMessagesKeepingTheCode) {
  // 100 KB of two-byte UTF-8 characters: the cut must not split one.
  std::string long_message;
  for (int i = 0; i < 50'000; ++i) long_message += "\xc3\xa9";
  const grpc::Status status =
      ToGrpcStatus(absl::InvalidArgumentError(long_message));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LE(status.error_message().size(), kMaxErrorMessageBytes);
  EXPECT_NE(status.error_message().find("(100000 bytes, cut to 2048)"),
            std::string::npos);
  EXPECT_EQ(status.error_message().rfind("\xc3\xa9 ... ("),
            status.error_message().find(" ... (") - 2);
}

}  // namespace
}  // namespace gopt::server
