#include "worker/executor.h"

#include <atomic>
#include <random>

#include "gmock/gmock.h"
#include "graph/hlo/hlo_importers.h"
#include "graph/import/builtin_importers.h"
#include "graph/importer.h"
#include "gtest/gtest.h"
#include "simulator/fusion_rules.h"
#include "tests/util/shared_data.h"
#include "worker/measurement.h"
#include "worker/torch_ops.h"

namespace gopt::worker {
namespace {

using ::testing::HasSubstr;

graph::Graph LoadGraph(const std::string& relative_path) {
  graph::ImporterRegistry registry;
  graph::RegisterBuiltinImporters(&registry);
  absl::StatusOr<graph::Graph> graph = registry.ImportFile(
      gopt::testing::SharedDataPath(relative_path), "auto", {});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : graph::Graph();
}

// An executor of `cpu` CPU executors and `cuda` CUDA devices (null, with a
// test failure, when it cannot be made).
std::unique_ptr<Executor> MakeExecutor(int cpu, int cuda) {
  ExecutorOptions options;
  options.cpu_executors = cpu;
  options.cuda_devices = cuda;
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Executor::Create(options);
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? *std::move(executor) : nullptr;
}

std::unique_ptr<Executor> TwoCpuExecutors() { return MakeExecutor(2, 0); }

ExecuteOptions OneRun() {
  ExecuteOptions options;
  options.warmup_runs = 0;
  options.min_repeats = 1;
  options.max_repeats = 1;
  options.min_measure_seconds = 0;
  options.keep_outputs = true;
  return options;
}

// Plans that place, order and fuse differently: every node alternating
// between the executors, a seeded random placement with random priorities,
// and runs of consecutive same-device elementwise nodes fused.
std::vector<simulator::Plan> VariedPlans(const graph::Graph& graph,
                                         const simulator::Topology& topology) {
  std::vector<simulator::Plan> plans;
  simulator::Plan alternate = simulator::DefaultPlan(graph, topology);
  for (int i = 0; i < graph.num_nodes(); ++i) alternate.device[i] = i % 2;
  simulator::KeepDeviceConstraints(graph, topology, &alternate.device);
  plans.push_back(alternate);
  std::mt19937 rng(/*seed=*/7);
  simulator::Plan random = simulator::DefaultPlan(graph, topology);
  random.priority.resize(graph.num_nodes());
  for (int i = 0; i < graph.num_nodes(); ++i) {
    random.device[i] = static_cast<int>(rng() % 2);
    random.priority[i] = static_cast<int>(rng() % 100);
  }
  simulator::KeepDeviceConstraints(graph, topology, &random.device);
  plans.push_back(random);
  simulator::Plan fused = simulator::DefaultPlan(graph, topology);
  fused.fusion_group.assign(graph.num_nodes(), -1);
  for (int i = 1; i < graph.num_nodes(); ++i) {
    const auto category = graph::OpKindCategory(graph.node(i).kind);
    const auto previous = graph::OpKindCategory(graph.node(i - 1).kind);
    if (category == graph::OpCategory::kElementwise &&
        previous == graph::OpCategory::kElementwise) {
      const int group =
          fused.fusion_group[i - 1] >= 0 ? fused.fusion_group[i - 1] : i - 1;
      fused.fusion_group[i - 1] = group;
      fused.fusion_group[i] = group;
    }
  }
  plans.push_back(fused);
  return plans;
}

// Runs `relative_path`'s graph on `executor` (two devices) under the
// default plan (everything on device 0) and under VariedPlans, and expects
// every output checksum equal within `relative_tolerance`.
void ExpectPlansComputeTheSame(const std::string& relative_path,
                               Executor* executor,
                               double relative_tolerance = 1e-9) {
  SCOPED_TRACE(relative_path);
  const graph::Graph graph = LoadGraph(relative_path);
  ASSERT_NE(executor, nullptr);
  const simulator::Topology topology = executor->HostTopology();
  absl::StatusOr<ExecutionResult> single = executor->Execute(
      graph, simulator::DefaultPlan(graph, topology), OneRun());
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_FALSE(single->output_checksums.empty());
  for (const simulator::Plan& plan : VariedPlans(graph, topology)) {
    absl::StatusOr<ExecutionResult> result =
        executor->Execute(graph, plan, OneRun());
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->output_checksums.size(), single->output_checksums.size());
    for (size_t i = 0; i < result->output_checksums.size(); ++i) {
      EXPECT_NEAR(
          result->output_checksums[i], single->output_checksums[i],
          relative_tolerance * (1 + std::abs(single->output_checksums[i])))
          << "checksum " << i;
    }
  }
}

TEST(ExecutorTest, PlansComputeWhatTheSingleDeviceRunComputesHlo) {
  ExpectPlansComputeTheSame("hlo/maml_flax_train_step.hlo",
                            TwoCpuExecutors().get());
}

TEST(ExecutorTest, PlansComputeWhatTheSingleDeviceRunComputesOnnx) {
  ExpectPlansComputeTheSame("onnx/light_squeezenet.onnx",
                            TwoCpuExecutors().get());
}

TEST(ExecutorTest, PlansComputeWhatTheSingleDeviceRunComputesGraphDef) {
  ExpectPlansComputeTheSame("tf_graphdef/kws_DS_CNN_S.pb",
                            TwoCpuExecutors().get());
}

// The CUDA path (scripts/gpu-check.sh runs it on a GPU host): plans over one
// CPU executor and one CUDA device compute what the CPU alone computes.
// GPU kernels (cuDNN's TF32 convolutions, other summation orders) round
// differently, hence the looser tolerance.
TEST(ExecutorTest, PlansOverCpuAndCudaComputeWhatTheCpuRunComputes) {
  if (!ExecutorHasCuda() || CudaDeviceCount() == 0) {
    GTEST_SKIP() << "needs the CUDA path and a GPU (scripts/gpu-check.sh); "
                 << "this build has CUDA: " << ExecutorHasCuda()
                 << ", devices visible: " << CudaDeviceCount();
  }
  std::unique_ptr<Executor> executor = MakeExecutor(1, 1);
  ASSERT_NE(executor, nullptr);
  ASSERT_EQ(executor->Describe()[1].name, "cuda:0");
  for (const char* path :
       {"hlo/maml_flax_train_step.hlo", "onnx/light_squeezenet.onnx",
        "tf_graphdef/kws_DS_CNN_S.pb"}) {
    ExpectPlansComputeTheSame(path, executor.get(), 1e-3);
  }
}

// Every cheap node fused into the group of its only computed input where
// the kernel rules allow (simulator/fusion_rules.h): convolution + batch
// norm + activation kernels on a CNN. An input computed only from
// parameters and constants (weights behind TF's Identity) does not count,
// so no group can reach itself through a node outside it.
simulator::Plan ChainsFused(const graph::Graph& graph,
                            const simulator::Topology& topology) {
  const int n = graph.num_nodes();
  std::vector<bool> source(n, false);  // computed from nothing
  simulator::Plan plan = simulator::DefaultPlan(graph, topology);
  plan.fusion_group.assign(n, -1);
  for (int id = 0; id < n; ++id) {
    source[id] = graph::IsFreeOpKind(graph.node(id).kind);
    int producer = -1;
    int computed_inputs = 0;
    for (const graph::Edge& edge : graph.in_edges(id)) {
      source[id] = source[id] && source[edge.src];
      if (edge.control || source[edge.src]) continue;
      producer = edge.src;
      ++computed_inputs;
    }
    if (computed_inputs != 1 || simulator::FusionRoleOf(graph.node(id).kind) !=
                                    simulator::FusionRole::kCheap) {
      continue;
    }
    std::vector<int32_t> tried = plan.fusion_group;
    const int32_t group = tried[producer] >= 0 ? tried[producer] : producer;
    tried[producer] = group;
    tried[id] = group;
    if (simulator::CheckFusionRules(graph, tried).ok()) {
      plan.fusion_group = std::move(tried);
    }
  }
  return plan;
}

// kws_DS_CNN_S's batch norms (inference mode) run inside their
// convolution's group, and the plan computes what the unfused one does.
TEST(ExecutorTest, ConvolutionBatchNormGroupsComputeWhatTheUnfusedRunComputes) {
  const graph::Graph graph = LoadGraph("tf_graphdef/kws_DS_CNN_S.pb");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const simulator::Topology topology = executor->HostTopology();
  const simulator::Plan fused = ChainsFused(graph, topology);
  int normalizations_with_convolution = 0;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (graph.node(id).kind != graph::OpKind::kNormalization ||
        fused.fusion_group[id] < 0) {
      continue;
    }
    for (int other = 0; other < graph.num_nodes(); ++other) {
      normalizations_with_convolution +=
          fused.fusion_group[other] == fused.fusion_group[id] &&
          graph.node(other).kind == graph::OpKind::kConvolution;
    }
  }
  EXPECT_EQ(normalizations_with_convolution, 9);
  absl::StatusOr<ExecutionResult> single = executor->Execute(
      graph, simulator::DefaultPlan(graph, topology), OneRun());
  ASSERT_TRUE(single.ok()) << single.status();
  absl::StatusOr<ExecutionResult> result =
      executor->Execute(graph, fused, OneRun());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->fused_groups, 9);
  ASSERT_EQ(result->output_checksums.size(), single->output_checksums.size());
  for (size_t i = 0; i < result->output_checksums.size(); ++i) {
    EXPECT_NEAR(result->output_checksums[i], single->output_checksums[i],
                1e-9 * (1 + std::abs(single->output_checksums[i])))
        << "checksum " << i;
  }
}

