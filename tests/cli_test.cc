// End-to-end tests of the `gopt` binary: real files in, exit codes and
// output formats out.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

using ::testing::HasSubstr;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

CommandResult RunGopt(const std::string& args) {
  // ctest runs tests in parallel processes: name files per test and call.
  static int calls = 0;
  const std::string prefix =
      ::testing::TempDir() + "/gopt_cli_" +
      ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
      std::to_string(getpid()) + "_" + std::to_string(calls++);
  const std::string out_path = prefix + ".out";
  const std::string err_path = prefix + ".err";
  const std::string command = std::string(GOPT_BINARY) + " " + args + " >" +
                              out_path + " 2>" + err_path;
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadAll(out_path);
  result.err = ReadAll(err_path);
  return result;
}

TEST(CliTest, InspectJsonOnEveryFormat) {
  for (const char* file :
       {"hlo/maml_flax_train_step.hlo", "onnx/light_squeezenet.onnx",
        "tf_graphdef/kws_DS_CNN_S.pb", "tfjs/movenet-multipose.json",
        "tpugraphs/op_tuning_data.pb"}) {
    const CommandResult result =
        RunGopt("inspect --json " + testing::SharedDataPath(file));
    ASSERT_EQ(result.exit_code, 0) << file << ": " << result.err;
    const nlohmann::json json = nlohmann::json::parse(result.out);
    for (const char* key : {"name", "format", "nodes", "edges", "total_flops",
                            "total_bytes", "ops", "warnings"}) {
      EXPECT_TRUE(json.contains(key)) << file << " lacks " << key;
    }
    EXPECT_GT(json["nodes"].get<int64_t>(), 0) << file;
  }
}

TEST(CliTest, InspectTableNamesTheFormat) {
  const CommandResult result = RunGopt(
      "inspect " + testing::SharedDataPath("hlo/maml_flax_train_step.hlo"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("format"));
  EXPECT_THAT(result.out, HasSubstr("hlo"));
  EXPECT_THAT(result.out, HasSubstr("op kinds:"));
}

TEST(CliTest, UnimportableFileExitsTwoWithOneLine) {
  const std::string path = ::testing::TempDir() + "/garbage.bin";
  {
    std::ofstream file(path, std::ios::binary);
    file << "\x01\x02 this is not a graph \xff\xfe";
  }
  const CommandResult result = RunGopt("inspect " + path);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr(path));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
      << result.err;
}

TEST(CliTest, MissingFileAndWrongFormatExitTwo) {
  EXPECT_EQ(RunGopt("inspect /nonexistent/model.onnx").exit_code, 2);
  const CommandResult wrong =
      RunGopt("inspect --format=onnx " +
              testing::SharedDataPath("hlo/maml_flax_train_step.hlo"));
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, HasSubstr("onnx"));
}

TEST(CliTest, UsageErrorsExitSixtyFour) {
  EXPECT_EQ(RunGopt("").exit_code, 64);
  EXPECT_EQ(RunGopt("frobnicate x").exit_code, 64);
  EXPECT_EQ(RunGopt("inspect").exit_code, 64);
  EXPECT_EQ(RunGopt("inspect --dim=batch a.onnx").exit_code, 64);
}

TEST(CliTest, ConvertWritesAGraphThatInspectReadsBack) {
  const std::string out = ::testing::TempDir() + "/squeezenet.gopt.json";
  const CommandResult convert =
      RunGopt("convert --out=" + out + " " +
              testing::SharedDataPath("onnx/light_squeezenet.onnx"));
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  const CommandResult original =
      RunGopt("inspect --json " +
              testing::SharedDataPath("onnx/light_squeezenet.onnx"));
  const CommandResult reread = RunGopt("inspect --json " + out);
  ASSERT_EQ(reread.exit_code, 0) << reread.err;
  const nlohmann::json a = nlohmann::json::parse(original.out);
  const nlohmann::json b = nlohmann::json::parse(reread.out);
  EXPECT_EQ(b["format"], "onnx");
  EXPECT_EQ(a["nodes"], b["nodes"]);
  EXPECT_EQ(a["edges"], b["edges"]);
  EXPECT_EQ(a["total_flops"], b["total_flops"]);
  EXPECT_EQ(a["total_bytes"], b["total_bytes"]);
}

