#include "engine/engine.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/testing/fake_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/learned_cost_model.h"
#include "simulator/topology_proto.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;

// Two independent matmul chains joined by an add: worth splitting over two
// devices, and fusible.
constexpr char kTwoBranches[] = R"(HloModule two_branches

ENTRY main {
  a = f32[2048,2048]{1,0} parameter(0)
  b = f32[2048,2048]{1,0} parameter(1)
  d0 = f32[2048,2048]{1,0} dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r0 = f32[2048,2048]{1,0} tanh(d0)
  d1 = f32[2048,2048]{1,0} dot(b, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r1 = f32[2048,2048]{1,0} tanh(d1)
  ROOT s = f32[2048,2048]{1,0} add(r0, r1)
}
)";

gopt::v1::OptimizeRequest TwoBranchRequest() {
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_serialized(kTwoBranches);
  request.mutable_graph()->set_format("hlo");
  request.mutable_topology()->set_preset("v100x2-pcie");
  return request;
}

std::shared_ptr<PolicyRegistry> RegistryWith(
    const testing::FakePolicyOptions& options) {
  auto registry = std::make_shared<PolicyRegistry>();
  EXPECT_TRUE(
      registry->Add(std::make_unique<testing::FakePolicy>(options)).ok());
  return registry;
}