TEST(ExecutorTest, CrossDeviceEdgesAreCopiedOncePerTensorAndDevice) {
  const graph::Graph graph = LoadGraph("hlo/maml_flax_train_step.hlo");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const simulator::Topology topology = executor->HostTopology();
  const simulator::Plan plan = VariedPlans(graph, topology)[0];
  absl::StatusOr<ExecutionResult> result =
      executor->Execute(graph, plan, OneRun());
  ASSERT_TRUE(result.ok()) << result.status();
  int64_t expected = 0;
  for (int p = 0; p < graph.num_nodes(); ++p) {
    bool sent = false;
    for (const graph::Edge& e : graph.out_edges(p)) {
      sent = sent || (!e.control && plan.device[e.dst] != plan.device[p]);
    }
    expected += sent;
  }
  EXPECT_EQ(result->num_copies, expected);
  EXPECT_GT(result->bytes_copied, 0);
}

TEST(ExecutorTest, ReportsRealOpsMemoryAndPerNodeTimes) {
  const graph::Graph graph = LoadGraph("hlo/maml_flax_train_step.hlo");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  ExecuteOptions options = OneRun();
  options.min_repeats = 3;
  options.max_repeats = 3;
  absl::StatusOr<ExecutionResult> result = executor->Execute(
      graph, simulator::DefaultPlan(graph, executor->HostTopology()), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_nodes, graph.num_nodes());
  EXPECT_EQ(result->real_op_nodes, graph.num_nodes());
  EXPECT_DOUBLE_EQ(result->real_op_flop_fraction, 1.0);
  EXPECT_EQ(result->runs + result->outliers_discarded, 3);
  EXPECT_GT(result->measured_step_time_s, 0);
  EXPECT_GT(result->measured_min_step_time_s, 0);
  EXPECT_LE(result->measured_min_step_time_s, result->measured_step_time_s);
  EXPECT_EQ(result->per_node_seconds.size(), graph.num_nodes());
  ASSERT_EQ(result->peak_memory_bytes.size(), 2u);
  EXPECT_GT(result->peak_memory_bytes[0], 0);
}