TEST(CliTest, SimulateJsonReportsStepTimeAndBound) {
  const CommandResult result = RunGopt(
      "simulate --json --topology=v100x4-nvlink --method=metis+critical-path "
      "--repeat=3 " +
      testing::SharedDataPath("hlo/maml_flax_train_step.hlo"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  for (const char* key : {"step_time_s", "peak_memory_bytes", "oom",
                          "lower_bound_s", "simulation_seconds"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_GT(json["step_time_s"].get<double>(), 0);
  EXPECT_LE(json["lower_bound_s"].get<double>(),
            json["step_time_s"].get<double>());
  EXPECT_EQ(json["peak_memory_bytes"].size(), 4u);
  EXPECT_EQ(json["method"], "metis+critical-path+none+default");
}

TEST(CliTest, ChromeTraceMatchesTheSimulation) {
  const std::string trace = ::testing::TempDir() + "/maml_trace.json";
  const CommandResult result = RunGopt(
      "simulate --json --topology=v100x2-pcie --method=round-robin --trace=" +
      trace + " " + testing::SharedDataPath("hlo/maml_flax_train_step.hlo"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  const nlohmann::json events =
      nlohmann::json::parse(ReadAll(trace))["traceEvents"];
  int kernels = 0;
  int transfers = 0;
  double last_end_us = 0;
  for (const nlohmann::json& event : events) {
    if (event["ph"] != "X") continue;
    (event["cat"] == "transfer" ? transfers : kernels) += 1;
    last_end_us = std::max(
        last_end_us, event["ts"].get<double>() + event["dur"].get<double>());
  }
  EXPECT_EQ(kernels, report["kernels"].get<int>());
  EXPECT_EQ(transfers, report["transfers"].get<int>());
  EXPECT_GT(transfers, 0);
  EXPECT_NEAR(last_end_us, report["step_time_s"].get<double>() * 1e6, 1e-3);
}

TEST(CliTest, SimulateRejectsBadTopologyMethodAndPlan) {
  const std::string graph =
      testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  const CommandResult topology = RunGopt("simulate --topology=v999x3 " + graph);
  EXPECT_EQ(topology.exit_code, 2);
  EXPECT_THAT(topology.err, HasSubstr("h100x8-nvlink"));
  const CommandResult method =
      RunGopt("simulate --method=metis+psychic " + graph);
  EXPECT_EQ(method.exit_code, 2);
  EXPECT_THAT(method.err, HasSubstr("psychic"));

  const std::string short_plan = ::testing::TempDir() + "/short_plan.json";
  {
    std::ofstream file(short_plan);
    file << R"({"device": [0, 1, 0]})";
  }
  const CommandResult length =
      RunGopt("simulate --plan=" + short_plan + " " + graph);
  EXPECT_EQ(length.exit_code, 2);
  EXPECT_THAT(length.err, HasSubstr("'device' has 3 entries"));

  const std::string far_plan = ::testing::TempDir() + "/far_plan.json";
  {
    std::ofstream file(far_plan);
    file << R"({"device": [)";
    for (int i = 0; i < 121; ++i)
      file << (i == 0 ? "" : ",") << (i == 5 ? 9 : 0);
    file << "]}";
  }
  const CommandResult range =
      RunGopt("simulate --plan=" + far_plan + " " + graph);
  EXPECT_EQ(range.exit_code, 2);
  EXPECT_THAT(range.err, HasSubstr("on device 9"));
}

TEST(CliTest, CpuOnlyAudioOpOnAGpuIsRejected) {
  // One CPU and one GPU; kws_LSTM_S's audio front end is CPU-only.
  const std::string topology = ::testing::TempDir() + "/cpu_gpu.json";
  {
    std::ofstream file(topology);
    file << R"({"name": "cpu+gpu", "devices": [
      {"name": "host", "kind": "cpu", "peak_f32_flops": 1e11,
       "memory_bandwidth_bytes_per_s": 2e10, "memory_bytes": "17179869184"},
      {"name": "gpu", "kind": "gpu", "peak_f32_flops": 1.5e13,
       "memory_bandwidth_bytes_per_s": 9e11, "memory_bytes": "17179869184"}],
      "default_link": {"bandwidth_bytes_per_s": 1.2e10, "latency_s": 1e-5}})";
  }
  const std::string graph =
      testing::SharedDataPath("tf_graphdef/kws_LSTM_S.pb");
  // `single` puts everything on device 0, the CPU: valid.
  EXPECT_EQ(RunGopt("simulate --topology=" + topology + " " + graph).exit_code,
            0);
  const std::string plan = ::testing::TempDir() + "/all_gpu.json";
  {
    std::ofstream file(plan);
    file << R"({"device": [)";
    for (int i = 0; i < 117; ++i) file << (i == 0 ? "1" : ",1");
    file << "]}";
  }
  const CommandResult result = RunGopt("simulate --topology=" + topology +
                                       " --plan=" + plan + " " + graph);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("CPU-only node"));
}

TEST(CliTest, BenchJsonRowsOverFilesAndGeneratedGraphs) {
  const CommandResult result = RunGopt(
      "bench --json --topology=v100x4-nvlink --methods=single,expert,heft "
      "--graph=gen:resnet50-small," +
      testing::SharedDataPath("hlo/maml_flax_train_step.hlo"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["rows"].size(), 6u);
  EXPECT_EQ(json["graphs"].size(), 2u);
  for (const nlohmann::json& row : json["rows"]) {
    for (const char* key : {"graph", "nodes", "method", "step_time_s",
                            "peak_memory_bytes", "oom", "method_seconds"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
  }
  EXPECT_EQ(
      RunGopt("bench --methods=teleport --graph=gen:resnet50-small").exit_code,
      64);
  const CommandResult negative = RunGopt(
      "bench --methods=go-finetune --search_simulations=-1 "
      "--graph=gen:resnet50-small");
  EXPECT_EQ(negative.exit_code, 64);
  EXPECT_NE(negative.err.find("--search_simulations must be 0 or more"),
            std::string::npos)
      << negative.err;
}

TEST(CliTest, MemoryConstrainedPlacersFitWhereOneDeviceDoes) {
  // EfficientNet at batch 256 fits one 16 GB V100 (9.3 GB), but every
  // spread over four holds too many received copies: m-etf and m-sct must
  // still return a plan that fits (they fall back to one device).
  const CommandResult result = RunGopt(
      "bench --json --topology=v100x4-nvlink --methods=single,m-etf,m-sct "
      "--graph=" +
      testing::SharedDataPath("hlo/efficientnet_jax_lambda256.hlo"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["rows"].size(), 3u) << result.out;
  for (const nlohmann::json& row : json["rows"]) {
    SCOPED_TRACE(row.dump());
    EXPECT_FALSE(row.contains("error"));
    EXPECT_TRUE(row.value("valid", false));
    EXPECT_FALSE(row.value("oom", true));
  }
}

TEST(CliTest, RepeatedListFlagsAddUp) {
  // Each list flag given twice: both halves count (absl alone keeps the
  // last occurrence).
  const CommandResult result = RunGopt(
      "bench --json --topology=v100x4-nvlink --methods=single --methods "
      "expert --graph=gen:resnet50-small --graph gen:bert-small");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["graphs"].size(), 2u) << result.out;
  EXPECT_EQ(json["rows"].size(), 4u) << result.out;
}

TEST(CliTest, GenerateWritesAnImportableGraph) {
  const std::string out = ::testing::TempDir() + "/gnmt2.gopt.pb";
  const CommandResult generate =
      RunGopt("generate gnmt --layers=2 --seq=8 --batch=16 --out=" + out);
  ASSERT_EQ(generate.exit_code, 0) << generate.err;
  const CommandResult inspect = RunGopt("inspect --json " + out);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const nlohmann::json json = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(json["format"], "generated");
  EXPECT_GT(json["nodes"].get<int64_t>(), 500);
  EXPECT_EQ(RunGopt("generate alexnet --out=" + out).exit_code, 64);
  const CommandResult list = RunGopt("generate list");
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.out, HasSubstr("gnmt8-large"));
}

}  // namespace
}  // namespace gopt