TEST(EngineTest, WithoutPoliciesAnswersWithBestBaselineAndSaysSo) {
  const Engine engine(EngineOptions(), nullptr);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(TwoBranchRequest(), RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(response->method(), ::testing::StartsWith("best-baseline:"));
  EXPECT_EQ(response->method(),
            "best-baseline:" + response->best_baseline_method());
  EXPECT_THAT(response->warnings(),
              ::testing::Contains(HasSubstr("no policy for")));
  // 8 placements x 2 schedulings x 3 fusions, plus m-etf and m-sct in their
  // own placement order x 3 fusions; layout not requested.
  EXPECT_EQ(response->baselines_size(), 54);
  std::vector<std::string> methods;
  for (const auto& baseline : response->baselines()) {
    methods.push_back(baseline.method());
  }
  EXPECT_THAT(methods,
              ::testing::Contains("m-sct+placement-order+greedy+default"));
  EXPECT_LE(response->step_time_s(), response->default_step_time_s());
  EXPECT_GT(response->speedup_over_default(), 1.0);
  EXPECT_EQ(response->peak_memory_bytes_size(), 2);
  EXPECT_EQ(response->num_nodes(), 7);
  EXPECT_FALSE(response->partial());
  EXPECT_EQ(response->plan().device_size(), 7);
}

// A runtime model that prices every dot at twice its roofline time.
std::shared_ptr<const simulator::LearnedCostModel> DotsTwiceAsSlow() {
  simulator::RuntimeModelParams params;
  params.dense_mean.assign(simulator::kDenseKernelFeatures, 0);
  params.dense_scale.assign(simulator::kDenseKernelFeatures, 1);
  simulator::DenseLayer hidden;
  hidden.inputs = simulator::kKernelFeatures;
  hidden.outputs = 1;
  hidden.weights.assign(simulator::kKernelFeatures, 0);
  hidden.bias = {1};
  simulator::DenseLayer last;
  last.inputs = 1;
  last.outputs = 1;
  last.weights = {std::log(2.0f)};
  last.bias = {0};
  params.layers = {hidden, last};
  params.known_kinds = {graph::OpKind::kDot};
  return std::make_shared<const simulator::LearnedCostModel>(params);
}

TEST(EngineTest, NamedTopologiesPriceWithTheirRuntimeModelAndSaySo) {
  absl::StatusOr<simulator::Topology> plain =
      simulator::PresetTopology("v100x2-pcie");
  ASSERT_TRUE(plain.ok());
  simulator::Topology learned = *plain;
  learned.runtime_model_path = "host.runtime-model.json";
  for (simulator::DeviceProfile& device : learned.devices) {
    device.runtime_model = DotsTwiceAsSlow();
  }
  EngineOptions options;
  options.named_topologies = {{"host.json", learned}};
  const Engine engine(options, nullptr);

  gopt::v1::EvaluateRequest evaluate;
  *evaluate.mutable_graph() = TwoBranchRequest().graph();
  evaluate.mutable_topology()->set_preset("host.json");
  for (int i = 0; i < 7; ++i) evaluate.mutable_plan()->add_device(0);
  absl::StatusOr<gopt::v1::EvaluateResponse> with_model =
      engine.Evaluate(evaluate, RequestContext());
  ASSERT_TRUE(with_model.ok()) << with_model.status();
  EXPECT_EQ(with_model->cost_model(), "learned:host.runtime-model.json");
  evaluate.mutable_topology()->set_preset("v100x2-pcie");
  absl::StatusOr<gopt::v1::EvaluateResponse> roofline =
      engine.Evaluate(evaluate, RequestContext());
  ASSERT_TRUE(roofline.ok()) << roofline.status();
  EXPECT_EQ(roofline->cost_model(), "roofline");
  // Two 2048^3 dots dominate: the learned model's step is slower.
  EXPECT_GT(with_model->step_time_s(), 1.5 * roofline->step_time_s());

  // A request without a topology gets the first named one.
  gopt::v1::OptimizeRequest optimize = TwoBranchRequest();
  optimize.clear_topology();
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(optimize, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->cost_model(), "learned:host.runtime-model.json");

  // A request's own topology naming a model file loads nothing, and says so.
  *optimize.mutable_topology()->mutable_topology() =
      simulator::TopologyToProto(learned);
  response = engine.Optimize(optimize, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->cost_model(), "roofline");
  EXPECT_THAT(response->warnings(),
              ::testing::Contains(HasSubstr("is not loaded from a request")));
}

TEST(EngineTest, ReturnGraphWritesTheDecisionsIntoTheCallersFile) {
  const Engine engine(EngineOptions(), nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.set_return_graph(true);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  // One decision per HLO instruction, named as the module names it.
  ASSERT_EQ(response->decisions_size(), 7);
  std::vector<std::string> names;
  for (const gopt::v1::NodeDecision& decision : response->decisions()) {
    names.push_back(decision.name());
    EXPECT_EQ(decision.scope(), "main");
    EXPECT_EQ(decision.ir_nodes(), 1);
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("a", "b", "d0", "r0", "d1",
                                                     "r1", "s"));
  ASSERT_EQ(response->device_summaries_size(), 2);
  int64_t ops = 0;
  for (const gopt::v1::DeviceSummary& summary : response->device_summaries()) {
    ops += summary.ops();
  }
  EXPECT_EQ(ops, 7);
  EXPECT_EQ(response->optimized_graph_format(), "hlo");
  EXPECT_THAT(response->optimized_graph(), HasSubstr("HloModule two_branches"));
  EXPECT_THAT(response->optimized_graph(),
              HasSubstr("sharding={maximal device="));
}

TEST(EngineTest, ReturnGraphOverTheResponseLimitIsResourceExhausted) {
  EngineOptions options;
  options.max_response_bytes = 64;
  const Engine engine(options, nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.set_return_graph(true);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted)
      << response.status();
  EXPECT_THAT(response.status().message(), HasSubstr("message limit of 64"));
}

TEST(EngineTest, TasksLimitTheBaselineMethods) {
  const Engine engine(EngineOptions(), nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_tasks()->set_fusion(true);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->baselines_size(), 3);
  EXPECT_EQ(response->baselines(0).method(), "single+fifo+none+default");
  EXPECT_EQ(response->baselines(1).method(), "single+fifo+greedy+default");
  EXPECT_EQ(response->baselines(2).method(), "single+fifo+greedy-join+default");
}

TEST(EngineTest, FasterPolicyPlanWins) {
  testing::FakePolicyOptions fake;
  fake.method = "heft+fifo+greedy";
  const Engine engine(EngineOptions(), RegistryWith(fake));
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  // Only the default-equivalent baseline: the policy's split must win.
  request.mutable_options()->add_baseline_methods("single");
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->policy_results_size(), 1);
  EXPECT_TRUE(response->policy_results(0).valid());
  EXPECT_EQ(response->method(), "fake");
  EXPECT_LT(response->step_time_s(), response->default_step_time_s());
  EXPECT_THAT(response->timings(),
              ::testing::Contains(::testing::Property(
                  &gopt::v1::StageTiming::stage, "policy:fake")));
}

TEST(EngineTest, ARequestWithoutAPolicyRunsTheNewestVersionOfEach) {
  // Versions 1 and 2 of "fake" loaded side by side (a new checkpoint shipped
  // beside the old): only version 2 runs, unless the request names 1.
  auto registry = std::make_shared<PolicyRegistry>();
  for (const char* version : {"1", "2"}) {
    testing::FakePolicyOptions fake;
    fake.method = "heft+fifo+greedy";
    fake.version = version;
    ASSERT_TRUE(
        registry->Add(std::make_unique<testing::FakePolicy>(fake)).ok());
  }
  const Engine engine(EngineOptions(), registry);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_options()->add_baseline_methods("single");
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->policy_results_size(), 1);
  EXPECT_EQ(response->policy_results(0).version(), "2");
  request.mutable_policy()->set_name("fake");
  request.mutable_policy()->set_version("1");
  response = engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->policy_results_size(), 1);
  EXPECT_EQ(response->policy_results(0).version(), "1");
  ASSERT_GT(response->baselines_size(), 0);
  EXPECT_TRUE(response->baselines(0).version().empty());
}

