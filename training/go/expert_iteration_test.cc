#include "training/go/expert_iteration.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policy/go/network.h"
#include "policy/testing/go_instance.h"
#include "simulator/testing/baseline_graphs.h"
#include "training/go/distillation.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::ChainGraph;
using simulator::baselines::testing::FanOutGraph;
using simulator::baselines::testing::TwoChainsGraph;
using simulator::baselines::testing::UniformTopology;
using testing::SmallModelOptions;
using testing::TestInstance;

TEST(CanonicalDevicesTest, SymmetricDevicesAreNumberedByFirstUse) {
  const graph::Graph graph = ChainGraph(3);  // a parameter and 3 ops
  const simulator::Topology topology = UniformTopology(4);
  // Devices 2, 2, 0, 3 in topological order -> 0, 0, 1, 2.
  absl::StatusOr<std::vector<int32_t>> canonical =
      CanonicalDevices(graph, topology, {2, 2, 0, 3}, {});
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_EQ(*canonical, (std::vector<int32_t>{0, 0, 1, 2}));
  // A symmetric relabelling of the same plan gives the same target.
  absl::StatusOr<std::vector<int32_t>> other =
      CanonicalDevices(graph, topology, {1, 1, 3, 0}, {});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, *canonical);
}

TEST(CanonicalDevicesTest, ReferenceChoosesTheSymmetricCopy) {
  const graph::Graph graph = ChainGraph(3);
  const simulator::Topology topology = UniformTopology(4);
  // The plan uses devices 2 and 0; the reference has those nodes on 3 and
  // 1: the target is the plan's copy on 3 and 1.
  const std::vector<int32_t> reference = {3, 3, 1, 1};
  absl::StatusOr<std::vector<int32_t>> canonical =
      CanonicalDevices(graph, topology, {2, 2, 0, 0}, {}, &reference);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_EQ(*canonical, (std::vector<int32_t>{3, 3, 1, 1}));
  const std::vector<int32_t> short_reference = {0};
  EXPECT_EQ(
      CanonicalDevices(graph, topology, {2, 2, 0, 0}, {}, &short_reference)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CanonicalDevicesTest, DifferentDevicesKeepTheirLabels) {
  const graph::Graph graph = ChainGraph(2);
  simulator::Topology topology = UniformTopology(3);
  topology.devices[1].memory_bytes *= 2;  // device 1 is unlike 0 and 2
  absl::StatusOr<std::vector<int32_t>> canonical =
      CanonicalDevices(graph, topology, {2, 1, 0}, {});
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_EQ(*canonical, (std::vector<int32_t>{0, 1, 2}));
}

TEST(CanonicalDevicesTest, BadPlacementIsAnError) {
  const graph::Graph graph = ChainGraph(2);
  const simulator::Topology topology = UniformTopology(2);
  EXPECT_EQ(CanonicalDevices(graph, topology, {0, 1}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CanonicalDevices(graph, topology, {0, 1, 2}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DistillationTest, SupervisedStepsFitTheTargetPlacement) {
  std::unique_ptr<TrainingInstance> instance =
      TestInstance(TwoChainsGraph(), 2);
  ASSERT_NE(instance, nullptr);
  absl::StatusOr<ScoredPlan> baseline = BestBaselinePlan(*instance, 1);
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  absl::StatusOr<DistillTarget> target =
      MakeDistillTarget(*instance, baseline->plan);
  ASSERT_TRUE(target.ok()) << target.status();
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(3));
  DistillOptions options;
  options.tasks = TaskSet{true, true, true, false};
  options.learning_rate = 1e-2;
  DistillationTrainer trainer(model.get(), options);
  absl::StatusOr<DistillStats> first = trainer.Step({&*target});
  ASSERT_TRUE(first.ok()) << first.status();
  DistillStats last = *first;
  for (int step = 0; step < 60; ++step) {
    absl::StatusOr<DistillStats> stats = trainer.Step({&*target});
    ASSERT_TRUE(stats.ok()) << stats.status();
    last = *stats;
  }
  EXPECT_LT(last.placement_loss, first->placement_loss);
  EXPECT_LT(last.fusion_loss, first->fusion_loss);
  // The heuristic priors start far from the target (accuracy 0 here); 60
  // steps reach 0.6 of the nodes.
  EXPECT_GE(last.placement_accuracy, first->placement_accuracy + 0.5);
}

TEST(DistillationTest, FusibleNodesAreThoseTheGreedyRulesCanFuse) {
  // A parameter and 4 ops on one device: the greedy rules fuse the ops.
  std::unique_ptr<TrainingInstance> instance = TestInstance(ChainGraph(4), 1);
  ASSERT_NE(instance, nullptr);
  simulator::Plan plan = simulator::DefaultPlan(instance->graph());
  absl::StatusOr<DistillTarget> target = MakeDistillTarget(*instance, plan);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->fusible, (std::vector<uint8_t>{0, 1, 1, 1, 1}));
  EXPECT_EQ(target->fused, (std::vector<uint8_t>{0, 0, 0, 0, 0}));
}

TEST(DistillationTest, FusibleOnlyLossLeavesNodesThatCannotFuseOut) {
  std::unique_ptr<TrainingInstance> instance = TestInstance(ChainGraph(4), 1);
  ASSERT_NE(instance, nullptr);
  DistillTarget target;
  target.instance = instance.get();
  target.device.assign(5, 0);
  target.fused.assign(5, 0);
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(3));
  DistillOptions options;
  options.tasks = TaskSet{false, false, true, false};
  options.fusion_fusible_only = true;
  DistillationTrainer trainer(model.get(), options);
  // Without a fusible mask the target is refused; with no fusible node the
  // fusion loss is 0, while over all nodes it is not.
  EXPECT_EQ(trainer.Step({&target}).status().code(),
            absl::StatusCode::kInvalidArgument);
  target.fusible.assign(5, 0);
  absl::StatusOr<DistillStats> none = trainer.Step({&target});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->fusion_loss, 0);
  options.fusion_fusible_only = false;
  DistillationTrainer all_nodes(model.get(), options);
  absl::StatusOr<DistillStats> all = all_nodes.Step({&target});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_GT(all->fusion_loss, 0);
}

