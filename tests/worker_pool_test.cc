#include "engine/worker_pool.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "graph/import/builtin_importers.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "simulator/topology.h"
#include "tests/util/shared_data.h"
#include "worker/testing/fake_executor.h"
#include "worker/worker_service.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;
using worker::testing::FakeBehavior;
using worker::testing::FakeExecutor;

constexpr char kGraphFile[] = "hlo/jaxrl_td_target.hlo";

graph::Graph RealGraph() {
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  absl::StatusOr<graph::Graph> graph =
      importers.Import(gopt::testing::ReadSharedData(kGraphFile), "hlo", {});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::move(*graph);
}

simulator::Plan AllOn(const graph::Graph& graph, int device) {
  simulator::Plan plan =
      simulator::DefaultPlan(graph, *simulator::PresetTopology("cpu-host"));
  plan.device.assign(graph.num_nodes(), device);
  return plan;
}

// A gopt.v1.Worker server on a free loopback port over a FakeExecutor, with
// grpc.health.v1 (real gRPC, as gopt-worker serves it).
class FakeWorkerServer {
 public:
  FakeWorkerServer() : executor_(std::make_shared<FakeExecutor>()) {
    grpc::EnableDefaultHealthCheckService(true);
    service_ = std::make_unique<worker::WorkerService>(
        executor_.get(), worker::WorkerServiceOptions());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    server_->GetHealthCheckService()->SetServingStatus(true);
  }
  ~FakeWorkerServer() { Kill(); }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  FakeExecutor& executor() { return *executor_; }
  void SetServing(bool serving) {
    server_->GetHealthCheckService()->SetServingStatus(serving);
  }
  // Drops every call in flight and stops listening, as a killed process.
  void Kill() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now());
    service_->Stop();
    server_.reset();
  }

 private:
  std::shared_ptr<FakeExecutor> executor_;
  std::unique_ptr<worker::WorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

WorkerPoolOptions TestOptions() {
  WorkerPoolOptions options;
  options.health_check_interval_seconds = 0;  // checks only when asked
  return options;
}

std::unique_ptr<WorkerPool> RemotePool(
    const std::vector<FakeWorkerServer*>& servers,
    const WorkerPoolOptions& options = TestOptions()) {
  std::vector<std::unique_ptr<PoolWorker>> workers;
  for (FakeWorkerServer* server : servers) {
    workers.push_back(MakeRemoteWorker(server->address()));
  }
  return std::make_unique<WorkerPool>(std::move(workers), options);
}

TEST(WorkerPoolTest, InProcessWorkerMeasuresThePlan) {
  const graph::Graph graph = RealGraph();
  auto executor = std::make_shared<FakeExecutor>(2, 0.25);
  std::vector<std::unique_ptr<PoolWorker>> workers;
  workers.push_back(MakeInProcessWorker(executor));
  WorkerPool pool(std::move(workers), TestOptions());
  absl::StatusOr<PlanMeasurement> measurement =
      pool.Measure(graph, AllOn(graph, 1), absl::InfiniteFuture(), nullptr);
  ASSERT_TRUE(measurement.ok()) << measurement.status();
  EXPECT_EQ(measurement->measured_step_time_s, 0.25);
  EXPECT_EQ(measurement->real_op_fraction, 1.0);
  EXPECT_EQ(measurement->worker, "in-process");
}

TEST(WorkerPoolTest, RemoteWorkerMeasuresOverGrpc) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer server;
  server.executor().set_step_time([](const simulator::Plan& plan) {
    return plan.device[0] == 1 ? 0.5 : 0.125;
  });
  auto pool = RemotePool({&server});
  absl::StatusOr<PlanMeasurement> measurement =
      pool->Measure(graph, AllOn(graph, 1), absl::InfiniteFuture(), nullptr);
  ASSERT_TRUE(measurement.ok()) << measurement.status();
  EXPECT_EQ(measurement->measured_step_time_s, 0.5);
  // The fastest run crosses the wire too (ExecuteResponse field 16).
  EXPECT_EQ(measurement->measured_min_step_time_s, 0.375);
  EXPECT_EQ(measurement->worker, server.address());
}