TEST(EngineTest, NeverSlowerThanDefault) {
  testing::FakePolicyOptions fake;
  fake.method = "round-robin";
  const Engine engine(EngineOptions(), RegistryWith(fake));
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  // A slow link: splitting loses; no baseline except round-robin either.
  request.mutable_topology()->clear_preset();
  gopt::v1::Topology* topology = request.mutable_topology()->mutable_topology();
  topology->set_name("slow-link");
  for (int i = 0; i < 2; ++i) {
    gopt::v1::DeviceProfile* device = topology->add_devices();
    device->set_name("gpu");
    device->set_kind("gpu");
    device->set_peak_f32_flops(100e12);
    device->set_memory_bandwidth_bytes_per_s(1e12);
    device->set_memory_bytes(int64_t{16} << 30);
  }
  topology->mutable_default_link()->set_bandwidth_bytes_per_s(1e6);
  request.mutable_options()->add_baseline_methods("round-robin");
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->method(), "default");
  EXPECT_EQ(response->step_time_s(), response->default_step_time_s());
  EXPECT_GT(response->policy_results(0).step_time_s(),
            response->default_step_time_s());
}

TEST(EngineTest, NamedPolicyMustExist) {
  const Engine engine(EngineOptions(), RegistryWith({}));
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_policy()->set_name("go-multitask");
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("unknown policy 'go-multitask'"));
  EXPECT_THAT(status.message(), HasSubstr("fake@1"));
}

TEST(EngineTest, DeadlineGivesPartialResultWhenAllowed) {
  testing::FakePolicyOptions blocking;  // blocks until the deadline
  const Engine engine(EngineOptions(), RegistryWith(blocking));
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.set_allow_partial_result(true);
  // The fake policy waits on the request's clock: 5 ms per poll.
  const FakeClock clock;
  RequestContext context;
  context.clock = &clock;
  context.deadline = clock.Now() + absl::Milliseconds(300);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, context);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->partial());
  EXPECT_THAT(response->method(), ::testing::StartsWith("best-baseline:"));
  EXPECT_THAT(response->warnings(),
              ::testing::Contains(HasSubstr("best plan found so far")));

  request.set_allow_partial_result(false);
  context.deadline = clock.Now() + absl::Milliseconds(300);
  EXPECT_EQ(engine.Optimize(request, context).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(EngineTest, SkipsPolicyWhenDeadlineLeavesLessThanItsLastRun) {
  testing::FakePolicyOptions slow;
  slow.method = "heft+fifo+greedy";
  slow.delay = absl::Milliseconds(300);  // on the request's clock
  const Engine engine(EngineOptions(), RegistryWith(slow));
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.set_allow_partial_result(true);
  const FakeClock clock;
  RequestContext context;
  context.clock = &clock;
  absl::StatusOr<gopt::v1::OptimizeResponse> first =
      engine.Optimize(request, context);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->policy_results_size(), 1);

  context.deadline = clock.Now() + absl::Milliseconds(200);
  absl::StatusOr<gopt::v1::OptimizeResponse> second =
      engine.Optimize(request, context);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->partial());
  EXPECT_EQ(second->policy_results_size(), 0);
  EXPECT_THAT(
      second->warnings(),
      ::testing::Contains(HasSubstr("needs for a zero-shot pass on 7 nodes")));

  request.set_allow_partial_result(false);
  context.deadline = clock.Now() + absl::Milliseconds(200);
  EXPECT_EQ(engine.Optimize(request, context).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(EngineTest, CancelledRequestStops) {
  absl::Notification started;
  testing::FakePolicyOptions blocking;
  blocking.started = &started;
  const Engine engine(EngineOptions(), RegistryWith(blocking));
  std::atomic<bool> cancelled{false};
  RequestContext context;
  context.cancelled = &cancelled;
  absl::Status status;
  std::thread request(
      [&] { status = engine.Optimize(TwoBranchRequest(), context).status(); });
  started.WaitForNotification();
  cancelled.store(true);
  request.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
}

TEST(EngineTest, ProgressAfterEachStage) {
  const Engine engine(EngineOptions(), nullptr);
  std::vector<gopt::v1::OptimizeProgress> events;
  RequestContext context;
  context.on_progress = [&](const gopt::v1::OptimizeProgress& progress) {
    events.push_back(progress);
  };
  ASSERT_TRUE(engine.Optimize(TwoBranchRequest(), context).ok());
  // Import, then one event per placement heuristic (8).
  ASSERT_EQ(events.size(), 9u);
  EXPECT_EQ(events[0].stage(), "import");
  EXPECT_EQ(events[8].stage(), "baselines");
  EXPECT_EQ(events[8].step(), 8);
  EXPECT_GT(events[8].best_step_time_s(), 0);
  EXPECT_LE(events[8].best_step_time_s(), events[1].best_step_time_s());
}

TEST(EngineTest, BadRequestsNameTheField) {
  const Engine engine(EngineOptions(), nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_topology()->set_preset("v200x3");
  absl::Status status = engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("topology.preset"));

  request = TwoBranchRequest();
  request.mutable_graph()->set_format("caffe");
  status = engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("graph.format"));

  request = TwoBranchRequest();
  request.mutable_options()->add_baseline_methods("metis+lifo");
  status = engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("options.baseline_methods"));

  request = TwoBranchRequest();
  request.mutable_budget()->set_seconds(-1);
  EXPECT_EQ(engine.Optimize(request, RequestContext()).status().code(),
            absl::StatusCode::kInvalidArgument);

  request = TwoBranchRequest();
  request.mutable_budget()->set_mode(
      static_cast<gopt::v1::Budget::Mode>(/*mode=*/7));
  status = engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("budget.mode 7 is not one of"));

  request = TwoBranchRequest();
  request.clear_graph();
  status = engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("graph"));
}

