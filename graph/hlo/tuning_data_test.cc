#include "graph/hlo/tuning_data.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/util/shared_data.h"

namespace gopt::graph::hlo {
namespace {

// Follows a location's subgraph path from `graph` to the node.
const Node& NodeAt(const Graph& graph, const HloNodeLocation& location) {
  const Graph* current = &graph;
  for (int32_t index : location.subgraph_path) {
    current = current->subgraphs()[index].get();
  }
  return current->node(location.node);
}

TEST(TuningDataTest, ReadsTileTuningData) {
  absl::StatusOr<TuningDataset> dataset = ReadTuningData(
      testing::ReadSharedData("tpugraphs/op_tuning_data.pb"), ImportOptions());
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->modules.size(), 15u);
  size_t configs = 0;
  for (const TuningModule& module : dataset->modules) {
    configs += module.configs.size();
    EXPECT_TRUE(module.configurable_nodes.empty());
    int defaults = 0;
    for (const TuningConfig& config : module.configs) {
      ASSERT_EQ(config.tile_features.size(),
                static_cast<size_t>(kTileConfigFeatures));
      EXPECT_TRUE(config.layout_features.empty());
      EXPECT_EQ(config.runtime_ns > 0, config.error == 0);
      defaults += config.is_default ? 1 : 0;
    }
    EXPECT_EQ(defaults, 1) << module.name;
  }
  EXPECT_EQ(configs, 754u);
  // The first run of the first module tiles the output as 2x26x4x2 and has
  // no kernel or input bounds (sum 0, product 0).
  const TuningModule& first = dataset->modules[0];
  EXPECT_EQ(first.name, "fusion.232");
  const std::vector<float>& f = first.configs[0].tile_features;
  EXPECT_EQ(first.configs[0].runtime_ns, 57188);
  EXPECT_TRUE(first.configs[0].is_default);
  const std::vector<float> expected = {
      0, 0,  0, 0, 0, 0, 0,  0,    // kernel bounds
      2, 26, 4, 2, 0, 0, 34, 416,  // output bounds
      0, 0,  0, 0, 0, 0, 0,  0};   // input bounds
  EXPECT_EQ(f, expected);
}

TEST(TuningDataTest, ReadsLayoutTuningData) {
  absl::StatusOr<TuningDataset> dataset = ReadTuningData(
      testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb"),
      ImportOptions());
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->modules.size(), 1u);
  const TuningModule& module = dataset->modules[0];
  ASSERT_EQ(module.configurable_nodes.size(), 62u);
  ASSERT_EQ(module.configs.size(), 122u);
  int errors = 0;
  for (const TuningConfig& config : module.configs) {
    errors += config.error != 0 ? 1 : 0;
    EXPECT_EQ(config.runtime_ns > 0, config.error == 0);
    ASSERT_EQ(config.layout_features.size(), 62u * kLayoutNodeFeatures);
    EXPECT_TRUE(config.tile_features.empty());
  }
  EXPECT_EQ(errors, 10);
  EXPECT_TRUE(module.configs[0].is_default);
  for (size_t r = 1; r < module.configs.size(); ++r) {
    EXPECT_FALSE(module.configs[r].is_default) << r;
  }
  // Every configurable node is a convolution or a reshape, marked in the
  // graph it lives in.
  int in_while_bodies = 0;
  for (const HloNodeLocation& location : module.configurable_nodes) {
    const Node& node = NodeAt(module.graph, location);
    EXPECT_TRUE(node.op == "convolution" || node.op == "reshape") << node.op;
    EXPECT_TRUE(node.layout_configurable) << node.name;
    in_while_bodies += location.subgraph_path.empty() ? 0 : 1;
  }
  EXPECT_EQ(in_while_bodies, 3);
  // Layout values are dimension indices or -1 (compiler default).
  for (const TuningConfig& config : module.configs) {
    for (float value : config.layout_features) {
      EXPECT_TRUE(value >= -1 && value <= 5) << value;
    }
  }
}

TEST(TuningDataTest, RejectsBytesThatAreNotTuningData) {
  absl::StatusOr<TuningDataset> dataset =
      ReadTuningData("HloModule m\n", ImportOptions());
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(LooksLikeTuningData("HloModule m\n"));
  EXPECT_FALSE(LooksLikeTuningData(""));
}

}  // namespace
}  // namespace gopt::graph::hlo
