#include "graph/fingerprint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_replace.h"
#include "graph/import/builtin_importers.h"
#include "tests/util/shared_data.h"

namespace gopt::graph {
namespace {

using ::testing::StartsWith;

Node MakeNode(const std::string& name, std::vector<int64_t> dims = {2, 3}) {
  Node node;
  node.name = name;
  node.op = "add";
  node.kind = OpKind::kElementwiseBinary;
  node.outputs.push_back(MakeTensorType(DType::kF32, dims));
  node.flops = 6;
  node.bytes_read = 48;
  node.bytes_written = 24;
  return node;
}

// a -> c <- b, with the given names and c's output shape.
Graph Diamond(const std::string& prefix, std::vector<int64_t> c_dims = {2, 3},
              bool control = false) {
  GraphBuilder builder(prefix + "graph", "generated");
  const int a = builder.AddNode(MakeNode(prefix + "a"));
  const int b = builder.AddNode(MakeNode(prefix + "b"));
  const int c = builder.AddNode(MakeNode(prefix + "c", c_dims));
  builder.AddEdge(a, 0, c, 0);
  if (control) {
    builder.AddControlEdge(b, c);
  } else {
    builder.AddEdge(b, 0, c, 1);
  }
  absl::StatusOr<Graph> graph = std::move(builder).Build(GraphLimits());
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

TEST(GraphFingerprintTest, IsVersionedHex) {
  const std::string fingerprint = GraphFingerprint(Diamond(""));
  EXPECT_THAT(fingerprint, StartsWith("g2-"));
  EXPECT_EQ(fingerprint.size(), 3u + 64u);
  EXPECT_EQ(GraphFingerprint(Diamond("")), fingerprint);
}

TEST(GraphFingerprintTest, IgnoresNames) {
  EXPECT_EQ(GraphFingerprint(Diamond("")),
            GraphFingerprint(Diamond("renamed/")));
}

TEST(GraphFingerprintTest, ChangesWithShape) {
  EXPECT_NE(GraphFingerprint(Diamond("")),
            GraphFingerprint(Diamond("", /*c_dims=*/{3, 2})));
}

TEST(GraphFingerprintTest, ChangesWithEdgeKind) {
  EXPECT_NE(GraphFingerprint(Diamond("")),
            GraphFingerprint(Diamond("", {2, 3}, /*control=*/true)));
}

TEST(GraphFingerprintTest, ChangesWithCost) {
  GraphBuilder builder("g", "generated");
  Node node = MakeNode("a");
  node.flops = 7;
  builder.AddNode(node);
  absl::StatusOr<Graph> more_flops = std::move(builder).Build(GraphLimits());
  ASSERT_TRUE(more_flops.ok());
  GraphBuilder original("g", "generated");
  original.AddNode(MakeNode("a"));
  absl::StatusOr<Graph> graph = std::move(original).Build(GraphLimits());
  ASSERT_TRUE(graph.ok());
  EXPECT_NE(GraphFingerprint(*graph), GraphFingerprint(*more_flops));
}

// A real module re-exported with every instruction renamed hits; one with
// a changed shape does not.
TEST(GraphFingerprintTest, RealHloRenamedKeepsFingerprint) {
  const std::string text =
      gopt::testing::ReadSharedData("hlo/jaxrl_td_target.hlo");
  ASSERT_FALSE(text.empty());
  ImporterRegistry importers;
  RegisterBuiltinImporters(&importers);
  ImportOptions options;
  absl::StatusOr<Graph> original = importers.Import(text, "hlo", options);
  ASSERT_TRUE(original.ok()) << original.status();
  absl::StatusOr<Graph> renamed = importers.Import(
      absl::StrReplaceAll(text, {{"%", "%renamed_"}}), "hlo", options);
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  ASSERT_NE(original->node(0).name, renamed->node(0).name);
  EXPECT_EQ(GraphFingerprint(*original), GraphFingerprint(*renamed));
}

}  // namespace
}  // namespace gopt::graph
