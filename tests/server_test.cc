// gopt-server over real gRPC on a loopback port: health, Optimize /
// OptimizeStream / Evaluate on real graphs from ../shared/data, every error
// code from a real bad request, admission, deadlines, metrics over HTTP,
// TLS and mTLS with certificates made here by the openssl binary.

#include "server/server.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/optimizer_client.h"
#include "engine/engine.h"
#include "engine/policy_registry.h"
#include "engine/testing/fake_policy.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "tests/util/http_get.h"
#include "tests/util/shared_data.h"

namespace gopt::server {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::PolicyRegistry;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;

// A gopt-server in this process on 127.0.0.1:<free port>, and a client.
struct Running {
  std::unique_ptr<Metrics> metrics;
  std::unique_ptr<OptimizerServer> server;
  std::unique_ptr<client::OptimizerClient> client;
};

struct TestServerSetup {
  ServerOptions server;
  EngineOptions engine;
  std::vector<engine::testing::FakePolicyOptions> policies;
  bool load_engine = true;  // SetEngine right away
  bool metrics_port = false;
  client::ClientOptions client;
};

Running Start(TestServerSetup setup) {
  Running running;
  running.metrics = std::make_unique<Metrics>("test", "test");
  if (setup.metrics_port) {
    EXPECT_TRUE(running.metrics->StartExposer("127.0.0.1:0").ok());
  }
  setup.server.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<OptimizerServer>> server =
      OptimizerServer::Start(setup.server, running.metrics.get());
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return running;
  running.server = *std::move(server);
  if (setup.load_engine) {
    auto registry = std::make_shared<PolicyRegistry>();
    for (const auto& policy : setup.policies) {
      EXPECT_TRUE(
          registry->Add(std::make_unique<engine::testing::FakePolicy>(policy))
              .ok());
    }
    running.server->SetEngine(
        std::make_shared<Engine>(setup.engine, std::move(registry)));
  }
  setup.client.target = absl::StrCat("127.0.0.1:", running.server->port());
  if (setup.client.tls_server_name_override.empty() &&
      !setup.client.tls_ca_file.empty()) {
    setup.client.tls_server_name_override = "localhost";
  }
  auto client = client::OptimizerClient::Connect(setup.client);
  EXPECT_TRUE(client.ok()) << client.status();
  if (client.ok()) running.client = *std::move(client);
  return running;
}

gopt::v1::OptimizeRequest RequestFor(const std::string& relative_path) {
  gopt::v1::OptimizeRequest request;
  absl::StatusOr<gopt::v1::GraphInput> graph = client::GraphInputFromFile(
      gopt::testing::SharedDataPath(relative_path), "");
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (graph.ok()) *request.mutable_graph() = *std::move(graph);
  request.mutable_topology()->set_preset("v100x4-nvlink");
  return request;
}

constexpr char kSmallHlo[] = "hlo/maml_flax_train_step.hlo";

TEST(ServerTest, HealthNotServingUntilLoadedAndWhileDraining) {
  TestServerSetup setup;
  setup.load_engine = false;
  setup.client.max_attempts = 1;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  EXPECT_EQ(*running.client->Health(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(*running.client->Health("gopt.v1.GraphOptimizer"),
            HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(*running.client->Health("liveness"), HealthCheckResponse::SERVING);
  const absl::Status loading =
      running.client->Optimize(RequestFor(kSmallHlo)).status();
  EXPECT_EQ(loading.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(loading.message(), HasSubstr("loading"));

  running.server->SetEngine(std::make_shared<Engine>(EngineOptions(), nullptr));
  EXPECT_EQ(*running.client->Health(), HealthCheckResponse::SERVING);
  EXPECT_EQ(*running.client->Health("gopt.v1.GraphOptimizer"),
            HealthCheckResponse::SERVING);

  running.server->BeginDrain();
  EXPECT_EQ(*running.client->Health(), HealthCheckResponse::NOT_SERVING);
  // The process is alive while it drains: liveness probes must not kill it.
  EXPECT_EQ(*running.client->Health("liveness"), HealthCheckResponse::SERVING);
  // Draining still serves.
  EXPECT_TRUE(running.client->Optimize(RequestFor(kSmallHlo)).ok());
  running.server->Shutdown(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(running.client->Optimize(RequestFor(kSmallHlo)).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(ServerTest, OptimizesRealHloAndOnnxGraphs) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  for (const char* path : {kSmallHlo, "onnx/light_squeezenet.onnx"}) {
    absl::StatusOr<gopt::v1::OptimizeResponse> response =
        running.client->Optimize(RequestFor(path));
    ASSERT_TRUE(response.ok()) << path << ": " << response.status();
    EXPECT_GT(response->num_nodes(), 50) << path;
    EXPECT_EQ(response->topology_name(), "v100x4-nvlink");
    EXPECT_EQ(response->baselines_size(), 54) << path;  // see EngineTest
    EXPECT_THAT(response->method(), ::testing::StartsWith("best-baseline:"));
    EXPECT_LE(response->step_time_s(), response->default_step_time_s());
    EXPECT_GE(response->step_time_s(), response->lower_bound_s());
    EXPECT_EQ(response->plan().device_size(), response->num_nodes());
    EXPECT_EQ(response->peak_memory_bytes_size(), 4);
    EXPECT_FALSE(response->partial());
  }
}

TEST(ServerTest, OptimizeStreamSendsProgressThenResult) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  std::vector<gopt::v1::OptimizeProgress> events;
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      running.client->OptimizeStream(
          RequestFor("hlo/mixer_b16_jax_unopt.hlo"),
          [&](const gopt::v1::OptimizeProgress& progress) {
            events.push_back(progress);
          });
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_FALSE(events.empty());
  // Events may be coalesced, never reordered: best-so-far only improves.
  for (size_t i = 1; i < events.size(); ++i) {
    if (events[i - 1].best_step_time_s() > 0) {
      EXPECT_LE(events[i].best_step_time_s(), events[i - 1].best_step_time_s());
    }
  }
  EXPECT_EQ(events.back().best_step_time_s(), response->step_time_s());
  EXPECT_GT(response->speedup_over_default(), 1.0);
}

TEST(ServerTest, EvaluateRealGraphWithTrace) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  const gopt::v1::OptimizeRequest optimize = RequestFor(kSmallHlo);
  absl::StatusOr<gopt::v1::OptimizeResponse> optimized =
      running.client->Optimize(optimize);
  ASSERT_TRUE(optimized.ok());
  gopt::v1::EvaluateRequest request;
  *request.mutable_graph() = optimize.graph();
  *request.mutable_topology() = optimize.topology();
  *request.mutable_plan() = optimized->plan();
  request.set_include_trace(true);
  absl::StatusOr<gopt::v1::EvaluateResponse> response =
      running.client->Evaluate(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->step_time_s(), optimized->step_time_s());
  EXPECT_THAT(response->chrome_trace_json(), HasSubstr("\"traceEvents\""));

  request.mutable_plan()->mutable_device()->RemoveLast();
  const absl::Status bad = running.client->Evaluate(request).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("plan"));
}

TEST(ServerTest, BadRequestsGetPreciseCodes) {
  TestServerSetup setup;
  setup.policies.push_back(engine::testing::FakePolicyOptions{});
  setup.policies.back().method = "single+fifo+greedy";
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);

  gopt::v1::OptimizeRequest request = RequestFor(kSmallHlo);
  request.mutable_graph()->set_serialized(
      "HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0)\n"
      "  ROOT b = f32[2]{0} add(a, c)\n}\n");
  absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'%b' operand 1 '%c'"));

  request = RequestFor(kSmallHlo);
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  gopt::v1::Node* node = graph->add_nodes();
  node->set_name("conv7");
  node->set_kind("convolution");
  node->add_inputs()->set_node("missing_input");
  status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("conv7"));

  request = RequestFor(kSmallHlo);
  request.mutable_topology()->set_preset("v100x3-carrier-pigeon");
  status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("topology.preset"));

  request = RequestFor(kSmallHlo);
  request.mutable_policy()->set_name("go-multitask");
  status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("unknown policy 'go-multitask'"));

