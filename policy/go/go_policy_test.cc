#include "policy/go/go_policy.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/checkpoint_integrity.h"
#include "policy/go/features.h"
#include "policy/go/go_model.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/simulator.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy {
namespace {

using simulator::baselines::testing::DiamondGraph;
using simulator::baselines::testing::FanOutGraph;
using simulator::baselines::testing::UniformTopology;
using ::testing::HasSubstr;

const std::string& ShippedPolicyDir() {
  static const std::string* dir = new std::string(
      std::string(GOPT_SOURCE_DIR) + "/policy/pretrained/go-multitask-v2");
  return *dir;
}

TEST(GoPolicyTest, ShippedCheckpointLoads) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LoadGoPolicy(ShippedPolicyDir());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const PolicyInfo& info = (*policy)->info();
  EXPECT_EQ(info.kind, "go");
  EXPECT_EQ(info.name, "go-multitask");
  EXPECT_EQ(info.version, "2");
  EXPECT_TRUE(info.tasks.placement);
  EXPECT_TRUE(info.tasks.scheduling);
  EXPECT_TRUE(info.tasks.fusion);
  EXPECT_FALSE(info.tasks.layout);
  EXPECT_EQ(info.card["format_version"], 1);
  EXPECT_TRUE(info.card["training"].contains("git_revision"));
}

// The shipped policy and a simulator for a 4-way fan-out on 4 devices.
class ShippedPolicyOnFanOutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Policy>> loaded =
        LoadGoPolicy(ShippedPolicyDir());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    policy = *std::move(loaded);
  }

  std::unique_ptr<Policy> policy;
  const graph::Graph graph = FanOutGraph(4);
  const simulator::Topology topology = UniformTopology(4);
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator sim{graph, topology, cost_model};
};

TEST_F(ShippedPolicyOnFanOutTest, ShippedPolicyAnswersWithMethodGo) {
  ProposeOptions options;
  options.num_samples = 4;
  options.fine_tune_steps = 2;
  std::vector<std::string> stages;
  options.on_progress = [&](const ProposeProgress& progress) {
    stages.push_back(progress.stage);
  };
  absl::StatusOr<Proposal> proposal = policy->Propose(sim, options);
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  EXPECT_EQ(proposal->plan.method, "go");
  EXPECT_TRUE(simulator::ValidatePlan(proposal->plan, graph, topology).ok());
  absl::StatusOr<simulator::SimulationResult> result =
      sim.Simulate(proposal->plan);
  ASSERT_TRUE(result.ok());
  EXPECT_DOUBLE_EQ(result->step_time_s, proposal->step_time_s);
  EXPECT_LE(proposal->step_time_s, proposal->zero_shot_step_time_s);
  EXPECT_THAT(
      proposal->zero_shot_decode,
      ::testing::AnyOf("greedy", "greedy-join", "one-device",
                       "one-device+greedy-join", "hint", "hint+greedy-join",
                       "co-location", "co-location+greedy-join", "sampled"));
  EXPECT_EQ(proposal->fine_tune_steps_done, 2);
  EXPECT_GT(proposal->inference_s, 0);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0], "zero-shot");
  EXPECT_EQ(stages[1], "fine-tune");
}

TEST_F(ShippedPolicyOnFanOutTest, FineTuningKeepsABetterWarmStart) {
  ProposeOptions zero_shot;
  zero_shot.num_samples = 4;
  absl::StatusOr<Proposal> alone = policy->Propose(sim, zero_shot);
  ASSERT_TRUE(alone.ok()) << alone.status();
  // Fine-tuning starts from the better of the zero-shot plan and the warm
  // start (here the best baseline combination) and never ends slower.
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  absl::StatusOr<simulator::baselines::BestBaselineResult> best =
      simulator::baselines::BestBaseline(
          registry, {graph, topology, cost_model, /*seed=*/0});
  ASSERT_TRUE(best.ok()) << best.status();
  ProposeOptions options = zero_shot;
  options.fine_tune_steps = 1;
  options.warm_start = &best->plan;
  absl::StatusOr<Proposal> proposal = policy->Propose(sim, options);
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  EXPECT_EQ(proposal->plan.method, "go");
  EXPECT_LE(proposal->step_time_s, best->result.step_time_s);
  EXPECT_LE(proposal->step_time_s, alone->step_time_s);
  EXPECT_TRUE(simulator::ValidatePlan(proposal->plan, graph, topology).ok());
}