TEST(DistillationTest, TargetOfTheWrongLengthIsAnError) {
  std::unique_ptr<TrainingInstance> instance = TestInstance(ChainGraph(4), 2);
  ASSERT_NE(instance, nullptr);
  DistillTarget target;
  target.instance = instance.get();
  target.device = {0, 1};
  target.fused = {0, 0};
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(3));
  DistillationTrainer trainer(model.get(), DistillOptions());
  EXPECT_EQ(trainer.Step({&target}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExpertIterationTest, RoundsFindTargetsNoWorseThanTheBaseline) {
  std::vector<std::unique_ptr<TrainingInstance>> owned;
  owned.push_back(TestInstance(TwoChainsGraph(), 2));
  owned.push_back(TestInstance(FanOutGraph(6), 3));
  owned.push_back(TestInstance(ChainGraph(6), 2));
  std::vector<const TrainingInstance*> instances;
  for (const auto& instance : owned) {
    ASSERT_NE(instance, nullptr);
    instances.push_back(instance.get());
  }
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(5));
  ExpertIterationOptions options;
  options.tasks = TaskSet{true, true, true, false};
  options.rounds = 3;
  options.max_seconds = 1e9;
  options.instances_per_round = 2;
  options.search_rounds = 2;
  options.distill_steps = 2;
  options.ppo_steps = 1;
  options.ppo.samples_per_graph = 4;
  options.simulation_threads = 1;
  options.seed = 7;
  std::vector<ExpertRoundStats> rounds;
  options.on_round = [&](const ExpertRoundStats& stats) {
    rounds.push_back(stats);
    return absl::OkStatus();
  };
  absl::StatusOr<ExpertIterationResult> result =
      RunExpertIteration(model.get(), instances, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->rounds, 3);
  ASSERT_EQ(rounds.size(), 3u);
  for (const ExpertRoundStats& stats : rounds) {
    EXPECT_EQ(stats.instances, 2);
    EXPECT_LE(stats.target_over_baseline, 1.0 + 1e-12) << stats.round;
    EXPECT_GT(stats.simulations, 0);
  }
  // Resuming at round 3 of 4 runs one more round, numbered 3.
  rounds.clear();
  options.start_round = 3;
  options.rounds = 4;
  result = RunExpertIteration(model.get(), instances, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->rounds, 4);
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].round, 3);

  options.instances_per_round = 0;
  EXPECT_EQ(RunExpertIteration(model.get(), instances, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The three instances of the expert-iteration tests below.
std::vector<std::unique_ptr<TrainingInstance>> ThreeInstances() {
  std::vector<std::unique_ptr<TrainingInstance>> owned;
  owned.push_back(TestInstance(TwoChainsGraph(), 2));
  owned.push_back(TestInstance(FanOutGraph(6), 3));
  owned.push_back(TestInstance(ChainGraph(6), 2));
  return owned;
}

// The instances of `owned` that could be made (TestInstance returns null
// for one it cannot make).
std::vector<const TrainingInstance*> Views(
    const std::vector<std::unique_ptr<TrainingInstance>>& owned) {
  std::vector<const TrainingInstance*> views;
  for (const auto& instance : owned) {
    if (instance != nullptr) views.push_back(instance.get());
  }
  return views;
}

// Distillation-only rounds on the test instances.
ExpertIterationOptions DistillOnly(int rounds, int instances_per_round) {
  ExpertIterationOptions options;
  options.tasks = TaskSet{true, true, true, false};
  options.rounds = rounds;
  options.max_seconds = 1e9;
  options.instances_per_round = instances_per_round;
  options.search_rounds = 1;
  options.distill_steps = 2;
  options.ppo_steps = 0;
  options.simulation_threads = 1;
  options.seed = 11;
  options.distill.learning_rate = 1e-2;
  return options;
}

torch::Tensor Parameters(const GoModel& model) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& p : model.impl().network->parameters()) {
    flat.push_back(p.detach().reshape({-1}).clone());
  }
  return torch::cat(flat);
}