  request.mutable_policy()->set_name("fake");
  absl::StatusOr<gopt::v1::OptimizeResponse> named =
      running.client->Optimize(request);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->policy_results(0).method(), "fake");
}

TEST(ServerTest, SizeLimitsAreResourceExhausted) {
  TestServerSetup setup;
  setup.engine.max_graph_nodes = 100;
  setup.server.max_message_bytes = 64 << 10;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  // 146 instructions, 12 KB.
  absl::Status status =
      running.client->Optimize(RequestFor(kSmallHlo)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("at most 100 nodes"));
  // 196 KB of HLO text.
  status =
      running.client->Optimize(RequestFor("hlo/efficientnet_jax_lambda256.hlo"))
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
}

TEST(ServerTest, FullQueueIsResourceExhausted) {
  absl::Notification started;
  absl::Notification release;
  TestServerSetup setup;
  setup.server.threads = 1;
  setup.server.queue_length = 1;
  setup.policies.push_back(engine::testing::FakePolicyOptions{});
  setup.policies.back().started = &started;
  setup.policies.back().release = &release;
  setup.client.max_attempts = 1;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  const gopt::v1::OptimizeRequest request = RequestFor(kSmallHlo);
  absl::Status first;
  absl::Status second;
  std::thread running_call(
      [&] { first = running.client->Optimize(request).status(); });
  started.WaitForNotification();
  std::thread queued_call(
      [&] { second = running.client->Optimize(request).status(); });
  while (running.server->queued_requests() < 1) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const absl::Status refused = running.client->Optimize(request).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("busy"));
  release.Notify();
  running_call.join();
  queued_call.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_TRUE(second.ok()) << second;
}

