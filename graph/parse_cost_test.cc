#include "graph/parse_cost.h"

#include <string>

#include "gmock/gmock.h"
#include "gopt/v1/graph.pb.h"
#include "gopt/v1/optimizer.pb.h"
#include "gtest/gtest.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

std::string EmptyNodes(int count) {
  gopt::v1::Graph graph;
  for (int i = 0; i < count; ++i) graph.add_nodes();
  return graph.SerializeAsString();
}

absl::StatusOr<ParseCost> GraphCost(const std::string& bytes,
                                    const ParseCostLimits& limits) {
  return ProtoParseCost(bytes, gopt::v1::Graph::descriptor(),
                        NodeTypes{{gopt::v1::Node::descriptor()}, nullptr},
                        limits);
}

TEST(ProtoParseCostTest, CountsNodesAndChargesAnObjectEach) {
  absl::StatusOr<ParseCost> cost =
      GraphCost(EmptyNodes(/*count=*/1000), ParseCostLimits());
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->nodes, 1000);
  EXPECT_EQ(cost->messages, 1001);
  EXPECT_EQ(cost->depth, 2);
  // Each empty node on the wire is 2 bytes and a whole Node object parsed.
  EXPECT_GE(cost->bytes, 1000 * static_cast<int64_t>(sizeof(gopt::v1::Node)));
}

TEST(ProtoParseCostTest, RefusesAnEmptyOperatorAfterCountingTheNodes) {
  const NodeTypes operators{{gopt::v1::Node::descriptor()},
                            gopt::v1::Node::descriptor()};
  gopt::v1::Graph graph;
  graph.add_nodes()->set_name("a");
  graph.add_nodes();
  absl::StatusOr<ParseCost> cost =
      ProtoParseCost(graph.SerializeAsString(), gopt::v1::Graph::descriptor(),
                     operators, ParseCostLimits());
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cost.status().message(),
              HasSubstr("an empty gopt.v1.Node at byte offset 7"));

  ParseCostLimits limits;
  limits.max_nodes = 1;
  EXPECT_EQ(ProtoParseCost(graph.SerializeAsString(),
                           gopt::v1::Graph::descriptor(), operators, limits)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(ProtoParseCostTest, StopsAtTheNodeLimitBeforeReadingFurther) {
  ParseCostLimits limits;
  limits.max_nodes = 10;
  absl::StatusOr<ParseCost> cost = GraphCost(EmptyNodes(1000), limits);
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(cost.status().message(),
              HasSubstr("more than 10 gopt.v1.Node elements"));
}

TEST(ProtoParseCostTest, RefusesDeepNesting) {
  gopt::v1::Graph graph;
  gopt::v1::Graph* inner = &graph;
  for (int i = 0; i < 80; ++i) inner = inner->add_subgraphs();
  ParseCostLimits limits;
  limits.max_depth = 64;
  absl::StatusOr<ParseCost> cost = GraphCost(graph.SerializeAsString(), limits);
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cost.status().message(), HasSubstr("deeper than 64 levels"));
}

TEST(ProtoParseCostTest, NamesTheOffsetOfATruncatedField) {
  const std::string bytes = EmptyNodes(3) + std::string("\x1a\x05\x00", 3);
  absl::StatusOr<ParseCost> cost = GraphCost(bytes, ParseCostLimits());
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cost.status().message(), HasSubstr("byte offset 6"));
}

TEST(ProtoParseCostTest, ChargesStringsAndPackedScalarsByTheirSize) {
  gopt::v1::Graph graph;
  gopt::v1::Node* node = graph.add_nodes();
  node->set_name(std::string(1000, 'n'));
  for (int i = 0; i < 100; ++i) {
    node->mutable_attributes()->add_dimensions(i);
  }
  absl::StatusOr<ParseCost> cost =
      GraphCost(graph.SerializeAsString(), ParseCostLimits());
  ASSERT_TRUE(cost.ok()) << cost.status();
  const int64_t objects = static_cast<int64_t>(
      gopt::v1::Graph().SpaceUsedLong() + gopt::v1::Node().SpaceUsedLong() +
      gopt::v1::OpAttributes().SpaceUsedLong());
  // The name's buffer, and 100 int64 dimensions with growth slack.
  EXPECT_GE(cost->bytes - objects, 1000 + 100 * 8);
}

