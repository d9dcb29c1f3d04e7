#include "client/inspect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gopt::client {
namespace {

using ::testing::HasSubstr;

graph::Graph MakeGraph() {
  graph::GraphBuilder builder("tiny", "generated");
  graph::Node param;
  param.name = "p";
  param.op = "parameter";
  param.kind = graph::OpKind::kParameter;
  param.outputs = {graph::MakeTensorType(graph::DType::kF32, {256})};
  graph::Node call = param;
  call.name = "cc";
  call.op = "custom-call";
  call.kind = graph::OpKind::kCustomCall;
  call.cost_unknown = true;
  call.bytes_read = 1024;
  call.bytes_written = 1024;
  call.device_constraint = graph::DeviceConstraint::kCpuOnly;
  const int p = builder.AddNode(std::move(param));
  const int c = builder.AddNode(std::move(call));
  builder.AddEdge(p, 0, c, 0);
  builder.AddWarning("custom-call 'foo' costed by bytes only");
  return std::move(builder).Build(graph::GraphLimits()).value();
}

TEST(InspectTest, CountsAndHistogram) {
  const InspectReport report = Inspect(MakeGraph());
  EXPECT_EQ(report.nodes, 2);
  EXPECT_EQ(report.edges, 1);
  EXPECT_EQ(report.total_bytes, 2048);
  EXPECT_EQ(report.parameter_bytes, 1024);
  EXPECT_EQ(report.ops.at("custom-call"), 1);
  EXPECT_EQ(report.cpu_only_nodes, 1);
  EXPECT_EQ(report.cost_unknown_nodes, 1);
}

TEST(InspectTest, JsonHasTheDocumentedKeys) {
  const nlohmann::json json = InspectReportToJson(Inspect(MakeGraph()));
  for (const char* key : {"name", "format", "nodes", "edges", "total_flops",
                          "total_bytes", "ops", "warnings"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json["warnings"].size(), 1u);
}

TEST(InspectTest, CoverageCountsBytesOnlyNodesAndLoops) {
  const InspectReport report = Inspect(MakeGraph());
  EXPECT_EQ(report.coverage.cost_rules.count, 1);
  EXPECT_EQ(report.coverage.bytes_only.count, 1);
  EXPECT_EQ(report.coverage.known_shapes.count, 2);
  EXPECT_EQ(report.loops, 0);
  const nlohmann::json json = InspectReportToJson(report);
  EXPECT_EQ(json["coverage"]["bytes_only"]["share"], 0.5);
  EXPECT_EQ(json["coverage"]["ops_lacking_rules"]["custom-call"], 1);
  EXPECT_THAT(InspectReportToText(report),
              HasSubstr("coverage                   shapes 100.0% (2/2), "
                        "cost rules 50.0% (1/2), trip counts 100.0% (0/0); "
                        "lacking rules: custom-call x1"));
}

TEST(InspectTest, SaysWhetherTheGraphIsShardedPerDevice) {
  EXPECT_THAT(InspectReportToText(Inspect(MakeGraph())),
              HasSubstr("sharded                    no"));
  graph::GraphBuilder builder("spmd", "hlo");
  graph::Node param;
  param.name = "p";
  param.op = "parameter";
  param.kind = graph::OpKind::kParameter;
  builder.AddNode(std::move(param));
  builder.SetSpmd({/*num_partitions=*/8, /*collectives_inserted=*/3,
                   /*partitioned_by_importer=*/true});
  const InspectReport report =
      Inspect(std::move(builder).Build(graph::GraphLimits()).value());
  EXPECT_THAT(InspectReportToText(report),
              HasSubstr("sharded                    yes, partitions 8, "
                        "collectives inserted 3"));
  EXPECT_EQ(InspectReportToJson(report)["spmd"]["collectives_inserted"], 3);
}

TEST(InspectTest, TextNamesWarnings) {
  const std::string text = InspectReportToText(Inspect(MakeGraph()));
  EXPECT_THAT(text, HasSubstr("custom-call 'foo' costed by bytes only"));
  EXPECT_THAT(text, HasSubstr("1.00 KiB"));
}

}  // namespace
}  // namespace gopt::client
