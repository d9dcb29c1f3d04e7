// The gopt-server binary as operators run it: flags from GOPT_* environment
// variables, health through `gopt health`, `gopt optimize --server`, and a
// SIGTERM drain in which a request already in flight still completes.

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/optimizer_client.h"
#include "gmock/gmock.h"
#include "graph/native/graph_proto.h"
#include "gtest/gtest.h"
#include "simulator/generators/generators.h"
#include "tests/util/child_process.h"
#include "tests/util/http_get.h"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

using ::gopt::testing::ChildProcess;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;
using ::testing::Not;

// Runs the gopt CLI; returns its exit code and stdout.
int RunGopt(const std::string& args, std::string* out) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/gopt_out_", getpid(), ".txt");
  const int status = std::system(
      absl::StrCat(GOPT_BINARY, " ", args, " >", path, " 2>&1").c_str());
  std::ifstream file(path);
  out->assign(std::istreambuf_iterator<char>(file), {});
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string EmptyPolicyDir() {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/gopt_policies_", getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ServerProcessTest, EnvironmentFlagsHealthAndRemoteOptimize) {
  ChildProcess server(
      GOPT_SERVER_BINARY,
      {"--metrics_listen=127.0.0.1:0", "--policy_dir=" + EmptyPolicyDir()},
      {"GOPT_LISTEN=127.0.0.1:0", "GOPT_DRAIN_SECONDS=0",
       "GOPT_QUEUE_LENGTH=7"});
  const std::string metrics_port = server.WaitForLog("metrics on port (\\d+)");
  const std::string port = server.WaitForLog("listening on port (\\d+)");
  server.WaitForLog("\\] SERVING");
  // The binary links LibTorch; its metrics port must still serve.
  absl::StatusOr<std::string> scrape =
      gopt::testing::HttpGet(std::stoi(metrics_port), "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status() << "\n" << server.log();
  EXPECT_THAT(*scrape, HasSubstr("gopt_build_info"));
  EXPECT_THAT(server.log(), HasSubstr("--queue_length=7"));
  EXPECT_THAT(server.log(), HasSubstr("--listen=127.0.0.1:0"));
  const std::string address = "127.0.0.1:" + port;

  std::string out;
  EXPECT_EQ(RunGopt("health --server=" + address, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("SERVING"));
  EXPECT_EQ(RunGopt("policies --server=" + address, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("no policies loaded"));

  const std::string graph =
      gopt::testing::SharedDataPath("hlo/maml_flax_train_step.hlo");
  EXPECT_EQ(
      RunGopt(absl::StrCat("optimize ", graph,
                           " --topology=v100x4-nvlink --server=", address),
              &out),
      0)
      << out;
  EXPECT_THAT(out, HasSubstr("chosen: best-baseline:"));
  EXPECT_THAT(out, HasSubstr("faster than the default"));
  const std::string plan =
      absl::StrCat(::testing::TempDir(), "/plan_", getpid(), ".json");
  EXPECT_EQ(RunGopt(absl::StrCat("optimize ", graph,
                                 " --topology=v100x4-nvlink --json --out=",
                                 plan, " --server=", address),
                    &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("\"speedup_over_default\""));
  EXPECT_EQ(RunGopt(absl::StrCat("evaluate ", graph,
                                 " --topology=v100x4-nvlink --plan=", plan,
                                 " --server=", address),
                    &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("step time:"));
  EXPECT_EQ(RunGopt(absl::StrCat("optimize ", graph,
                                 " --topology=nope --server=", address),
                    &out),
            2)
      << out;

  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(), 0) << server.log();
  EXPECT_EQ(RunGopt("health --timeout=2 --server=" + address, &out), 1) << out;
}

TEST(ServerProcessTest, SigtermDrainsAndInFlightRequestCompletes) {
  ChildProcess server(GOPT_SERVER_BINARY,
                      {"--listen=127.0.0.1:0",
                       "--metrics_listen=", "--policy_dir=" + EmptyPolicyDir(),
                       "--drain_seconds=3", "--shutdown_timeout_seconds=60"},
                      {});
  const std::string port = server.WaitForLog("listening on port (\\d+)");
  server.WaitForLog("\\] SERVING");
  client::ClientOptions options;
  options.target = "127.0.0.1:" + port;
  options.max_attempts = 1;
  auto client = client::OptimizerClient::Connect(options);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(*(*client)->Health(), HealthCheckResponse::SERVING);

  // An 85k-node graph: its optimization takes seconds.
  absl::StatusOr<graph::Graph> big = simulator::generators::GenerateModelGraph(
      simulator::generators::FindGeneratorPreset("gnmt8-80k")->options);
  ASSERT_TRUE(big.ok());
  gopt::v1::OptimizeRequest request;
  *request.mutable_graph()->mutable_graph() = graph::GraphToProto(*big);
  request.mutable_topology()->set_preset("v100x4-nvlink");
  absl::StatusOr<gopt::v1::OptimizeResponse> in_flight;
  // In flight once the server reports its first stage (the import).
  absl::Notification started;
  std::thread call([&] {
    in_flight = (*client)->OptimizeStream(
        request, [&](const gopt::v1::OptimizeProgress&) {
          if (!started.HasBeenNotified()) started.Notify();
        });
  });
  started.WaitForNotification();
  server.Signal(SIGTERM);
  server.WaitForLog("health NOT_SERVING, draining");
  EXPECT_EQ(*(*client)->Health(), HealthCheckResponse::NOT_SERVING);
  call.join();
  ASSERT_TRUE(in_flight.ok()) << in_flight.status();
  EXPECT_EQ(in_flight->num_nodes(), big->num_nodes());
  EXPECT_EQ(server.Wait(), 0) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("stopped"));
}

TEST(ServerProcessTest, OptimizeRunsInProcessWithoutServer) {
  const std::string graph =
      gopt::testing::SharedDataPath("onnx/light_squeezenet.onnx");
  std::string out;
  EXPECT_EQ(
      RunGopt(absl::StrCat("optimize ", graph,
                           " --topology=v100x2-pcie --baselines_only "
                           "--tasks=placement,fusion --budget-seconds=30"),
              &out),
      0)
      << out;
  EXPECT_THAT(out, HasSubstr("default (single device)"));
  EXPECT_THAT(out, HasSubstr("chosen: best-baseline:"));
  // Scheduling not asked for: every method keeps FIFO.
  EXPECT_THAT(out, ::testing::Not(HasSubstr("critical-path")));
  EXPECT_EQ(
      RunGopt(absl::StrCat("optimize ", graph, " --tasks=teleport"), &out), 2)
      << out;
  EXPECT_THAT(out, HasSubstr("unknown task 'teleport'"));
}

TEST(ServerProcessTest, CorruptPolicyCardStopsStartup) {
  const std::string dir = EmptyPolicyDir() + "_corrupt";
  std::filesystem::create_directories(dir + "/broken");
  std::ofstream(dir + "/broken/card.json") << "{\"format_version\": 1,";
  ChildProcess server(
      GOPT_SERVER_BINARY,
      {"--listen=127.0.0.1:0", "--metrics_listen=", "--policy_dir=" + dir}, {});
  EXPECT_EQ(server.Wait(), 1);
  EXPECT_THAT(server.log(), HasSubstr("card.json is not valid JSON"));
  EXPECT_THAT(server.log(), HasSubstr("broken"));
}

TEST(ServerProcessTest, HelpListsTheServerFlags) {
  ChildProcess server(GOPT_SERVER_BINARY, {"--help"});
  server.Wait();
  EXPECT_THAT(server.log(), HasSubstr("--listen"));
  EXPECT_THAT(server.log(), HasSubstr("--workers"));
  EXPECT_THAT(server.log(), HasSubstr("default: \"0.0.0.0:50051\""));
  EXPECT_THAT(server.log(), Not(HasSubstr("No flags matched")));
}

}  // namespace
}  // namespace gopt