TEST(ExpertIterationTest, KeptBestTargetsNeverGetWorseOnRevisits) {
  std::vector<std::unique_ptr<TrainingInstance>> owned = ThreeInstances();
  const std::vector<const TrainingInstance*> instances = Views(owned);
  ASSERT_EQ(instances.size(), 3u);
  // Every round visits all three instances, so each round's geometric mean
  // of the targets can only fall when each instance's target can only fall.
  ExpertIterationOptions options = DistillOnly(5, 3);
  options.keep_best = true;
  std::vector<double> targets;
  options.on_round = [&](const ExpertRoundStats& stats) {
    targets.push_back(stats.target_over_baseline);
    return absl::OkStatus();
  };
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(5));
  ASSERT_TRUE(RunExpertIteration(model.get(), instances, options).ok());
  ASSERT_EQ(targets.size(), 5u);
  EXPECT_LE(targets[0], 1.0 + 1e-12);
  for (size_t i = 1; i < targets.size(); ++i) {
    EXPECT_LE(targets[i], targets[i - 1] * (1 + 1e-12)) << "round " << i;
  }
}

TEST(ExpertIterationTest, ReplayTrainsOnEarlierTargetsDeterministically) {
  std::vector<std::unique_ptr<TrainingInstance>> owned = ThreeInstances();
  const std::vector<const TrainingInstance*> instances = Views(owned);
  ASSERT_EQ(instances.size(), 3u);
  // One instance per round: round 0 has nothing earlier to replay, so one
  // round with replay equals one without; later rounds add earlier targets.
  auto train = [&](int rounds, int replay) {
    ExpertIterationOptions options = DistillOnly(rounds, 1);
    options.replay_targets = replay;
    std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(5));
    absl::StatusOr<ExpertIterationResult> result =
        RunExpertIteration(model.get(), instances, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return Parameters(*model);
  };
  EXPECT_TRUE(torch::equal(train(1, 2), train(1, 0)));
  const torch::Tensor replayed = train(3, 2);
  EXPECT_TRUE(torch::equal(replayed, train(3, 2)));
  EXPECT_FALSE(torch::equal(replayed, train(3, 0)));

  ExpertIterationOptions bad = DistillOnly(1, 1);
  bad.replay_targets = -1;
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(5));
  EXPECT_EQ(RunExpertIteration(model.get(), instances, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExpertIterationTest, TheAveragedNetworkFollowsTheTrainedOne) {
  std::vector<std::unique_ptr<TrainingInstance>> owned = ThreeInstances();
  const std::vector<const TrainingInstance*> instances = Views(owned);
  ASSERT_EQ(instances.size(), 3u);
  // One round, decay 0.5: the average lands halfway between the weights
  // before and after the round; decay 0: it is the trained network.
  for (double decay : {0.5, 0.0}) {
    std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(5));
    std::unique_ptr<GoModel> averaged = *model->Clone();
    const torch::Tensor before = Parameters(*model);
    ExpertIterationOptions options = DistillOnly(1, 1);
    options.averaged = averaged.get();
    options.average_decay = decay;
    ASSERT_TRUE(RunExpertIteration(model.get(), instances, options).ok());
    const torch::Tensor after = Parameters(*model);
    EXPECT_FALSE(torch::equal(before, after));
    EXPECT_TRUE(torch::allclose(Parameters(*averaged),
                                decay * before + (1 - decay) * after, 1e-5,
                                1e-6))
        << "decay " << decay;
  }
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(5));
  std::unique_ptr<GoModel> averaged = *model->Clone();
  ExpertIterationOptions bad = DistillOnly(1, 1);
  bad.averaged = averaged.get();
  bad.average_decay = 1.0;
  EXPECT_EQ(RunExpertIteration(model.get(), instances, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Another architecture (a co-location head more) cannot be averaged in.
  GoModelOptions with_head = SmallModelOptions(5);
  with_head.co_location_head = true;
  std::unique_ptr<GoModel> other = *GoModel::Create(with_head);
  const absl::Status mismatch = averaged->AverageToward(*other, 0.5);
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("parameter"), std::string::npos)
      << mismatch;
}

}  // namespace
}  // namespace gopt::policy::go