TEST_F(ShippedPolicyOnFanOutTest, WarmStartForAnotherGraphIsIgnored) {
  const simulator::Plan wrong = simulator::DefaultPlan(FanOutGraph(2));
  ProposeOptions options;
  options.num_samples = 4;
  options.fine_tune_steps = 1;
  options.warm_start = &wrong;
  absl::StatusOr<Proposal> proposal = policy->Propose(sim, options);
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  EXPECT_TRUE(simulator::ValidatePlan(proposal->plan, graph, topology).ok());
  EXPECT_EQ(proposal->fine_tune_steps_done, 1);
}

TEST(GoPolicyTest, KeepsTheBasePlanForTasksNotAskedFor) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LoadGoPolicy(ShippedPolicyDir());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const graph::Graph graph = DiamondGraph();
  const simulator::Topology topology = UniformTopology(2);
  simulator::RooflineCostModel cost_model;
  simulator::Simulator sim(graph, topology, cost_model);
  simulator::Plan base = simulator::DefaultPlan(graph);
  base.device.assign(graph.num_nodes(), 1);
  ProposeOptions options;
  options.tasks = TaskSet{false, true, true, false};
  options.base_plan = &base;
  absl::StatusOr<Proposal> proposal = (*policy)->Propose(sim, options);
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  EXPECT_EQ(proposal->plan.device, base.device);
}

TEST(GoPolicyTest, CancelledBeforeStartIsCancelled) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LoadGoPolicy(ShippedPolicyDir());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const graph::Graph graph = DiamondGraph();
  const simulator::Topology topology = UniformTopology(2);
  simulator::RooflineCostModel cost_model;
  simulator::Simulator sim(graph, topology, cost_model);
  std::atomic<bool> cancelled{true};
  ProposeOptions options;
  options.cancelled = &cancelled;
  EXPECT_EQ((*policy)->Propose(sim, options).status().code(),
            absl::StatusCode::kCancelled);
}

TEST(GoPolicyTest, LayoutAloneIsInvalidArgument) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LoadGoPolicy(ShippedPolicyDir());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const graph::Graph graph = DiamondGraph();
  const simulator::Topology topology = UniformTopology(2);
  simulator::RooflineCostModel cost_model;
  simulator::Simulator sim(graph, topology, cost_model);
  ProposeOptions options;
  options.tasks = TaskSet{false, false, false, true};
  EXPECT_EQ((*policy)->Propose(sim, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GoCheckpointFormatTest, ShippedVersion2ResavesAsVersion3Unchanged) {
  // The shipped checkpoint predates the JSON header (its architecture is a
  // positional tensor); Load still reads it, and Save writes the header.
  const std::string shipped = ShippedPolicyDir() + "/go-multitask.pt";
  absl::StatusOr<std::unique_ptr<go::GoModel>> old = go::GoModel::Load(shipped);
  ASSERT_TRUE(old.ok()) << old.status();
  const std::string path = ::testing::TempDir() + "/resaved_go_multitask.pt";
  ASSERT_TRUE((*old)->Save(path).ok());
  absl::StatusOr<std::unique_ptr<go::GoModel>> resaved =
      go::GoModel::Load(path);
  ASSERT_TRUE(resaved.ok()) << resaved.status();
  EXPECT_EQ((*resaved)->options().ToJson(), (*old)->options().ToJson());
  EXPECT_EQ((*resaved)->num_parameters(), (*old)->num_parameters());

  const graph::Graph graph = FanOutGraph(/*width=*/6);
  const simulator::Topology topology = UniformTopology(2);
  simulator::RooflineCostModel cost_model;
  absl::StatusOr<go::GraphFeatures> features =
      go::Featurize(graph, topology, cost_model);
  ASSERT_TRUE(features.ok()) << features.status();
  const TaskSet tasks{true, true, true, false};
  absl::StatusOr<go::PolicyOutput> a = (*old)->Run(*features, tasks);
  absl::StatusOr<go::PolicyOutput> b = (*resaved)->Run(*features, tasks);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->placement, b->placement);
  EXPECT_EQ(a->scheduling, b->scheduling);
  EXPECT_EQ(a->fusion, b->fusion);
}

