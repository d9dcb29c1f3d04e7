#include "client/command_line.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace gopt::client {
namespace {

// "gopt" followed by the words of `line`.
absl::StatusOr<Command> Parse(const std::string& line) {
  std::vector<std::string> args = {"gopt"};
  for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    args.emplace_back(word);
  }
  return ParseCli(args);
}

TEST(CommandLineTest, InspectTakesItsFlagsIntoItsOptions) {
  absl::StatusOr<Command> command = Parse(
      "inspect --json --dim=batch=8 --dim=seq=128 --default-dim=2 "
      "--format=onnx model.onnx");
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->name, "inspect");
  const auto& options = std::get<InspectOptions>(command->options);
  EXPECT_EQ(options.path, "model.onnx");
  EXPECT_TRUE(options.json);
  EXPECT_EQ(options.read.format, "onnx");
  EXPECT_EQ(options.read.import.default_symbolic_dim, 2);
  // Repeated --dim adds up (absl flags kept only the last).
  EXPECT_EQ(options.read.import.symbolic_dims.at("batch"), 8);
  EXPECT_EQ(options.read.import.symbolic_dims.at("seq"), 128);
}

TEST(CommandLineTest, CalibrateTakesItsFlagsAndNeedsOut) {
  absl::StatusOr<Command> command = Parse(
      "calibrate --out=host.json --executors=2 --quick "
      "--min_measure_seconds=0.5");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& options = std::get<CalibrateOptions>(command->options);
  EXPECT_EQ(options.out_path, "host.json");
  EXPECT_EQ(options.cpu_executors, 2);
  EXPECT_TRUE(options.quick);
  EXPECT_DOUBLE_EQ(options.min_measure_seconds, 0.5);
  absl::StatusOr<Command> missing = Parse("calibrate");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--out"), std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(Parse("calibrate --out=a.json extra").ok());
}

TEST(CommandLineTest, CalibrateLearnFlagsNeedLearn) {
  absl::StatusOr<Command> command = Parse(
      "calibrate --out=host.json --learn --learn_dir=d "
      "--learn_graphs=a.onnx,b.pb --held_out=c.hlo --learn_plans=15 --seed=3");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& options = std::get<CalibrateOptions>(command->options);
  EXPECT_TRUE(options.learn);
  EXPECT_EQ(options.learn_dir, "d");
  EXPECT_EQ(options.learn_graphs, (std::vector<std::string>{"a.onnx", "b.pb"}));
  EXPECT_EQ(options.held_out, std::vector<std::string>{"c.hlo"});
  EXPECT_EQ(options.learn_plans, 15);
  EXPECT_EQ(options.seed, 3u);
  absl::StatusOr<Command> without =
      Parse("calibrate --out=host.json --held_out=c.hlo");
  ASSERT_FALSE(without.ok());
  EXPECT_NE(without.status().message().find("need --learn"), std::string::npos)
      << without.status().message();
  EXPECT_FALSE(Parse("calibrate --out=h.json --learn --only=links "
                     "--topology=t.json")
                   .ok());
}

TEST(CommandLineTest, DefaultsAreTheOptionsStructsDefaults) {
  absl::StatusOr<Command> command = Parse("simulate g.hlo");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& options = std::get<SimulateOptions>(command->options);
  EXPECT_EQ(options.topology, "v100x4-nvlink");
  EXPECT_EQ(options.method, "single");
  EXPECT_EQ(options.repeat, 1);
  EXPECT_EQ(options.read.format, "auto");
  EXPECT_EQ(options.read.import.limits.max_nodes, 5'000'000);
}

TEST(CommandLineTest, AFlagOfAnotherCommandIsRefusedNamingBoth) {
  absl::StatusOr<Command> command = Parse("inspect --methods=metis g.hlo");
  ASSERT_FALSE(command.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(command.status()));
  const std::string message(command.status().message());
  EXPECT_NE(message.find("gopt inspect: --methods is not a flag of inspect"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("bench"), std::string::npos) << message;
  absl::StatusOr<Command> unknown = Parse("inspect --colour=red g.hlo");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("(no command takes it)"),
            std::string::npos)
      << unknown.status();
}

