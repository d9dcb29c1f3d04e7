#include "policy/cost_model/tile_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "graph/hlo/hlo_lowering.h"
#include "graph/hlo/hlo_text_parser.h"
#include "policy/checkpoint_integrity.h"
#include "policy/cost_model/cost_model.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::policy {
namespace {

using ::testing::HasSubstr;

graph::Graph SmallHloGraph() {
  constexpr char kHlo[] = R"(HloModule two_dots
ENTRY main {
  a = f32[64,128]{1,0} parameter(0)
  b = f32[128,256]{1,0} parameter(1)
  d = f32[64,256]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[256,32]{1,0} parameter(2)
  e = f32[64,32]{1,0} dot(d, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[64,4,8]{2,1,0} reshape(e)
  ROOT t = f32[8,4,64]{2,1,0} transpose(r), dimensions={2,1,0}
}
)";
  absl::StatusOr<graph::hlo::HloModule> module = graph::hlo::ParseHloText(kHlo);
  EXPECT_TRUE(module.ok()) << module.status();
  absl::StatusOr<graph::Graph> graph =
      graph::hlo::LowerHloModule(*module, graph::hlo::HloLoweringOptions());
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

graph::NodeId Id(const graph::Graph& graph, const char* name) {
  const std::optional<graph::NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  return id.value_or(0);
}

// Writes a freshly initialised tile model and its card to a temporary
// directory and returns the directory.
std::string WriteTileModel(const std::string& name, double default_margin) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gopt_tile_policy_" + name))
          .string();
  std::filesystem::create_directories(dir);
  cost_model::CostModelOptions options;
  options.task = cost_model::Task::kTile;
  options.hidden_dim = 8;
  options.opcode_embedding_dim = 4;
  options.tile_relative_to_default = true;
  absl::StatusOr<std::unique_ptr<cost_model::CostModel>> model =
      cost_model::CostModel::Create(options, /*seed=*/3);
  EXPECT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->Save(dir + "/model.pt").ok());
  nlohmann::json card = {{"format_version", 1},
                         {"kind", "cost-model-tile"},
                         {"name", "tile-test"},
                         {"version", "1"},
                         {"tasks", {"tile"}},
                         {"checkpoint", "model.pt"},
                         {"decision", {{"default_margin", default_margin}}}};
  EXPECT_TRUE(RecordCheckpointSha256(dir, "tile_policy_test", &card).ok());
  std::ofstream(dir + "/card.json") << card.dump(2);
  return dir;
}

nlohmann::json ReadCard(const std::string& dir) {
  std::ifstream in(dir + "/card.json");
  return nlohmann::json::parse(in, nullptr, false);
}

TEST(TileCandidatesTest, AllCombinationsWhenFewDefaultFirst) {
  const std::vector<std::vector<int64_t>> candidates =
      TileCandidates({3, 300}, /*max_candidates=*/64, /*seed=*/0);
  // 3 choices for the first dim (1, 2, 3), 8 for the second (1..64, 128).
  ASSERT_EQ(candidates.size(), 24u);
  EXPECT_EQ(candidates[0], (std::vector<int64_t>{3, 128}));
  EXPECT_EQ(std::set<std::vector<int64_t>>(candidates.begin(), candidates.end())
                .size(),
            candidates.size());
}

TEST(TileCandidatesTest, SampledWhenManyAndScalarHasOneTile) {
  const std::vector<std::vector<int64_t>> candidates =
      TileCandidates({64, 64, 64, 64}, /*max_candidates=*/64, /*seed=*/5);
  ASSERT_EQ(candidates.size(), 64u);
  EXPECT_EQ(candidates[0], (std::vector<int64_t>{1, 1, 8, 64}));
  EXPECT_EQ(std::set<std::vector<int64_t>>(candidates.begin(), candidates.end())
                .size(),
            64u);
  EXPECT_EQ(candidates, TileCandidates({64, 64, 64, 64}, 64, 5));
  EXPECT_EQ(TileCandidates({}, 64, 0), (std::vector<std::vector<int64_t>>{{}}));
}

