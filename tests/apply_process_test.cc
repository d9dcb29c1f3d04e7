// gopt's decisions written into the caller's own file, end to end with the
// real binaries: `gopt optimize FILE --write=OUT` on a real file of each
// exportable format, then `gopt evaluate OUT` without --plan; `gopt apply`
// with the saved plan; and OptimizeRequest.return_graph over real gRPC
// against a gopt-server on a loopback port, including its message limit.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/optimizer_client.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/child_process.h"
#include "tests/util/shared_data.h"
#include "tpu_graphs/tuning.pb.h"

namespace gopt {
namespace {

using ::gopt::testing::ChildProcess;
using ::testing::HasSubstr;

constexpr char kTopology[] = "v100x4-nvlink";
// Step times of a written file agree with the answer's to this relative
// difference: every format gives back the graph and the plan it was written
// from (HLO fusion instructions unfold on import), so the simulation is the
// same computation; the margin only allows for the JSON printing of the
// two step times.
constexpr double kRelative = 1e-9;

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

void WriteAll(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

// A path in the test's temporary folder, unique per process (ctest runs
// tests in parallel).
std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/apply_", getpid(), "_", name);
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult RunGopt(const std::string& args) {
  static int calls = 0;
  const std::string prefix = TempPath(absl::StrCat("call", calls++));
  const int status = std::system(absl::StrCat(GOPT_BINARY, " ", args, " >",
                                              prefix, ".out 2>", prefix, ".err")
                                     .c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadAll(prefix + ".out");
  result.err = ReadAll(prefix + ".err");
  return result;
}

// A real file of one exportable format.
struct FormatCase {
  std::string format;
  std::string path;
};

// One small real file per format that has an exporter. The HloModuleProto
// is the module inside the TpuGraphs layout file, and the gopt.v1.Graph is
// squeezenet converted by `gopt convert`.
std::vector<FormatCase> ExportableFiles() {
  std::vector<FormatCase> cases = {
      {"hlo", testing::SharedDataPath("hlo/maml_flax_train_step.hlo")},
      {"onnx", testing::SharedDataPath("onnx/light_squeezenet.onnx")},
      {"graphdef", testing::SharedDataPath("tf_graphdef/kws_DS_CNN_S.pb")},
      {"tfjs", testing::SharedDataPath("tfjs/movenet-multipose.json")},
  };
  tpu_graphs::ModuleTuningData data;
  EXPECT_TRUE(data.ParseFromString(
      testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb")));
  const std::string module = TempPath("unet.hlo.pb");
  WriteAll(module, data.module().SerializeAsString());
  cases.push_back({"hlo-proto", module});
  const std::string native = TempPath("squeezenet.gopt.pb");
  const CommandResult convert = RunGopt(
      absl::StrCat("convert --out=", native, " ",
                   testing::SharedDataPath("onnx/light_squeezenet.onnx")));
  EXPECT_EQ(convert.exit_code, 0) << convert.err;
  cases.push_back({"gopt", native});
  return cases;
}

TEST(ApplyProcessTest, WrittenFileEvaluatesToTheOptimizeStepTime) {
  for (const FormatCase& c : ExportableFiles()) {
    SCOPED_TRACE(c.format);
    const std::string plan = TempPath(c.format + ".plan.json");
    const std::string written = TempPath(c.format + ".written");
    const CommandResult optimize = RunGopt(
        absl::StrCat("optimize ", c.path, " --topology=", kTopology,
                     " --baselines_only --store=skip --json --out=", plan,
                     " --write=", written));
    ASSERT_EQ(optimize.exit_code, 0) << optimize.err;
    const nlohmann::json answer = nlohmann::json::parse(optimize.out);
    EXPECT_EQ(answer["optimized_graph_format"], c.format);
    const double step_time = answer["step_time_s"].get<double>();
    EXPECT_GT(step_time, 0);

    const CommandResult evaluate = RunGopt(absl::StrCat(
        "evaluate ", written, " --topology=", kTopology, " --json"));
    ASSERT_EQ(evaluate.exit_code, 0) << evaluate.err;
    EXPECT_NEAR(
        nlohmann::json::parse(evaluate.out)["step_time_s"].get<double>(),
        step_time, kRelative * step_time);

    // The saved plan applied later gives the same file.
    const std::string applied = TempPath(c.format + ".applied");
    const CommandResult apply =
        RunGopt(absl::StrCat("apply ", c.path, " --topology=", kTopology,
                             " --plan=", plan, " --write=", applied));
    ASSERT_EQ(apply.exit_code, 0) << apply.err;
    EXPECT_THAT(apply.out, HasSubstr("wrote " + applied));
    EXPECT_TRUE(ReadAll(applied) == ReadAll(written))
        << "apply and optimize --write wrote different files";
  }
}

TEST(ApplyProcessTest, TpuGraphsFileHasNoExportAndSaysWhy) {
  const CommandResult optimize = RunGopt(absl::StrCat(
      "optimize ", testing::SharedDataPath("tpugraphs/op_tuning_data.pb"),
      " --topology=", kTopology,
      " --baselines_only --store=skip --write=", TempPath("tile.written")));
  EXPECT_EQ(optimize.exit_code, 2) << optimize.out;
  EXPECT_THAT(optimize.err, HasSubstr("no exporter writes format 'tpugraphs'"));
  EXPECT_THAT(optimize.err, HasSubstr("not an input a compiler reads"));
}

std::string EmptyPolicyDir() {
  const std::string dir = TempPath("policies");
  std::filesystem::create_directories(dir);
  return dir;
}

// A gopt-server on a free loopback port with `max_message_bytes`.
class Server {
 public:
  explicit Server(int64_t max_message_bytes)
      : process_(GOPT_SERVER_BINARY,
                 {"--listen=127.0.0.1:0",
                  "--metrics_listen=", "--policy_dir=" + EmptyPolicyDir(),
                  "--drain_seconds=0", "--workers=in-process",
                  absl::StrCat("--max_message_bytes=", max_message_bytes)}) {
    port_ = process_.WaitForLog("listening on port (\\d+)");
    process_.WaitForLog("\\] SERVING");
  }

  absl::StatusOr<gopt::v1::OptimizeResponse> Optimize(
      const std::string& contents) {
    client::ClientOptions options;
    options.target = "127.0.0.1:" + port_;
    options.max_attempts = 1;
    absl::StatusOr<std::unique_ptr<client::OptimizerClient>> client =
        client::OptimizerClient::Connect(options);
    if (!client.ok()) return client.status();
    gopt::v1::OptimizeRequest request;
    request.mutable_graph()->set_serialized(contents);
    request.mutable_topology()->set_preset(kTopology);
    request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
    request.set_store(gopt::v1::OptimizeRequest::SKIP);
    request.set_return_graph(true);
    return (*client)->Optimize(request);
  }

  std::string log() { return process_.log(); }

 private:
  ChildProcess process_;
  std::string port_;
};

TEST(ApplyProcessTest, ReturnGraphOverGrpcImportsBackWithTheSamePlan) {
  Server server(/*max_message_bytes=*/32 << 20);
  for (const char* file :
       {"hlo/maml_flax_train_step.hlo", "onnx/light_squeezenet.onnx"}) {
    SCOPED_TRACE(file);
    const std::string path = testing::SharedDataPath(file);
    absl::StatusOr<gopt::v1::OptimizeResponse> response =
        server.Optimize(ReadAll(path));
    ASSERT_TRUE(response.ok()) << response.status() << "\n" << server.log();
    ASSERT_FALSE(response->optimized_graph().empty());
    const std::string returned = TempPath("returned");
    WriteAll(returned, response->optimized_graph());

    // The bytes import back, carry the response's plan and simulate to its
    // step time.
    const CommandResult evaluate = RunGopt(absl::StrCat(
        "evaluate ", returned, " --topology=", kTopology, " --json"));
    ASSERT_EQ(evaluate.exit_code, 0) << evaluate.err;
    EXPECT_NEAR(
        nlohmann::json::parse(evaluate.out)["step_time_s"].get<double>(),
        response->step_time_s(), kRelative * response->step_time_s());
    // The same plan applied locally writes the same bytes.
    const std::string plan = TempPath("returned.plan.json");
    std::string plan_json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(response->plan(),
                                                            &plan_json)
                    .ok());
    WriteAll(plan, plan_json);
    const std::string applied = TempPath("returned.applied");
    const CommandResult apply =
        RunGopt(absl::StrCat("apply ", path, " --topology=", kTopology,
                             " --plan=", plan, " --write=", applied));
    ASSERT_EQ(apply.exit_code, 0) << apply.err;
    EXPECT_TRUE(ReadAll(applied) == response->optimized_graph());
  }
}

TEST(ApplyProcessTest, ReturnGraphOverTheMessageLimitIsResourceExhausted) {
  const std::string contents =
      testing::ReadSharedData("hlo/maml_flax_train_step.hlo");
  // Room for the request, not for an answer that carries the file again
  // with decisions in it (and the plan, and a decision per instruction).
  const int64_t limit = static_cast<int64_t>(contents.size()) + 4096;
  Server server(limit);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      server.Optimize(contents);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted)
      << response.status() << "\n"
      << server.log();
  EXPECT_THAT(response.status().message(),
              HasSubstr(absl::StrCat("message limit of ", limit, " bytes")));
  EXPECT_THAT(response.status().message(), HasSubstr("--max_message_bytes"));
}

TEST(ApplyProcessTest, TpuGraphsReturnGraphIsUnimplementedOverGrpc) {
  Server server(/*max_message_bytes=*/32 << 20);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      server.Optimize(testing::ReadSharedData("tpugraphs/op_tuning_data.pb"));
  ASSERT_EQ(response.status().code(), absl::StatusCode::kUnimplemented)
      << response.status();
  EXPECT_THAT(response.status().message(),
              HasSubstr("dataset of measured compiler configurations"));
}

}  // namespace
}  // namespace gopt
