#include "training/train_command_line.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

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

TEST(TrainCommandLineTest, CostModelTaskRuntimeIsTheRuntimeModelCommand) {
  absl::StatusOr<TrainCommand> command = Parse(
      "costmodel --task=runtime --data=host.runtime-data --out=m.json "
      "--held_out=a.onnx,b.pb --epochs=10");
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->name, "costmodel-runtime");
  const auto& options =
      std::get<RuntimeModelTrainCommandOptions>(command->options);
  EXPECT_EQ(options.data, "host.runtime-data");
  EXPECT_EQ(options.topology, "host.runtime-data/calibrated.json");
  EXPECT_EQ(options.out, "m.json");
  EXPECT_EQ(options.held_out, (std::vector<std::string>{"a.onnx", "b.pb"}));
  EXPECT_EQ(options.epochs, 10);
  EXPECT_FALSE(Parse("costmodel --task=runtime --data=d").ok());  // no --out
  EXPECT_FALSE(
      Parse("costmodel-runtime --data=d --out=m.json --epochs=0").ok());
}

TEST(TrainCommandLineTest, CostModelDefaultsAreTheLayoutProtocolRecipe) {
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
  EXPECT_DOUBLE_EQ(request.train.learning_rate, 0.003);
  EXPECT_DOUBLE_EQ(request.train.regression_weight, 2);
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
           "finetune --graph=a --reward=real",
           "finetune --graph=a --reward=measured "
           "--max_reward_measurements=1025",
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

TEST(TrainCommandLineTest, ExpertTakesTheSharedGoCorpusAndModelFlags) {
  absl::StatusOr<TrainCommand> command = Parse(
      "expert --out_dir=/tmp/v3 --graph=gen:transformer_xl-small "
      "--topologies=v100x4-nvlink --tasks=placement,scheduling --samples=8 "
      "--seed=7 --data_dir=d --max_nodes=600 --hidden=64 "
      "--attention_layers=1 --instances_per_round=2 --search_rounds=3 "
      "--distill_steps=5 --ppo_steps=0 --distill_learning_rate=0.01 "
      "--eval_every=4 --random_graphs=3 --random_topologies=0 "
      "--topologies_per_graph=1 --init_policy_dir=p --init_prior_factor=0.5 "
      "--rendezvous_seconds=30 --max_seconds=60 --rounds=9");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& o = std::get<ExpertCommandOptions>(command->options);
  EXPECT_EQ(o.out_dir, "/tmp/v3");
  EXPECT_EQ(o.graphs, (std::vector<std::string>{"gen:transformer_xl-small"}));
  EXPECT_EQ(o.topologies, (std::vector<std::string>{"v100x4-nvlink"}));
  EXPECT_EQ(o.go.tasks, (std::vector<std::string>{"placement", "scheduling"}));
  EXPECT_EQ(o.go.samples, 8);
  EXPECT_EQ(o.go.seed, 7u);
  EXPECT_EQ(o.data_dir, "d");
  EXPECT_EQ(o.max_nodes, 600);
  EXPECT_EQ(o.hidden, 64);
  EXPECT_EQ(o.attention_layers, 1);
  EXPECT_EQ(o.instances_per_round, 2);
  EXPECT_EQ(o.search_rounds, 3);
  EXPECT_EQ(o.distill_steps, 5);
  EXPECT_EQ(o.ppo_steps, 0);
  EXPECT_DOUBLE_EQ(o.distill_learning_rate, 0.01);
  EXPECT_EQ(o.eval_every, 4);
  EXPECT_EQ(o.random_graphs, 3);
  EXPECT_EQ(o.random_topologies, 0);
  EXPECT_EQ(o.topologies_per_graph, 1);
  EXPECT_FALSE(o.resume);
  EXPECT_EQ(o.init_policy_dir, "p");
  EXPECT_DOUBLE_EQ(o.init_prior_factor, 0.5);
  EXPECT_EQ(o.rendezvous_seconds, 30);
  EXPECT_DOUBLE_EQ(o.max_seconds, 60);
  EXPECT_EQ(o.rounds, 9);
  EXPECT_EQ(o.command_line.rfind("gopt-train expert --out_dir=/tmp/v3", 0), 0u)
      << o.command_line;
}

// Every field of an expert command's options but the command line.
std::string ExpertFields(const ExpertCommandOptions& o) {
  auto list = [](const std::vector<std::string>& items) {
    return absl::StrCat("[", absl::StrJoin(items, ","), "]");
  };
  return absl::StrCat(
      list(o.go.tasks), " ", o.go.samples, " ", o.go.epochs, " ",
      o.go.learning_rate, " ", o.go.entropy_coef, " ", o.go.simulation_threads,
      " ", o.go.torch_threads, " ", o.go.seed, " ", o.out_dir, " ", o.data_dir,
      " ", list(o.topologies), " ", list(o.graphs), " ", o.max_nodes, " ",
      o.max_seconds, " ", o.hidden, " ", o.attention_layers, " ", o.rounds, " ",
      o.instances_per_round, " ", o.search_rounds, " ", o.distill_steps, " ",
      o.ppo_steps, " ", absl::StrFormat("%.17g", o.distill_learning_rate), " ",
      o.eval_every, " ", o.random_graphs, " ", o.random_topologies, " ",
      o.topologies_per_graph, " ", o.resume, " ", o.init_policy_dir, " ",
      o.init_prior_factor, " ", o.priors_off, " ", o.fusion_weight, " ",
      o.placement_weight, " ", o.fusion_fusible_only, " ", o.relabel_to_greedy,
      " ", o.keep_best, " ", o.prior_learning_rate, " ", o.replay_targets, " ",
      list(o.validation_graphs), " ", list(o.selection_graphs), " ",
      o.keep_evaluated_checkpoints, " ",
      absl::StrFormat("%.17g", o.average_decay), " ", o.co_location_loss, " ",
      o.co_location_head, " ", o.co_location_hint_cuts, " ", o.policy_version,
      " ", o.rendezvous_seconds);
}

// A file in the test's temporary directory holding `text`.
std::string WriteRecipe(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(TrainCommandLineTest, ShippedV4RecipeIsTheCommandItsCardRecords) {
  const std::string dir =
      std::string(GOPT_SOURCE_DIR) + "/policy/pretrained/go-multitask-v4";
  std::ifstream card_file(dir + "/card.json");
  ASSERT_TRUE(card_file) << dir;
  const nlohmann::json card = nlohmann::json::parse(card_file);
  // "build/bin/gopt-train expert --out_dir=... --graph=... ..." (the flags,
  // before recipes) or "... expert --recipe=policy/.../recipe.json ..."
  // (`make pretrained-go`; the recipe's paths are the repository root's).
  std::string recorded = card["training"]["command"].get<std::string>();
  recorded = recorded.substr(recorded.find("expert"));
  const std::string kRecipe = "--recipe=";
  if (const size_t at = recorded.find(kRecipe); at != std::string::npos) {
    EXPECT_EQ(recorded.substr(at + kRecipe.size(),
                              recorded.find(' ', at) - at - kRecipe.size()),
              "policy/pretrained/go-multitask-v4/recipe.json");
    recorded.insert(at + kRecipe.size(), std::string(GOPT_SOURCE_DIR) + "/");
  }
  absl::StatusOr<TrainCommand> flags = Parse(recorded);
  ASSERT_TRUE(flags.ok()) << flags.status();
  absl::StatusOr<TrainCommand> recipe =
      Parse(absl::StrCat("expert --recipe=", dir,
                         "/recipe.json --out_dir=policy/pretrained/"
                         "go-multitask-v4"));
  ASSERT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_EQ(ExpertFields(std::get<ExpertCommandOptions>(recipe->options)),
            ExpertFields(std::get<ExpertCommandOptions>(flags->options)));
}

TEST(TrainCommandLineTest, RecipeKeysAreFlagsAndLaterFlagsOverrideThem) {
  const std::string path =
      WriteRecipe("recipe.json",
                  R"({"description": "a test", "rounds": 7, "keep_best": true,
          "distill_learning_rate": 0.0003, "topologies": ["a", "b"],
          "seed": 3, "init_policy_dir": "p"})");
  absl::StatusOr<TrainCommand> command = Parse(absl::StrCat(
      "expert --recipe=", path, " --out_dir=o --rounds=9 --topologies=c"));
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& o = std::get<ExpertCommandOptions>(command->options);
  EXPECT_EQ(o.rounds, 9);
  EXPECT_TRUE(o.keep_best);
  EXPECT_EQ(o.distill_learning_rate, 0.0003);
  EXPECT_EQ(o.topologies, (std::vector<std::string>{"c"}));
  EXPECT_EQ(o.go.seed, 3u);
  EXPECT_EQ(o.init_policy_dir, "p");
  EXPECT_NE(o.command_line.find("--recipe="), std::string::npos);
}

TEST(TrainCommandLineTest, BadRecipesAreRefusedNamingFileAndKey) {
  struct Case {
    std::string text;
    std::string expected;  // in the message
  };
  const std::vector<Case> cases = {
      {R"({"colour": 1})", "unknown key 'colour'"},
      {R"({"out_dir": "x"})", "key 'out_dir' belongs on the command line"},
      {R"({"resume": true})", "key 'resume' belongs on the command line"},
      {R"({"rounds": "many"})", "--rounds"},
      {R"({"topologies": [1]})", "key 'topologies': expected an array"},
      {R"({"topologies": ["a,b"]})", "has a comma"},
      {R"({"rounds": null})", "key 'rounds': expected a string"},
      {R"([1, 2])", "expected a JSON object"},
      {"{\n  \"rounds\": 5,\n}", "line 3"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteRecipe("bad.json", c.text);
    absl::StatusOr<TrainCommand> command =
        Parse(absl::StrCat("expert --recipe=", path, " --out_dir=o"));
    ASSERT_FALSE(command.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(command.status())) << command.status();
    EXPECT_NE(command.status().message().find(path), std::string::npos)
        << command.status();
    EXPECT_NE(command.status().message().find(c.expected), std::string::npos)
        << c.text << " -> " << command.status();
  }
  absl::StatusOr<TrainCommand> missing =
      Parse("expert --recipe=/no/such/recipe.json --out_dir=o");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/no/such/recipe.json"),
            std::string::npos)
      << missing.status();
}

TEST(TrainCommandLineTest, ExpertHelpListsRecipeKeysAfterTheFlags) {
  const std::string help = TrainCliHelp("expert");
  const size_t keys = help.find("recipe keys");
  ASSERT_NE(keys, std::string::npos) << help;
  EXPECT_LT(help.find("--out_dir"), keys);
  EXPECT_LT(help.find("--seed"), keys);
  EXPECT_GT(help.find("--priors_off"), keys);
  EXPECT_GT(help.find("--co_location_hint_cuts"), keys);
}

TEST(TrainCommandLineTest, ExpertDefaultsAndRefusals) {
  absl::StatusOr<TrainCommand> command = Parse("expert --out_dir=o");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& o = std::get<ExpertCommandOptions>(command->options);
  EXPECT_EQ(o.topologies, DefaultTrainingTopologies());
  EXPECT_TRUE(o.graphs.empty());
  EXPECT_EQ(o.instances_per_round, 4);
  EXPECT_EQ(o.search_rounds, 4);
  EXPECT_EQ(o.distill_steps, 2);
  EXPECT_EQ(o.random_graphs, 24);
  EXPECT_EQ(o.random_topologies, 8);
  EXPECT_EQ(o.data_dir, "../shared/data");
  EXPECT_FALSE(o.priors_off);
  EXPECT_EQ(o.fusion_weight, 1);
  EXPECT_EQ(o.placement_weight, 1);
  EXPECT_FALSE(o.fusion_fusible_only);
  EXPECT_TRUE(o.relabel_to_greedy);
  EXPECT_FALSE(o.co_location_loss);
  EXPECT_FALSE(o.co_location_head);
  EXPECT_FALSE(o.co_location_hint_cuts);
  EXPECT_FALSE(o.keep_best);
  EXPECT_EQ(o.replay_targets, 0);
  EXPECT_EQ(o.prior_learning_rate, 0);
  EXPECT_EQ(o.average_decay, 0);
  absl::StatusOr<TrainCommand> switches = Parse(
      "expert --out_dir=o --priors_off --fusion_weight=0.5 "
      "--placement_weight=0 "
      "--fusion_fusible_only --relabel_to_greedy=false --co_location_loss "
      "--keep_best --replay_targets=12 --prior_learning_rate=0.01 "
      "--co_location_head --co_location_hint_cuts --average_decay=0.9");
  ASSERT_TRUE(switches.ok()) << switches.status();
  const auto& s = std::get<ExpertCommandOptions>(switches->options);
  EXPECT_TRUE(s.priors_off);
  EXPECT_EQ(s.fusion_weight, 0.5);
  EXPECT_EQ(s.placement_weight, 0);
  EXPECT_TRUE(s.fusion_fusible_only);
  EXPECT_FALSE(s.relabel_to_greedy);
  EXPECT_TRUE(s.co_location_loss);
  EXPECT_TRUE(s.co_location_head);
  EXPECT_TRUE(s.co_location_hint_cuts);
  EXPECT_TRUE(s.keep_best);
  EXPECT_EQ(s.replay_targets, 12);
  EXPECT_EQ(s.prior_learning_rate, 0.01);
  EXPECT_EQ(s.average_decay, 0.9);
  for (const char* line : {
           "expert",
           "expert --out_dir=o extra",
           "expert --out_dir=o --instances_per_round=0",
           "expert --out_dir=o --eval_every=0",
           "expert --out_dir=o --search_rounds=-1",
           "expert --out_dir=o --replay_targets=-1",
           "expert --out_dir=o --prior_learning_rate=-0.1",
           "expert --out_dir=o --topologies_per_graph=0",
           "expert --out_dir=o --resume --init_policy_dir=p",
           "expert --out_dir=o --init_prior_factor=-1",
           "expert --out_dir=o --policy_dir=p",
           "expert --out_dir=o --rendezvous_seconds=0",
           "expert --out_dir=o --resume --priors_off",
           "expert --out_dir=o --fusion_weight=-1",
           "expert --out_dir=o --placement_weight=-1",
           "expert --out_dir=o --average_decay=1",
           "expert --out_dir=o --average_decay=-0.5",
           "expert --out_dir=o --co_location_hint_cuts",
       }) {
    EXPECT_TRUE(absl::IsInvalidArgument(Parse(line).status())) << line;
  }
  EXPECT_NE(Parse("expert --out_dir=o --eval_every=0")
                .status()
                .message()
                .find("--eval_every must be 1 or more, got 0"),
            std::string::npos);
  EXPECT_NE(Parse("expert --out_dir=o --co_location_hint_cuts")
                .status()
                .message()
                .find("--co_location_hint_cuts needs --co_location_head"),
            std::string::npos);
}

TEST(TrainCommandLineTest, HelpDescribesExpert) {
  std::ostringstream overview;
  absl::StatusOr<TrainCommand> help = Parse("--help");
  ASSERT_TRUE(help.ok()) << help.status();
  ASSERT_TRUE(RunTrainCommand(*help, overview).ok());
  EXPECT_NE(overview.str().find("expert --out_dir=DIR"), std::string::npos)
      << overview.str();
  absl::StatusOr<TrainCommand> command = Parse("expert --help");
  ASSERT_TRUE(command.ok()) << command.status();
  std::ostringstream out;
  ASSERT_TRUE(RunTrainCommand(*command, out).ok());
  for (const char* flag : {"--instances_per_round", "--search_rounds",
                           "--distill_steps", "--init_policy_dir", "--resume",
                           "--data_dir", "--hidden", "--samples"}) {
    EXPECT_NE(out.str().find(flag), std::string::npos) << flag << out.str();
  }
}

TEST(TrainCommandLineTest, HelpShowsARecipeNote) {
  absl::StatusOr<TrainCommand> command = Parse("costmodel-eval --help");
  ASSERT_TRUE(command.ok());
  std::ostringstream out;
  ASSERT_TRUE(RunTrainCommand(*command, out).ok());
  EXPECT_NE(out.str().find("DefaultRecipe"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("--costmodel_steps (default 6000)"),
            std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace gopt::policy
