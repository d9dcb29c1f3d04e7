// Measuring in a gopt-worker child process (--workers=local): a plan over the
// memory a measurement may use is refused before any worker sees it; a
// child killed mid-plan, or stuck past the plan's timeout, is replaced and
// the pool measures again; LibTorch's errors arrive without backtraces.
// Real gopt-worker processes on loopback, no mocks.

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/child_worker.h"
#include "engine/memory_budget.h"
#include "engine/worker_pool.h"
#include "gmock/gmock.h"
#include "gopt/v1/optimizer.grpc.pb.h"
#include "gopt/v1/worker.grpc.pb.h"
#include "graph/import/builtin_importers.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "simulator/topology.h"
#include "tests/util/child_process.h"
#include "tests/util/http_get.h"
#include "worker/testing/node_executions.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using worker::testing::NodeExecutions;

// Two f32[N,N] parameters and their product.
std::string DotHlo(int n) {
  const std::string type = absl::StrCat("f32[", n, ",", n, "]{1,0}");
  return absl::StrCat("HloModule dot_", n, "\n\nENTRY main {\n  a = ", type,
                      " parameter(0)\n  b = ", type,
                      " parameter(1)\n  ROOT d = ", type,
                      " dot(a, b), lhs_contracting_dims={1}, "
                      "rhs_contracting_dims={0}\n}\n");
}

// `length` chained f32[n,n] products: long to run, small to hold.
std::string DotChainHlo(int n, int length) {
  const std::string type = absl::StrCat("f32[", n, ",", n, "]{1,0}");
  std::string hlo = absl::StrCat(
      "HloModule chain\n\nENTRY main {\n  x0 = ", type, " parameter(0)\n");
  for (int i = 1; i <= length; ++i) {
    absl::StrAppend(&hlo, i == length ? "  ROOT x" : "  x", i, " = ", type,
                    " dot(x", i - 1,
                    ", x0), lhs_contracting_dims={1}, "
                    "rhs_contracting_dims={0}\n");
  }
  return hlo + "}\n";
}

graph::Graph Import(const std::string& hlo) {
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  absl::StatusOr<graph::Graph> graph = importers.Import(hlo, "hlo", {});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::move(*graph);
}

simulator::Plan AllOnDevice0(const graph::Graph& graph) {
  simulator::Plan plan =
      simulator::DefaultPlan(graph, *simulator::PresetTopology("cpu-host"));
  plan.device.assign(graph.num_nodes(), 0);
  return plan;
}

// Counts the pool's on_execution calls by status label.
class ExecutionCounter {
 public:
  std::function<void(absl::string_view, double)> Callback() {
    return [this](absl::string_view status, double) {
      absl::MutexLock lock(&mutex_);
      ++counts_[std::string(status)];
    };
  }
  int count(const std::string& status) {
    absl::MutexLock lock(&mutex_);
    return counts_[status];
  }
  int total() {
    absl::MutexLock lock(&mutex_);
    int n = 0;
    for (const auto& [status, count] : counts_) n += count;
    return n;
  }

 private:
  absl::Mutex mutex_;
  std::map<std::string, int> counts_ ABSL_GUARDED_BY(mutex_);
};

ChildWorkerOptions TwoExecutors() {
  ChildWorkerOptions options;
  options.binary = GOPT_WORKER_BINARY;
  options.executor.cpu_executors = 2;
  options.executor.pin_threads = false;
  return options;
}

// A pool over one gopt-worker child; `child` is set to it (owned by the
// pool).
std::unique_ptr<WorkerPool> ChildPool(const ChildWorkerOptions& child_options,
                                      WorkerPoolOptions options,
                                      ChildWorker** child) {
  absl::StatusOr<std::unique_ptr<ChildWorker>> started =
      ChildWorker::Start(child_options);
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return nullptr;
  *child = started->get();
  options.health_check_interval_seconds = 0;
  std::vector<std::unique_ptr<PoolWorker>> workers;
  workers.push_back(*std::move(started));
  return std::make_unique<WorkerPool>(std::move(workers), options);
}

worker::ExecuteOptions Quick() {
  worker::ExecuteOptions execute;
  execute.warmup_runs = 1;
  execute.min_repeats = 2;
  execute.max_repeats = 2;
  execute.min_measure_seconds = 0;
  return execute;
}