TEST(CommandLineTest, BenchListFlagsAccumulateAndOperandsComeFirst) {
  absl::StatusOr<Command> command = Parse(
      "bench a.hlo --graph=gen:resnet50-small --graph b.onnx,c.pb "
      "--methods=metis --methods=expert+critical-path,best-baseline");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& options = std::get<BenchCommandOptions>(command->options);
  EXPECT_EQ(options.sources,
            (std::vector<std::string>{"a.hlo", "gen:resnet50-small", "b.onnx",
                                      "c.pb"}));
  EXPECT_EQ(options.methods,
            (std::vector<std::string>{"metis", "expert+critical-path",
                                      "best-baseline"}));
  EXPECT_TRUE(options.go_policy.empty());  // the newest GO policy
  EXPECT_EQ(options.fine_tune_steps, 50);
  EXPECT_EQ(options.go_samples, 16);
  command = Parse("bench a.hlo --go_samples=4");
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(std::get<BenchCommandOptions>(command->options).go_samples, 4);
}

TEST(CommandLineTest, OptimizeTasksAccumulate) {
  absl::StatusOr<Command> command = Parse(
      "optimize g.hlo --tasks=placement --tasks=fusion,layout "
      "--budget-seconds=3 --policy=go@2");
  ASSERT_TRUE(command.ok()) << command.status();
  const auto& options = std::get<OptimizeOptions>(command->options);
  EXPECT_EQ(options.request.path, "g.hlo");
  EXPECT_EQ(options.request.tasks,
            (std::vector<std::string>{"placement", "fusion", "layout"}));
  EXPECT_DOUBLE_EQ(options.request.budget_seconds, 3);
  EXPECT_EQ(options.request.policy, "go@2");
  EXPECT_TRUE(options.remote.server.empty());
}

TEST(CommandLineTest, BadValuesAreRefusedBeforeAnythingRuns) {
  for (const char* line : {
           "",
           "frobnicate x",
           "inspect",
           "inspect a b",
           "inspect --dim=batch a.onnx",
           "inspect --default_dim=-1 a.onnx",
           "inspect --max_nodes=many a.onnx",
           "convert a.hlo",
           "simulate --repeat=0 a.hlo",
           "bench",
           "bench --methods=teleport --graph=gen:resnet50-small",
           "bench --search_simulations=-1 a.hlo",
           "bench --go_samples=-1 a.hlo",
           "generate alexnet --out=x.pb",
           "generate gnmt",
           "generate --preset=nonesuch --out=x.pb",
           "evaluate a.hlo b.hlo",
           "apply a.onnx --plan=p.json",
           "apply a.onnx --write=out.onnx",
           "health",
           "policies --server=h:1 extra",
           "load --server=h:1",
           "help frobnicate",
       }) {
    absl::StatusOr<Command> command = Parse(line);
    EXPECT_TRUE(absl::IsInvalidArgument(command.status()))
        << "'" << line << "': " << command.status();
  }
}

TEST(CommandLineTest, HelpPerCommand) {
  absl::StatusOr<Command> help = Parse("bench --help");
  ASSERT_TRUE(help.ok()) << help.status();
  EXPECT_EQ(std::get<HelpOptions>(help->options).command, "bench");
  std::ostringstream out;
  ASSERT_TRUE(RunCommand(*help, out).ok());
  EXPECT_NE(out.str().find("--search_simulations (default 512)"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("--tls_ca"), std::string::npos) << out.str();
  EXPECT_NE(CliHelp("").find("generate FAMILY"), std::string::npos);
  EXPECT_NE(CliHelp("health").find("--server"), std::string::npos);
  EXPECT_EQ(CliHelp("nonesuch"), "");
  absl::StatusOr<Command> overview = Parse("help");
  ASSERT_TRUE(overview.ok());
  EXPECT_EQ(std::get<HelpOptions>(overview->options).command, "");
}

TEST(CommandLineTest, ExitCodes) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("down")), 1);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("late")), 1);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("bad graph")), 2);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("no file")), 2);
  EXPECT_EQ(ExitCodeFor(absl::ResourceExhaustedError("too big")), 2);
}

}  // namespace
}  // namespace gopt::client