TEST(ServerTest, DeadlineBoundsTheWork) {
  TestServerSetup setup;
  setup.policies.push_back(engine::testing::FakePolicyOptions{});  // blocks
  setup.client.timeout = absl::Seconds(2);
  setup.client.max_attempts = 1;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  gopt::v1::OptimizeRequest request = RequestFor(kSmallHlo);
  absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);

  request.set_allow_partial_result(true);
  absl::StatusOr<gopt::v1::OptimizeResponse> partial =
      running.client->Optimize(request);
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_TRUE(partial->partial());
  EXPECT_THAT(partial->method(), ::testing::StartsWith("best-baseline:"));
}

// A server whose one policy blocks until the call ends; `started` is
// notified when it starts.
Running StartWithBlockingPolicy(absl::Notification* started) {
  TestServerSetup setup;
  setup.policies.push_back(engine::testing::FakePolicyOptions{});  // blocks
  setup.policies.back().started = started;
  return Start(setup);
}

// Sends an Optimize that a blocking policy holds, runs `interrupt` once
// the policy has started, and returns the call's final status.
grpc::Status InterruptBlockedCall(
    const Running& running, absl::Notification* started,
    const std::function<void(grpc::ClientContext*)>& interrupt) {
  auto stub = gopt::v1::GraphOptimizer::NewStub(grpc::CreateChannel(
      running.client->options().target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  gopt::v1::OptimizeResponse response;
  grpc::Status status;
  std::thread call([&] {
    status = stub->Optimize(&context, RequestFor(kSmallHlo), &response);
  });
  started->WaitForNotification();
  interrupt(&context);
  call.join();
  return status;
}

TEST(ServerTest, ClientCancellationStopsTheWork) {
  absl::Notification started;
  Running running = StartWithBlockingPolicy(&started);
  ASSERT_NE(running.client, nullptr);
  const grpc::Status status = InterruptBlockedCall(
      running, &started,
      [](grpc::ClientContext* context) { context->TryCancel(); });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // The server stops the policy and answers CANCELLED well before the
  // deadline.
  const std::string series =
      R"(gopt_requests_total{code="CANCELLED",method="Optimize"})";
  while (gopt::testing::PrometheusValue(running.metrics->Scrape(), series) !=
         1) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(gopt::testing::PrometheusValue(running.metrics->Scrape(),
                                           "gopt_inflight_requests"),
            0);
}

TEST(ServerTest, MetricsScrapeCountsTheRequests) {
  TestServerSetup setup;
  setup.metrics_port = true;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  int64_t simulations = 0;
  for (int i = 0; i < 2; ++i) {
    auto response = running.client->Optimize(RequestFor(kSmallHlo));
    ASSERT_TRUE(response.ok());
    simulations += response->num_simulations();
  }
  gopt::v1::OptimizeRequest bad = RequestFor(kSmallHlo);
  bad.mutable_topology()->set_preset("nope");
  EXPECT_FALSE(running.client->Optimize(bad).ok());
  ASSERT_TRUE(running.client->ListPolicies().ok());

  absl::StatusOr<std::string> scrape =
      gopt::testing::HttpGet(running.metrics->exposer_port(), "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  using gopt::testing::PrometheusValue;
  EXPECT_EQ(PrometheusValue(
                *scrape, R"(gopt_requests_total{code="OK",method="Optimize"})"),
            2);
  EXPECT_EQ(
      PrometheusValue(
          *scrape,
          R"(gopt_requests_total{code="INVALID_ARGUMENT",method="Optimize"})"),
      1);
  EXPECT_EQ(
      PrometheusValue(
          *scrape, R"(gopt_requests_total{code="OK",method="ListPolicies"})"),
      1);
  EXPECT_EQ(
      PrometheusValue(
          *scrape, R"(gopt_request_duration_seconds_count{method="Optimize"})"),
      3);
  EXPECT_EQ(PrometheusValue(*scrape, "gopt_graph_nodes_count"), 2);
  EXPECT_EQ(PrometheusValue(*scrape, "gopt_simulations_total"), simulations);
  EXPECT_EQ(PrometheusValue(*scrape, "gopt_inflight_requests"), 0);
  EXPECT_EQ(
      PrometheusValue(
          *scrape,
          R"(gopt_predicted_speedup_ratio_count{task="placement+scheduling+fusion"})"),
      2);
  EXPECT_GT(PrometheusValue(*scrape, "process_resident_memory_bytes"), 0);
  for (const std::string& name : MetricNames()) {
    EXPECT_THAT(*scrape, HasSubstr("# TYPE " + name + " ")) << name;
  }
}

// Completes the next operation on `queue`; false when it failed.
bool Next(grpc::CompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  return queue->Next(&tag, &ok) && ok;
}

TEST(ServerTest, ReflectionListsTheServices) {
  TestServerSetup setup;
  setup.server.reflection = true;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  grpc::GenericStub stub(grpc::CreateChannel(
      running.client->options().target, grpc::InsecureChannelCredentials()));
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto call = stub.PrepareCall(
      &context,
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &queue);
  call->StartCall(nullptr);
  ASSERT_TRUE(Next(&queue));
  // ServerReflectionRequest{list_services (field 7) = ""}.
  grpc::Slice slice(std::string("\x3a\x00", 2));
  call->Write(grpc::ByteBuffer(&slice, 1), nullptr);
  ASSERT_TRUE(Next(&queue));
  call->WritesDone(nullptr);
  ASSERT_TRUE(Next(&queue));
  grpc::ByteBuffer answer;
  call->Read(&answer, nullptr);
  ASSERT_TRUE(Next(&queue));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(answer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& part : slices) {
    bytes.append(reinterpret_cast<const char*>(part.begin()), part.size());
  }
  EXPECT_THAT(bytes, HasSubstr("gopt.v1.GraphOptimizer"));
  EXPECT_THAT(bytes, HasSubstr("grpc.health.v1.Health"));
  grpc::Status status;
  call->Finish(&status, nullptr);
  ASSERT_TRUE(Next(&queue));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// A CA, a server certificate for localhost / 127.0.0.1 and a client
// certificate, made by the openssl binary in a fresh directory.
class Certificates {
 public:
  Certificates() {
    dir_ = std::filesystem::path(::testing::TempDir()) / "gopt_tls";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string d = dir_.string();
    Run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=gopt-ca "
        "-keyout " +
        d + "/ca.key -out " + d + "/ca.pem");
    for (const char* who : {"server", "client"}) {
      const std::string w = d + "/" + who;
      Run("openssl req -newkey rsa:2048 -nodes -subj /CN=" + std::string(who) +
          " -keyout " + w + ".key -out " + w + ".csr");
      std::ofstream(w + ".ext")
          << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
      Run("openssl x509 -req -days 1 -in " + w + ".csr -CA " + d +
          "/ca.pem -CAkey " + d + "/ca.key -CAcreateserial -extfile " + w +
          ".ext -out " + w + ".pem");
    }
  }
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }

 private:
  static void Run(const std::string& command) {
    ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0)
        << command;
  }
  std::filesystem::path dir_;
};

// Issue 16 regressions over real gRPC.

TEST(ServerTest, OversizedInlineGraphIsRefusedBeforeItIsParsed) {
  TestServerSetup setup;
  setup.engine.max_graph_nodes = 1000;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  gopt::v1::OptimizeRequest request;
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  for (int i = 0; i < 5000; ++i) graph->add_nodes();
  request.mutable_topology()->set_preset("v100x4-nvlink");
  const absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("graph.graph has 5000 nodes"));
  EXPECT_THAT(status.message(), HasSubstr("at most 1000"));
}

