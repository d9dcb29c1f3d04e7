#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "policy/cost_model/cost_model.h"
#include "policy/cost_model/metrics.h"

namespace gopt::policy::cost_model {
namespace {

TEST(MetricsTest, KendallTauOfKnownOrders) {
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(KendallTau({4, 3, 2, 1}, {10, 20, 30, 40}), -1.0);
  // One discordant pair of six: (5 - 1) / 6.
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 4, 3}, {10, 20, 30, 40}), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(KendallTau({1}, {1}), 0.0);
}

TEST(MetricsTest, TopKSlowdown) {
  const std::vector<double> runtimes = {100, 110, 200, 150};
  // The model ranks config 2 first, then 3, then 1.
  const std::vector<double> predicted = {9, 3, 1, 2};
  EXPECT_DOUBLE_EQ(TopKSlowdown(predicted, runtimes, 1), 1.0);
  EXPECT_DOUBLE_EQ(TopKSlowdown(predicted, runtimes, 3), 0.1);
  EXPECT_DOUBLE_EQ(TopKSlowdown(predicted, runtimes, 5), 0.0);
  // Random top-1: the mean slowdown (0 + 0.1 + 1 + 0.5) / 4.
  EXPECT_NEAR(RandomTopKSlowdown(runtimes, 1), 1.6 / 4, 1e-12);
  EXPECT_NEAR(RandomTopKSlowdown(runtimes, 4), 0.0, 1e-12);
  // Best of 3 of 4: misses config 0 only when the subset is {1, 2, 3}.
  EXPECT_NEAR(RandomTopKSlowdown(runtimes, 3), 0.1 / 4, 1e-12);
}

TEST(MetricsTest, DefaultMarginLowersOnlyTheDefault) {
  EXPECT_EQ(WithDefaultMargin({0.0, -0.03}, /*default_config=*/0, 0.05),
            (std::vector<double>{-0.05, -0.03}));
  EXPECT_EQ(WithDefaultMargin({0.0, -0.03}, /*default_config=*/-1, 0.05),
            (std::vector<double>{0.0, -0.03}));
}

TEST(MetricsTest, ChooseDefaultMarginPrefersTheLargestBestMargin) {
  // Group 0: the model predicts a 0.2 gain and it is real (2x faster).
  // Group 1: it predicts a 0.04 gain that is a loss (1.5x slower). Margins
  // 0.05 .. 0.15 get both right; the largest of them wins the tie.
  const std::vector<std::vector<double>> scores = {{0.0, -0.2}, {0.0, -0.04}};
  const std::vector<std::vector<double>> runtimes = {{1.0, 0.5}, {1.0, 1.5}};
  EXPECT_DOUBLE_EQ(ChooseDefaultMargin(scores, runtimes, {0, 0}), 0.15);
  // Only group 1: never leave the default.
  EXPECT_DOUBLE_EQ(ChooseDefaultMargin({scores[1]}, {runtimes[1]}, {0}),
                   DefaultMarginGrid().back());
  EXPECT_DOUBLE_EQ(ChooseDefaultMargin({}, {}, {}), DefaultMarginGrid().back());
}

TEST(RankingLossTest, PairwiseHingeIsZeroOnlyForTheRightOrderWithMargin) {
  const std::vector<double> runtimes = {1, 2, 3};
  EXPECT_DOUBLE_EQ(PairwiseHingeLossValue({0, 1, 2}, runtimes, 0.5), 0.0);
  // Reversed: gaps -1, -2, -1 -> violations 1.5, 2.5, 1.5 over 3 pairs.
  EXPECT_DOUBLE_EQ(PairwiseHingeLossValue({2, 1, 0}, runtimes, 0.5), 5.5 / 3);
  // Right order but inside the margin.
  EXPECT_DOUBLE_EQ(PairwiseHingeLossValue({0, 0.25, 0.5}, runtimes, 0.5),
                   (0.25 + 0.25 + 0.0) / 3);
}

