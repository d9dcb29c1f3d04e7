#include "engine/baseline_comparison.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/generators/generators.h"
#include "simulator/topology.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;

class BaselineComparisonTest : public ::testing::Test {
 protected:
  BaselineComparisonTest()
      : graph_(*simulator::generators::GenerateModelGraph(
            simulator::generators::FindGeneratorPreset("gnmt2-small")
                ->options)),
        topology_(*simulator::PresetTopology("v100x4-nvlink")),
        simulator_(graph_, topology_, cost_model_),
        context_{graph_, topology_, cost_model_, /*seed=*/0} {
    simulator::baselines::RegisterBuiltinBaselines(&registry_);
  }

  graph::Graph graph_;
  simulator::Topology topology_;
  simulator::RooflineCostModel cost_model_;
  simulator::Simulator simulator_;
  simulator::baselines::BaselineContext context_;
  simulator::baselines::BaselineRegistry registry_;
};

TEST_F(BaselineComparisonTest, BestOfEveryPlacementGroupIsTheBestBaseline) {
  BaselineComparisonOptions options;
  options.methods =
      BaselineMethodsFor(registry_, policy::TaskSet{true, false, false, false});
  ASSERT_GT(options.methods.size(), 1u);
  std::vector<int> groups_seen;
  options.on_group = [&](int groups_done,
                         const std::optional<BaselineGroupWinner>& winner) {
    groups_seen.push_back(groups_done);
    if (winner.has_value()) EXPECT_FALSE(winner->plan.method.empty());
  };
  absl::StatusOr<BaselineComparison> comparison =
      CompareBaselines(registry_, context_, simulator_, options);
  ASSERT_TRUE(comparison.ok()) << comparison.status();
  EXPECT_TRUE(comparison->stopped.ok());
  EXPECT_EQ(comparison->rows.size(), options.methods.size());
  EXPECT_EQ(static_cast<int>(groups_seen.size()),
            static_cast<int>(options.methods.size()));
  ASSERT_FALSE(comparison->best_method.empty());
  for (const simulator::baselines::BaselineTrial& row : comparison->rows) {
    if (row.valid && !row.oom) {
      EXPECT_GE(row.step_time_s, comparison->best_step_time_s) << row.method;
    }
  }
  simulator::baselines::BestBaselineOptions best_options;
  best_options.methods = options.methods;
  absl::StatusOr<simulator::baselines::BestBaselineResult> best =
      simulator::baselines::BestBaseline(registry_, context_, best_options);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(comparison->best_method, best->plan.method);
}

TEST_F(BaselineComparisonTest, UnknownMethodIsInvalidArgumentAndRunsNothing) {
  BaselineComparisonOptions options;
  options.methods = {"no-such-placer"};
  int groups = 0;
  options.on_group = [&](int, const std::optional<BaselineGroupWinner>&) {
    ++groups;
  };
  absl::StatusOr<BaselineComparison> comparison =
      CompareBaselines(registry_, context_, simulator_, options);
  EXPECT_EQ(comparison.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(comparison.status().message(), HasSubstr("no-such-placer"));
  EXPECT_EQ(groups, 0);
}

TEST_F(BaselineComparisonTest, StopKeepsWhatWasDone) {
  BaselineComparisonOptions options;
  options.methods =
      BaselineMethodsFor(registry_, policy::TaskSet{true, false, false, false});
  int asked = 0;
  options.check_stop = [&] {
    return ++asked > 1 ? absl::DeadlineExceededError("out of time")
                       : absl::OkStatus();
  };
  absl::StatusOr<BaselineComparison> comparison =
      CompareBaselines(registry_, context_, simulator_, options);
  ASSERT_TRUE(comparison.ok()) << comparison.status();
  EXPECT_EQ(comparison->stopped.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(comparison->rows.size(), options.methods.size());
}

TEST(RatioOrZeroTest, ZeroWithoutAReference) {
  EXPECT_DOUBLE_EQ(RatioOrZero(3, 2), 1.5);
  EXPECT_EQ(RatioOrZero(3, 0), 0);
}

}  // namespace
}  // namespace gopt::engine
