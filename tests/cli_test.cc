// End-to-end tests of the `gopt` binary: real files in, exit codes and
// output formats out.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

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
  const std::string dir = ::testing::TempDir();
  const std::string out_path = dir + "/gopt_cli_out.txt";
  const std::string err_path = dir + "/gopt_cli_err.txt";
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

}  // namespace
}  // namespace gopt
