#include "graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

Node MakeNode(const std::string& name,
              OpKind kind = OpKind::kElementwiseUnary) {
  Node node;
  node.name = name;
  node.op = "op";
  node.kind = kind;
  node.outputs.push_back(MakeTensorType(DType::kF32, {2, 3}));
  node.flops = 6;
  node.bytes_read = 24;
  node.bytes_written = 24;
  return node;
}

TEST(GraphBuilderTest, SortsTopologicallyAndKeepsInsertionOrderOtherwise) {
  GraphBuilder builder("g", "generated");
  const int c = builder.AddNode(MakeNode("c"));
  const int a = builder.AddNode(MakeNode("a"));
  const int b = builder.AddNode(MakeNode("b"));
  builder.AddEdge(a, 0, c, 0);
  builder.AddEdge(b, 0, c, 1);
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->num_nodes(), 3);
  EXPECT_EQ(graph->node(0).name, "a");
  EXPECT_EQ(graph->node(1).name, "b");
  EXPECT_EQ(graph->node(2).name, "c");
  ASSERT_EQ(graph->in_edges(2).size(), 2u);
  EXPECT_EQ(graph->in_edges(2)[0].src, 0);
  EXPECT_EQ(graph->in_edges(2)[1].src, 1);
  EXPECT_EQ(graph->out_edges(0).size(), 1u);
  EXPECT_EQ(graph->FindNode("b"), 1);
  EXPECT_FALSE(graph->FindNode("zz").has_value());
  EXPECT_EQ(graph->total_flops(), 18);
  EXPECT_EQ(graph->total_bytes(), 3 * 48);
}

TEST(GraphBuilderTest, FindsNodesByNameInReorderedGraph) {
  GraphBuilder builder("g", "generated");
  const int late = builder.AddNode(MakeNode("late"));
  const int early = builder.AddNode(MakeNode("early"));
  builder.AddEdge(early, 0, late, 0);
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->FindNode("early"), std::optional<NodeId>(0));
  EXPECT_EQ(graph->FindNode("late"), std::optional<NodeId>(1));
  EXPECT_EQ(graph->FindNode("missing"), std::nullopt);
}

TEST(GraphTest, CopyFindsNodesAfterTheOriginalIsGone) {
  GraphBuilder builder("g", "generated");
  builder.AddNode(MakeNode("x"));
  builder.AddNode(MakeNode("y"));
  auto built = std::move(builder).Build(GraphLimits());
  ASSERT_TRUE(built.ok()) << built.status();
  auto original = std::make_unique<Graph>(*std::move(built));
  const Graph copy = *original;
  Graph moved = std::move(*original);
  original.reset();
  EXPECT_EQ(copy.FindNode("y"), std::optional<NodeId>(1));
  EXPECT_EQ(moved.FindNode("x"), std::optional<NodeId>(0));
  EXPECT_EQ(moved.FindNode("z"), std::nullopt);
}

TEST(GraphBuilderTest, EdgeBytesOfWholeTupleSumsOutputs) {
  GraphBuilder builder("g", "generated");
  Node tuple = MakeNode("t", OpKind::kTuple);
  tuple.outputs.push_back(MakeTensorType(DType::kS32, {4}));
  const int t = builder.AddNode(std::move(tuple));
  const int u = builder.AddNode(MakeNode("u"));
  builder.AddEdge(t, Edge::kAllOutputs, u, 0);
  builder.AddControlEdge(t, u);
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->in_edges(1).size(), 2u);
  EXPECT_EQ(graph->EdgeBytes(graph->in_edges(1)[0]), 24 + 16);
  EXPECT_TRUE(graph->in_edges(1)[1].control);
  EXPECT_EQ(graph->EdgeBytes(graph->in_edges(1)[1]), 0);
}

