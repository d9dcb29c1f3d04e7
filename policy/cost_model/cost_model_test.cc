#include "policy/cost_model/cost_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace gopt::policy::cost_model {
namespace {

// A layout group on a 40-node chain with 4 configurable nodes; runtime
// depends on the first configurable node's output layout.
ConfigGroup ToyLayoutGroup(int nodes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ConfigGroup group;
  group.task = Task::kLayout;
  group.graph.name = "chain";
  group.graph.num_nodes = nodes;
  group.graph.node_features.assign(nodes * kNodeFeatures, 0.0f);
  for (int n = 0; n < nodes; ++n) {
    group.graph.node_features[n * kNodeFeatures + 21] = 4 + n % 7;
    group.graph.opcodes.push_back(n % 5 == 0 ? 26 : 2);
    if (n > 0) {
      group.graph.edge_src.push_back(n - 1);
      group.graph.edge_dst.push_back(n);
    }
    if (n % 10 == 5) group.graph.configurable_nodes.push_back(n);
  }
  const int k = static_cast<int>(group.graph.configurable_nodes.size());
  for (int c = 0; c < 12; ++c) {
    std::vector<float> f(k * kLayoutConfigFeatures, -1.0f);
    const bool swapped = rng() % 2 == 0;
    f[0] = swapped ? 0 : 1;
    f[1] = swapped ? 1 : 0;
    f[kLayoutConfigFeatures] = static_cast<float>(rng() % 2);
    group.config_features.insert(group.config_features.end(), f.begin(),
                                 f.end());
    group.runtimes.push_back((swapped ? 2.0 : 1.0) + 0.01 * c);
    ++group.num_configs;
  }
  return group;
}

CostModelOptions SmallOptions() {
  CostModelOptions options;
  options.hidden_dim = 8;
  options.opcode_embedding_dim = 4;
  options.prune_hops = -1;
  return options;
}

TEST(CostModelTest, OneSegmentGstEqualsFullGraphTraining) {
  const std::vector<ConfigGroup> groups = {ToyLayoutGroup(40, 1)};
  CostModelOptions full = SmallOptions();
  CostModelOptions gst = SmallOptions();
  gst.segment_size = 1000;  // more than the graph: one segment
  TrainOptions train;
  train.steps = 20;
  train.seed = 5;
  std::vector<std::vector<double>> scores;
  for (const CostModelOptions& options : {full, gst}) {
    absl::StatusOr<std::unique_ptr<CostModel>> model =
        CostModel::Create(options, /*seed=*/7);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE((*model)->Train(groups, train).ok());
    absl::StatusOr<std::vector<double>> s = (*model)->ScoreGroup(groups[0]);
    ASSERT_TRUE(s.ok()) << s.status();
    scores.push_back(*s);
  }
  ASSERT_EQ(scores[0].size(), scores[1].size());
  for (size_t i = 0; i < scores[0].size(); ++i) {
    EXPECT_DOUBLE_EQ(scores[0][i], scores[1][i]) << i;
  }
}

TEST(CostModelTest, GstSplitsLargeGraphsAndLearns) {
  const std::vector<ConfigGroup> groups = {ToyLayoutGroup(100, 2)};
  CostModelOptions options = SmallOptions();
  options.segment_size = 30;
  absl::StatusOr<std::unique_ptr<CostModel>> model =
      CostModel::Create(options, /*seed=*/1);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::shared_ptr<const PreparedGraph>> prepared =
      (*model)->Prepare(groups[0].graph);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(CostModel::PreparedSegments(**prepared), 4);
  TrainOptions train;
  train.steps = 150;
  train.learning_rate = 5e-3;
  absl::StatusOr<TrainReport> report = (*model)->Train(groups, train);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LT(report->final_loss, report->first_loss);
}

TEST(CostModelTest, PruningKeepsConfigurableNodesAndNeighbours) {
  CostModelOptions options = SmallOptions();
  options.prune_hops = 1;
  absl::StatusOr<std::unique_ptr<CostModel>> model =
      CostModel::Create(options, /*seed=*/1);
  ASSERT_TRUE(model.ok());
  // Configurable nodes 5, 15, 25, 35 of a chain, each with 2 neighbours.
  absl::StatusOr<std::shared_ptr<const PreparedGraph>> prepared =
      (*model)->Prepare(ToyLayoutGroup(40, 1).graph);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(CostModel::PreparedNodes(**prepared), 12);
}

TEST(CostModelTest, CheckpointRoundTripKeepsScores) {
  const ConfigGroup group = ToyLayoutGroup(40, 3);
  absl::StatusOr<std::unique_ptr<CostModel>> model =
      CostModel::Create(SmallOptions(), /*seed=*/4);
  ASSERT_TRUE(model.ok());
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "cost_model_rt.pt")
          .string();
  ASSERT_TRUE((*model)->Save(path).ok());
  absl::StatusOr<std::unique_ptr<CostModel>> loaded = CostModel::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->options().ToJson(), SmallOptions().ToJson());
  absl::StatusOr<std::vector<double>> before = (*model)->ScoreGroup(group);
  absl::StatusOr<std::vector<double>> after = (*loaded)->ScoreGroup(group);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(*before, *after);
}

