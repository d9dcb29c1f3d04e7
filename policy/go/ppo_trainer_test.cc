#include "policy/go/ppo_trainer.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/go/fine_tuning.h"
#include "policy/go/go_model.h"
#include "policy/testing/go_instance.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::GraphMaker;
using simulator::baselines::testing::UniformTopology;
using testing::SmallModelOptions;
using testing::TestInstance;

constexpr TaskSet kPlacementOnly{true, false, false, false};

// Two independent chains of five 1-GFLOP ops (1 ms each on the test GPUs)
// passing 4 MB tensors (0.4 ms over a link), one of dots and one of
// convolutions, inserted interleaved (a1, b1, a2, b2, ...) so that the
// topological order mixes them, then joined. On two devices the best plan
// runs one chain per device; a contiguous split of the topological order
// does not.
graph::Graph TwoChains() {
  GraphMaker g("two_chains");
  const int p = g.Param("p", 1'000'000);
  int a = p;
  int b = p;
  for (int i = 1; i <= 5; ++i) {
    a = g.Op(absl::StrCat("a", i), graph::OpKind::kDot, 1e9, {a}, 1'000'000);
    b = g.Op(absl::StrCat("b", i), graph::OpKind::kConvolution, 1e9, {b},
             1'000'000);
  }
  g.Op("join", 1e6, {a, b}, 1'000'000);
  return g.Build();
}

// The best step time over every placement of the graph (brute force).
double OptimalStepTime(const TrainingInstance& instance) {
  const int n = instance.graph().num_nodes();
  double best = 1e30;
  for (int mask = 0; mask < (1 << n); ++mask) {
    Actions actions;
    for (int i = 0; i < n; ++i) actions.device.push_back((mask >> i) & 1);
    const ScoredPlan plan = ScoreActions(instance, actions);
    if (plan.valid && !plan.oom) best = std::min(best, plan.step_time_s);
  }
  return best;
}

double GreedyStepTime(const GoModel& model, const TrainingInstance& instance) {
  absl::StatusOr<PolicyOutput> output =
      model.Run(instance.features, kPlacementOnly);
  EXPECT_TRUE(output.ok()) << output.status();
  return ScoreActions(instance, SampleActions(*output, nullptr)).step_time_s;
}

TEST(PlanRewardTest, FollowsTheGoReward) {
  EXPECT_DOUBLE_EQ(PlanReward(0.25, false, 1.0), -0.5);
  EXPECT_DOUBLE_EQ(PlanReward(0.25, true, 1.0), kInvalidReward);
  EXPECT_DOUBLE_EQ(PlanReward(0, false, 1.0), kInvalidReward);
}

// A chain of eight 1-GFLOP ops on two devices, device 0 ten times slower:
// the best placement (checked by brute force) puts every op on device 1.
TEST(PpoTrainerTest, LearnsTheKnownOptimumOfASlowAndAFastDevice) {
  GraphMaker g("chain");
  int previous = g.Param("p", 1000);
  for (int i = 1; i <= 8; ++i) {
    previous = g.Op(absl::StrCat("a", i), graph::OpKind::kDot, 1e9, {previous});
  }
  simulator::Topology topology = UniformTopology(2);
  topology.devices[0].peak_f32_flops = 1e11;
  absl::StatusOr<std::unique_ptr<TrainingInstance>> made = MakeTrainingInstance(
      "chain", std::make_shared<const graph::Graph>(g.Build()),
      std::make_shared<const simulator::Topology>(topology));
  ASSERT_TRUE(made.ok()) << made.status();
  const TrainingInstance& instance = **made;
  const double optimum = OptimalStepTime(instance);
  Actions all_fast;
  all_fast.device.assign(instance.graph().num_nodes(), 1);
  EXPECT_DOUBLE_EQ(ScoreActions(instance, all_fast).step_time_s, optimum);

  // Without the heuristic priors: what is learned comes from PPO alone.
  GoModelOptions model_options = SmallModelOptions(/*seed=*/1);
  model_options.prior_strength = 0;
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(model_options);
  ASSERT_TRUE(model.ok());
  const double greedy_before = GreedyStepTime(**model, instance);
  EXPECT_GT(greedy_before, 1.5 * optimum);

  PpoOptions options;
  options.tasks = kPlacementOnly;
  options.learning_rate = 3e-3;
  options.seed = 1;
  PpoTrainer trainer(model->get(), options);
  double first_reward = 0;
  double last_reward = 0;
  const int steps = 60;
  for (int step = 0; step < steps; ++step) {
    absl::StatusOr<PpoStepStats> stats = trainer.Step({&instance});
    ASSERT_TRUE(stats.ok()) << stats.status();
    if (step < 5) first_reward += stats->mean_reward / 5;
    if (step >= steps - 5) last_reward += stats->mean_reward / 5;
  }
  EXPECT_GT(last_reward, first_reward + 0.2);
  EXPECT_DOUBLE_EQ(GreedyStepTime(**model, instance), optimum)
      << "greedy before training: " << greedy_before;
}

