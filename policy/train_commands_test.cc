#include "policy/train_commands.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/shared_data.h"

namespace gopt::policy {
namespace {

using ::testing::HasSubstr;

// gopt-train finetune on the shipped policy, small enough for a test: one
// PPO step of four samples on a 152-node real graph.
FinetuneCommandOptions SmallFinetune(const std::string& graph) {
  FinetuneCommandOptions options;
  options.policy_dir = GOPT_TEST_GO_POLICY_DIR;
  options.graph = gopt::testing::SharedDataPath(graph);
  options.topologies = {"cpu-host"};
  options.max_steps = 1;
  options.max_seconds = 300;
  options.search_simulations = 0;
  options.go.samples = 4;
  options.go.seed = 3;
  return options;
}

TEST(TrainCommandsTest, FinetuneWithMeasuredRewardsRunsPlansOnThisHost) {
  FinetuneCommandOptions options = SmallFinetune("tf_graphdef/kws_DS_CNN_S.pb");
  options.reward = "measured";
  // The start plan and one step's four samples.
  options.max_reward_measurements = 5;
  std::ostringstream out;
  absl::Status status = RunFinetune(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(out.str(), HasSubstr("(1 steps"));
  EXPECT_THAT(out.str(), HasSubstr("fine-tuned with measured rewards: "));
  EXPECT_THAT(out.str(), HasSubstr("the start plan measured "));

  // A budget below one step's samples stops PPO before the step.
  options.max_reward_measurements = 3;
  out.str("");
  status = RunFinetune(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(out.str(), HasSubstr("(0 steps"));
  EXPECT_THAT(out.str(), HasSubstr("the measurement budget was spent"));
}

TEST(TrainCommandsTest, MeasuredRewardsRefuseMoreDevicesThanTheHostRuns) {
  FinetuneCommandOptions options = SmallFinetune("tf_graphdef/kws_DS_CNN_S.pb");
  options.reward = "measured";
  options.topologies = {"a100x8-nvlink"};
  std::ostringstream out;
  const absl::Status status = RunFinetune(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("'a100x8-nvlink' has 8 devices"));
}

TEST(TrainCommandsTest, MeasuredRewardsRefuseGraphsOverTheServersLimit) {
  // 3,182 nodes: over the 2,000 gopt-server allows too.
  FinetuneCommandOptions options =
      SmallFinetune("hlo/llama2_ptxla_neuron_train_tp1.hlo");
  options.reward = "measured";
  std::ostringstream out;
  const absl::Status status = RunFinetune(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("measured rewards are for graphs of at most 2000"));
}

}  // namespace
}  // namespace gopt::policy