TEST(RankingLossTest, ListMleMatchesPlackettLuce) {
  // Two configs, config 1 faster: -log(e^{-s1} / (e^{-s0} + e^{-s1})),
  // averaged with the last position's zero term.
  const double s0 = 0.3;
  const double s1 = -0.2;
  const double expected = (std::log(std::exp(-s0) + std::exp(-s1)) + s1) / 2.0;
  EXPECT_NEAR(ListMleLossValue({s0, s1}, {2, 1}), expected, 1e-12);
  EXPECT_LT(ListMleLossValue({0, 1, 2}, {1, 2, 3}),
            ListMleLossValue({2, 1, 0}, {1, 2, 3}));
}

// A toy tile data set with a known order: on a 4-node chain, runtime grows
// with the first output tile bound and shrinks with the second.
std::vector<ConfigGroup> ToyTileGroups(int groups, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> bound(1, 16);
  std::vector<ConfigGroup> out;
  for (int g = 0; g < groups; ++g) {
    ConfigGroup group;
    group.task = Task::kTile;
    group.graph.name = "toy" + std::to_string(g);
    group.graph.num_nodes = 4;
    group.graph.node_features.assign(4 * kNodeFeatures, 0.0f);
    for (int n = 0; n < 4; ++n) {
      group.graph.node_features[n * kNodeFeatures + 21] = 8.0f * (g + 1);
    }
    group.graph.opcodes = {63, 2, 59, 41};
    group.graph.edge_src = {0, 1, 2};
    group.graph.edge_dst = {1, 2, 3};
    for (int c = 0; c < 24; ++c) {
      std::vector<float> f(kTileConfigFeatures, 0.0f);
      f[8] = static_cast<float>(bound(rng));
      f[9] = static_cast<float>(bound(rng));
      group.config_features.insert(group.config_features.end(), f.begin(),
                                   f.end());
      group.runtimes.push_back(100.0 + 10 * f[8] - 4 * f[9]);
      ++group.num_configs;
    }
    out.push_back(std::move(group));
  }
  return out;
}

void ExpectLearnsToyOrder(RankingLoss loss) {
  CostModelOptions options;
  options.task = Task::kTile;
  options.hidden_dim = 16;
  options.opcode_embedding_dim = 4;
  options.cross_config_attention = false;
  absl::StatusOr<std::unique_ptr<CostModel>> model =
      CostModel::Create(options, /*seed=*/3);
  ASSERT_TRUE(model.ok()) << model.status();
  TrainOptions train;
  train.loss = loss;
  train.steps = 250;
  train.learning_rate = 5e-3;
  train.seed = 3;
  absl::StatusOr<TrainReport> report =
      (*model)->Train(ToyTileGroups(4, /*seed=*/1), train);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LT(report->final_loss, report->first_loss);
  for (const ConfigGroup& group : ToyTileGroups(2, /*seed=*/2)) {
    absl::StatusOr<std::vector<double>> scores = (*model)->ScoreGroup(group);
    ASSERT_TRUE(scores.ok()) << scores.status();
    EXPECT_GT(KendallTau(*scores, group.runtimes), 0.8) << group.graph.name;
  }
}

TEST(RankingLossTest, PairwiseHingeTrainingRecoversAKnownOrder) {
  ExpectLearnsToyOrder(RankingLoss::kPairwiseHinge);
}

TEST(RankingLossTest, ParsesAndNamesEveryLoss) {
  for (RankingLoss loss : {RankingLoss::kPairwiseHinge, RankingLoss::kListMle,
                           RankingLoss::kHingeListMle}) {
    EXPECT_EQ(ParseRankingLoss(RankingLossName(loss)).value(), loss);
  }
  EXPECT_FALSE(ParseRankingLoss("mse").ok());
}

TEST(RankingLossTest, ListMleTrainingRecoversAKnownOrder) {
  ExpectLearnsToyOrder(RankingLoss::kListMle);
}

}  // namespace
}  // namespace gopt::policy::cost_model