TEST(ExecutorTest, OpsWithoutALibTorchOpRunAsCopiesAndAreCounted) {
  const graph::Graph graph = LoadGraph("hlo/jaxmd_apply_fn.hlo");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  absl::StatusOr<ExecutionResult> result = executor->Execute(
      graph, simulator::DefaultPlan(graph, executor->HostTopology()), OneRun());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(result->real_op_nodes, result->total_nodes);
  EXPECT_THAT(result->warnings,
              ::testing::Contains(HasSubstr("while node(s) ran as copies")));
}

TEST(ExecutorTest, BadPlansAreInvalidArguments) {
  const graph::Graph graph = LoadGraph("hlo/maml_flax_train_step.hlo");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  simulator::Plan plan =
      simulator::DefaultPlan(graph, executor->HostTopology());
  plan.device.pop_back();
  absl::Status short_plan = executor->Execute(graph, plan, OneRun()).status();
  EXPECT_EQ(short_plan.code(), absl::StatusCode::kInvalidArgument);
  plan = simulator::DefaultPlan(graph, executor->HostTopology());
  plan.device[3] = 5;
  absl::Status unknown = executor->Execute(graph, plan, OneRun()).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr(graph.node(3).name));
}

TEST(ExecutorTest, APlanOverItsTimeoutIsDeadlineExceeded) {
  const graph::Graph graph = LoadGraph("onnx/light_squeezenet.onnx");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  ExecuteOptions options = OneRun();
  options.timeout_seconds = 1e-9;
  absl::Status status =
      executor
          ->Execute(graph,
                    simulator::DefaultPlan(graph, executor->HostTopology()),
                    options)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
}

// A 4 TiB tensor (over any host's tensor limit) and a small slice of it.
constexpr char kOversizedHlo[] = R"(HloModule oversized
ENTRY main {
  a = f32[8] parameter(0)
  z = f32[] constant(0)
  big = f32[1099511627776] broadcast(z), dimensions={}
  c = f32[8] slice(big), slice={[0:8]}
  ROOT d = f32[8] negate(a)
})";

