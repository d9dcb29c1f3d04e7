#include "graph/coverage.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>

namespace gopt::graph {
namespace {

Node MakeNode(const char* name, const char* op, OpKind kind) {
  Node node;
  node.name = name;
  node.op = op;
  node.kind = kind;
  node.outputs = {MakeTensorType(DType::kF32, {4})};
  return node;
}

// A loop body with one while of known and one of unknown trip count.
std::shared_ptr<const Graph> MakeBody() {
  GraphBuilder builder("body", "hlo");
  Node known = MakeNode("inner_known", "while", OpKind::kWhile);
  known.attributes.trip_count = 3;
  Node unknown = MakeNode("inner_unknown", "while", OpKind::kWhile);
  builder.AddNode(std::move(known));
  builder.AddNode(std::move(unknown));
  return std::make_shared<const Graph>(
      std::move(builder).Build(GraphLimits()).value());
}

TEST(CoverageTest, CountsShapesRulesLoopsAndOpsLackingRules) {
  GraphBuilder builder("g", "hlo");
  const int p = builder.AddNode(MakeNode("p", "parameter", OpKind::kParameter));
  Node assumed = MakeNode("a", "Mystery", OpKind::kOther);
  assumed.shape_assumed = true;
  assumed.cost_unknown = true;
  const int a = builder.AddNode(std::move(assumed));
  Node call = MakeNode("cc", "custom-call", OpKind::kCustomCall);
  call.cost_unknown = true;
  const int c = builder.AddNode(std::move(call));
  // Two while nodes share one body: the body's loops count once.
  const int32_t body = builder.AddSubgraph(MakeBody());
  Node outer = MakeNode("w", "while", OpKind::kWhile);
  outer.attributes.trip_count = 10;
  outer.subgraphs = {body};
  Node outer2 = MakeNode("w2", "while", OpKind::kWhile);
  outer2.subgraphs = {body};
  const int w = builder.AddNode(std::move(outer));
  const int w2 = builder.AddNode(std::move(outer2));
  builder.AddEdge(p, 0, a, 0);
  builder.AddEdge(a, 0, c, 0);
  builder.AddEdge(c, 0, w, 0);
  builder.AddEdge(w, 0, w2, 0);
  const Graph graph = std::move(builder).Build(GraphLimits()).value();

  const GraphCoverage coverage = ComputeCoverage(graph);
  EXPECT_EQ(coverage.known_shapes.count, 4);
  EXPECT_EQ(coverage.known_shapes.total, 5);
  EXPECT_EQ(coverage.cost_rules.count, 3);
  EXPECT_EQ(coverage.bytes_only.count, 2);
  EXPECT_DOUBLE_EQ(coverage.bytes_only.share(), 0.4);
  // w (10), w2 (unknown), inner_known (3), inner_unknown.
  EXPECT_EQ(coverage.known_trip_counts.count, 2);
  EXPECT_EQ(coverage.known_trip_counts.total, 4);
  EXPECT_EQ(
      coverage.ops_lacking_rules,
      (std::map<std::string, int64_t>{{"Mystery", 1}, {"custom-call", 1}}));
}

TEST(CoverageTest, CutLoopsCountAndAnEmptyGraphIsFullyCovered) {
  const GraphCoverage empty = ComputeCoverage(Graph());
  EXPECT_EQ(empty.known_shapes.total, 0);
  EXPECT_DOUBLE_EQ(empty.known_shapes.share(), 1.0);

  GraphBuilder builder("tf", "graphdef");
  const int merge = builder.AddNode(MakeNode("m", "Merge", OpKind::kIdentity));
  const int next =
      builder.AddNode(MakeNode("n", "NextIteration", OpKind::kIdentity));
  builder.AddEdge(merge, 0, next, 0);
  LoopInfo loop;
  loop.frame_name = "while";
  loop.merge = merge;
  loop.next_iteration = next;
  builder.AddLoop(loop);
  const GraphCoverage coverage =
      ComputeCoverage(std::move(builder).Build(GraphLimits()).value());
  EXPECT_EQ(coverage.known_trip_counts.count, 0);
  EXPECT_EQ(coverage.known_trip_counts.total, 1);
}

}  // namespace
}  // namespace gopt::graph