TEST(WorkerIsolationTest, PlanOverTheWorkerMemoryIsRefusedBeforeRunning) {
  ExecutionCounter executions;
  MemoryBudget budget(/*budget_bytes=*/int64_t{64} << 30);
  WorkerPoolOptions options;
  options.execute = Quick();
  options.worker_memory_bytes = int64_t{64} << 20;  // 64 MiB
  options.memory_budget = &budget;
  options.on_execution = executions.Callback();
  ChildWorker* child = nullptr;
  auto pool = ChildPool(TwoExecutors(), options, &child);
  ASSERT_NE(pool, nullptr);

  // Three f32[4096,4096] tensors of 64 MiB each.
  const graph::Graph big = Import(DotHlo(4096));
  absl::StatusOr<PlanMeasurement> refused = pool->Measure(
      big, AllOnDevice0(big), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(),
              HasSubstr("refused before running: it would hold about"));
  EXPECT_THAT(refused.status().message(),
              HasSubstr("over the 0.06 GiB a measurement may use "
                        "(--worker_memory_bytes)"));
  EXPECT_EQ(executions.count("refused"), 1);
  EXPECT_EQ(executions.total(), 1);
  EXPECT_EQ(NodeExecutions(child->address()), 0);
  EXPECT_EQ(budget.in_use_bytes(), 0);

  // A small plan runs, and its bytes are charged only while it runs.
  const graph::Graph small = Import(DotHlo(64));
  absl::StatusOr<PlanMeasurement> measured = pool->Measure(
      small, AllOnDevice0(small), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_GT(measured->measured_step_time_s, 0);
  EXPECT_EQ(executions.count("ok"), 1);
  EXPECT_GT(NodeExecutions(child->address()), 0);
  EXPECT_EQ(budget.in_use_bytes(), 0);
}

TEST(WorkerIsolationTest, PlanThatDoesNotFitTheBudgetIsRefused) {
  MemoryBudget budget(/*budget_bytes=*/int64_t{1} << 20);  // 1 MiB
  WorkerPoolOptions options;
  options.execute = Quick();
  options.memory_budget = &budget;
  ChildWorker* child = nullptr;
  auto pool = ChildPool(TwoExecutors(), options, &child);
  ASSERT_NE(pool, nullptr);
  const graph::Graph graph = Import(DotHlo(1024));  // 4 MiB tensors
  absl::StatusOr<PlanMeasurement> refused = pool->Measure(
      graph, AllOnDevice0(graph), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("measuring a plan"));
  EXPECT_EQ(NodeExecutions(child->address()), 0);
  EXPECT_EQ(budget.in_use_bytes(), 0);
}

TEST(WorkerIsolationTest, ChildKilledMidPlanIsReplacedAndMeasuresAgain) {
  WorkerPoolOptions options;
  options.execute = Quick();
  ChildWorker* child = nullptr;
  auto pool = ChildPool(TwoExecutors(), options, &child);
  ASSERT_NE(pool, nullptr);
  const pid_t first = child->pid();
  const std::string address = child->address();
  // About 200 GFLOP per run, four runs: seconds to minutes.
  const graph::Graph chain = Import(DotChainHlo(/*n=*/1024, /*length=*/100));
  absl::StatusOr<PlanMeasurement> measurement;
  std::thread measuring([&] {
    measurement = pool->Measure(chain, AllOnDevice0(chain),
                                absl::Now() + absl::Seconds(600), nullptr);
  });
  // Killed once it runs the plan.
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  while (NodeExecutions(address) == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(NodeExecutions(address), 0);
  ASSERT_EQ(kill(first, SIGKILL), 0);
  measuring.join();
  ASSERT_TRUE(absl::IsUnavailable(measurement.status()))
      << measurement.status();
  EXPECT_THAT(measurement.status().message(),
              HasSubstr(absl::StrCat("pid ", first, ") killed by signal 9")));

  // The next plan waits for the new child and is measured there.
  const graph::Graph small = Import(DotHlo(64));
  absl::StatusOr<PlanMeasurement> next = pool->Measure(
      small, AllOnDevice0(small), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_GT(next->measured_step_time_s, 0);
  EXPECT_EQ(child->starts(), 2);
  EXPECT_NE(child->pid(), first);
  EXPECT_GT(child->pid(), 0);
}

TEST(WorkerIsolationTest, PlanPastItsTimeoutKillsTheChildWhichIsReplaced) {
  WorkerPoolOptions options;
  options.execute = Quick();
  options.plan_timeout_seconds = 2;
  ExecutionCounter executions;
  options.on_execution = executions.Callback();
  ChildWorker* child = nullptr;
  auto pool = ChildPool(TwoExecutors(), options, &child);
  ASSERT_NE(pool, nullptr);
  const pid_t first = child->pid();
  const graph::Graph graph = Import(DotHlo(64));
  // A stopped child answers nothing, as one stuck inside a long kernel.
  ASSERT_EQ(kill(first, SIGSTOP), 0);
  absl::StatusOr<PlanMeasurement> stuck = pool->Measure(
      graph, AllOnDevice0(graph), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(absl::IsDeadlineExceeded(stuck.status())) << stuck.status();
  EXPECT_THAT(stuck.status().message(),
              HasSubstr("the worker was killed and is restarted"));
  EXPECT_EQ(executions.count("timeout"), 1);

  absl::StatusOr<PlanMeasurement> next = pool->Measure(
      graph, AllOnDevice0(graph), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_GT(next->measured_step_time_s, 0);
  EXPECT_EQ(child->starts(), 2);
  EXPECT_NE(child->pid(), first);
}

TEST(WorkerIsolationTest, LibTorchOutOfMemoryArrivesWithoutBacktrace) {
  // 1.5 GiB of private writable memory: the child starts, but cannot
  // allocate two 1 GiB parameters.
  ChildWorkerOptions child_options = TwoExecutors();
  child_options.data_limit_bytes = int64_t{3} << 29;
  WorkerPoolOptions options;
  options.execute = Quick();
  ChildWorker* child = nullptr;
  auto pool = ChildPool(child_options, options, &child);
  ASSERT_NE(pool, nullptr);
  const pid_t pid = child->pid();
  const graph::Graph graph = Import(DotHlo(16384));
  absl::StatusOr<PlanMeasurement> failed = pool->Measure(
      graph, AllOnDevice0(graph), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_FALSE(failed.ok());
  const std::string message(failed.status().message());
  EXPECT_THAT(message, HasSubstr("alloc")) << message;
  EXPECT_THAT(message, Not(HasSubstr("frame #")));
  EXPECT_THAT(message, Not(HasSubstr("Exception raised from")));
  EXPECT_FALSE(std::regex_search(message, std::regex("0x[0-9a-fA-F]{4}")))
      << message;
  // The failed allocation failed the plan, not the child.
  EXPECT_EQ(child->pid(), pid);
  EXPECT_EQ(child->starts(), 1);
}

TEST(WorkerIsolationTest, WithoutBacktraceDropsFramesAndAddresses) {
  EXPECT_EQ(WithoutBacktrace(
                "running node 'd' (dot): DefaultCPUAllocator: can't allocate "
                "memory\nException raised from allocate at alloc.cpp:9 (most "
                "recent call first):\nframe #0: c10::Error::Error() + 0x8e "
                "(0x7f3a2b1c0d8e in /usr/lib/libc10.so)\nframe #1: f()"),
            "running node 'd' (dot): DefaultCPUAllocator: can't allocate "
            "memory");
  EXPECT_EQ(WithoutBacktrace("bad pointer 0x7ffd1234abcd; shape 0x3"),
            "bad pointer 0x?; shape 0x3");
  EXPECT_EQ(WithoutBacktrace("  frame #12: g\nlater"), "");
  EXPECT_EQ(WithoutBacktrace("two\nlines"), "two\nlines");
}

TEST(WorkerIsolationTest, MissingBinaryIsFailedPrecondition) {
  ChildWorkerOptions options;
  options.binary = "/nonexistent/gopt-worker";
  absl::StatusOr<std::unique_ptr<ChildWorker>> child =
      ChildWorker::Start(options);
  EXPECT_TRUE(absl::IsFailedPrecondition(child.status())) << child.status();
  EXPECT_THAT(child.status().message(), HasSubstr("/nonexistent/gopt-worker"));
}

// gopt-server with its default --workers=local: a gopt-worker child that may
// use 64 MiB per plan.
std::vector<std::string> ServerArgs() {
  const std::string policies =
      absl::StrCat(::testing::TempDir(), "/gopt_no_policies_", getpid());
  std::filesystem::create_directories(policies);
  return {"--listen=127.0.0.1:0",
          "--metrics_listen=127.0.0.1:0",
          "--policy_dir=" + policies,
          "--drain_seconds=0",
          "--worker_memory_bytes=67108864",
          absl::StrCat("--worker_binary=", GOPT_WORKER_BINARY)};
}

// Evaluate measure=true of `hlo` with every node on CPU executor 0.
gopt::v1::EvaluateResponse EvaluateMeasured(const std::string& address,
                                            const std::string& hlo,
                                            grpc::Status* status) {
  gopt::v1::EvaluateRequest request;
  request.mutable_graph()->set_serialized(hlo);
  request.mutable_graph()->set_format("hlo");
  request.mutable_topology()->set_preset("cpu-host");
  for (int i = 0; i < Import(hlo).num_nodes(); ++i) {
    request.mutable_plan()->add_device(0);
  }
  request.set_measure(true);
  auto stub = gopt::v1::GraphOptimizer::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(300));
  gopt::v1::EvaluateResponse response;
  *status = stub->Evaluate(&context, request, &response);
  return response;
}

std::string Warnings(const gopt::v1::EvaluateResponse& response) {
  std::string all;
  for (const std::string& w : response.warnings())
    absl::StrAppend(&all, w, "\n");
  return all;
}

TEST(WorkerIsolationTest, ServerAnswersPlansItRefusesOrLosesWithSimulation) {
  gopt::testing::ChildProcess server(GOPT_SERVER_BINARY, ServerArgs());
  const std::string metrics_port = server.WaitForLog("metrics on port (\\d+)");
  const std::string port = server.WaitForLog("listening on port (\\d+)");
  const std::string child_pid =
      server.WaitForLog("local gopt-worker pid (\\d+) listening");
  const std::string child_address = server.WaitForLog(
      "local gopt-worker pid \\d+ listening on (127.0.0.1:\\d+)");
  server.WaitForLog("\\] SERVING");
  ASSERT_FALSE(child_pid.empty());
  const std::string address = absl::StrCat("127.0.0.1:", port);

  // Over 64 MiB: answered from the simulator, never sent to the child.
  grpc::Status status;
  gopt::v1::EvaluateResponse refused =
      EvaluateMeasured(address, DotHlo(4096), &status);
  ASSERT_TRUE(status.ok()) << status.error_message() << server.log();
  EXPECT_GT(refused.step_time_s(), 0);
  EXPECT_EQ(refused.measured_step_time_s(), 0);
  EXPECT_THAT(Warnings(refused),
              HasSubstr("measure: the plan was not measured (refused before "
                        "running: it would hold about"));
  EXPECT_EQ(NodeExecutions(child_address), 0);
  absl::StatusOr<std::string> scrape =
      gopt::testing::HttpGet(std::stoi(metrics_port), "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_THAT(*scrape,
              HasSubstr("gopt_worker_executions_total{status=\"refused\"} 1"));

  // The child killed mid-plan: simulated numbers and a warning.
  gopt::v1::EvaluateResponse lost;
  grpc::Status lost_status;
  std::thread measuring([&] {
    lost = EvaluateMeasured(address, DotChainHlo(/*n=*/1024, /*length=*/100),
                            &lost_status);
  });
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  while (NodeExecutions(child_address) == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(NodeExecutions(child_address), 0);
  ASSERT_EQ(kill(std::stoi(child_pid), SIGKILL), 0);
  measuring.join();
  ASSERT_TRUE(lost_status.ok()) << lost_status.error_message();
  EXPECT_GT(lost.step_time_s(), 0);
  EXPECT_EQ(lost.measured_step_time_s(), 0);
  EXPECT_THAT(Warnings(lost), HasSubstr(absl::StrCat("(pid ", child_pid,
                                                     ") killed by signal 9")));

  // The server lives, and measures again on the next child.
  gopt::v1::EvaluateResponse measured =
      EvaluateMeasured(address, DotHlo(64), &status);
  ASSERT_TRUE(status.ok()) << status.error_message() << server.log();
  EXPECT_GT(measured.measured_step_time_s(), 0) << Warnings(measured);
  EXPECT_EQ(measured.measured_on(), "local");
  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(), 0) << server.log();
}

}  // namespace
}  // namespace gopt::engine