TEST(PpoTrainerTest, DeterministicForASeed) {
  const std::unique_ptr<TrainingInstance> instance =
      TestInstance(TwoChains(), 2);
  std::vector<double> rewards[2];
  std::vector<float> placement[2];
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<std::unique_ptr<GoModel>> model =
        GoModel::Create(SmallModelOptions(/*seed=*/4));
    ASSERT_TRUE(model.ok());
    PpoOptions options;
    options.seed = 11;
    options.samples_per_graph = 8;
    PpoTrainer trainer(model->get(), options);
    for (int step = 0; step < 3; ++step) {
      absl::StatusOr<PpoStepStats> stats = trainer.Step({instance.get()});
      ASSERT_TRUE(stats.ok()) << stats.status();
      rewards[run].push_back(stats->mean_reward);
      rewards[run].push_back(stats->entropy);
    }
    absl::StatusOr<PolicyOutput> output =
        (*model)->Run(instance->features, TaskSet{true, true, true, false});
    ASSERT_TRUE(output.ok());
    placement[run] = output->placement;
  }
  EXPECT_EQ(rewards[0], rewards[1]);
  EXPECT_EQ(placement[0], placement[1]);
}

TEST(PpoTrainerTest, EmptyBatchIsInvalidArgument) {
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallModelOptions(/*seed=*/0));
  ASSERT_TRUE(model.ok());
  PpoTrainer trainer(model->get(), PpoOptions());
  EXPECT_EQ(trainer.Step({}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ZeroShotTest, TriesTheGreedyDecodeWithGreedyJoinFusionToo) {
  const std::unique_ptr<TrainingInstance> instance =
      TestInstance(TwoChains(), 2);
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallModelOptions(/*seed=*/2));
  ASSERT_TRUE(model.ok());
  const TaskSet tasks{true, true, true, false};
  absl::StatusOr<PolicyOutput> output =
      (*model)->Run(instance->features, tasks, nullptr);
  ASSERT_TRUE(output.ok()) << output.status();
  const Actions greedy = SampleActions(*output, nullptr);
  Actions joined = greedy;
  joined.fusion_join = simulator::baselines::FusionJoin::kAllProducers;
  const ScoredPlan greedy_plan = ScoreActions(*instance, greedy);
  const ScoredPlan joined_plan = ScoreActions(*instance, joined);
  ASSERT_TRUE(greedy_plan.valid && joined_plan.valid);
  absl::StatusOr<ZeroShotResult> zero_shot =
      ZeroShot(**model, *instance, tasks, /*num_samples=*/0, /*seed=*/0,
               /*threads=*/1);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_EQ(zero_shot->num_valid, 2);
  EXPECT_EQ(zero_shot->best.step_time_s,
            std::min(greedy_plan.step_time_s, joined_plan.step_time_s));
  EXPECT_THAT(zero_shot->decode, ::testing::AnyOf("greedy", "greedy-join"));
  // The rule that grouped the best plan, for a search that starts from it.
  EXPECT_EQ(zero_shot->fusion_join,
            zero_shot->decode == "greedy-join"
                ? simulator::baselines::FusionJoin::kAllProducers
                : simulator::baselines::FusionJoin::kOneProducer);
  // Without fusion among the tasks there is nothing to group differently.
  zero_shot = ZeroShot(**model, *instance, TaskSet{true, true, false, false},
                       /*num_samples=*/0, /*seed=*/0, /*threads=*/1);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_EQ(zero_shot->num_valid, 1);
}

