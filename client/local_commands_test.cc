#include "client/local_commands.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/shared_data.h"

namespace gopt::client {
namespace {

using ::testing::HasSubstr;

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

// Current XLA's printer: stack-frame tables after the HloModule line, and
// instructions naming a frame; one of them inside a while body.
constexpr char kStackFrameModule[] = R"(HloModule jit_step

FileNames
1 "/work/train.py"
2 "/venv/site-packages/optax/_src/transform.py"

FunctionNames
1 "loss_fn"
2 "scale_by_adam.<locals>.update_fn"
3 "main"

FileLocations
1 {file_name_id=1 function_name_id=1 line=17 end_line=18 column=2 end_column=40}
2 {file_name_id=2 function_name_id=2 line=388 end_line=388 column=6 end_column=61}
3 {file_name_id=1 function_name_id=3 line=90 end_line=90 column=0 end_column=12}

StackFrames
1 {file_location_id=3 parent_frame_id=1}
2 {file_location_id=1 parent_frame_id=2}
3 {file_location_id=2 parent_frame_id=3}

%body (bp: (s32[], f32[8,8])) -> (s32[], f32[8,8]) {
  %bp = (s32[], f32[8,8]{1,0}) parameter(0)
  %bi = s32[] get-tuple-element(%bp), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%bi, %one)
  %bx = f32[8,8]{1,0} get-tuple-element(%bp), index=1
  %d = f32[8,8]{1,0} dot(%bx, %bx), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(step)/while/body/dot_general" stack_frame_id=3}
  ROOT %bt = (s32[], f32[8,8]{1,0}) tuple(%next, %d)
}

%cond (cp: (s32[], f32[8,8])) -> pred[] {
  %cp = (s32[], f32[8,8]{1,0}) parameter(0)
  %ci = s32[] get-tuple-element(%cp), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}

%scale (sp: f32[8,8]) -> f32[8,8] {
  %sp = f32[8,8]{1,0} parameter(0)
  ROOT %m = f32[8,8]{1,0} multiply(%sp, %sp), metadata={op_name="jit(step)/mul" stack_frame_id=3}
}

ENTRY %main (x: f32[8,8]) -> f32[8,8] {
  %x = f32[8,8]{1,0} parameter(0), metadata={op_name="x"}
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,8]{1,0}) tuple(%zero, %x)
  %loop = (s32[], f32[8,8]{1,0}) while(%init), condition=%cond, body=%body, metadata={op_name="jit(step)/while" stack_frame_id=2}
  %out = f32[8,8]{1,0} get-tuple-element(%loop), index=1
  %c1 = f32[8,8]{1,0} call(%out), to_apply=%scale
  ROOT %c2 = f32[8,8]{1,0} call(%c1), to_apply=%scale
}
)";

std::string WriteStackFrameModule() {
  const std::string path = ::testing::TempDir() + "/stack_frames.hlo";
  std::ofstream(path) << kStackFrameModule;
  return path;
}

TEST(LocalCommandsTest, InspectNodeShowsSourceLineFromStackFrameTables) {
  InspectOptions options;
  options.path = WriteStackFrameModule();
  options.nodes = {"loop", "d"};
  std::ostringstream out;
  ASSERT_TRUE(RunInspect(options, out).ok());
  // The while names frame 2; the dot is in the loop body, under the body's
  // name, and names the innermost frame of its stack (frame 3).
  for (const char* line :
       {"node loop\n", "  op_name                  jit(step)/while\n",
        "  source                   /work/train.py:17 (loss_fn)\n",
        "node d in body\n", "  FLOPs                    1024\n",
        "  source                   /venv/site-packages/optax/_src/"
        "transform.py:388 (scale_by_adam.<locals>.update_fn)\n"}) {
    EXPECT_THAT(out.str(), HasSubstr(line));
  }
}

TEST(LocalCommandsTest, InspectNodeJsonHasTheSourceKeys) {
  InspectOptions options;
  options.path = WriteStackFrameModule();
  options.nodes = {"d", "x"};
  options.json = true;
  std::ostringstream out;
  ASSERT_TRUE(RunInspect(options, out).ok());
  const nlohmann::json json = nlohmann::json::parse(out.str());
  ASSERT_EQ(json["node_details"].size(), 2u);
  const nlohmann::json& dot = json["node_details"][0];
  EXPECT_EQ(dot["scope"], "body");
  EXPECT_EQ(dot["kind"], "dot");
  EXPECT_EQ(dot["source_file"], "/venv/site-packages/optax/_src/transform.py");
  EXPECT_EQ(dot["function"], "scale_by_adam.<locals>.update_fn");
  EXPECT_EQ(dot["source_line"], 388);
  // A parameter with an op name and no frame has no source keys.
  const nlohmann::json& parameter = json["node_details"][1];
  EXPECT_EQ(parameter["op_name"], "x");
  EXPECT_FALSE(parameter.contains("source_file"));
  EXPECT_FALSE(parameter.contains("source_line"));
}

TEST(LocalCommandsTest, InspectNodeFindsEveryCallOfACalledInstruction) {
  InspectOptions options;
  options.path = WriteStackFrameModule();
  options.nodes = {"m"};
  options.json = true;
  std::ostringstream out;
  ASSERT_TRUE(RunInspect(options, out).ok());
  const nlohmann::json json = nlohmann::json::parse(out.str());
  ASSERT_EQ(json["node_details"].size(), 2u);
  for (const nlohmann::json& node : json["node_details"]) {
    EXPECT_NE(node["name"], "m") << "inlined under the call's name";
    EXPECT_EQ(node["op_name"], "jit(step)/mul");
    EXPECT_EQ(node["source_line"], 388);
  }
}

TEST(LocalCommandsTest, InspectUnknownNodeIsNotFoundNamingIt) {
  InspectOptions options;
  options.path = WriteStackFrameModule();
  options.nodes = {"no_such_node"};
  std::ostringstream out;
  const absl::Status status = RunInspect(options, out);
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("no node named 'no_such_node'"));
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
