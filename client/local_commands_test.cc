#include "client/local_commands.h"

#include <filesystem>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/shared_data.h"

namespace gopt::client {
namespace {

TEST(LocalCommandsTest, InspectPrintsJsonOfARealGraph) {
  InspectOptions options;
  options.path = testing::SharedDataPath("onnx/light_squeezenet.onnx");
  options.json = true;
  std::ostringstream out;
  ASSERT_TRUE(RunInspect(options, out).ok());
  const nlohmann::json json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["format"], "onnx");
  EXPECT_GT(json["nodes"].get<int64_t>(), 0);
}

TEST(LocalCommandsTest, InspectMissingFileIsNotFoundNamingIt) {
  InspectOptions options;
  options.path = "/nonexistent/model.onnx";
  std::ostringstream out;
  const absl::Status status = RunInspect(options, out);
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_NE(status.message().find(options.path), std::string::npos) << status;
  EXPECT_EQ(out.str(), "");
}

TEST(LocalCommandsTest, SimulateReportsTheMethodsPlan) {
  SimulateOptions options;
  options.path = testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  options.method = "metis+critical-path";
  options.json = true;
  std::ostringstream out;
  ASSERT_TRUE(RunSimulate(options, out).ok());
  const nlohmann::json json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["method"], "metis+critical-path+none+default");
  EXPECT_EQ(json["peak_memory_bytes"].size(), 4u);
  EXPECT_LE(json["lower_bound_s"].get<double>(),
            json["step_time_s"].get<double>());
}

TEST(LocalCommandsTest, SimulateUnknownMethodIsAnInputError) {
  SimulateOptions options;
  options.path = testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  options.method = "metis+psychic";
  std::ostringstream out;
  EXPECT_TRUE(absl::IsInvalidArgument(RunSimulate(options, out)));
}

TEST(LocalCommandsTest, BenchRowsForEveryGraphAndMethod) {
  BenchCommandOptions options;
  options.sources = {"gen:resnet50-small",
                     testing::SharedDataPath("onnx/light_squeezenet.onnx")};
  options.methods = {"single", "expert+critical-path"};
  options.json = true;
  std::ostringstream out;
  ASSERT_TRUE(RunBench(options, out).ok());
  const nlohmann::json json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["topology"], "v100x4-nvlink");
  ASSERT_EQ(json["rows"].size(), 4u);
  EXPECT_EQ(json["rows"][0]["graph"], "resnet50-small");
  EXPECT_EQ(json["rows"][2]["graph"], "light_squeezenet.onnx");
  EXPECT_DOUBLE_EQ(json["rows"][0]["ratio_to_default"].get<double>(), 1.0);
}

// Without --go_policy, bench runs the newest GO policy of --policy_dir (the
// shipped one by default); a directory without one is NotFound naming it.
TEST(LocalCommandsTest, BenchGoMethodDefaultsToTheNewestGoPolicy) {
  BenchCommandOptions options;
  options.sources = {testing::SharedDataPath("hlo/maml_flax_train_step.hlo")};
  options.methods = {"go-zeroshot"};
  options.json = true;
  std::ostringstream out;
  const absl::Status status = RunBench(options, out);
  ASSERT_TRUE(status.ok()) << status;
  const nlohmann::json json = nlohmann::json::parse(out.str());
  ASSERT_EQ(json["rows"].size(), 1u);
  EXPECT_EQ(json["rows"][0]["method"], "go-zeroshot");

  options.policy_dir = ::testing::TempDir() + "/no_go_policy";
  std::filesystem::create_directories(options.policy_dir);
  std::ostringstream ignored;
  const absl::Status missing = RunBench(options, ignored);
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_NE(missing.message().find("no policy of kind 'go'"), std::string::npos)
      << missing;
}

TEST(LocalCommandsTest, GenerateWritesAGraphInspectReadsBack) {
  GenerateOptions generate;
  generate.family = "gnmt";
  generate.layers = 2;
  generate.seq = 8;
  generate.batch = 16;
  generate.out_path = ::testing::TempDir() + "/gnmt2.gopt.pb";
  std::ostringstream ignored;
  ASSERT_TRUE(RunGenerate(generate, ignored).ok());
  InspectOptions inspect;
  inspect.path = generate.out_path;
  inspect.json = true;
  std::ostringstream out;
  ASSERT_TRUE(RunInspect(inspect, out).ok());
  // The native format keeps the graph's origin.
  EXPECT_EQ(nlohmann::json::parse(out.str())["format"], "generated");
}

TEST(LocalCommandsTest, GenerateListNamesFamiliesAndPresets) {
  GenerateOptions options;
  options.family = "list";
  std::ostringstream out;
  ASSERT_TRUE(RunGenerate(options, out).ok());
  EXPECT_NE(out.str().find("families: "), std::string::npos);
  EXPECT_NE(out.str().find("resnet50-small"), std::string::npos);
}

}  // namespace
}  // namespace gopt::client