TEST(EngineTest, MalformedNativeGraphNamesNodeAndField) {
  const Engine engine(EngineOptions(), nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  graph->set_name("bad");
  gopt::v1::Node* node = graph->add_nodes();
  node->set_name("relu0");
  node->set_kind("no-such-kind");
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("relu0"));
  EXPECT_THAT(status.message(), HasSubstr("kind"));
}

TEST(EngineTest, GraphOverNodeLimitIsResourceExhausted) {
  EngineOptions options;
  options.max_graph_nodes = 5;
  const Engine engine(options, nullptr);
  const absl::Status status =
      engine.Optimize(TwoBranchRequest(), RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("at most 5 nodes"));
}

TEST(EngineTest, NoPlanFitsIsFailedPrecondition) {
  const Engine engine(EngineOptions(), nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_topology()->clear_preset();
  gopt::v1::Topology* topology = request.mutable_topology()->mutable_topology();
  topology->set_name("tiny");
  gopt::v1::DeviceProfile* device = topology->add_devices();
  device->set_name("tiny");
  device->set_kind("gpu");
  device->set_peak_f32_flops(1e12);
  device->set_memory_bandwidth_bytes_per_s(1e11);
  device->set_memory_bytes(1 << 20);
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("fits in memory"));
}

TEST(EngineTest, EvaluateSimulatesThePlanWithTrace) {
  const Engine engine(EngineOptions(), nullptr);
  absl::StatusOr<gopt::v1::OptimizeResponse> optimized =
      engine.Optimize(TwoBranchRequest(), RequestContext());
  ASSERT_TRUE(optimized.ok());
  gopt::v1::EvaluateRequest request;
  *request.mutable_graph() = TwoBranchRequest().graph();
  *request.mutable_topology() = TwoBranchRequest().topology();
  *request.mutable_plan() = optimized->plan();
  request.set_include_trace(true);
  absl::StatusOr<gopt::v1::EvaluateResponse> response =
      engine.Evaluate(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->step_time_s(), optimized->step_time_s());
  EXPECT_EQ(response->default_step_time_s(), optimized->default_step_time_s());
  EXPECT_THAT(response->chrome_trace_json(), HasSubstr("traceEvents"));

  request.mutable_plan()->set_device(0, 7);
  const absl::Status status =
      engine.Evaluate(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("plan"));
}