// Sends `bytes` as the request of `method` over a fresh generic stub and
// returns the status; with `cancel`, cancels the call as soon as it starts.
grpc::Status RawUnaryCall(const Running& running, const std::string& method,
                          const std::string& bytes, bool cancel = false) {
  grpc::GenericStub stub(grpc::CreateChannel(
      running.client->options().target, grpc::InsecureChannelCredentials()));
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  grpc::Slice slice(bytes);
  auto call = stub.PrepareUnaryCall(&context, method,
                                    grpc::ByteBuffer(&slice, 1), &queue);
  call->StartCall();
  if (cancel) context.TryCancel();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  return status;
}

// Issue 37 regressions over real gRPC.

TEST(ServerTest, SerializedGraphOverTheWireLimitIsRefusedBeforeItIsParsed) {
  TestServerSetup setup;
  setup.engine.max_graph_nodes = 1000;
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  gopt::v1::Graph graph;
  for (int i = 0; i < 5000; ++i) graph.add_nodes()->set_name("n");
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_serialized(graph.SerializeAsString());
  request.mutable_graph()->set_format("gopt");
  request.mutable_topology()->set_preset("v100x4-nvlink");
  absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(),
              HasSubstr("more than 4000 gopt.v1.Node elements"));
  EXPECT_THAT(status.message(), HasSubstr("at most 1000 nodes"));

  // ModelProto { graph { node {} } }: an empty operator, before any parse.
  request.mutable_graph()->set_serialized(std::string("\x3a\x02\x0a\x00", 4));
  request.mutable_graph()->set_format("onnx");
  status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("an empty gopt.onnx.NodeProto at byte offset 4"));
}

