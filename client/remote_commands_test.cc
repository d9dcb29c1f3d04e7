#include "client/remote_commands.h"

#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/shared_data.h"

namespace gopt::client {
namespace {

TEST(RemoteCommandsTest, RequestCarriesTasksPolicyAndBudget) {
  OptimizeRequestOptions options;
  options.path = testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  options.tasks = {"placement", "layout"};
  options.policy = "go-multitask@2";
  options.fine_tune_steps = 5;
  options.budget_seconds = 3;
  options.read.import.symbolic_dims["batch"] = 8;
  absl::StatusOr<gopt::v1::OptimizeRequest> request =
      MakeOptimizeRequest(options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_TRUE(request->tasks().placement());
  EXPECT_FALSE(request->tasks().scheduling());
  EXPECT_TRUE(request->tasks().layout());
  EXPECT_EQ(request->policy().name(), "go-multitask");
  EXPECT_EQ(request->policy().version(), "2");
  EXPECT_EQ(request->budget().mode(), gopt::v1::Budget::FINE_TUNE);
  EXPECT_EQ(request->budget().fine_tune_steps(), 5);
  EXPECT_EQ(request->topology().preset(), "v100x4-nvlink");
  EXPECT_EQ(request->options().symbolic_dims().at("batch"), 8);
}

TEST(RemoteCommandsTest, UnknownTaskIsInvalidArgument) {
  OptimizeRequestOptions options;
  options.path = testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  options.tasks = {"teleport"};
  const absl::Status status = MakeOptimizeRequest(options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("teleport"), std::string::npos);
}

TEST(RemoteCommandsTest, OptimizeInProcessThenEvaluateItsPlan) {
  OptimizeOptions optimize;
  optimize.request.path =
      testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  optimize.request.baselines_only = true;
  optimize.out_path = ::testing::TempDir() + "/maml_plan.json";
  optimize.json = true;
  std::ostringstream optimized;
  ASSERT_TRUE(RunOptimize(optimize, optimized).ok());
  const nlohmann::json response = nlohmann::json::parse(optimized.str());
  ASSERT_TRUE(response.contains("plan"));

  EvaluateOptions evaluate;
  evaluate.path = optimize.request.path;
  evaluate.plan_path = optimize.out_path;
  evaluate.json = true;
  std::ostringstream evaluated;
  ASSERT_TRUE(RunEvaluate(evaluate, evaluated).ok());
  const nlohmann::json result = nlohmann::json::parse(evaluated.str());
  EXPECT_TRUE(result.contains("stepTimeS") || result.contains("step_time_s"))
      << evaluated.str();
}

TEST(RemoteCommandsTest, ServerCommandsNeedAServer) {
  std::ostringstream out;
  EXPECT_TRUE(absl::IsInvalidArgument(RunHealth(HealthOptions{}, out)));
  EXPECT_TRUE(absl::IsInvalidArgument(RunPolicies(PoliciesOptions{}, out)));
}

}  // namespace
}  // namespace gopt::client