TEST(EngineTest, ListPoliciesShowsCardAndTasks) {
  testing::FakePolicyOptions fake;
  fake.card = {{"name", "fake"}, {"kind", "fake"}};
  fake.tasks.scheduling = false;
  const Engine engine(EngineOptions(), RegistryWith(fake));
  const gopt::v1::ListPoliciesResponse response = engine.ListPolicies();
  ASSERT_EQ(response.policies_size(), 1);
  EXPECT_EQ(response.policies(0).name(), "fake");
  EXPECT_TRUE(response.policies(0).tasks().placement());
  EXPECT_FALSE(response.policies(0).tasks().scheduling());
  EXPECT_THAT(response.policies(0).card_json(), HasSubstr("\"kind\""));
}

// Regressions from the hostile-client review (issue 16): each answer is a
// precise error, never a crash and never a NaN, inf or 0 step time.

TEST(EngineTest, LoopWhoseCostOverflowsIsInvalidArgument) {
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_graph()->set_serialized(R"(HloModule huge_loop

body {
  p = (s32[], f32[2048,2048]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[2048,2048]{1,0} get-tuple-element(p), index=1
  d = f32[2048,2048]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[], f32[2048,2048]) tuple(i, d)
}

cond {
  p = (s32[], f32[2048,2048]) parameter(0)
  ROOT c = pred[] constant(true)
}

ENTRY main {
  x = f32[2048,2048]{1,0} parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[2048,2048]) tuple(z, x)
  ROOT loop = (s32[], f32[2048,2048]) while(init), condition=cond, body=body, backend_config={"known_trip_count":{"n":"4611686018427387904"}}
}
)");
  const Engine engine(EngineOptions(), nullptr);
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("node 'loop' (op 'while')"));
}

TEST(EngineTest, NodesOfAbsurdFlopsAreInvalidArgument) {
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  graph->set_name("absurd");
  for (const char* name : {"a", "b"}) {
    gopt::v1::Node* node = graph->add_nodes();
    node->set_name(name);
    node->set_op("custom");
    node->set_kind("other");
    node->set_flops(1e308);
  }
  const Engine engine(EngineOptions(), nullptr);
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("flops 1e+308"));
}

TEST(EngineTest, GraphWithoutWorkIsInvalidArgumentNotZeroStepTime) {
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_graph()->set_serialized(R"(HloModule idle

ENTRY main {
  ROOT a = f32[8]{0} parameter(0)
}
)");
  const Engine engine(EngineOptions(), nullptr);
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("has no work to optimize"));
}

TEST(EngineTest, FineTuneStepsAreCapped) {
  EngineOptions options;
  options.max_fine_tune_steps = 100;
  const Engine engine(options, nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_budget()->set_mode(gopt::v1::Budget::FINE_TUNE);
  request.mutable_budget()->set_fine_tune_steps(2'147'483'647);
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("0..100"));
}

TEST(EngineTest, FineTuneWithoutStepsOrSecondsGetsTheDefaultBudget) {
  int32_t steps = -1;
  absl::Time deadline;
  testing::FakePolicyOptions fake;
  fake.method = "heft+fifo+greedy";
  fake.seen_fine_tune_steps = &steps;
  fake.seen_deadline = &deadline;
  EngineOptions options;
  options.default_fine_tune_steps = 7;
  options.default_fine_tune_seconds = 3;
  const Engine engine(options, RegistryWith(fake));
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  request.mutable_budget()->set_mode(gopt::v1::Budget::FINE_TUNE);
  RequestContext context;
  context.deadline = absl::Now() + absl::Hours(1);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(engine.Optimize(request, context).ok());
  EXPECT_EQ(steps, 7);
  EXPECT_LE(deadline, absl::Now() + absl::Seconds(3));
  EXPECT_GE(deadline, start);

  request.mutable_budget()->set_fine_tune_steps(20);
  ASSERT_TRUE(engine.Optimize(request, context).ok());
  EXPECT_EQ(steps, 20);
}

TEST(EngineTest, WarnsOfDeviceConstraintsTheTopologyCannotKeep) {
  const Engine engine(EngineOptions(), nullptr);
  gopt::v1::OptimizeRequest request;
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  graph->set_name("decode_then_add");
  gopt::v1::Node* decode = graph->add_nodes();
  decode->set_name("decode");
  decode->set_op("DecodeJpeg");
  decode->set_kind("other");
  decode->set_bytes_written(1 << 20);
  decode->set_device_constraint(gopt::v1::DEVICE_CONSTRAINT_CPU_ONLY);
  request.mutable_topology()->set_preset("v100x2-pcie");
  request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(response->warnings(),
              ::testing::Contains(HasSubstr(
                  "1 CPU-only node (first: 'decode', DecodeJpeg) cannot be "
                  "kept to their device kind: topology 'v100x2-pcie' has no "
                  "CPU device")));
}

TEST(EngineTest, RepeatedBaselineMethodsRunOnceAndAreCapped) {
  EngineOptions options;
  options.max_baseline_methods = 2;
  const Engine engine(options, nullptr);
  gopt::v1::OptimizeRequest request = TwoBranchRequest();
  for (int i = 0; i < 30'000; ++i) {
    request.mutable_options()->add_baseline_methods("heft");
  }
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->baselines_size(), 1);

  request.mutable_options()->add_baseline_methods("single");
  request.mutable_options()->add_baseline_methods("round-robin");
  const absl::Status status =
      engine.Optimize(request, RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("more than 2 distinct methods"));
}