// The shipped layout checkpoint has layout 1 (its GraphSAGE parameters
// under sage.<l> and sage_norms.<l>): it loads, and saved again (in the
// current layout) it scores the same, bit for bit.
TEST(CostModelTest, ReadsLayoutOneCheckpointsAndSavesTheCurrentLayout) {
  const std::string shipped = std::string(GOPT_SOURCE_DIR) +
                              "/policy/pretrained/costmodel-layout-v1/model.pt";
  ASSERT_TRUE(std::filesystem::is_regular_file(shipped))
      << "missing the shipped checkpoint " << shipped;
  absl::StatusOr<std::unique_ptr<CostModel>> model = CostModel::Load(shipped);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "cost_model_v2.pt")
          .string();
  ASSERT_TRUE((*model)->Save(path).ok());
  absl::StatusOr<std::unique_ptr<CostModel>> loaded = CostModel::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const ConfigGroup group = ToyLayoutGroup(40, 3);
  absl::StatusOr<std::vector<double>> before = (*model)->ScoreGroup(group);
  absl::StatusOr<std::vector<double>> after = (*loaded)->ScoreGroup(group);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(*before, *after);
}

TEST(CostModelTest, CorruptOrMissingCheckpointIsAClearError) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "corrupt.pt").string();
  std::ofstream(path) << "definitely not a torch archive";
  absl::StatusOr<std::unique_ptr<CostModel>> corrupt = CostModel::Load(path);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(corrupt.status().message().find("cannot be read as a cost model"),
            std::string::npos)
      << corrupt.status().message();
  absl::StatusOr<std::unique_ptr<CostModel>> missing =
      CostModel::Load(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

// A tile group on a 6-node chain: config 0 is the default; runtime grows
// with the distance of feature 8 from the default's.
ConfigGroup ToyTileGroup() {
  ConfigGroup group;
  group.task = Task::kTile;
  group.graph.name = "kernel";
  group.graph.num_nodes = 6;
  group.graph.node_features.assign(6 * kNodeFeatures, 1.0f);
  for (int n = 0; n < 6; ++n) {
    group.graph.opcodes.push_back(n == 0 ? 1 : 2);
    if (n > 0) {
      group.graph.edge_src.push_back(n - 1);
      group.graph.edge_dst.push_back(n);
    }
  }
  for (int c = 0; c < 8; ++c) {
    std::vector<float> f(kTileConfigFeatures, 0.0f);
    f[8] = static_cast<float>(4 + c);
    f[9] = 8;
    f[14] = f[8] + f[9];
    f[15] = f[8] * f[9];
    group.config_features.insert(group.config_features.end(), f.begin(),
                                 f.end());
    group.runtimes.push_back(1.0 + 0.1 * c);
    ++group.num_configs;
  }
  group.default_config = 0;
  return group;
}

TEST(CostModelTest, TileRelativeToDefaultScoresAgainstTheDefault) {
  CostModelOptions options = SmallOptions();
  options.task = Task::kTile;
  options.tile_relative_to_default = true;
  absl::StatusOr<std::unique_ptr<CostModel>> model =
      CostModel::Create(options, /*seed=*/2);
  ASSERT_TRUE(model.ok()) << model.status();
  const ConfigGroup group = ToyTileGroup();
  TrainOptions train;
  train.steps = 20;
  ASSERT_TRUE((*model)->Train({group}, train).ok());
  absl::StatusOr<std::shared_ptr<const PreparedGraph>> prepared =
      (*model)->Prepare(group.graph);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const std::vector<float> default_config(
      group.config_features.begin(),
      group.config_features.begin() + kTileConfigFeatures);
  ScoreOptions score_options;
  score_options.default_tile_config = default_config;
  absl::StatusOr<std::vector<double>> with_default = (*model)->Score(
      **prepared, group.config_features, group.num_configs, score_options);
  absl::StatusOr<std::vector<double>> unknown =
      (*model)->Score(**prepared, group.config_features, group.num_configs);
  ASSERT_TRUE(with_default.ok() && unknown.ok());
  // ScoreGroup passes the group's default.
  EXPECT_EQ((*model)->ScoreGroup(group).value(), *with_default);
  EXPECT_NE(*with_default, *unknown);
  score_options.default_tile_config.assign(3, 1.0f);
  EXPECT_EQ((*model)
                ->Score(**prepared, group.config_features, group.num_configs,
                        score_options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);

  // The option survives a checkpoint; older option JSON without it reads
  // false.
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "tile_relative.pt")
          .string();
  ASSERT_TRUE((*model)->Save(path).ok());
  absl::StatusOr<std::unique_ptr<CostModel>> loaded = CostModel::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->options().tile_relative_to_default);
  EXPECT_EQ((*loaded)->ScoreGroup(group).value(), *with_default);
  nlohmann::json old = options.ToJson();
  old.erase("tile_relative_to_default");
  EXPECT_FALSE(
      CostModelOptions::FromJson(old).value().tile_relative_to_default);
}