TEST(GoCheckpointFormatTest, CostModelCheckpointIsNotAGoCheckpoint) {
  // Same header layout, another model kind's format version.
  const std::string layout = std::string(GOPT_SOURCE_DIR) +
                             "/policy/pretrained/costmodel-layout-v1/model.pt";
  absl::StatusOr<std::unique_ptr<go::GoModel>> loaded =
      go::GoModel::Load(layout);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr("format version 1"));
}

TEST(GoPolicyFactoryTest, RejectsOtherKinds) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = GoPolicyFactory()(
      "/nowhere", nlohmann::json{{"kind", "cost-model-layout"}});
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GoPolicyFactoryTest, CorruptCheckpointIsDataLoss) {
  const std::string dir = ::testing::TempDir() + "/corrupt_go_policy";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/model.pt") << "not a checkpoint";
  nlohmann::json card = {{"kind", "go"}, {"checkpoint", "model.pt"}};
  // Hashed as it is, so that the load itself finds it corrupt.
  ASSERT_TRUE(RecordCheckpointSha256(dir, "test", &card).ok());
  absl::StatusOr<std::unique_ptr<Policy>> policy = GoPolicyFactory()(dir, card);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(policy.status().message(), HasSubstr("model.pt"));
}

// A copy of the shipped policy directory in a fresh temporary directory.
std::string CopyOfShippedPolicy(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::copy(ShippedPolicyDir(), dir);
  return dir.string();
}

TEST(GoPolicyFactoryTest, ZeroedCheckpointIsRefusedNamingTheFile) {
  const std::string dir = CopyOfShippedPolicy("zeroed_go_policy");
  const std::string checkpoint = dir + "/go-multitask.pt";
  const auto size = std::filesystem::file_size(checkpoint);
  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc)
      << std::string(size, '\0');
  absl::StatusOr<std::unique_ptr<Policy>> policy = LoadGoPolicy(dir);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(policy.status().message(), HasSubstr(checkpoint));
}

TEST(GoPolicyFactoryTest, OtherValidWeightsAreRefused) {
  // A well-formed checkpoint with other weights: GoModel::Load takes it,
  // and without the card's hash the policy would serve it.
  const std::string dir = CopyOfShippedPolicy("swapped_go_policy");
  go::GoModelOptions options;
  options.seed = 12345;
  absl::StatusOr<std::unique_ptr<go::GoModel>> other =
      go::GoModel::Create(options);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->Save(dir + "/go-multitask.pt").ok());
  ASSERT_TRUE(go::GoModel::Load(dir + "/go-multitask.pt").ok());
  absl::StatusOr<std::unique_ptr<Policy>> policy = LoadGoPolicy(dir);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(policy.status().message(), HasSubstr("does not match its card"));
}

TEST(GoPolicyFactoryTest, CardWithoutHashIsFailedPrecondition) {
  const std::string dir = CopyOfShippedPolicy("unhashed_go_policy");
  std::ifstream in(dir + "/card.json");
  nlohmann::json card = nlohmann::json::parse(in);
  card.erase(kCheckpointSha256Key);
  absl::StatusOr<std::unique_ptr<Policy>> policy = GoPolicyFactory()(dir, card);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(policy.status().message(), HasSubstr("go-multitask.pt"));
}

TEST(GoPolicyFactoryTest, MissingCardIsNotFound) {
  EXPECT_EQ(
      LoadGoPolicy(::testing::TempDir() + "/no_such_policy").status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gopt::policy
