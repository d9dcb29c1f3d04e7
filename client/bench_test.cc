#include "client/bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/baseline_registry.h"

namespace gopt::client {
namespace {

using ::testing::HasSubstr;

// Two independent heavy chains: splitting them over devices halves the
// step time.
graph::Graph TwoChains() {
  graph::GraphBuilder builder("two_chains", "generated");
  graph::Node input;
  input.name = "x";
  input.kind = graph::OpKind::kParameter;
  input.outputs = {graph::MakeTensorType(graph::DType::kF32, {1024})};
  const int x = builder.AddNode(input);
  for (int chain = 0; chain < 2; ++chain) {
    int previous = x;
    for (int i = 0; i < 4; ++i) {
      graph::Node node;
      node.name = absl::StrCat("c", chain, "_", i);
      node.kind = graph::OpKind::kElementwiseBinary;
      node.outputs = {graph::MakeTensorType(graph::DType::kF32, {1024})};
      node.flops = 1e11;
      node.bytes_read = node.bytes_written = 4096;
      const int id = builder.AddNode(std::move(node));
      builder.AddEdge(previous, 0, id, 0);
      previous = id;
    }
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
}

TEST(BenchTest, RowsPerMethodWithRatios) {
  const graph::Graph graph = TwoChains();
  const simulator::Topology topology =
      simulator::PresetTopology("v100x4-nvlink").value();
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  BenchOptions options;
  options.methods = {"single", "heft", "best-baseline", "nonsense"};
  auto result = BenchGraph(graph, "two", topology, registry, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 4u);
  EXPECT_TRUE(result->rows[0].valid);
  EXPECT_DOUBLE_EQ(result->rows[0].ratio_to_default, 1.0);
  EXPECT_LT(result->rows[1].ratio_to_default, 0.6);  // heft splits the chains
  EXPECT_EQ(result->rows[2].method, "best-baseline");
  EXPECT_FALSE(result->rows[2].chosen_method.empty());
  EXPECT_LE(result->rows[2].step_time_s, result->rows[1].step_time_s);
  EXPECT_FALSE(result->rows[3].valid);
  EXPECT_THAT(result->rows[3].error, HasSubstr("nonsense"));
  for (const BenchRow& row : result->rows) {
    if (row.valid) EXPECT_GE(row.ratio_to_lower_bound, 1.0) << row.method;
  }
  const nlohmann::json json = BenchToJson(topology.name, {*result});
  ASSERT_EQ(json["rows"].size(), 4u);
  for (const char* key :
       {"graph", "nodes", "method", "step_time_s", "peak_memory_bytes", "oom",
        "method_seconds", "lower_bound_s"}) {
    EXPECT_TRUE(json["rows"][0].contains(key)) << key;
  }
  EXPECT_EQ(json["summary"].size(), 3u);  // the invalid method has no summary
  EXPECT_THAT(BenchToText(topology.name, {*result}), HasSubstr("summary"));
}

}  // namespace
}  // namespace gopt::client
