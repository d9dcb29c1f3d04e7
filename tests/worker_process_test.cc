// The gopt-worker binary end to end: a real plan of a real graph measured
// over gRPC by gopt-server's worker pool, SIGTERM shutdown, and the process
// killed (SIGKILL) mid-plan.

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/worker_pool.h"
#include "gmock/gmock.h"
#include "gopt/v1/worker.grpc.pb.h"
#include "graph/import/builtin_importers.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "simulator/topology.h"
#include "tests/util/child_process.h"
#include "tests/util/shared_data.h"
#include "worker/testing/node_executions.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;
using worker::testing::NodeExecutions;

// gopt-worker's flags: a free loopback port, two CPU executors.
const std::vector<std::string> kWorkerArgs = {
    "--listen=127.0.0.1:0", "--cpu_executors=2", "--pin_threads=false"};

// host:port once the worker listens ("" after 60 s without, and a failure).
std::string WaitForAddress(gopt::testing::ChildProcess& process) {
  const std::string port = process.WaitForLog("listening on port ([0-9]+)",
                                              "gopt-worker did not start");
  return port.empty() ? "" : absl::StrCat("127.0.0.1:", port);
}

graph::Graph RealGraph() {
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  absl::StatusOr<graph::Graph> graph = importers.Import(
      gopt::testing::ReadSharedData("hlo/jaxrl_td_target.hlo"), "hlo", {});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::move(*graph);
}

// Nodes alternate between the two CPU executors: real cross-device copies.
simulator::Plan RoundRobin(const graph::Graph& graph) {
  simulator::Plan plan =
      simulator::DefaultPlan(graph, *simulator::PresetTopology("cpu-host"));
  for (size_t i = 0; i < plan.device.size(); ++i) {
    plan.device[i] = static_cast<int32_t>(i % 2);
  }
  return plan;
}

std::unique_ptr<WorkerPool> PoolOf(const std::string& address,
                                   const worker::ExecuteOptions& execute) {
  WorkerPoolOptions options;
  options.health_check_interval_seconds = 0;
  options.execute = execute;
  std::vector<std::unique_ptr<PoolWorker>> workers;
  workers.push_back(MakeRemoteWorker(address));
  return std::make_unique<WorkerPool>(std::move(workers), options);
}

