#include "client/bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/baseline_registry.h"

namespace gopt::client {
namespace {

using ::testing::HasSubstr;

// Two independent heavy chains: splitting them over devices halves the
// step time.
graph::Graph TwoChains() {
  graph::GraphBuilder builder("two_chains", "generated");
  graph::Node input;
  input.name = "x";
  input.kind = graph::OpKind::kParameter;
  input.outputs = {graph::MakeTensorType(graph::DType::kF32, {1024})};
  const int x = builder.AddNode(input);
  for (int chain = 0; chain < 2; ++chain) {
    int previous = x;
    for (int i = 0; i < 4; ++i) {
      graph::Node node;
      node.name = absl::StrCat("c", chain, "_", i);
      node.kind = graph::OpKind::kElementwiseBinary;
      node.outputs = {graph::MakeTensorType(graph::DType::kF32, {1024})};
      node.flops = 1e11;
      node.bytes_read = node.bytes_written = 4096;
      const int id = builder.AddNode(std::move(node));
      builder.AddEdge(previous, 0, id, 0);
      previous = id;
    }
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
}

constexpr char kTopology[] = "v100x4-nvlink";

// BenchGraph over TwoChains on kTopology with the built-in baselines.
absl::StatusOr<BenchGraphResult> BenchTwoChains(const BenchOptions& options) {
  const simulator::Topology topology =
      simulator::PresetTopology(kTopology).value();
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  return BenchGraph(TwoChains(), "two", topology, registry, options);
}

TEST(BenchTest, RowsPerMethodWithRatios) {
  BenchOptions options;
  options.methods = {"single", "heft", "best-baseline", "nonsense"};
  auto result = BenchTwoChains(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 4u);
  EXPECT_TRUE(result->rows[0].valid);
  EXPECT_DOUBLE_EQ(result->rows[0].ratio_to_default, 1.0);
  EXPECT_LT(result->rows[1].ratio_to_default, 0.6);  // heft splits the chains
  EXPECT_EQ(result->rows[2].method, "best-baseline");
  EXPECT_FALSE(result->rows[2].chosen_method.empty());
  EXPECT_LE(result->rows[2].step_time_s, result->rows[1].step_time_s);
  EXPECT_FALSE(result->rows[3].valid);
  EXPECT_THAT(result->rows[3].error, HasSubstr("nonsense"));
  for (const BenchRow& row : result->rows) {
    if (row.valid) EXPECT_GE(row.ratio_to_lower_bound, 1.0) << row.method;
  }
  const nlohmann::json json = BenchToJson(kTopology, {*result});
  ASSERT_EQ(json["rows"].size(), 4u);
  for (const char* key :
       {"graph", "nodes", "method", "step_time_s", "peak_memory_bytes", "oom",
        "method_seconds", "lower_bound_s"}) {
    EXPECT_TRUE(json["rows"][0].contains(key)) << key;
  }
  EXPECT_EQ(json["summary"].size(), 3u);  // the invalid method has no summary
  EXPECT_THAT(BenchToText(kTopology, {*result}), HasSubstr("summary"));
}

// A stand-in GO policy: puts node i on device i % 2 (unfused) for
// placement, gives every node priority 1 for scheduling, and records what
// it was asked.
class FakeGoPolicy final : public policy::Policy {
 public:
  const policy::PolicyInfo& info() const override { return info_; }
  absl::StatusOr<policy::Proposal> Propose(
      const simulator::Simulator& sim,
      const policy::ProposeOptions& options) const override {
    calls_.push_back(options);
    policy::Proposal proposal;
    proposal.plan = options.base_plan != nullptr
                        ? *options.base_plan
                        : simulator::DefaultPlan(sim.graph());
    base_plans_.push_back(proposal.plan);
    if (options.tasks.placement) {
      for (size_t i = 0; i < proposal.plan.device.size(); ++i) {
        proposal.plan.device[i] = static_cast<int32_t>(i % 2);
      }
      proposal.plan.fusion_group.clear();  // groups may not span devices
    }
    if (options.tasks.scheduling) {
      proposal.plan.priority.assign(sim.graph().num_nodes(), 1);
    }
    proposal.plan.method = "go";
    proposal.fine_tune_steps_done = options.fine_tune_steps;
    proposal.zero_shot_decode = "hint";
    return proposal;
  }
  // What each call was asked (its plan pointers do not outlive the call)
  // and a copy of its base plan (the defaults when it had none).
  mutable std::vector<policy::ProposeOptions> calls_;
  mutable std::vector<simulator::Plan> base_plans_;

 private:
  policy::PolicyInfo info_;
};

TEST(BenchTest, GoMethodsRunThePolicy) {
  FakeGoPolicy policy;
  BenchOptions options;
  options.methods = {kGoZeroShot, kGoFineTune, kGoOneByOne};
  options.go_policy = &policy;
  options.go_fine_tune_steps = 7;
  options.go_samples = 5;
  auto result = BenchTwoChains(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 3u);
  for (const BenchRow& row : result->rows) EXPECT_TRUE(row.valid) << row.error;
  EXPECT_EQ(result->rows[1].fine_tune_steps, 7);
  // zero-shot, fine-tune, then placement / scheduling / fusion one by one.
  ASSERT_EQ(policy.calls_.size(), 5u);
  EXPECT_EQ(policy.calls_[0].fine_tune_steps, 0);
  EXPECT_EQ(policy.calls_[0].num_samples, 5);
  EXPECT_EQ(policy.calls_[1].fine_tune_steps, 7);
  EXPECT_TRUE(policy.calls_[2].tasks.placement);
  EXPECT_FALSE(policy.calls_[2].tasks.scheduling);
  EXPECT_TRUE(policy.calls_[3].tasks.scheduling);
  EXPECT_FALSE(policy.calls_[3].tasks.placement);
  EXPECT_TRUE(policy.calls_[4].tasks.fusion);
  EXPECT_NE(policy.calls_[4].base_plan, nullptr);
  EXPECT_THAT(BenchToText(kTopology, {*result}), HasSubstr("(7 steps)"));
  // The decode that gave the zero-shot plan, for go-zeroshot only.
  EXPECT_EQ(result->rows[0].zero_shot_decode, "hint");
  EXPECT_EQ(result->rows[1].zero_shot_decode, "");
  EXPECT_THAT(BenchToText(kTopology, {*result}),
              HasSubstr("go-zeroshot (hint)"));
  EXPECT_THAT(BenchToJson(kTopology, {*result}).dump(),
              HasSubstr(R"("zero_shot_decode":"hint")"));
}

// Benches `method` alone on TwoChains with `policy`, 9 fine-tuning steps
// and `search_simulations` per step; checks that it gave one valid row that
// reports the 9 steps.
void BenchGoMethod(const std::string& method, FakeGoPolicy* policy,
                   int search_simulations = 512) {
  BenchOptions options;
  options.methods = {method};
  options.go_policy = policy;
  options.go_fine_tune_steps = 9;
  options.go_search_simulations_per_step = search_simulations;
  auto result = BenchTwoChains(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rows.size(), 1u);
  EXPECT_TRUE(result->rows[0].valid) << result->rows[0].error;
  EXPECT_EQ(result->rows[0].fine_tune_steps, 9);
}

TEST(BenchTest, FineTuneOneByOneSharesTheBudgetAmongTheTasks) {
  FakeGoPolicy policy;
  BenchGoMethod(kGoFineTuneOneByOne, &policy, /*search_simulations=*/64);
  // Placement, scheduling, fusion: 3 steps each, each warm-started from the
  // plan so far (the first from the best baseline combination).
  ASSERT_EQ(policy.calls_.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const policy::ProposeOptions& call = policy.calls_[i];
    EXPECT_EQ(call.fine_tune_steps, 3);
    EXPECT_EQ(call.search_simulations_per_step, 64);
    EXPECT_NE(call.warm_start, nullptr);
    EXPECT_EQ(call.warm_start, call.base_plan);
    const int decided =
        call.tasks.placement + call.tasks.scheduling + call.tasks.fusion;
    EXPECT_EQ(decided, 1);
  }
  EXPECT_TRUE(policy.calls_[0].tasks.placement);
  EXPECT_TRUE(policy.calls_[1].tasks.scheduling);
  EXPECT_TRUE(policy.calls_[2].tasks.fusion);
}

TEST(BenchTest, FineTuneSeparateDecidesEachTaskAloneThenCombines) {
  FakeGoPolicy policy;
  BenchGoMethod(kGoFineTuneSeparate, &policy);
  ASSERT_EQ(policy.calls_.size(), 3u);
  // Placement alone, on the framework defaults (FIFO, no fusion).
  const policy::ProposeOptions& placement = policy.calls_[0];
  EXPECT_TRUE(placement.tasks.placement);
  EXPECT_FALSE(placement.tasks.scheduling || placement.tasks.fusion);
  EXPECT_EQ(policy.base_plans_[0].device, std::vector<int32_t>(9, 0));
  EXPECT_TRUE(policy.base_plans_[0].priority.empty());
  EXPECT_TRUE(policy.base_plans_[0].fusion_group.empty());
  // Scheduling alone and fusion alone, each on the expert placement.
  const policy::ProposeOptions& scheduling = policy.calls_[1];
  const policy::ProposeOptions& fusion = policy.calls_[2];
  EXPECT_TRUE(scheduling.tasks.scheduling);
  EXPECT_FALSE(scheduling.tasks.placement || scheduling.tasks.fusion);
  EXPECT_TRUE(fusion.tasks.fusion);
  EXPECT_FALSE(fusion.tasks.placement || fusion.tasks.scheduling);
  EXPECT_EQ(policy.base_plans_[1].method, "expert+fifo+none+default");
  EXPECT_EQ(policy.base_plans_[2].method, "expert+fifo+none+default");
  for (const policy::ProposeOptions& call : policy.calls_) {
    EXPECT_EQ(call.fine_tune_steps, 3);
    EXPECT_NE(call.warm_start, nullptr);  // the task's best baseline
    EXPECT_NE(call.base_plan, nullptr);
  }
}

TEST(BenchTest, SeparateDecisionsDropFusionGroupsTheNewPlacementSplits) {
  simulator::Plan placed;
  placed.device = {0, 0, 1, 1};
  placed.method = "go";
  simulator::Plan scheduled;
  scheduled.device = {0, 0, 0, 0};
  scheduled.priority = {4, 3, 2, 1};
  simulator::Plan fused;
  fused.device = {0, 0, 0, 0};
  fused.fusion_group = {5, 5, 6, 5};
  const simulator::Plan plan =
      CombineSeparateDecisions(placed, scheduled, fused);
  EXPECT_EQ(plan.device, placed.device);
  EXPECT_EQ(plan.priority, scheduled.priority);
  // Group 5 spans devices 0 and 1: dissolved; group 6 stays.
  EXPECT_EQ(plan.fusion_group, std::vector<int32_t>({-1, -1, 6, -1}));
  EXPECT_EQ(plan.method, "go");
}

TEST(BenchTest, GoMethodsWithoutAPolicyReportAnError) {
  BenchOptions options;
  options.methods = {kGoZeroShot};
  auto result = BenchTwoChains(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->rows[0].valid);
  EXPECT_THAT(result->rows[0].error, HasSubstr("no GO policy"));
}

}  // namespace
}  // namespace gopt::client
