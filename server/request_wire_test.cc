#include "server/request_wire.h"

#include <string>

#include "gmock/gmock.h"
#include "gopt/v1/optimizer.pb.h"
#include "gtest/gtest.h"

namespace gopt::server {
namespace {

using ::testing::HasSubstr;

grpc::ByteBuffer BufferOf(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

gopt::v1::OptimizeRequest RequestWithNodes(int top, int in_subgraph) {
  gopt::v1::OptimizeRequest request;
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  for (int i = 0; i < top; ++i) graph->add_nodes();
  gopt::v1::Graph* sub = graph->add_subgraphs();
  for (int i = 0; i < in_subgraph; ++i) sub->add_nodes();
  request.mutable_topology()->set_preset("v100x4-nvlink");
  request.mutable_options()->add_baseline_methods("heft");
  return request;
}

TEST(RequestWireTest, CountsInlineNodesWithSubgraphs) {
  EXPECT_EQ(
      *CountInlineGraphNodes(
          RequestWithNodes(/*top=*/5, /*in_subgraph=*/3).SerializeAsString()),
      8);
  gopt::v1::OptimizeRequest serialized;
  serialized.mutable_graph()->set_serialized("HloModule m");
  EXPECT_EQ(*CountInlineGraphNodes(serialized.SerializeAsString()), 0);
  EXPECT_EQ(*CountInlineGraphNodes(""), 0);
}

TEST(RequestWireTest, RefusesOversizedGraphBeforeParsing) {
  // A million empty nodes: 2 MB on the wire, ~100 MB once parsed.
  const std::string bytes =
      RequestWithNodes(/*top=*/1'000'000, /*in_subgraph=*/0)
          .SerializeAsString();
  EXPECT_EQ(*CountInlineGraphNodes(bytes), 1'000'000);
  gopt::v1::OptimizeRequest parsed;
  const absl::Status status =
      ParseRequest(BufferOf(bytes), /*max_graph_nodes=*/1000,
                   "gopt.v1.OptimizeRequest", &parsed);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("1000000 nodes"));
  EXPECT_EQ(parsed.graph().graph().nodes_size(), 0);
}

TEST(RequestWireTest, ParsesAValidRequest) {
  const gopt::v1::OptimizeRequest request = RequestWithNodes(3, 0);
  gopt::v1::OptimizeRequest parsed;
  ASSERT_TRUE(ParseRequest(BufferOf(request.SerializeAsString()),
                           /*max_graph_nodes=*/10, "gopt.v1.OptimizeRequest",
                           &parsed)
                  .ok());
  EXPECT_EQ(parsed.SerializeAsString(), request.SerializeAsString());
}

TEST(RequestWireTest, ReadsARequestSplitAcrossSlices) {
  // gRPC holds a large message as several slices; cut this one inside
  // varints and payloads, at every offset.
  const std::string bytes =
      RequestWithNodes(/*top=*/40, /*in_subgraph=*/7).SerializeAsString();
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    const size_t second = cut + (bytes.size() - cut) / 2;
    grpc::Slice slices[3] = {grpc::Slice(bytes.substr(0, cut)),
                             grpc::Slice(bytes.substr(cut, second - cut)),
                             grpc::Slice(bytes.substr(second))};
    gopt::v1::OptimizeRequest parsed;
    ASSERT_TRUE(ParseRequest(grpc::ByteBuffer(slices, 3),
                             /*max_graph_nodes=*/47, "gopt.v1.OptimizeRequest",
                             &parsed)
                    .ok())
        << "cut at " << cut;
    EXPECT_EQ(parsed.SerializeAsString(), bytes);
    EXPECT_EQ(
        ParseRequest(grpc::ByteBuffer(slices, 3),
                     /*max_graph_nodes=*/46, "gopt.v1.OptimizeRequest", &parsed)
            .code(),
        absl::StatusCode::kResourceExhausted)
        << "cut at " << cut;
  }
}

TEST(RequestWireTest, MalformedAndTooDeepRequestsAreInvalidArgument) {
  gopt::v1::OptimizeRequest parsed;
  for (const std::string& bytes :
       {std::string("\x0a\x05\x01", 3), std::string("\xff\xff\xff", 3),
        std::string("\x0b", 1)}) {
    const absl::Status status =
        ParseRequest(BufferOf(bytes), 10, "gopt.v1.OptimizeRequest", &parsed);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("gopt.v1.OptimizeRequest"));
  }
  // Subgraphs nested 200 deep.
  gopt::v1::OptimizeRequest deep;
  gopt::v1::Graph* graph = deep.mutable_graph()->mutable_graph();
  for (int i = 0; i < 200; ++i) graph = graph->add_subgraphs();
  std::string bytes;
  ASSERT_TRUE(deep.SerializeToString(&bytes));
  const absl::Status status =
      ParseRequest(BufferOf(bytes), 10, "gopt.v1.OptimizeRequest", &parsed);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nested deeper than 64"));
}

}  // namespace
}  // namespace gopt::server