TEST(ProtoParseCostTest, ChargesUnknownFields) {
  std::string bytes;
  for (int i = 0; i < 100; ++i) bytes += std::string("\xf8\x01\x01", 3);
  absl::StatusOr<ParseCost> cost = GraphCost(bytes, ParseCostLimits());
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GE(cost->bytes, 100 * 16);
}

TEST(ProtoParseCostTest, ChargesMapEntries) {
  gopt::v1::OptimizeOptions options;
  (*options.mutable_symbolic_dims())["batch"] = 8;
  (*options.mutable_symbolic_dims())["sequence"] = 128;
  absl::StatusOr<ParseCost> cost = ProtoParseCost(
      options.SerializeAsString(), gopt::v1::OptimizeOptions::descriptor(),
      NodeTypes(), ParseCostLimits());
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->messages, 3);
}

TEST(JsonParseCostTest, RefusesDeepNestingAtOnce) {
  std::string deep = "{\"nodes\":";
  deep.append(1 << 20, '[');
  absl::StatusOr<ParseCost> cost =
      JsonParseCost(deep, "nodes", ParseCostLimits());
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cost.status().message(),
              HasSubstr("nests deeper than 64 levels (at byte offset 72)"));
}

TEST(JsonParseCostTest, CountsTheObjectsOfTheNodeArrayOnly) {
  const std::string json =
      R"({"name": "g", "nodes": [{"name": "a", "outputs": [{"dims": [1]}]},
          {"name": "[not a bracket {"}, {"op": "x"}], "other": [{}, {}]})";
  absl::StatusOr<ParseCost> cost =
      JsonParseCost(json, "nodes", ParseCostLimits());
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->nodes, 3);
  EXPECT_EQ(cost->messages, 7);
  EXPECT_EQ(cost->depth, 6);
}

TEST(JsonParseCostTest, RefusesAnEmptyNodeObject) {
  absl::StatusOr<ParseCost> cost = JsonParseCost(
      R"({"nodes": [{"name": "a"}, { }]})", "nodes", ParseCostLimits());
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cost.status().message(),
              HasSubstr("an empty node object ({}) in 'nodes' at byte offset "
                        "26"));
}

TEST(JsonParseCostTest, StopsAtTheNodeLimit) {
  std::string json = "{\"nodes\": [";
  for (int i = 0; i < 100; ++i) json += "{\"a\":1},";
  json += "{}]}";
  ParseCostLimits limits;
  limits.max_nodes = 50;
  EXPECT_EQ(JsonParseCost(json, "nodes", limits).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(TextParseCostTest, CountsInstructionLinesAndNesting) {
  const std::string hlo =
      "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
      "  ROOT n = f32[2]{0} negate(p), metadata={op_name=\"a{b\"}\n}\n";
  absl::StatusOr<ParseCost> cost =
      TextParseCost(hlo, " = ", /*bytes_per_node=*/100, ParseCostLimits());
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->nodes, 2);
  EXPECT_EQ(cost->depth, 2);
  EXPECT_EQ(cost->bytes, 2 * 100 + static_cast<int64_t>(hlo.size()));
}

TEST(TextParseCostTest, NamesTheLineOfDeepNesting) {
  std::string text = "a\nb\n";
  text.append(100, '{');
  absl::StatusOr<ParseCost> cost =
      TextParseCost(text, " = ", 100, ParseCostLimits());
  EXPECT_EQ(cost.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cost.status().message(), HasSubstr("at line 3"));
}

}  // namespace
}  // namespace gopt::graph