TEST(WorkerPoolTest, FailedPlanIsRetriedOnAnotherWorker) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer failing;
  FakeWorkerServer good;
  failing.executor().set_behavior(FakeBehavior::kFail);
  auto pool = RemotePool({&failing, &good});
  absl::StatusOr<PlanMeasurement> measurement =
      pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
  ASSERT_TRUE(measurement.ok()) << measurement.status();
  EXPECT_EQ(measurement->worker, good.address());
  EXPECT_EQ(failing.executor().executions(), 1);
  EXPECT_EQ(good.executor().executions(), 1);
}

TEST(WorkerPoolTest, FailureOnEveryWorkerNamesEach) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer a;
  FakeWorkerServer b;
  a.executor().set_behavior(FakeBehavior::kFail);
  b.executor().set_behavior(FakeBehavior::kFail);
  auto pool = RemotePool({&a, &b});
  absl::StatusOr<PlanMeasurement> measurement =
      pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
  EXPECT_TRUE(absl::IsUnavailable(measurement.status()))
      << measurement.status();
  EXPECT_THAT(measurement.status().message(), HasSubstr(a.address()));
  EXPECT_THAT(measurement.status().message(), HasSubstr(b.address()));
  EXPECT_THAT(measurement.status().message(),
              HasSubstr("the fake worker failed"));
}

TEST(WorkerPoolTest, WorkerThatKeepsFailingIsTakenOut) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer failing;
  FakeWorkerServer good;
  failing.executor().set_behavior(FakeBehavior::kFail);
  WorkerPoolOptions options = TestOptions();
  options.failures_to_eject = 2;
  options.eject_seconds = 3600;
  auto pool = RemotePool({&failing, &good}, options);
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<PlanMeasurement> measurement =
        pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
    ASSERT_TRUE(measurement.ok()) << measurement.status();
  }
  // Two failures took it out; the later plans went straight to `good`.
  EXPECT_EQ(failing.executor().executions(), 2);
  EXPECT_EQ(good.executor().executions(), 4);
  const std::vector<PoolWorkerState> states = pool->Workers();
  EXPECT_TRUE(states[0].taken_out);
  EXPECT_THAT(states[0].last_error, HasSubstr("the fake worker failed"));
  EXPECT_FALSE(states[1].taken_out);
}

TEST(WorkerPoolTest, UnhealthyWorkerIsSkipped) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer sick;
  FakeWorkerServer good;
  sick.SetServing(false);
  auto pool = RemotePool({&sick, &good});
  pool->CheckHealthNow();
  EXPECT_FALSE(pool->Workers()[0].healthy);
  absl::StatusOr<PlanMeasurement> measurement =
      pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
  ASSERT_TRUE(measurement.ok()) << measurement.status();
  EXPECT_EQ(measurement->worker, good.address());
  EXPECT_EQ(sick.executor().executions(), 0);
  // Healthy again: back in the pool.
  sick.SetServing(true);
  pool->CheckHealthNow();
  EXPECT_TRUE(pool->Workers()[0].healthy);
}

TEST(WorkerPoolTest, PlanOverItsTimeoutIsDeadlineExceededAndNotRetried) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer slow;
  FakeWorkerServer other;
  slow.executor().set_behavior(FakeBehavior::kHang);
  WorkerPoolOptions options = TestOptions();
  options.plan_timeout_seconds = 0.2;
  auto pool = RemotePool({&slow, &other}, options);
  absl::StatusOr<PlanMeasurement> measurement =
      pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
  EXPECT_TRUE(absl::IsDeadlineExceeded(measurement.status()))
      << measurement.status();
  EXPECT_THAT(measurement.status().message(), HasSubstr("over its timeout"));
  EXPECT_EQ(other.executor().executions(), 0);
  EXPECT_FALSE(pool->Workers()[0].taken_out);
}

TEST(WorkerPoolTest, BadPlanIsInvalidArgumentNamingTheNode) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer a;
  FakeWorkerServer b;
  auto pool = RemotePool({&a, &b});
  absl::StatusOr<PlanMeasurement> measurement =
      pool->Measure(graph, AllOn(graph, 7), absl::InfiniteFuture(), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(measurement.status()))
      << measurement.status();
  EXPECT_THAT(measurement.status().message(), HasSubstr("plan.device[0] = 7"));
  EXPECT_EQ(b.executor().executions(), 0);  // not retried
}