TEST(ExecutorTest, SetupOnlyCountsWhatCannotBeAllocatedAsNotRun) {
  absl::StatusOr<graph::Graph> graph =
      graph::NewHloTextImporter()->Import(kOversizedHlo, {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const simulator::Plan plan =
      simulator::DefaultPlan(*graph, executor->HostTopology());
  const absl::Status full = executor->Execute(*graph, plan, OneRun()).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(full.message(), HasSubstr("node 'big'"));

  ExecuteOptions options = OneRun();
  options.setup_only = true;
  absl::StatusOr<ExecutionResult> result =
      executor->Execute(*graph, plan, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_nodes, 5);
  EXPECT_EQ(result->not_run_nodes, 2);  // big, and c that needs it
  EXPECT_EQ(result->real_op_nodes, 3);
  EXPECT_EQ(result->measured_step_time_s, 0);
  EXPECT_THAT(result->warnings,
              ::testing::Contains(HasSubstr(
                  "1 node(s) did not run (output f32[1099511627776] needs "
                  "4398046511104 bytes); first: 'big'")));
  EXPECT_THAT(result->warnings,
              ::testing::Contains(HasSubstr(
                  "1 node(s) did not run (an input did not run); first: 'c'")));
}

TEST(ExecutorTest, SetupOnlyCountsNodesAfterTheDeadlineAsNotRun) {
  const graph::Graph graph = LoadGraph("onnx/light_squeezenet.onnx");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  ExecuteOptions options = OneRun();
  options.setup_only = true;
  options.timeout_seconds = 1e-9;
  absl::StatusOr<ExecutionResult> result = executor->Execute(
      graph, simulator::DefaultPlan(graph, executor->HostTopology()), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->real_op_nodes, 0);
  EXPECT_EQ(result->not_run_nodes, graph.num_nodes());
  EXPECT_EQ(result->real_op_flop_fraction, 0);
}

TEST(ExecutorTest, ACancelledPlanStops) {
  const graph::Graph graph = LoadGraph("onnx/light_squeezenet.onnx");
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const std::atomic<bool> cancelled(true);
  ExecuteOptions options = OneRun();
  options.cancelled = &cancelled;
  absl::Status status =
      executor
          ->Execute(graph,
                    simulator::DefaultPlan(graph, executor->HostTopology()),
                    options)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
}

TEST(ExecutorTest, CreateRejectsBadOptions) {
  ExecutorOptions options;
  options.cpu_executors = -1;
  EXPECT_EQ(Executor::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.cpu_executors = 1;
  options.threads_per_executor = 0;
  EXPECT_EQ(Executor::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  if (!ExecutorHasCuda()) {
    options.threads_per_executor = 1;
    options.cuda_devices = 1;
    EXPECT_EQ(Executor::Create(options).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
}

TEST(ExecutorTest, DescribesPinnedCpuExecutors) {
  std::unique_ptr<Executor> executor = TwoCpuExecutors();
  ASSERT_NE(executor, nullptr);
  const std::vector<DeviceDescription> devices = executor->Describe();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "cpu:0");
  EXPECT_EQ(devices[1].cores.size(), 1u);
  EXPECT_EQ(executor->HostTopology().num_devices(), 2);
}

// Sort runs along the node's dimension, ascending, stable or not (a plain
// bool for the stable flag once picked LibTorch's sort(self, dim,
// descending) overload: it sorted along dim 0, descending).
TEST(TorchOpsTest, SortSortsAscendingAlongTheNodesDimension) {
  for (const bool stable : {false, true}) {
    SCOPED_TRACE(stable ? "stable" : "not stable");
    graph::Node node;
    node.name = "sort";
    node.kind = graph::OpKind::kSort;
    node.outputs = {graph::TensorType{graph::DType::kF32, {2, 3}}};
    node.attributes.dimensions = {1};
    node.attributes.is_stable = stable;
    const at::Tensor keys =
        at::tensor({3.f, 1.f, 2.f, 9.f, 7.f, 8.f}).reshape({2, 3});
    const std::vector<at::Tensor> out = internal::DataMovementOp(node, {keys});
    ASSERT_EQ(out.size(), 1u);
    const at::Tensor expected =
        at::tensor({1.f, 2.f, 3.f, 7.f, 8.f, 9.f}).reshape({2, 3});
    EXPECT_TRUE(at::equal(out[0], expected)) << out[0];
  }
}

TEST(MeasurementTest, DiscardsSlowOutliersAndReportsTheMedian) {
  const RunSummary summary = SummarizeRuns({1.0, 1.1, 0.9, 1.0, 10.0});
  EXPECT_EQ(summary.outliers, 1);
  EXPECT_DOUBLE_EQ(summary.median_s, 1.0);
  EXPECT_EQ(summary.kept_s.size(), 4u);
  EXPECT_NEAR(summary.spread, (1.07 - 0.93) / 1.0, 1e-9);
}

TEST(MeasurementTest, EmptyRunsGiveAZeroSummary) {
  const RunSummary summary = SummarizeRuns({});
  EXPECT_EQ(summary.median_s, 0);
  EXPECT_EQ(summary.outliers, 0);
}

}  // namespace
}  // namespace gopt::worker