TEST(WorkerProcessTest, MeasuresARealPlanAndStopsOnSigterm) {
  gopt::testing::ChildProcess process(GOPT_WORKER_BINARY, kWorkerArgs);
  const std::string address = WaitForAddress(process);
  ASSERT_FALSE(address.empty());
  worker::ExecuteOptions execute;
  execute.warmup_runs = 1;
  execute.min_repeats = 2;
  execute.min_measure_seconds = 0;
  auto pool = PoolOf(address, execute);
  pool->CheckHealthNow();
  ASSERT_TRUE(pool->Workers()[0].healthy) << pool->Workers()[0].last_error;
  const graph::Graph graph = RealGraph();
  absl::StatusOr<PlanMeasurement> measurement = pool->Measure(
      graph, RoundRobin(graph), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(measurement.ok()) << measurement.status() << process.log();
  EXPECT_GT(measurement->measured_step_time_s, 0);
  EXPECT_GT(measurement->real_op_fraction, 0);
  EXPECT_LE(measurement->real_op_fraction, 1);
  EXPECT_GE(measurement->runs, 2);
  EXPECT_EQ(measurement->worker, address);
  // A plan for devices the worker does not have: a clear error.
  simulator::Plan bad = RoundRobin(graph);
  bad.device[3] = 5;
  absl::StatusOr<PlanMeasurement> refused =
      pool->Measure(graph, bad, absl::Now() + absl::Seconds(120), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("device"));

  process.Signal(SIGTERM);
  EXPECT_EQ(process.Wait(), 0) << process.log();
}

TEST(WorkerProcessTest, KilledMidPlanIsUnavailableNamingTheWorker) {
  gopt::testing::ChildProcess process(GOPT_WORKER_BINARY, kWorkerArgs);
  const std::string address = WaitForAddress(process);
  ASSERT_FALSE(address.empty());
  worker::ExecuteOptions execute;
  execute.min_measure_seconds = 600;  // runs until killed
  execute.max_repeats = 1'000'000;
  auto pool = PoolOf(address, execute);
  const graph::Graph graph = RealGraph();
  absl::StatusOr<PlanMeasurement> measurement;
  std::thread measuring([&] {
    measurement = pool->Measure(graph, RoundRobin(graph),
                                absl::Now() + absl::Seconds(300), nullptr);
  });
  // The plan is sent at once; give the worker time to start running it.
  absl::SleepFor(absl::Seconds(2));
  process.Signal(SIGKILL);
  EXPECT_EQ(process.Wait(), -1);
  measuring.join();
  EXPECT_TRUE(absl::IsUnavailable(measurement.status()))
      << measurement.status();
  EXPECT_THAT(measurement.status().message(), HasSubstr(address));
}

// A caller's cancellation reaches the remote worker (the pool cancels its
// Execute call): the plan stops at its next node, not when its 600 s of
// measuring are over, and the worker serves the next plan.
TEST(WorkerProcessTest, CancelledPlanStopsOnTheWorkerWhichServesTheNext) {
  gopt::testing::ChildProcess process(GOPT_WORKER_BINARY, kWorkerArgs);
  const std::string address = WaitForAddress(process);
  ASSERT_FALSE(address.empty());
  worker::ExecuteOptions endless;
  endless.min_measure_seconds = 600;
  endless.max_repeats = 1'000'000;
  auto pool = PoolOf(address, endless);
  const graph::Graph graph = RealGraph();
  const int64_t nodes = graph.num_nodes();
  std::atomic<bool> cancelled(false);
  absl::StatusOr<PlanMeasurement> measurement;
  std::thread measuring([&] {
    measurement = pool->Measure(graph, RoundRobin(graph),
                                absl::Now() + absl::Seconds(600), &cancelled);
  });
  // Cancel once the worker is in its measured runs (set-up and one warm-up
  // run each start every node once).
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  while (NodeExecutions(address) <= 3 * nodes && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GT(NodeExecutions(address), 3 * nodes) << process.log();
  cancelled.store(true);
  measuring.join();
  EXPECT_TRUE(absl::IsCancelled(measurement.status())) << measurement.status();

  const std::string ran_text = process.WaitForLog(
      "cancelled by the caller after ([0-9]+) node executions",
      "the worker never saw the cancellation");
  ASSERT_FALSE(ran_text.empty());
  const std::string after_text = process.WaitForLog(
      "node executions, ([0-9]+) of them after the cancellation reached",
      "the worker did not count the nodes after the cancellation");
  ASSERT_FALSE(after_text.empty());
  const int64_t ran = std::stoll(ran_text);
  const int64_t after_cancel = std::stoll(after_text);
  EXPECT_GT(ran, 3 * nodes);
  // Every node checks the flag before it starts: at most one node per
  // thread that runs nodes (2 device threads, 2 link threads, the run's
  // own) was past its check when the cancellation arrived.
  EXPECT_LE(after_cancel, 5) << process.log();

  // Stopped for good: the next plan's node count is exactly its own
  // (set-up, 1 warm-up run, 2 measured runs: each starts every node once).
  const int64_t before_next = NodeExecutions(address);
  worker::ExecuteOptions short_plan;
  short_plan.warmup_runs = 1;
  short_plan.min_repeats = 2;
  short_plan.max_repeats = 2;
  short_plan.min_measure_seconds = 0;
  auto next_pool = PoolOf(address, short_plan);
  absl::StatusOr<PlanMeasurement> next = next_pool->Measure(
      graph, RoundRobin(graph), absl::Now() + absl::Seconds(120), nullptr);
  ASSERT_TRUE(next.ok()) << next.status() << process.log();
  EXPECT_GT(next->measured_step_time_s, 0);
  EXPECT_GT(next->measured_min_step_time_s, 0);
  EXPECT_LE(next->measured_min_step_time_s, next->measured_step_time_s);
  EXPECT_EQ(NodeExecutions(address) - before_next, 4 * nodes);
}

}  // namespace
}  // namespace gopt::engine