TEST(WorkerPoolTest, UnknownWorkersGiveClearErrors) {
  WorkerPoolOptions options = TestOptions();
  EXPECT_THAT(
      WorkerPool::FromSpec("no-port-here", {}, options).status().message(),
      HasSubstr("is not HOST:PORT"));
  EXPECT_THAT(WorkerPool::FromSpec("dns:///gopt-worker", {}, options)
                  .status()
                  .message(),
              HasSubstr("expected NAME:PORT"));

  const graph::Graph graph = RealGraph();
  absl::StatusOr<std::unique_ptr<WorkerPool>> nobody =
      WorkerPool::FromSpec("dns:///no-such-worker.invalid:50052", {}, options);
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  absl::StatusOr<PlanMeasurement> measurement = (*nobody)->Measure(
      graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
  EXPECT_TRUE(absl::IsUnavailable(measurement.status()));
  EXPECT_THAT(measurement.status().message(),
              HasSubstr("no-such-worker.invalid:50052 resolved to no address"));

  // Nothing listens on port 1.
  absl::StatusOr<std::unique_ptr<WorkerPool>> closed =
      WorkerPool::FromSpec("127.0.0.1:1", {}, options);
  ASSERT_TRUE(closed.ok()) << closed.status();
  measurement = (*closed)->Measure(graph, AllOn(graph, 0),
                                   absl::Now() + absl::Seconds(20), nullptr);
  EXPECT_TRUE(absl::IsUnavailable(measurement.status()))
      << measurement.status();
  EXPECT_THAT(measurement.status().message(), HasSubstr("127.0.0.1:1"));
}

TEST(WorkerPoolTest, FullQueueIsResourceExhausted) {
  const graph::Graph graph = RealGraph();
  FakeWorkerServer server;
  server.executor().set_behavior(FakeBehavior::kBlock);
  WorkerPoolOptions options = TestOptions();
  options.queue_length = 0;
  auto pool = RemotePool({&server}, options);
  std::thread first([&] {
    EXPECT_TRUE(
        pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr)
            .ok());
  });
  server.executor().started().WaitForNotification();
  absl::StatusOr<PlanMeasurement> second =
      pool->Measure(graph, AllOn(graph, 0), absl::InfiniteFuture(), nullptr);
  EXPECT_TRUE(absl::IsResourceExhausted(second.status())) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr("queue is full"));
  server.executor().Release();
  first.join();
}

// The engine's verify=K over a pool of real-gRPC fake workers.
gopt::v1::OptimizeRequest VerifyRequest(int verify) {
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_serialized(
      gopt::testing::ReadSharedData(kGraphFile));
  request.mutable_graph()->set_format("hlo");
  request.mutable_topology()->set_preset("cpu-host");
  request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
  request.set_verify(verify);
  return request;
}

double MeasuredOf(const gopt::v1::OptimizeResponse& response,
                  const std::string& method) {
  for (const gopt::v1::MeasuredCandidate& row : response.verified()) {
    if (row.method() == method) return row.measured_step_time_s();
  }
  return -1;
}

TEST(VerifyTest, NeverAnswersWithAPlanMeasuredSlowerThanTheDefault) {
  FakeWorkerServer server;
  EngineOptions options;
  options.measurer = RemotePool({&server});
  const Engine engine(options, nullptr);
  // Seeded step times: the default plan (everything on device 0, no
  // fusion) measures fastest in some trials, slowest in others.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    server.executor().set_step_time([seed](const simulator::Plan& plan) {
      uint64_t h = seed;
      for (int32_t d : plan.device) h = h * 31 + static_cast<uint64_t>(d);
      for (int32_t g : plan.fusion_group) h = h * 17 + static_cast<uint64_t>(g);
      return 0.01 + static_cast<double>(h % 997) * 1e-4;
    });
    absl::StatusOr<gopt::v1::OptimizeResponse> response =
        engine.Optimize(VerifyRequest(3), RequestContext());
    ASSERT_TRUE(response.ok()) << response.status();
    ASSERT_GE(response->verified_size(), 2) << "seed " << seed;
    const double default_s = MeasuredOf(*response, "default");
    ASSERT_GT(default_s, 0) << "seed " << seed;
    EXPECT_GT(response->measured_step_time_s(), 0);
    EXPECT_LE(response->measured_step_time_s(), default_s) << "seed " << seed;
    for (const gopt::v1::MeasuredCandidate& row : response->verified()) {
      EXPECT_GE(row.measured_step_time_s(), response->measured_step_time_s());
      EXPECT_GT(row.predicted_step_time_s(), 0);
      if (row.chosen()) EXPECT_EQ(row.method(), response->method());
    }
  }
}