TEST(FineTuneTest, StopsAtTheStepLimitAndKeepsTheBestPlan) {
  const std::unique_ptr<TrainingInstance> instance =
      TestInstance(TwoChains(), 2);
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallModelOptions(/*seed=*/2));
  ASSERT_TRUE(model.ok());
  absl::StatusOr<ZeroShotResult> zero_shot =
      ZeroShot(**model, *instance, TaskSet{true, true, true, false},
               /*num_samples=*/4, /*seed=*/0, /*threads=*/2);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_TRUE(zero_shot->best.valid);
  FineTuneOptions options;
  options.max_steps = 3;
  int calls = 0;
  options.on_step = [&](const TrainLogRow& row, const ScoredPlan& best) {
    EXPECT_EQ(row.step, calls);
    EXPECT_LE(best.step_time_s, zero_shot->best.step_time_s);
    ++calls;
  };
  absl::StatusOr<FineTuneResult> result =
      FineTune(model->get(), *instance, zero_shot->best, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 3);
  EXPECT_EQ(calls, 3);
  EXPECT_LE(result->best.step_time_s, zero_shot->best.step_time_s);
}

TEST(FineTuneTest, SearchesAloneWhenAPpoStepWouldOverrunTheDeadline) {
  const std::unique_ptr<TrainingInstance> instance =
      TestInstance(TwoChains(), 2);
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallModelOptions(/*seed=*/2));
  ASSERT_TRUE(model.ok());
  // Both chains on device 0: moving one to device 1 halves the step.
  const ScoredPlan start =
      ScorePlan(*instance, simulator::DefaultPlan(instance->graph()));
  ASSERT_TRUE(start.valid);
  FineTuneOptions options;
  options.max_steps = 3;
  options.search_simulations_per_step = 32;
  // An hour left, but the first step is expected to take longer.
  const FakeClock clock;
  options.clock = &clock;
  options.deadline = clock.Now() + absl::Hours(1);
  options.first_step_estimate_seconds = 2 * 3600;
  int ppo_steps = 0;
  options.on_step = [&](const TrainLogRow&, const ScoredPlan&) { ++ppo_steps; };
  std::vector<int> search_batches;
  options.on_search = [&](int batch, const ScoredPlan&) {
    search_batches.push_back(batch);
  };
  absl::StatusOr<FineTuneResult> result =
      FineTune(model->get(), *instance, start, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->steps, 0);
  EXPECT_EQ(ppo_steps, 0);
  EXPECT_TRUE(result->ppo_stopped_for_deadline);
  // The search had the simulations of the 3 steps PPO did not take.
  EXPECT_EQ(result->search_simulations, 3 * 32);
  EXPECT_EQ(search_batches, std::vector<int>({1, 2, 3}));
  EXPECT_LT(result->best.step_time_s, 0.75 * start.step_time_s);
}

TEST(FineTuneTest, CancelledBeforeTheFirstStepDoesNothing) {
  const std::unique_ptr<TrainingInstance> instance =
      TestInstance(TwoChains(), 2);
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallModelOptions(/*seed=*/2));
  ASSERT_TRUE(model.ok());
  std::atomic<bool> cancelled{true};
  FineTuneOptions options;
  options.cancelled = &cancelled;
  ScoredPlan start;
  absl::StatusOr<FineTuneResult> result =
      FineTune(model->get(), *instance, start, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->steps, 0);
}

}  // namespace
}  // namespace gopt::policy::go
