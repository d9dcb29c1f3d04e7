#include "worker/testing/node_executions.h"

#include <chrono>

#include "gopt/v1/worker.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace gopt::worker::testing {

int64_t NodeExecutions(const std::string& address) {
  auto stub = gopt::v1::Worker::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  gopt::v1::DescribeResponse response;
  const grpc::Status status =
      stub->Describe(&context, gopt::v1::DescribeRequest(), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.node_executions();
}

}  // namespace gopt::worker::testing
