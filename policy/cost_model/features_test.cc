#include "policy/cost_model/features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/hlo/tuning_data.h"
#include "tests/util/shared_data.h"

namespace gopt::policy::cost_model {
namespace {

// The layout module, lowered once for all tests.
const graph::hlo::TuningModule& LayoutModule() {
  static const graph::hlo::TuningModule* const module = [] {
    absl::StatusOr<graph::hlo::TuningDataset> dataset =
        graph::hlo::ReadTuningData(
            testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb"),
            graph::ImportOptions());
    EXPECT_TRUE(dataset.ok()) << dataset.status();
    return new graph::hlo::TuningModule(std::move(dataset->modules[0]));
  }();
  return *module;
}

const graph::Node& EntryNode(const std::string& name) {
  const graph::Graph& graph = LayoutModule().graph;
  const std::optional<graph::NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  return graph.node(id.value_or(0));
}

// Features every node has when it has no window, slice or padding: the
// products of absent lists are 1 and all window dims count as "not
// reversed" (none).
std::vector<float> AbsentListDefaults() {
  std::vector<float> f(kNodeFeatures, 0.0f);
  for (int index : {44, 52, 60, 68, 76, 84, 112, 116, 120, 128, 132}) {
    f[index] = 1;
  }
  return f;
}

TEST(FeaturesTest, OpcodeIdsMatchTheTpuGraphsTable) {
  std::istringstream table(testing::ReadSharedData("tpugraphs/opcode_ids.txt"));
  std::string name;
  int id = 0;
  int rows = 0;
  while (table >> name >> id) {
    EXPECT_EQ(TpuGraphsOpcodeId(name), id) << name;
    ++rows;
  }
  EXPECT_EQ(rows, 120);
  EXPECT_EQ(TpuGraphsOpcodeId("not-an-hlo-op"), 0);
}

TEST(FeaturesTest, ConvolutionMatchesHandComputedFeatures) {
  // convolution.1043: bf16[2,96,96,96,32]{4,3,2,1,0}, window 3x3x3 with
  // stride 1 and padding 1_1, dims b012f_012io->b012f.
  std::vector<float> expected = AbsentListDefaults();
  expected[2 + 13] = 1;  // bf16
  const float dims[] = {2, 96, 96, 96, 32};
  for (int i = 0; i < 5; ++i) expected[21 + i] = dims[i];
  expected[27] = 322;
  expected[28] = 2.0f * 96 * 96 * 96 * 32;
  for (int field = 0; field < 6; ++field) {
    const float value = field == 0 ? 3 : 1;  // size 3, the rest 1
    for (int i = 0; i < 3; ++i) expected[37 + 8 * field + i] = value;
    expected[37 + 8 * field + 6] = 3 * value;
    expected[37 + 8 * field + 7] = value * value * value;
  }
  expected[92] = 3;  // three window dims, none reversed
  const float conv[] = {0, 4, 3, 4, 0, 4, 1, 2, 3, 0, 0, 1, 2, 0};
  for (int i = 0; i < 14; ++i) expected[93 + i] = conv[i];
  expected[107] = 1;
  expected[108] = 1;
  const float layout[] = {4, 3, 2, 1, 0, 0};
  for (int i = 0; i < 6; ++i) expected[134 + i] = layout[i];

  const graph::Node& node = EntryNode("convolution.1043");
  ASSERT_EQ(node.op, "convolution");
  const std::vector<float> f = FeaturizeNode(node);
  ASSERT_EQ(f.size(), static_cast<size_t>(kNodeFeatures));
  for (int i = 0; i < kNodeFeatures; ++i) {
    EXPECT_FLOAT_EQ(f[i], expected[i]) << "feature " << i;
  }
}

TEST(FeaturesTest, ReduceMatchesHandComputedFeatures) {
  // reduce: f32[2]{0} dimensions={1,2,3,4}.
  std::vector<float> expected = AbsentListDefaults();
  expected[2 + 11] = 1;  // f32
  expected[21] = 2;
  expected[27] = 2;
  expected[28] = 2;
  for (int i = 0; i < 4; ++i) expected[31 + i] = i + 1;
  expected[134] = 0;
  const std::vector<float> f = FeaturizeNode(EntryNode("reduce"));
  for (int i = 0; i < kNodeFeatures; ++i) {
    EXPECT_FLOAT_EQ(f[i], expected[i]) << "feature " << i;
  }
}

TEST(FeaturesTest, SliceMatchesHandComputedFeatures) {
  // slice.2: pred[1]{0} slice={[0:1:1]}.
  std::vector<float> expected = AbsentListDefaults();
  expected[2 + 1] = 1;  // pred
  expected[21] = 1;
  expected[27] = 1;
  expected[28] = 1;
  expected[109] = 0;  // start 0: sum 0, product 0
  expected[111] = 0;
  expected[112] = 0;
  expected[113] = 1;  // stride 1
  expected[115] = 1;
  expected[116] = 1;
  expected[117] = 1;  // limit 1
  expected[119] = 1;
  expected[120] = 1;
  const std::vector<float> f = FeaturizeNode(EntryNode("slice.2"));
  for (int i = 0; i < kNodeFeatures; ++i) {
    EXPECT_FLOAT_EQ(f[i], expected[i]) << "feature " << i;
  }
}

TEST(FeaturesTest, TupleParameterCountsItsElements) {
  // arg_tuple.1: parameter 0 holding a 232-element tuple.
  std::vector<float> expected = AbsentListDefaults();
  expected[2 + 16] = 1;  // tuple
  expected[28] = 1;      // no dims: sum 0, product 1
  expected[29] = 232;
  const std::vector<float> f = FeaturizeNode(EntryNode("arg_tuple.1"));
  for (int i = 0; i < kNodeFeatures; ++i) {
    EXPECT_FLOAT_EQ(f[i], expected[i]) << "feature " << i;
  }
}

TEST(FeaturesTest, FlattenedModuleKeepsConfigurableNodesInOrder) {
  const graph::hlo::TuningModule& module = LayoutModule();
  absl::StatusOr<FeaturizedGraph> featurized =
      FeaturizeGraph(module.graph, module.configurable_nodes);
  ASSERT_TRUE(featurized.ok()) << featurized.status();
  EXPECT_GT(featurized->num_nodes, module.graph.num_nodes());
  ASSERT_EQ(featurized->configurable_nodes.size(), 62u);
  for (int32_t node : featurized->configurable_nodes) {
    const int32_t opcode = featurized->opcodes[node];
    EXPECT_TRUE(opcode == TpuGraphsOpcodeId("convolution") ||
                opcode == TpuGraphsOpcodeId("reshape"))
        << opcode;
  }
  EXPECT_EQ(featurized->node_features.size(),
            static_cast<size_t>(featurized->num_nodes) * kNodeFeatures);
  // A location that does not exist is an error naming it.
  std::vector<graph::hlo::HloNodeLocation> bad = {{{7}, 0}};
  absl::StatusOr<FeaturizedGraph> missing = FeaturizeGraph(module.graph, bad);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("configurable node 0"),
            std::string::npos);
}

TEST(FeaturesTest, LayoutConfigFeaturesPadWithMinusOne) {
  const std::vector<float> f = LayoutConfigFeatures({1, 0}, {}, {2, 1, 0});
  const std::vector<float> expected = {1,  0,  -1, -1, -1, -1,   //
                                       -1, -1, -1, -1, -1, -1,   //
                                       2,  1,  0,  -1, -1, -1};  //
  EXPECT_EQ(f, expected);
}

}  // namespace
}  // namespace gopt::policy::cost_model