TEST(EngineTest, BaselinesStopAtTheDeadline) {
  const Engine engine(EngineOptions(), nullptr);
  const FakeClock clock;
  RequestContext context;
  context.clock = &clock;
  context.deadline = clock.Now() - absl::Seconds(1);
  const absl::Status status =
      engine.Optimize(TwoBranchRequest(), context).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
}

// Evaluates the plan Optimize chose for TwoBranchRequest.
gopt::v1::EvaluateRequest TwoBranchEvaluation(bool trace) {
  gopt::v1::EvaluateRequest request;
  *request.mutable_graph() = TwoBranchRequest().graph();
  *request.mutable_topology() = TwoBranchRequest().topology();
  absl::StatusOr<gopt::v1::OptimizeResponse> optimized =
      Engine(EngineOptions(), nullptr)
          .Optimize(TwoBranchRequest(), RequestContext());
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (optimized.ok()) *request.mutable_plan() = optimized->plan();
  request.set_include_trace(trace);
  return request;
}

TEST(EngineTest, EvaluateKeepsToTheDeadlineAndTheTraceLimit) {
  EngineOptions options;
  options.max_trace_bytes = 1000;
  const Engine engine(options, nullptr);
  const FakeClock clock;
  RequestContext late;
  late.clock = &clock;
  late.deadline = clock.Now() - absl::Seconds(1);
  EXPECT_EQ(engine.Evaluate(TwoBranchEvaluation(false), late).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  const absl::Status status =
      engine.Evaluate(TwoBranchEvaluation(true), RequestContext()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("include_trace"));
  EXPECT_TRUE(
      engine.Evaluate(TwoBranchEvaluation(false), RequestContext()).ok());
}

TEST(EngineTest, MemoryBudgetRefusesWhatDoesNotFitAndIsReleased) {
  const Engine engine(EngineOptions(), nullptr);
  MemoryBudget small(/*budget_bytes=*/1 << 20);
  RequestContext context;
  context.memory = &small;
  const absl::Status status =
      engine.Optimize(TwoBranchRequest(), context).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("--memory_budget_bytes"));
  EXPECT_EQ(small.in_use_bytes(), 0);

  MemoryBudget enough(/*budget_bytes=*/int64_t{1} << 30);
  context.memory = &enough;
  EXPECT_TRUE(engine.Optimize(TwoBranchRequest(), context).ok());
  EXPECT_TRUE(engine.Evaluate(TwoBranchEvaluation(true), context).ok());
  EXPECT_EQ(enough.in_use_bytes(), 0);
}

TEST(PolicyTimeEstimatesTest, EachRequestIsEstimatedFromItsOwnSize) {
  PolicyTimeEstimates estimates;
  EXPECT_EQ(estimates.ZeroShotSeconds("go", 10), 0);
  // One 85k-node pass of 8.5 s ...
  estimates.RecordZeroShot("go", /*num_nodes=*/85'000, /*seconds=*/8.5);
  // ... makes a 1,000-node graph expect 0.1 s, not 8.5 s.
  EXPECT_DOUBLE_EQ(estimates.ZeroShotSeconds("go", 1'000), 0.1);
  // A small graph's own pass sets the rate of small graphs only.
  estimates.RecordZeroShot("go", /*num_nodes=*/10, /*seconds=*/0.05);
  EXPECT_DOUBLE_EQ(estimates.ZeroShotSeconds("go", 12), 0.06);
  EXPECT_DOUBLE_EQ(estimates.ZeroShotSeconds("go", 80'000), 8.0);
  EXPECT_EQ(estimates.ZeroShotSeconds("other", 80'000), 0);
}

}  // namespace
}  // namespace gopt::engine
