#include "policy/train_command_line.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace gopt::policy {
namespace {

absl::StatusOr<TrainCommand> Parse(const std::string& line) {
  std::vector<std::string> args = {"gopt-train"};
  for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    args.emplace_back(word);
  }
  return ParseTrainCli(args);
}

TEST(TrainCommandLineTest, CostModelEvalDefaultsAreTheShippedTileRecipe) {
  absl::StatusOr<TrainCommand> command =
      Parse("costmodel-eval --task=tile --data=op.pb");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& request =
      std::get<CostModelEvalCommandOptions>(command->options).request;
  EXPECT_EQ(request.task, cost_model::Task::kTile);
  EXPECT_TRUE(request.model.tile_relative_to_default);
  EXPECT_FALSE(request.model.cross_config_attention);
  EXPECT_EQ(request.train.loss, cost_model::RankingLoss::kHingeListMle);
  EXPECT_EQ(request.train.steps, 300);
  EXPECT_EQ(request.train.seed, 0u);
  EXPECT_TRUE(request.default_margin_cv);
}

TEST(TrainCommandLineTest, CostModelDefaultsAreTheShippedLayoutRecipe) {
  absl::StatusOr<TrainCommand> command =
      Parse("costmodel --data=layout.pb --costmodel_steps=10");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& request =
      std::get<CostModelTrainCommandOptions>(command->options).request;
  EXPECT_EQ(request.model.task, cost_model::Task::kLayout);
  EXPECT_EQ(request.model.prune_hops, 1);
  EXPECT_FALSE(request.model.cross_config_attention);
  EXPECT_EQ(request.train.loss, cost_model::RankingLoss::kPairwiseHinge);
  EXPECT_DOUBLE_EQ(request.train.tie_tolerance, 0.001);
  EXPECT_DOUBLE_EQ(request.train.learning_rate, 0.005);
  EXPECT_EQ(request.train.steps, 10);  // the flag wins over the recipe
  EXPECT_EQ(request.name, "costmodel-layout");
  EXPECT_EQ(request.command,
            "gopt-train costmodel --data=layout.pb "
            "--costmodel_steps=10");
}

TEST(TrainCommandLineTest, ListFlagsReplaceTheDefaultThenAddUp) {
  absl::StatusOr<TrainCommand> command = Parse(
      "eval --graph=a.hlo --graph gen:gnmt2-small "
      "--topologies=v100x2-pcie --topologies=tpuv3x8 --tasks=placement");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& options = std::get<EvalCommandOptions>(command->options);
  EXPECT_EQ(options.graphs,
            (std::vector<std::string>{"a.hlo", "gen:gnmt2-small"}));
  EXPECT_EQ(options.topologies,
            (std::vector<std::string>{"v100x2-pcie", "tpuv3x8"}));
  EXPECT_EQ(options.go.tasks, (std::vector<std::string>{"placement"}));
  EXPECT_EQ(options.go.seed, 1u);
}

TEST(TrainCommandLineTest, FlagsOfOtherCommandsAndBadValuesAreRefused) {
  for (const char* line : {
           "",
           "frobnicate",
           "pretrain",
           "pretrain --out_dir=x --costmodel_steps=3",
           "finetune --policy_dir=p",
           "finetune --graph=a --search_simulations=-1",
           "eval",
           "costmodel",
           "costmodel --data=x --costmodel_ensemble=2",
           "costmodel-eval --data=x --task=shape",
           "costmodel-eval --data=x --costmodel_loss=l2",
           "costmodel-eval --data=x --checkpoint=m.pt --costmodel_ensemble=2",
           "card-hash extra",
       }) {
    EXPECT_TRUE(absl::IsInvalidArgument(Parse(line).status())) << line;
  }
  const absl::Status status = Parse("pretrain --out_dir=x --data=y").status();
  EXPECT_NE(status.message().find("--data is not a flag of pretrain"),
            std::string::npos)
      << status;
}

TEST(TrainCommandLineTest, HelpShowsARecipeNote) {
  absl::StatusOr<TrainCommand> command = Parse("costmodel-eval --help");
  ASSERT_TRUE(command.ok());
  std::ostringstream out;
  ASSERT_TRUE(RunTrainCommand(*command, out).ok());
  EXPECT_NE(out.str().find("ShippedRecipe"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("--costmodel_steps (default 6000)"),
            std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace gopt::policy