TEST(ServerTest, DeeplyNestedJsonGraphIsInvalidArgument) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_serialized("{\"nodes\":" +
                                          std::string(1 << 20, '['));
  request.mutable_graph()->set_format("gopt");
  request.mutable_topology()->set_preset("v100x4-nvlink");
  const absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nests deeper than 64 levels"));
}

TEST(ServerTest, ListPoliciesWithGarbageBytesIsInvalidArgument) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  const grpc::Status status =
      RawUnaryCall(running, "/gopt.v1.GraphOptimizer/ListPolicies",
                   std::string("\x0a\xff\xff\xff\x0f garbage"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("ListPoliciesRequest"));
  EXPECT_TRUE(running.client->ListPolicies().ok());
}

TEST(ServerTest, CancelledCallsAreCountedAsCancelledNotInternal) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  const std::string request = RequestFor(kSmallHlo).SerializeAsString();
  for (int i = 0; i < 50; ++i) {
    RawUnaryCall(running, "/gopt.v1.GraphOptimizer/Evaluate", request,
                 /*cancel=*/true);
  }
  // Wait for the server to finish the calls it started.
  while (gopt::testing::PrometheusValue(running.metrics->Scrape(),
                                        "gopt_inflight_requests") > 0) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const std::string scrape = running.metrics->Scrape();
  EXPECT_THAT(scrape, ::testing::Not(HasSubstr(R"(code="INTERNAL")")));
  EXPECT_THAT(scrape, ::testing::Not(HasSubstr(R"(code="UNKNOWN")")));
}