TEST(GraphBuilderTest, RejectsCycleNamingItsNodes) {
  GraphBuilder builder("g", "generated");
  const int a = builder.AddNode(MakeNode("a"));
  const int b = builder.AddNode(MakeNode("b"));
  const int c = builder.AddNode(MakeNode("c"));
  builder.AddEdge(a, 0, b, 0);
  builder.AddEdge(b, 0, c, 0);
  builder.AddEdge(c, 0, b, 1);
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("cycle"));
  EXPECT_THAT(graph.status().message(), HasSubstr("'c' -> 'b' -> 'c'"));
}

TEST(GraphBuilderTest, RejectsDuplicateNames) {
  GraphBuilder builder("g", "generated");
  builder.AddNode(MakeNode("x"));
  builder.AddNode(MakeNode("x"));
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("duplicate node name 'x' (nodes #0 and #1)"));
}

TEST(GraphBuilderTest, RejectsMissingProducerOutput) {
  GraphBuilder builder("g", "generated");
  const int a = builder.AddNode(MakeNode("a"));
  const int b = builder.AddNode(MakeNode("b"));
  builder.AddEdge(a, /*src_output=*/3, b, /*dst_input=*/0);
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'b' input 0 reads output 3 of 'a'"));
}

TEST(GraphBuilderTest, RejectsOverflowingShape) {
  GraphBuilder builder("g", "generated");
  Node node = MakeNode("huge");
  node.outputs[0].dims = {int64_t{1} << 40, int64_t{1} << 40};
  builder.AddNode(std::move(node));
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'huge' output 0"));
}

TEST(GraphBuilderTest, EnforcesNodeLimit) {
  GraphBuilder builder("g", "generated");
  builder.AddNode(MakeNode("a"));
  builder.AddNode(MakeNode("b"));
  GraphLimits limits;
  limits.max_nodes = 1;
  auto graph = std::move(builder).Build(limits);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CompareGraphsTest, ReportsFirstDifference) {
  auto build = [](double flops) {
    GraphBuilder builder("g", "generated");
    Node node = MakeNode("a");
    node.flops = flops;
    builder.AddNode(std::move(node));
    return std::move(builder).Build(GraphLimits()).value();
  };
  EXPECT_TRUE(CompareGraphs(build(1), build(1)).ok());
  absl::Status status = CompareGraphs(build(1), build(2));
  EXPECT_THAT(status.message(), HasSubstr("node 'a': flops 1 vs 2"));
}

TEST(GraphBuilderTest, RejectsCostsThatWouldOverflow) {
  for (double flops : {1e308, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN(), -1.0}) {
    GraphBuilder builder("g", "generated");
    Node node = MakeNode("big");
    node.flops = flops;
    builder.AddNode(std::move(node));
    auto graph = std::move(builder).Build(GraphLimits());
    ASSERT_FALSE(graph.ok()) << flops;
    EXPECT_THAT(graph.status().message(),
                HasSubstr("node 'big' (op 'op'): flops"));
  }
  GraphBuilder builder("g", "generated");
  Node node = MakeNode("wide");
  node.bytes_read = int64_t{9'000'000'000'000'000'000};
  builder.AddNode(std::move(node));
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("bytes_read"));
}

TEST(GraphBuilderTest, RejectsASubnormalFlopCountNamingTheNode) {
  GraphBuilder builder("g", "generated");
  Node node = MakeNode("tiny");
  node.flops = 5e-324;
  builder.AddNode(std::move(node));
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'tiny' (op 'op'): flops 4.94066e-324 is a "
                        "subnormal number"));
}

TEST(GraphBuilderTest, RejectsTotalsOverTheGraphLimits) {
  // Each node is within the per-node limit; the sum is not.
  GraphBuilder builder("g", "generated");
  for (int i = 0; i < 2000; ++i) {
    Node node = MakeNode(absl::StrCat("n", i));
    node.flops = kMaxNodeFlops;
    builder.AddNode(std::move(node));
  }
  auto graph = std::move(builder).Build(GraphLimits());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("total cost"));
}

}  // namespace
}  // namespace gopt::graph