TEST(OutputTileFeaturesTest, OutputListWithSumAndProduct) {
  const std::vector<float> f = OutputTileFeatures({2, 32});
  ASSERT_EQ(f.size(), static_cast<size_t>(cost_model::kTileConfigFeatures));
  std::vector<float> expected(cost_model::kTileConfigFeatures, 0.0f);
  expected[8] = 2;
  expected[9] = 32;
  expected[14] = 34;  // sum
  expected[15] = 64;  // product
  EXPECT_EQ(f, expected);
  EXPECT_EQ(OutputTileFeatures({}),
            std::vector<float>(cost_model::kTileConfigFeatures, 0.0f));
}

TEST(KernelGraphTest, OneParameterPerOutsideValue) {
  const graph::Graph graph = SmallHloGraph();
  absl::StatusOr<cost_model::FeaturizedGraph> kernel =
      KernelGraph(graph, {Id(graph, "d"), Id(graph, "e")});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  // Parameters for a, b (read by d) and c (read by e), then d and e.
  ASSERT_EQ(kernel->num_nodes, 5);
  const int32_t parameter = cost_model::TpuGraphsOpcodeId("parameter");
  const int32_t dot = cost_model::TpuGraphsOpcodeId("dot");
  EXPECT_EQ(kernel->opcodes,
            (std::vector<int32_t>{parameter, parameter, parameter, dot, dot}));
  EXPECT_EQ(kernel->edge_src, (std::vector<int32_t>{0, 1, 3, 2}));
  EXPECT_EQ(kernel->edge_dst, (std::vector<int32_t>{3, 3, 4, 4}));
  EXPECT_EQ(kernel->node_features.size(),
            static_cast<size_t>(5 * cost_model::kNodeFeatures));
  EXPECT_EQ(KernelGraph(graph, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KernelGraph(graph, {graph.num_nodes()}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TilePolicyTest, ProposesATileForEveryFusionGroup) {
  const std::string dir = WriteTileModel("propose", /*default_margin=*/0);
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      TileCostModelFactory()(dir, ReadCard(dir));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->info().kind, "cost-model-tile");
  EXPECT_FALSE((*policy)->info().tasks.placement);
  EXPECT_FALSE((*policy)->info().tasks.layout);

  const graph::Graph graph = SmallHloGraph();
  const simulator::Topology topology =
      simulator::PresetTopology("v100x4-nvlink").value();
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator sim(graph, topology, cost_model);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.fusion_group.assign(graph.num_nodes(), -1);
  plan.fusion_group[Id(graph, "e")] = 0;  // one dot per kernel
  plan.fusion_group[Id(graph, "r")] = 1;
  plan.fusion_group[Id(graph, "t")] = 1;
  absl::StatusOr<std::vector<KernelTile>> tiles =
      (*policy)->ProposeKernelTiles(sim, plan);
  ASSERT_TRUE(tiles.ok()) << tiles.status();
  ASSERT_EQ(tiles->size(), 2u);
  EXPECT_EQ((*tiles)[0].fusion_group, 0);
  EXPECT_EQ((*tiles)[0].nodes, (std::vector<int32_t>{Id(graph, "e")}));
  // Group 0's root is e, f32[64,32]: (8, 32) by default.
  EXPECT_EQ((*tiles)[0].default_output_tile, (std::vector<int64_t>{8, 32}));
  // Group 1's root is t, f32[8,4,64].
  EXPECT_EQ((*tiles)[1].default_output_tile, (std::vector<int64_t>{1, 4, 64}));
  EXPECT_EQ((*tiles)[1].candidates_scored, 64);
  for (const KernelTile& tile : *tiles) {
    EXPECT_GE(tile.predicted_gain_over_default, 0);
    EXPECT_EQ(tile.output_tile.size(), tile.default_output_tile.size());
    if (tile.output_tile == tile.default_output_tile) {
      EXPECT_EQ(tile.predicted_gain_over_default, 0);
    }
  }
  // Without fusion there is no kernel to tile.
  EXPECT_TRUE((*policy)
                  ->ProposeKernelTiles(sim, simulator::DefaultPlan(graph))
                  ->empty());
  // It decides no plan task.
  EXPECT_EQ((*policy)->Propose(sim, ProposeOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TilePolicyTest, LargeDefaultMarginKeepsTheDefault) {
  const std::string dir = WriteTileModel("margin", /*default_margin=*/10);
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      TileCostModelFactory()(dir, ReadCard(dir));
  ASSERT_TRUE(policy.ok()) << policy.status();
  const graph::Graph graph = SmallHloGraph();
  const simulator::Topology topology =
      simulator::PresetTopology("v100x4-nvlink").value();
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator sim(graph, topology, cost_model);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  plan.fusion_group.assign(graph.num_nodes(), -1);
  plan.fusion_group[Id(graph, "r")] = 4;
  plan.fusion_group[Id(graph, "t")] = 4;
  absl::StatusOr<std::vector<KernelTile>> tiles =
      (*policy)->ProposeKernelTiles(sim, plan);
  ASSERT_TRUE(tiles.ok()) << tiles.status();
  ASSERT_EQ(tiles->size(), 1u);
  EXPECT_EQ((*tiles)[0].output_tile, (*tiles)[0].default_output_tile);
  EXPECT_EQ((*tiles)[0].predicted_gain_over_default, 0);
}

TEST(TilePolicyTest, RejectsWrongCards) {
  const std::string dir = WriteTileModel("cards", /*default_margin=*/0);
  nlohmann::json card = ReadCard(dir);
  card["kind"] = "cost-model-layout";
  EXPECT_EQ(TileCostModelFactory()(dir, card).status().code(),
            absl::StatusCode::kInvalidArgument);
  card["kind"] = "cost-model-tile";
  card["decision"]["default_margin"] = -1;
  EXPECT_EQ(TileCostModelFactory()(dir, card).status().code(),
            absl::StatusCode::kInvalidArgument);
  card["decision"]["default_margin"] = 0;
  card["checkpoint"] = "missing.pt";
  EXPECT_EQ(TileCostModelFactory()(dir, card).status().code(),
            absl::StatusCode::kFailedPrecondition);  // no hash recorded
  card[kCheckpointSha256Key]["missing.pt"] = std::string(64, '0');
  EXPECT_EQ(TileCostModelFactory()(dir, card).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(TilePolicyTest, NumericCardVersionIsItsDecimalText) {
  const std::string dir = WriteTileModel("numeric_version", 0);
  nlohmann::json card = ReadCard(dir);
  card["version"] = 4;
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      TileCostModelFactory()(dir, card);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->info().version, "4");
  card["version"] = 4.5;
  EXPECT_EQ(TileCostModelFactory()(dir, card).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TilePolicyTest, ChangedCheckpointIsDataLossNamingTheFile) {
  const std::string dir = WriteTileModel("changed", /*default_margin=*/0);
  // Another valid tile model over the one the card describes.
  cost_model::CostModelOptions options;
  options.task = cost_model::Task::kTile;
  options.hidden_dim = 8;
  options.opcode_embedding_dim = 4;
  options.tile_relative_to_default = true;
  absl::StatusOr<std::unique_ptr<cost_model::CostModel>> other =
      cost_model::CostModel::Create(options, /*seed=*/4);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->Save(dir + "/model.pt").ok());
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      TileCostModelFactory()(dir, ReadCard(dir));
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(policy.status().message(), HasSubstr(dir + "/model.pt"));
}

}  // namespace
}  // namespace gopt::policy