TEST(ServerTest, TooDeepRequestIsInvalidArgumentWithAMessage) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  gopt::v1::OptimizeRequest request = RequestFor(kSmallHlo);
  request.mutable_graph()->clear_serialized();
  gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
  for (int i = 0; i < 150; ++i) graph = graph->add_subgraphs();
  const absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nested deeper than"));
}

TEST(ServerTest, LongErrorMessagesKeepTheirCode) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.client, nullptr);
  gopt::v1::OptimizeRequest request = RequestFor(kSmallHlo);
  request.mutable_options()->add_baseline_methods(std::string(100'000, 'x'));
  const absl::Status status = running.client->Optimize(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LE(status.message().size(), 2048u);
  EXPECT_THAT(status.message(), HasSubstr("options.baseline_methods"));
}

TEST(ServerTest, RefusesToStartOnAPortInUse) {
  Running running = Start(TestServerSetup());
  ASSERT_NE(running.server, nullptr);
  ServerOptions second;
  second.listen_address = absl::StrCat("127.0.0.1:", running.server->port());
  const absl::Status status =
      OptimizerServer::Start(second, /*metrics=*/nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("already in use"));
}

TEST(ServerTest, HealthPortAnswersProbesInPlaintext) {
  TestServerSetup setup;
  setup.server.health_listen_address = "127.0.0.1:0";
  setup.load_engine = false;
  Running running = Start(setup);
  ASSERT_NE(running.server, nullptr);
  ASSERT_NE(running.server->health_port(), 0);
  client::ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", running.server->health_port());
  options.max_attempts = 1;
  auto probe = client::OptimizerClient::Connect(options);
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ(*(*probe)->Health(), HealthCheckResponse::NOT_SERVING);
  running.server->SetEngine(std::make_shared<Engine>(EngineOptions(), nullptr));
  EXPECT_EQ(*(*probe)->Health(), HealthCheckResponse::SERVING);
  EXPECT_EQ(*(*probe)->Health("gopt.v1.GraphOptimizer"),
            HealthCheckResponse::SERVING);
  // Only health: the optimizer is not served there.
  EXPECT_EQ((*probe)->Optimize(RequestFor(kSmallHlo)).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(ServerTest, ExpiredRequestsDoNotCrowdOutLiveOnes) {
  TestServerSetup setup;
  setup.server.threads = 1;
  setup.server.queue_length = 4;
  setup.policies.emplace_back();
  setup.policies.back().method = "single+fifo+none";
  setup.policies.back().delay = absl::Milliseconds(100);
  setup.client.timeout = absl::Seconds(30);
  Running running = Start(setup);
  ASSERT_NE(running.client, nullptr);
  const gopt::v1::OptimizeRequest request = RequestFor(kSmallHlo);
  auto stub = gopt::v1::GraphOptimizer::NewStub(grpc::CreateChannel(
      running.client->options().target, grpc::InsecureChannelCredentials()));
  // A flood of clients that give up after 30 ms: every one is over by the
  // time the joins return.
  std::vector<std::thread> flood;
  std::atomic<int> flood_ok{0};
  for (int i = 0; i < 24; ++i) {
    flood.emplace_back([&] {
      grpc::ClientContext context;
      context.set_deadline(
          absl::ToChronoTime(absl::Now() + absl::Milliseconds(30)));
      gopt::v1::OptimizeResponse response;
      if (stub->Optimize(&context, request, &response).ok()) ++flood_ok;
    });
  }
  for (std::thread& thread : flood) thread.join();
  EXPECT_EQ(flood_ok.load(), 0);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<gopt::v1::OptimizeResponse> response =
        running.client->Optimize(request);
    EXPECT_TRUE(response.ok()) << i << ": " << response.status();
  }
  // Counted under the codes the clients got: only the live three are OK.
  EXPECT_EQ(gopt::testing::PrometheusValue(
                running.metrics->Scrape(),
                R"(gopt_requests_total{code="OK",method="Optimize"})"),
            3);
}

// What docs/reliability.md promises a client whose call is still running
// when the shutdown grace ends.
TEST(ServerTest, ShutdownCancelsCallsStillRunningAfterTheGrace) {
  absl::Notification started;
  Running running = StartWithBlockingPolicy(&started);
  ASSERT_NE(running.client, nullptr);
  const grpc::Status status =
      InterruptBlockedCall(running, &started, [&](grpc::ClientContext*) {
        running.server->Shutdown(absl::Now() + absl::Milliseconds(200));
      });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST(ServerTest, TlsAndMutualTls) {
  const Certificates certs;
  TestServerSetup setup;
  setup.server.tls = {certs.Path("server.pem"), certs.Path("server.key"), ""};
  setup.client.tls_ca_file = certs.Path("ca.pem");
  setup.client.max_attempts = 1;
  setup.client.timeout = absl::Seconds(10);
  Running tls = Start(setup);
  ASSERT_NE(tls.client, nullptr);
  EXPECT_EQ(*tls.client->Health(), HealthCheckResponse::SERVING);
  EXPECT_TRUE(tls.client->Optimize(RequestFor(kSmallHlo)).ok());
  client::ClientOptions plaintext;
  plaintext.target = tls.client->options().target;
  plaintext.max_attempts = 1;
  plaintext.timeout = absl::Seconds(5);
  EXPECT_EQ(
      (*client::OptimizerClient::Connect(plaintext))->Health().status().code(),
      absl::StatusCode::kUnavailable);

  setup.server.tls.client_ca_file = certs.Path("ca.pem");
  Running mtls = Start(setup);
  ASSERT_NE(mtls.client, nullptr);
  // No client certificate: the handshake fails.
  EXPECT_EQ(mtls.client->Health().status().code(),
            absl::StatusCode::kUnavailable);
  client::ClientOptions with_cert = mtls.client->options();
  with_cert.tls_cert_file = certs.Path("client.pem");
  with_cert.tls_key_file = certs.Path("client.key");
  auto authenticated = client::OptimizerClient::Connect(with_cert);
  ASSERT_TRUE(authenticated.ok());
  EXPECT_EQ(*(*authenticated)->Health(), HealthCheckResponse::SERVING);
  EXPECT_TRUE((*authenticated)->Optimize(RequestFor(kSmallHlo)).ok());
}

}  // namespace
}  // namespace gopt::server
