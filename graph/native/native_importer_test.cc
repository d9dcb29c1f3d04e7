#include "graph/native/native_importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/native/graph_proto.h"
#include "graph/op_catalog.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

// x:f32[4,8] -> dot(x, w:f32[8,16]) -> relu, with a control edge, a tuple
// output and an attached subgraph, to exercise every field.
Graph MakeSampleGraph() {
  GraphBuilder body_builder("body", "generated");
  Node body_node;
  body_node.name = "inc";
  body_node.kind = OpKind::kElementwiseBinary;
  body_node.outputs = {MakeTensorType(DType::kS32, {})};
  body_node.flops = 1;
  body_builder.AddNode(std::move(body_node));
  auto body = std::make_shared<const Graph>(
      std::move(body_builder).Build(GraphLimits()).value());

  GraphBuilder builder("sample", "generated");
  const int32_t sub = builder.AddSubgraph(body);
  Node x;
  x.name = "x";
  x.op = "parameter";
  x.kind = OpKind::kParameter;
  x.outputs = {MakeTensorType(DType::kF32, {4, 8})};
  x.attributes.parameter_number = 0;
  Node w = x;
  w.name = "w";
  w.outputs = {MakeTensorType(DType::kF32, {8, 16})};
  w.outputs[0].minor_to_major = {0, 1};
  w.attributes.parameter_number = 1;
  w.colocation_group = builder.ColocationGroup("weights");
  Node dot;
  dot.name = "dot";
  dot.op = "dot";
  dot.kind = OpKind::kDot;
  dot.outputs = {MakeTensorType(DType::kF32, {4, 16}),
                 MakeTensorType(DType::kS32, {})};
  dot.attributes.has_dot_dimensions = true;
  dot.attributes.mutable_dot()->lhs_contracting = {1};
  dot.attributes.mutable_dot()->rhs_contracting = {0};
  dot.flops = 1024;
  dot.bytes_read = 640;
  dot.bytes_written = 256;
  dot.layout_configurable = true;
  dot.device_constraint = DeviceConstraint::kAcceleratorOnly;
  dot.subgraphs = {sub};
  Node relu;
  relu.name = "relu";
  relu.op = "maximum";
  relu.kind = OpKind::kElementwiseUnary;
  relu.outputs = {MakeTensorType(DType::kF32, {4, 16})};
  relu.attributes.is_root = true;
  const int xi = builder.AddNode(std::move(x));
  const int wi = builder.AddNode(std::move(w));
  const int di = builder.AddNode(std::move(dot));
  const int ri = builder.AddNode(std::move(relu));
  builder.AddEdge(xi, 0, di, 0);
  builder.AddEdge(wi, 0, di, 1);
  builder.AddEdge(di, Edge::kAllOutputs, ri, 2);
  builder.AddControlEdge(xi, ri);
  builder.AddWarning("sample warning");
  return std::move(builder).Build(GraphLimits()).value();
}

TEST(NativeImporterTest, BinaryRoundTripIsLossless) {
  const Graph graph = MakeSampleGraph();
  const std::string bytes = SerializeGraph(graph, /*json=*/false).value();
  auto importer = NewGoptImporter();
  EXPECT_TRUE(importer->Sniff(bytes));
  auto imported = importer->Import(bytes, ImportOptions());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(CompareGraphs(graph, *imported).ok())
      << CompareGraphs(graph, *imported);
  EXPECT_EQ(imported->warnings(), graph.warnings());
  EXPECT_EQ(imported->format(), "generated");
}

TEST(NativeImporterTest, JsonRoundTripIsLossless) {
  const Graph graph = MakeSampleGraph();
  const std::string json = SerializeGraph(graph, /*json=*/true).value();
  EXPECT_THAT(json, HasSubstr("\"kind\": \"dot\""));
  auto importer = NewGoptImporter();
  EXPECT_TRUE(importer->Sniff(json));
  auto imported = importer->Import(json, ImportOptions());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE(CompareGraphs(graph, *imported).ok())
      << CompareGraphs(graph, *imported);
}

TEST(NativeImporterTest, ComputeCostsFromShapes) {
  // A hand-written graph without costs: 2 * 4 * 16 * 8 = 1024 FLOPs.
  const std::string json = R"({
    "name": "hand", "compute_costs": true,
    "nodes": [
      {"name": "a", "kind": "parameter",
       "outputs": [{"dtype": "DATA_TYPE_F32", "dims": [4, 8]}]},
      {"name": "b", "kind": "parameter",
       "outputs": [{"dtype": "DATA_TYPE_F32", "dims": [8, 16]}]},
      {"name": "mm", "kind": "dot", "inputs": [{"node": "a"}, {"node": "b"}],
       "outputs": [{"dtype": "DATA_TYPE_F32", "dims": [4, 16]}]}
    ]})";
  auto graph = NewGoptImporter()->Import(json, ImportOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& mm = graph->node(*graph->FindNode("mm"));
  EXPECT_EQ(mm.flops, 1024);
  EXPECT_EQ(mm.bytes_read, (32 + 128) * 4);
  EXPECT_EQ(mm.bytes_written, 64 * 4);
}

TEST(NativeImporterTest, RejectsUnknownKindNamingNodeAndField) {
  const std::string json = R"({"nodes": [{"name": "n", "kind": "matmul"}]})";
  auto graph = NewGoptImporter()->Import(json, ImportOptions());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()),
              HasSubstr("node 'n' field 'kind': unknown op kind 'matmul'"));
}

TEST(NativeImporterTest, RejectsDanglingInput) {
  const std::string json =
      R"({"nodes": [{"name": "n", "kind": "copy", "inputs": [{"node": "ghost"}]}]})";
  auto graph = NewGoptImporter()->Import(json, ImportOptions());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()),
              HasSubstr("node 'n' input 0 names 'ghost'"));
}

TEST(NativeImporterTest, RejectsNegativeCostAndUnknownJsonField) {
  auto negative = NewGoptImporter()->Import(
      R"({"nodes": [{"name": "n", "kind": "copy", "flops": -1}]})",
      ImportOptions());
  EXPECT_THAT(std::string(negative.status().message()),
              HasSubstr("non-negative"));
  auto typo = NewGoptImporter()->Import(R"({"nodez": []})", ImportOptions());
  EXPECT_THAT(std::string(typo.status().message()), HasSubstr("nodez"));
}

TEST(NativeImporterTest, TruncatedBinaryIsAnError) {
  const std::string bytes =
      SerializeGraph(MakeSampleGraph(), /*json=*/false).value();
  for (size_t length : {size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    auto graph =
        NewGoptImporter()->Import(bytes.substr(0, length), ImportOptions());
    EXPECT_FALSE(graph.ok()) << "length " << length;
  }
}

}  // namespace
}  // namespace gopt::graph
