// The checkpoints shipped in policy/pretrained, served for real: gopt-server
// (in-process, real gRPC on a loopback port) loads them the way it does at
// start, lists them, and answers Optimize on real graphs with the GO
// policy's and the layout model's own results beside the baselines', and
// the tile model's tile sizes for the answer's fused kernels. A copy whose
// weights were changed after its card was made is refused at load, as
// gopt-server refuses to start with it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/optimizer_client.h"
#include "engine/builtin_policies.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "policy/card.h"
#include "server/metrics.h"
#include "server/server.h"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

using ::testing::HasSubstr;

constexpr char kPolicyDir[] = GOPT_SOURCE_DIR "/policy/pretrained";

class ShippedPoliciesTest : public ::testing::Test {
 protected:
  // Failures here are recorded rather than asserted: gtest reports the
  // tests of a suite whose set-up asserted as skipped, and ctest counts a
  // skipped test as passed. SetUp fails every test instead.
  static void SetUpTestSuite() {
    metrics_ = new server::Metrics("test", "test");
    server::ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.threads = 2;
    auto started = server::OptimizerServer::Start(options, metrics_);
    if (!started.ok()) {
      setup_error_ = new std::string(started.status().ToString());
      return;
    }
    server_ = started->release();
    auto policies = engine::LoadBuiltinPolicies(kPolicyDir);
    if (!policies.ok()) {
      setup_error_ = new std::string(policies.status().ToString());
      return;
    }
    server_->SetEngine(std::make_shared<engine::Engine>(engine::EngineOptions(),
                                                        *std::move(policies)));
    client::ClientOptions client_options;
    client_options.target = absl::StrCat("127.0.0.1:", server_->port());
    client_options.timeout = absl::Seconds(300);
    auto client = client::OptimizerClient::Connect(client_options);
    if (!client.ok()) {
      setup_error_ = new std::string(client.status().ToString());
      return;
    }
    client_ = client->release();
  }

  void SetUp() override {
    ASSERT_EQ(setup_error_, nullptr)
        << "starting gopt-server with the shipped policies: " << *setup_error_;
  }

  static void TearDownTestSuite() {
    delete client_;
    if (server_ != nullptr) server_->Shutdown(absl::Now() + absl::Seconds(5));
    delete server_;
    delete metrics_;
  }

  static gopt::v1::OptimizeRequest Request(const std::string& relative_path) {
    gopt::v1::OptimizeRequest request;
    auto graph = client::GraphInputFromFile(
        gopt::testing::SharedDataPath(relative_path), "");
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (graph.ok()) *request.mutable_graph() = *std::move(graph);
    request.mutable_topology()->set_preset("v100x4-nvlink");
    request.mutable_options()->set_seed(1);
    return request;
  }

  static server::Metrics* metrics_;
  static server::OptimizerServer* server_;
  static client::OptimizerClient* client_;
  static std::string* setup_error_;
};

server::Metrics* ShippedPoliciesTest::metrics_ = nullptr;
server::OptimizerServer* ShippedPoliciesTest::server_ = nullptr;
client::OptimizerClient* ShippedPoliciesTest::client_ = nullptr;
std::string* ShippedPoliciesTest::setup_error_ = nullptr;

TEST_F(ShippedPoliciesTest, ListPoliciesShowsTheShippedCheckpoints) {
  ASSERT_NE(client_, nullptr);
  auto response = client_->ListPolicies();
  ASSERT_TRUE(response.ok()) << response.status();
  std::string kinds;
  for (const auto& policy : response->policies()) {
    kinds += policy.name() + "@" + policy.version() + ":" + policy.kind() + " ";
  }
  // v4 is served (the highest version); v2 stays, reachable by name@2.
  EXPECT_THAT(kinds, HasSubstr("go-multitask@4:go"));
  EXPECT_THAT(kinds, HasSubstr("go-multitask@2:go"));
  EXPECT_THAT(kinds, HasSubstr("costmodel-layout@1:cost-model-layout"));
  EXPECT_THAT(kinds, HasSubstr("costmodel-tile@1:cost-model-tile"));
}

TEST_F(ShippedPoliciesTest, FusedKernelsGetTileSizesFromTheTileModel) {
  ASSERT_NE(client_, nullptr);
  auto response = client_->Optimize(Request("hlo/maml_flax_train_step.hlo"));
  ASSERT_TRUE(response.ok()) << response.status();
  std::set<int32_t> groups;
  for (int32_t group : response->plan().fusion_group()) {
    if (group >= 0) groups.insert(group);
  }
  ASSERT_FALSE(groups.empty()) << "the answer fuses nothing";
  ASSERT_EQ(response->kernel_tiles_size(),
            static_cast<int>(std::min<size_t>(groups.size(), 256)));
  for (const gopt::v1::KernelTile& tile : response->kernel_tiles()) {
    EXPECT_EQ(tile.policy(), "costmodel-tile");
    EXPECT_TRUE(groups.count(tile.fusion_group())) << tile.fusion_group();
    EXPECT_GT(tile.nodes_size(), 0);
    for (int32_t node : tile.nodes()) {
      EXPECT_EQ(response->plan().fusion_group(node), tile.fusion_group());
    }
    EXPECT_GT(tile.candidates_scored(), 0);
    EXPECT_EQ(tile.output_tile_size(), tile.default_output_tile_size());
    EXPECT_GE(tile.predicted_gain_over_default(), 0);
    if (tile.predicted_gain_over_default() == 0) {
      EXPECT_THAT(tile.output_tile(),
                  ::testing::ElementsAreArray(tile.default_output_tile()));
    }
  }
}