// A layout group on a `nodes`-node chain with skip edges (i-3 -> i every
// fourth node, and one edge repeated); every fifth node is configurable and
// takes, per configuration, the default or one of two layouts, so node
// states repeat across configurations.
ConfigGroup RepeatingLayoutGroup(int nodes, int configs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ConfigGroup group;
  group.task = Task::kLayout;
  group.graph.name = "skips";
  group.graph.num_nodes = nodes;
  group.graph.node_features.assign(nodes * kNodeFeatures, 0.0f);
  for (int n = 0; n < nodes; ++n) {
    group.graph.node_features[n * kNodeFeatures + 21] = 2 + n % 5;
    group.graph.node_features[n * kNodeFeatures + 30] = n % 3;
    group.graph.opcodes.push_back(n % 4 == 0 ? 26 : 2 + n % 3);
    auto edge = [&](int src, int dst) {
      group.graph.edge_src.push_back(src);
      group.graph.edge_dst.push_back(dst);
    };
    if (n > 0) edge(n - 1, n);
    if (n >= 3 && n % 4 == 0) edge(n - 3, n);
    if (n == 7) edge(6, 7);
    if (n % 5 == 1) group.graph.configurable_nodes.push_back(n);
  }
  const int k = static_cast<int>(group.graph.configurable_nodes.size());
  for (int c = 0; c < configs; ++c) {
    std::vector<float> f(k * kLayoutConfigFeatures, -1.0f);
    for (int node = 0; node < k; ++node) {
      float* row = f.data() + node * kLayoutConfigFeatures;
      switch (rng() % 3) {
        case 0:
          break;
        case 1:
          row[0] = 1;
          row[1] = 0;
          row[6] = 0;
          row[7] = 1;
          break;
        default:
          row[0] = 0;
          row[1] = 1;
          row[12] = 1;
          row[13] = 0;
          break;
      }
    }
    group.config_features.insert(group.config_features.end(), f.begin(),
                                 f.end());
    group.runtimes.push_back(1.0 + 0.01 * c);
    ++group.num_configs;
  }
  return group;
}

// Scoring by distinct node states equals the plain forward pass up to
// float round-off, with and without pruning, with segments, and for head
// batches smaller than the distinct-state chunk.
TEST(CostModelTest, DistinctNodeStatesMatchThePlainForwardPass) {
  const ConfigGroup group =
      RepeatingLayoutGroup(/*nodes=*/60, /*configs=*/300, /*seed=*/3);
  struct Case {
    int32_t prune_hops;
    int32_t segment_size;
    int32_t batch_size;
  };
  for (const Case& c :
       {Case{-1, 0, 128}, Case{0, 0, 32}, Case{1, 0, 300}, Case{2, 25, 64}}) {
    CostModelOptions options = SmallOptions();
    options.prune_hops = c.prune_hops;
    options.segment_size = c.segment_size;
    absl::StatusOr<std::unique_ptr<CostModel>> model =
        CostModel::Create(options, /*seed=*/11);
    ASSERT_TRUE(model.ok()) << model.status();
    // Trained briefly so the weights are not the initial ones.
    TrainOptions train;
    train.steps = 5;
    ASSERT_TRUE((*model)->Train({group}, train).ok());
    absl::StatusOr<std::shared_ptr<const PreparedGraph>> prepared =
        (*model)->Prepare(group.graph);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    ScoreOptions plain;
    plain.batch_size = c.batch_size;
    plain.distinct_node_states = false;
    ScoreOptions distinct = plain;
    distinct.distinct_node_states = true;
    absl::StatusOr<std::vector<double>> expected = (*model)->Score(
        **prepared, group.config_features, group.num_configs, plain);
    absl::StatusOr<std::vector<double>> actual = (*model)->Score(
        **prepared, group.config_features, group.num_configs, distinct);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(actual.ok()) << actual.status();
    ASSERT_EQ(actual->size(), expected->size());
    for (size_t i = 0; i < expected->size(); ++i) {
      EXPECT_NEAR((*actual)[i], (*expected)[i], 1e-5)
          << "config " << i << ", hops " << c.prune_hops << ", segment "
          << c.segment_size;
    }
  }
}

TEST(CostModelTest, RejectsGroupsOfTheOtherTask) {
  CostModelOptions options = SmallOptions();
  options.task = Task::kTile;
  absl::StatusOr<std::unique_ptr<CostModel>> model =
      CostModel::Create(options, /*seed=*/1);
  ASSERT_TRUE(model.ok());
  absl::StatusOr<TrainReport> report =
      (*model)->Train({ToyLayoutGroup(40, 1)}, TrainOptions());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gopt::policy::cost_model