TEST(VerifyTest, DefaultMeasuredFastestWinsOverTheSimulatorsChoice) {
  FakeWorkerServer server;
  server.executor().set_step_time([](const simulator::Plan& plan) {
    for (int32_t d : plan.device) {
      if (d != 0) return 1.0;
    }
    for (int32_t g : plan.fusion_group) {
      if (g >= 0) return 1.0;
    }
    return 0.001;
  });
  EngineOptions options;
  options.measurer = RemotePool({&server});
  const Engine engine(options, nullptr);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(VerifyRequest(3), RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->method(), "default");
  EXPECT_EQ(response->measured_step_time_s(), 0.001);
  EXPECT_DOUBLE_EQ(response->measured_min_step_time_s(), 0.00075);
  for (const gopt::v1::MeasuredCandidate& row : response->verified()) {
    EXPECT_DOUBLE_EQ(row.measured_min_step_time_s(),
                     row.measured_step_time_s() * 0.75);
  }
}

TEST(VerifyTest, WorkerKilledMidPlanAnswersWithSimulatedNumbersAndAWarning) {
  FakeWorkerServer server;
  server.executor().set_behavior(FakeBehavior::kBlock);
  EngineOptions options;
  options.measurer = RemotePool({&server});
  const Engine engine(options, nullptr);
  std::thread killer([&] {
    server.executor().started().WaitForNotification();
    server.Kill();
  });
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(VerifyRequest(3), RequestContext());
  killer.join();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->measured_step_time_s(), 0);
  EXPECT_GT(response->step_time_s(), 0);
  ASSERT_GE(response->verified_size(), 1);
  EXPECT_FALSE(response->verified(0).error().empty());
  EXPECT_THAT(response->warnings(),
              ::testing::Contains(HasSubstr("its step time is simulated")));
}

TEST(VerifyTest, WithoutWorkersSaysSo) {
  const Engine engine(EngineOptions(), nullptr);
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(VerifyRequest(2), RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->verified_size(), 0);
  EXPECT_THAT(response->warnings(),
              ::testing::Contains(HasSubstr("no worker pool")));
  gopt::v1::OptimizeRequest bad = VerifyRequest(-1);
  EXPECT_THAT(engine.Optimize(bad, RequestContext()).status().message(),
              HasSubstr("verify must be in 0..8"));
}

TEST(VerifyTest, EvaluateMeasuresThePlan) {
  FakeWorkerServer server;
  server.executor().set_step_time([](const simulator::Plan&) { return 0.3; });
  EngineOptions options;
  options.measurer = RemotePool({&server});
  const Engine engine(options, nullptr);
  absl::StatusOr<gopt::v1::OptimizeResponse> optimized =
      engine.Optimize(VerifyRequest(0), RequestContext());
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  gopt::v1::EvaluateRequest request;
  *request.mutable_graph() = VerifyRequest(0).graph();
  request.mutable_topology()->set_preset("cpu-host");
  *request.mutable_plan() = optimized->plan();
  request.set_measure(true);
  absl::StatusOr<gopt::v1::EvaluateResponse> response =
      engine.Evaluate(request, RequestContext());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->measured_step_time_s(), 0.3);
  EXPECT_DOUBLE_EQ(response->measured_min_step_time_s(), 0.3 * 0.75);
  EXPECT_EQ(response->measured_on(), server.address());
  EXPECT_EQ(response->real_op_fraction(), 1.0);
}

}  // namespace
}  // namespace gopt::engine