TEST_F(ShippedPoliciesTest, OptimizeRunsTheGoPolicyOnARealHloGraph) {
  ASSERT_NE(client_, nullptr);
  auto response = client_->Optimize(Request("hlo/maml_flax_train_step.hlo"));
  ASSERT_TRUE(response.ok()) << response.status();
  int go_runs = 0;
  for (const auto& result : response->policy_results()) {
    if (absl::StartsWith(result.method(), "go")) {
      ++go_runs;
      EXPECT_EQ(result.version(), "4");
      EXPECT_TRUE(result.valid()) << result.error();
      EXPECT_GT(result.step_time_s(), 0);
      // The zero-shot decode that won is named (go/fine_tuning.h).
      EXPECT_FALSE(result.zero_shot_decode().empty());
    }
  }
  // One GO run: the newest go-multitask (v4), not one per shipped version.
  EXPECT_EQ(go_runs, 1) << response->DebugString();
  // Never slower than the default plan, whoever wins.
  EXPECT_LE(response->step_time_s(), response->default_step_time_s());
  EXPECT_GT(response->policy_inference_seconds(), 0);
}

TEST_F(ShippedPoliciesTest, LayoutTaskRunsTheLayoutModel) {
  ASSERT_NE(client_, nullptr);
  gopt::v1::OptimizeRequest request = Request("hlo/maml_flax_train_step.hlo");
  request.mutable_tasks()->set_placement(true);
  request.mutable_tasks()->set_scheduling(true);
  request.mutable_tasks()->set_fusion(true);
  request.mutable_tasks()->set_layout(true);
  auto response = client_->Optimize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  bool layout_ran = false;
  for (const auto& result : response->policy_results()) {
    if (absl::StrContains(result.method(), "costmodel-layout")) {
      layout_ran = true;
      EXPECT_TRUE(result.valid()) << result.error();
    }
  }
  EXPECT_TRUE(layout_ran) << response->DebugString();
  // The model reports what it searched, whether or not it changed a layout.
  bool reported = false;
  for (const std::string& warning : response->warnings()) {
    if (absl::StrContains(warning, "configurable nodes")) reported = true;
  }
  EXPECT_TRUE(reported) << response->DebugString();
}

// gopt-server loads its policies with LoadBuiltinPolicies and exits when
// that fails (server/main.cc), so a tampered checkpoint stops the server
// from starting, with this message in its log.
TEST(ShippedPoliciesIntegrityTest, ChangedCheckpointIsRefusedNamingTheFile) {
  const std::filesystem::path copy =
      std::filesystem::path(::testing::TempDir()) / "tampered_pretrained";
  std::filesystem::remove_all(copy);
  std::filesystem::copy(kPolicyDir, copy,
                        std::filesystem::copy_options::recursive);
  const std::filesystem::path checkpoint =
      copy / "costmodel-layout-v1" / "model.pt";
  {
    // One byte changed in the middle of the tensors.
    std::fstream file(checkpoint,
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::filesystem::file_size(checkpoint) / 2);
    file.put('\x7f');
  }
  auto policies = engine::LoadBuiltinPolicies(copy.string());
  ASSERT_FALSE(policies.ok());
  EXPECT_EQ(policies.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(policies.status().message(), HasSubstr(checkpoint.string()));
  EXPECT_THAT(policies.status().message(), HasSubstr("sha256"));
}

// Every shipped card records the hash of its checkpoint, and each one
// matches (the shipped policies load: ShippedPoliciesTest above).
TEST(ShippedPoliciesIntegrityTest, EveryCardRecordsItsCheckpointHash) {
  int cards = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kPolicyDir)) {
    const std::filesystem::path card_path = entry.path() / "card.json";
    if (!std::filesystem::exists(card_path)) continue;
    ++cards;
    std::ifstream in(card_path);
    const nlohmann::json card = nlohmann::json::parse(in);
    ASSERT_TRUE(card.contains("checkpoint_sha256")) << card_path;
    EXPECT_TRUE(card["checkpoint_sha256"].contains(
        card["checkpoint"].get<std::string>()))
        << card_path;
    EXPECT_TRUE(card.contains("checkpoint_sha256_recorded_by")) << card_path;
  }
  // go-multitask-v2, go-multitask-v4, costmodel-layout-v1, costmodel-tile-v1.
  EXPECT_EQ(cards, 4);
}

// The tools that default to "the shipped GO policy" (gopt bench, the guided
// search benchmark) pick the directory the server serves for requests that
// name no policy.
TEST(ShippedPoliciesIntegrityTest, NewestGoPolicyIsTheServedOne) {
  absl::StatusOr<std::string> newest =
      policy::NewestPolicyDirectory(kPolicyDir, "go");
  ASSERT_TRUE(newest.ok()) << newest.status();
  auto policies = engine::LoadBuiltinPolicies(kPolicyDir);
  ASSERT_TRUE(policies.ok()) << policies.status();
  absl::StatusOr<const policy::Policy*> served =
      (*policies)->Find("go-multitask", "");
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(*newest, (*served)->info().directory);
  EXPECT_TRUE(absl::EndsWith(*newest, "/go-multitask-v4")) << *newest;
}

}  // namespace
}  // namespace gopt
