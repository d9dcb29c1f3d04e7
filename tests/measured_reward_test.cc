// Fine-tuning with measured rewards (OptimizeOptions.reward =
// REWARD_MEASURED) through the engine: the shipped GO policy fine-tunes a
// small real graph from ../shared/data with PPO rewards measured by the
// in-process worker pool, behind the PlanMeasurer interface.

#include <memory>
#include <regex>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "engine/builtin_policies.h"
#include "engine/engine.h"
#include "engine/worker_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/plan.h"
#include "simulator/topology.h"
#include "tests/util/shared_data.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;

constexpr char kPolicyDir[] = GOPT_SOURCE_DIR "/policy/pretrained";
constexpr char kGraphFile[] = "hlo/jaxrl_td_target.hlo";

// A PlanMeasurer that counts the plans measured through it.
class CountingMeasurer : public PlanMeasurer {
 public:
  explicit CountingMeasurer(std::unique_ptr<PlanMeasurer> inner)
      : inner_(std::move(inner)) {}
  absl::StatusOr<PlanMeasurement> Measure(
      const graph::Graph& graph, const simulator::Plan& plan,
      absl::Time deadline, const std::atomic<bool>* cancelled) override {
    {
      absl::MutexLock lock(&mutex_);
      ++calls_;
    }
    return inner_->Measure(graph, plan, deadline, cancelled);
  }
  int calls() const {
    absl::MutexLock lock(&mutex_);
    return calls_;
  }

 private:
  const std::unique_ptr<PlanMeasurer> inner_;
  mutable absl::Mutex mutex_;
  int calls_ ABSL_GUARDED_BY(mutex_) = 0;
};

// The in-process pool over two CPU executors (the cpu-host topology), each
// plan measured briefly: one warm-up run, two measured runs.
std::unique_ptr<PlanMeasurer> LocalPool() {
  worker::ExecutorOptions executor;
  executor.cpu_executors = 2;
  executor.pin_threads = false;
  WorkerPoolOptions options;
  options.health_check_interval_seconds = 0;
  options.execute.warmup_runs = 1;
  options.execute.min_repeats = 2;
  options.execute.max_repeats = 2;
  options.execute.min_measure_seconds = 0;
  absl::StatusOr<std::unique_ptr<WorkerPool>> pool =
      WorkerPool::FromSpec("in-process", executor, options);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? std::unique_ptr<PlanMeasurer>(std::move(*pool)) : nullptr;
}

gopt::v1::OptimizeRequest MeasuredRequest(int max_measurements) {
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_serialized(
      gopt::testing::ReadSharedData(kGraphFile));
  request.mutable_graph()->set_format("hlo");
  request.mutable_topology()->set_preset("cpu-host");
  request.mutable_policy()->set_name("go-multitask");
  request.mutable_budget()->set_mode(gopt::v1::Budget::FINE_TUNE);
  request.mutable_budget()->set_fine_tune_steps(3);
  request.mutable_options()->set_seed(1);
  request.mutable_options()->set_reward(
      gopt::v1::OptimizeOptions::REWARD_MEASURED);
  request.mutable_options()->set_max_reward_measurements(max_measurements);
  return request;
}

std::shared_ptr<const PolicyRegistry> ShippedPolicies() {
  absl::StatusOr<std::shared_ptr<const PolicyRegistry>> policies =
      LoadBuiltinPolicies(kPolicyDir);
  EXPECT_TRUE(policies.ok()) << policies.status();
  return policies.ok() ? *policies : nullptr;
}

TEST(MeasuredRewardTest, FineTunesWithMeasuredRewardsOnASmallRealGraph) {
  auto counting = std::make_shared<CountingMeasurer>(LocalPool());
  EngineOptions options;
  options.measurer = counting;
  const Engine engine(options, ShippedPolicies());
  constexpr int kCap = 40;
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(MeasuredRequest(kCap), RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();

  // The policy fine-tuned on measurements: its note counts them, and every
  // one went through the PlanMeasurer.
  std::string note;
  for (const std::string& warning : response->warnings()) {
    if (absl::StrContains(warning, "fine-tuned with measured rewards")) {
      note = warning;
    }
  }
  ASSERT_FALSE(note.empty()) << response->DebugString();
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(note, match, std::regex("([0-9]+) plans measured")))
      << note;
  const int measured = std::stoi(match[1].str());
  EXPECT_EQ(measured, counting->calls()) << note;
  // The start plan and at least one PPO step's samples (16), within the
  // cap; a third step (16 more) would pass it, so PPO stopped for it.
  EXPECT_GT(measured, 1);
  EXPECT_LE(measured, kCap);
  EXPECT_THAT(note, HasSubstr("measurement budget was spent"));

  // The policy's plan is valid and the answer a valid plan of the graph.
  ASSERT_EQ(response->policy_results_size(), 1);
  EXPECT_TRUE(response->policy_results(0).valid())
      << response->policy_results(0).error();
  EXPECT_GT(response->policy_results(0).step_time_s(), 0);
  EXPECT_EQ(response->plan().device_size(), response->num_nodes());
  EXPECT_GT(response->step_time_s(), 0);
}

TEST(MeasuredRewardTest, LargeGraphsAndMissingWorkersAreRefusedClearly) {
  EngineOptions options;
  options.measurer = LocalPool();
  options.max_measured_reward_nodes = 10;
  const Engine small_limit(options, ShippedPolicies());
  absl::StatusOr<gopt::v1::OptimizeResponse> too_big =
      small_limit.Optimize(MeasuredRequest(8), RequestContext());
  EXPECT_TRUE(absl::IsInvalidArgument(too_big.status())) << too_big.status();
  EXPECT_THAT(too_big.status().message(),
              HasSubstr("measured rewards are for graphs of at most 10 nodes"));

  const Engine no_workers(EngineOptions(), ShippedPolicies());
  absl::StatusOr<gopt::v1::OptimizeResponse> unmeasured =
      no_workers.Optimize(MeasuredRequest(8), RequestContext());
  EXPECT_TRUE(absl::IsInvalidArgument(unmeasured.status()))
      << unmeasured.status();
  EXPECT_THAT(unmeasured.status().message(), HasSubstr("no worker pool"));

  absl::StatusOr<gopt::v1::OptimizeResponse> bad_cap =
      small_limit.Optimize(MeasuredRequest(5000), RequestContext());
  EXPECT_THAT(bad_cap.status().message(),
              HasSubstr("max_reward_measurements must be in 0..1024"));
}

}  // namespace
}  // namespace gopt::engine
