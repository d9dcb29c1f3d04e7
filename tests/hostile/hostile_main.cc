// gopt-hostile: sends the requests of the hostile-client review (issue 16)
// to a running gopt-server on this machine and prints one table row per
// case: the code and message the client got, the time it took, the
// server's resident and peak memory after it (from /proc/PID/status) and
// whether the server still reports SERVING. Exits non-zero when a case got
// another code than expected or the server stopped serving.
//
//   gopt-server --listen=127.0.0.1:50061 --metrics_listen= &
//   gopt-hostile --server=127.0.0.1:50061 --pid=$! \
//       --data_dir=../shared/data --graph_250k=/tmp/gnmt250k.pb
//
// scripts/hostile-cases.sh does this, plus the cases that need a server
// process of their own (port in use, TLS key mismatch, tampered policy).
// Not run in CI (it takes minutes and several GB); its table is what the
// reliability note reports.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "client/optimizer_client.h"
#include "gopt/v1/optimizer.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "tests/util/hostile_inputs.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "gopt-server HOST:PORT");
ABSL_FLAG(int, pid, 0, "gopt-server's process id (for its memory); 0 = none");
ABSL_FLAG(std::string, data_dir, "../shared/data", "shared data directory");
ABSL_FLAG(std::string, cases_dir, "tests/hostile",
          "directory of this tool's case files (while_trip_2p62.hlo)");
ABSL_FLAG(int64_t, max_message_bytes, 32 << 20,
          "the server's --max_message_bytes: larger cases expect gRPC's "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(std::string, graph_85k, "",
          "a ~85k-node graph file (gopt generate gnmt --preset=gnmt8-80k); "
          "empty = skip the cases that need it");
ABSL_FLAG(std::string, graph_250k, "",
          "a ~250k-node graph file; empty = skip the cases that need it");
ABSL_FLAG(bool, measure_only, false, "run MeasureCases only");
ABSL_FLAG(double, plan_timeout_seconds, 120,
          "the server's --worker_plan_timeout_seconds (MeasureCases: a "
          "measured plan must answer within it plus 15 s)");

namespace {

using gopt::testing::EmptyNodesFile;
using gopt::testing::HostileJson;
using gopt::testing::LengthDelimited;
using gopt::v1::GraphOptimizer;
using gopt::v1::OptimizeRequest;

struct Outcome {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  double seconds = 0;
  std::string detail;  // what the case adds (counts, step time)
};

std::string CodeName(grpc::StatusCode code) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  const int index = static_cast<int>(code);
  return index >= 0 && index < 17 ? kNames[index] : absl::StrCat(index);
}

// The server's resident memory in MiB (VmRSS), or -1 without --pid or
// once it is gone.
int64_t ServerRssMiB() {
  const int pid = absl::GetFlag(FLAGS_pid);
  if (pid <= 0) return -1;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) / 1024;
  }
  return -1;
}

// CPU seconds the server has used (user + system, /proc/PID/stat), or -1.
double ServerCpuSeconds() {
  const int pid = absl::GetFlag(FLAGS_pid);
  if (pid <= 0) return -1;
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces): state is the
  // 3rd field, utime the 14th, stime the 15th.
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Samples the server's RSS every 10 ms on its own thread while alive: the
// peak of one case, whatever the kernel's VmHWM says about earlier ones.
class RssSampler {
 public:
  RssSampler() : thread_([this] { Run(); }) {}
  ~RssSampler() {
    done_ = true;
    thread_.join();
  }
  int64_t peak_mib() const { return peak_mib_.load(); }

 private:
  void Run() {
    while (!done_) {
      peak_mib_ = std::max(peak_mib_.load(), ServerRssMiB());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::atomic<bool> done_{false};
  std::atomic<int64_t> peak_mib_{-1};
  std::thread thread_;
};

class Hostile {
 public:
  Hostile() {
    channel_ = grpc::CreateChannel(absl::GetFlag(FLAGS_server),
                                   grpc::InsecureChannelCredentials());
    stub_ = GraphOptimizer::NewStub(channel_);
    gopt::client::ClientOptions options;
    options.target = absl::GetFlag(FLAGS_server);
    options.max_attempts = 1;
    options.timeout = absl::Seconds(10);
    health_ = *gopt::client::OptimizerClient::Connect(options);
  }

  // Runs one case and prints its row; false when the code was not
  // `expected` or the server stopped serving.
  bool Case(const std::string& name, grpc::StatusCode expected,
            const std::function<Outcome()>& run) {
    const int64_t before_mib = ServerRssMiB();
    const double before_cpu_s = ServerCpuSeconds();
    const absl::Time start = absl::Now();
    Outcome outcome;
    int64_t peak_mib = -1;
    {
      RssSampler sampler;
      outcome = run();
      peak_mib = sampler.peak_mib();
    }
    outcome.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    // The server trims its heap when a large call is done, just after the
    // client has its answer.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    const int64_t after_mib = ServerRssMiB();
    const double cpu_s = ServerCpuSeconds() - before_cpu_s;
    absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
        health = health_->Health();
    const bool serving =
        health.ok() &&
        *health == grpc::health::v1::HealthCheckResponse::SERVING;
    std::string message = outcome.message.substr(0, 110);
    if (outcome.message.size() > 110) message += "...";
    message = absl::StrReplaceAll(message, {{"|", "/"}, {"\n", " "}});
    std::cout << "| " << name << " | " << CodeName(outcome.code) << " | "
              << message << (outcome.detail.empty() ? "" : " ")
              << outcome.detail << " | " << absl::StrCat(outcome.seconds)
              << " s | "
              << (before_cpu_s < 0 ? std::string("-")
                                   : absl::StrFormat("%.2f s", cpu_s))
              << " | "
              << (before_mib < 0 ? std::string("-")
                                 : absl::StrCat(before_mib, " / ", peak_mib,
                                                " / ", after_mib))
              << " | " << (serving ? "SERVING" : "NOT SERVING") << " |"
              << std::endl;
    return outcome.code == expected && serving;
  }

  Outcome Optimize(
      const OptimizeRequest& request,
      absl::Duration timeout = absl::Seconds(120),
      grpc_compression_algorithm compression = GRPC_COMPRESS_NONE) {
    grpc::ClientContext context;
    context.set_compression_algorithm(compression);
    if (timeout != absl::InfiniteDuration()) {
      context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    }
    gopt::v1::OptimizeResponse response;
    const grpc::Status status = stub_->Optimize(&context, request, &response);
    Outcome outcome{status.error_code(), status.error_message()};
    if (status.ok()) {
      outcome.message =
          absl::StrCat("step ", response.step_time_s(), " s, default ",
                       response.default_step_time_s(), " s");
    }
    return outcome;
  }

  Outcome Evaluate(const gopt::v1::EvaluateRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(120)));
    gopt::v1::EvaluateResponse response;
    const grpc::Status status = stub_->Evaluate(&context, request, &response);
    return Outcome{status.error_code(), status.error_message()};
  }

  // Sends `bytes` as the Optimize request message, unparsed.
  Outcome RawOptimize(const std::string& bytes) {
    return RawCall("/gopt.v1.GraphOptimizer/Optimize", bytes);
  }

  // Sends `bytes` as the request message of `method`, unparsed.
  Outcome RawCall(const std::string& method, const std::string& bytes) {
    grpc::GenericStub generic(channel_);
    grpc::CompletionQueue queue;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(120)));
    grpc::Slice slice(bytes);
    const grpc::ByteBuffer request(&slice, 1);
    auto call = generic.PrepareUnaryCall(&context, method, request, &queue);
    call->StartCall();
    grpc::ByteBuffer response;
    grpc::Status status;
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    queue.Next(&tag, &ok);
    return Outcome{status.error_code(), status.error_message()};
  }

  GraphOptimizer::Stub* stub() { return stub_.get(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<GraphOptimizer::Stub> stub_;
  std::unique_ptr<gopt::client::OptimizerClient> health_;
};

gopt::v1::GraphInput GraphFromFile(const std::string& path) {
  absl::StatusOr<gopt::v1::GraphInput> input =
      gopt::client::GraphInputFromFile(path, "");
  if (!input.ok()) {
    std::cerr << "gopt-hostile: " << input.status() << "\n";
    std::exit(2);
  }
  return *input;
}

OptimizeRequest SmallRequest() {
  OptimizeRequest request;
  *request.mutable_graph() = GraphFromFile(absl::StrCat(
      absl::GetFlag(FLAGS_data_dir), "/hlo/maml_flax_train_step.hlo"));
  request.mutable_topology()->set_preset("v100x4-nvlink");
  return request;
}

// Two sane GPUs joined by a link; `spoil` makes one value hostile.
OptimizeRequest TopologyCase(
    const std::function<void(gopt::v1::Topology*)>& spoil) {
  OptimizeRequest request = SmallRequest();
  gopt::v1::Topology* topology = request.mutable_topology()->mutable_topology();
  topology->set_name("hostile");
  for (int i = 0; i < 2; ++i) {
    gopt::v1::DeviceProfile* device = topology->add_devices();
    device->set_name(absl::StrCat("gpu", i));
    device->set_peak_f32_flops(1.5e13);
    device->set_memory_bandwidth_bytes_per_s(9e11);
    device->set_memory_bytes(int64_t{16} << 30);
    device->set_launch_overhead_s(5e-6);
  }
  topology->mutable_default_link()->set_bandwidth_bytes_per_s(1.5e11);
  topology->mutable_default_link()->set_latency_s(2e-6);
  spoil(topology);
  request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
  return request;
}

// Hostile topology values and graph costs that overflow.
bool TopologyAndCostCases(Hostile& h) {
  using C = grpc::StatusCode;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bool all = true;
  all &= h.Case("launch_overhead_s = inf", C::INVALID_ARGUMENT, [&] {
    return h.Optimize(TopologyCase(
        [&](auto* t) { t->mutable_devices(0)->set_launch_overhead_s(inf); }));
  });
  all &= h.Case("launch_overhead_s = NaN", C::INVALID_ARGUMENT, [&] {
    return h.Optimize(TopologyCase(
        [&](auto* t) { t->mutable_devices(0)->set_launch_overhead_s(nan); }));
  });
  all &= h.Case("peak_f32_flops = 1e-320", C::INVALID_ARGUMENT, [&] {
    return h.Optimize(TopologyCase(
        [](auto* t) { t->mutable_devices(1)->set_peak_f32_flops(1e-320); }));
  });
  all &= h.Case("memory bandwidth = 1e-320", C::INVALID_ARGUMENT, [&] {
    return h.Optimize(TopologyCase([](auto* t) {
      t->mutable_devices(1)->set_memory_bandwidth_bytes_per_s(1e-320);
    }));
  });
  all &= h.Case("link latency = NaN", C::INVALID_ARGUMENT, [&] {
    return h.Optimize(TopologyCase(
        [&](auto* t) { t->mutable_default_link()->set_latency_s(nan); }));
  });
  all &=
      h.Case("while, trip count 2^62, costly body", C::INVALID_ARGUMENT, [&] {
        OptimizeRequest request = SmallRequest();
        *request.mutable_graph() = GraphFromFile(absl::StrCat(
            absl::GetFlag(FLAGS_cases_dir), "/while_trip_2p62.hlo"));
        return h.Optimize(request);
      });
  return all;
}

// Absurd graphs, bytes that do not parse, and requests past the caps.
bool WireAndCapCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  all &= h.Case("two nodes of 1e308 FLOPs", C::INVALID_ARGUMENT, [&] {
    OptimizeRequest request = SmallRequest();
    gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
    for (const char* name : {"a", "b"}) {
      gopt::v1::Node* node = graph->add_nodes();
      node->set_name(name);
      node->set_op("custom");
      node->set_kind("other");
      node->set_flops(1e308);
    }
    return h.Optimize(request);
  });
  all &= h.Case("63 MiB of empty nodes (33M)", C::RESOURCE_EXHAUSTED, [&] {
    std::string nodes;
    nodes.reserve(63 << 20);
    while (nodes.size() < (63u << 20)) nodes.append("\x1a\x00", 2);
    return h.RawOptimize(LengthDelimited(1, LengthDelimited(1, nodes)));
  });
  all &= h.Case("unparsable bytes", C::INVALID_ARGUMENT,
                [&] { return h.RawOptimize("\x0a\xff\xff\xff\x0f garbage"); });
  all &= h.Case("subgraphs nested 150 deep", C::INVALID_ARGUMENT, [&] {
    OptimizeRequest request = SmallRequest();
    gopt::v1::Graph* graph = request.mutable_graph()->mutable_graph();
    for (int i = 0; i < 150; ++i) graph = graph->add_subgraphs();
    return h.Optimize(request);
  });
  all &= h.Case("100 KB error text", C::INVALID_ARGUMENT, [&] {
    OptimizeRequest request = SmallRequest();
    request.mutable_options()->add_baseline_methods(std::string(100'000, 'x'));
    Outcome outcome = h.Optimize(request);
    outcome.detail = absl::StrCat("(", outcome.message.size(), " bytes)");
    return outcome;
  });
  all &=
      h.Case("fine_tune_steps 2^31-1, no deadline", C::INVALID_ARGUMENT, [&] {
        OptimizeRequest request = SmallRequest();
        request.mutable_budget()->set_mode(gopt::v1::Budget::FINE_TUNE);
        request.mutable_budget()->set_fine_tune_steps(2'147'483'647);
        return h.Optimize(request, absl::InfiniteDuration());
      });
  return all;
}

OptimizeRequest SerializedRequest(std::string bytes,
                                  const std::string& format) {
  OptimizeRequest request;
  request.mutable_graph()->set_serialized(std::move(bytes));
  request.mutable_graph()->set_format(format);
  request.mutable_topology()->set_preset("v100x4-nvlink");
  return request;
}

// Item 1 and 2 of the second reliability review: serialized graphs that
// parse into gigabytes, refused from a count on the wire before any parse.
bool SerializedGraphCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  // A message over the server's limit is gRPC's RESOURCE_EXHAUSTED.
  const auto expected = [](int mib, C code) {
    return (int64_t{mib} << 20) > absl::GetFlag(FLAGS_max_message_bytes)
               ? C::RESOURCE_EXHAUSTED
               : code;
  };
  for (const char* format :
       {"onnx", "graphdef", "hlo-proto", "gopt", "tpugraphs"}) {
    for (int mib : {4, 40, 60}) {
      // 4 MiB holds 2M empty nodes: under the wire limit of 4 x
      // --max_graph_nodes, so the first empty node is the error.
      all &= h.Case(
          absl::StrCat(format, ": ", mib, " MiB of empty nodes"),
          expected(mib, mib == 4 ? C::INVALID_ARGUMENT : C::RESOURCE_EXHAUSTED),
          [&] {
            return h.Optimize(SerializedRequest(
                EmptyNodesFile(format, size_t(mib) << 20), format));
          });
    }
  }
  for (const char* format : {"gopt", "tfjs"}) {
    for (int mib : {4, 40, 60}) {
      all &=
          h.Case(absl::StrCat(format, " JSON: ", mib, " MiB of '['"),
                 expected(mib, C::INVALID_ARGUMENT), [&] {
                   return h.Optimize(SerializedRequest(
                       HostileJson(format, size_t(mib) << 20, true), format));
                 });
      all &= h.Case(
          absl::StrCat(format, " JSON: ", mib, " MiB of {}"),
          expected(mib, mib == 4 ? C::INVALID_ARGUMENT : C::RESOURCE_EXHAUSTED),
          [&] {
            return h.Optimize(SerializedRequest(
                HostileJson(format, size_t(mib) << 20, false), format));
          });
    }
  }
  return all;
}

// Item 4: a message over the server's limit, plain and as a gzip bomb.
bool MessageLimitCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  all &= h.Case("1 GiB message", C::RESOURCE_EXHAUSTED, [&] {
    return h.Optimize(
        SerializedRequest(std::string(size_t{1} << 30, 'x'), "onnx"));
  });
  // Compressed requests are refused before any byte is decompressed
  // (--accept_compressed_requests is off by default).
  all &= h.Case("gzip bomb: 1 GiB of zeros", C::UNIMPLEMENTED, [&] {
    return h.Optimize(
        SerializedRequest(std::string(size_t{1} << 30, '\0'), "onnx"),
        absl::Seconds(120), GRPC_COMPRESS_GZIP);
  });
  return all;
}

// Item 6: small requests that used to get the wrong answer.
bool SmallerCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  all &= h.Case("a node of 5e-324 FLOPs", C::INVALID_ARGUMENT, [&] {
    OptimizeRequest request = SmallRequest();
    gopt::v1::Node* node =
        request.mutable_graph()->mutable_graph()->add_nodes();
    node->set_name("tiny");
    node->set_op("custom");
    node->set_kind("other");
    node->set_flops(5e-324);
    node->set_bytes_written(4);
    return h.Optimize(request);
  });
  all &= h.Case("budget.mode = 9", C::INVALID_ARGUMENT, [&] {
    OptimizeRequest request = SmallRequest();
    request.mutable_budget()->set_mode(static_cast<gopt::v1::Budget::Mode>(9));
    return h.Optimize(request);
  });
  all &= h.Case("ListPolicies with garbage bytes", C::INVALID_ARGUMENT, [&] {
    return h.RawCall("/gopt.v1.GraphOptimizer/ListPolicies",
                     "\x0a\xff\xff\xff\x0f garbage");
  });
  return all;
}

// Repeated work and a flood of clients that give up at once.
bool LoadCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  all &= h.Case("30,000 copies of one method, 3 s deadline", C::OK, [&] {
    OptimizeRequest request = SmallRequest();
    request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
    for (int i = 0; i < 30'000; ++i) {
      request.mutable_options()->add_baseline_methods("heft");
    }
    return h.Optimize(request, absl::Seconds(3));
  });
  all &=
      h.Case("1 ms-deadline flood (8 x 50) + a normal client (20)", C::OK, [&] {
        std::atomic<bool> flooding{true};
        std::vector<std::thread> flood;
        const OptimizeRequest request = SmallRequest();
        for (int t = 0; t < 8; ++t) {
          flood.emplace_back([&] {
            for (int i = 0; i < 50 && flooding; ++i) {
              h.Optimize(request, absl::Milliseconds(1));
            }
          });
        }
        int ok = 0;
        Outcome last;
        for (int i = 0; i < 20; ++i) {
          last = h.Optimize(request, absl::Seconds(30));
          ok += last.code == C::OK;
        }
        flooding = false;
        for (std::thread& thread : flood) thread.join();
        Outcome outcome;
        outcome.code = ok == 20 ? C::OK : last.code;
        outcome.message = absl::StrCat("normal client: ", ok, " of 20 OK");
        return outcome;
      });
  return all;
}

// Large graphs, when given: per-request estimates and memory admission.
bool LargeGraphCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  const std::string graph_85k = absl::GetFlag(FLAGS_graph_85k);
  if (!graph_85k.empty()) {
    all &= h.Case(
        "85k-node zero-shot, then 2 s-deadline small zero-shots", C::OK, [&] {
          OptimizeRequest big;
          *big.mutable_graph() = GraphFromFile(graph_85k);
          big.mutable_topology()->set_preset("v100x4-nvlink");
          Outcome first = h.Optimize(big, absl::Seconds(300));
          int ok = 0;
          Outcome last;
          for (int i = 0; i < 5; ++i) {
            last = h.Optimize(SmallRequest(), absl::Seconds(2));
            ok += last.code == C::OK;
          }
          Outcome outcome;
          outcome.code = ok == 5 ? C::OK : last.code;
          outcome.message = absl::StrCat("big: ", CodeName(first.code),
                                         "; small: ", ok, " of 5 OK");
          return outcome;
        });
  }
  const std::string graph_250k = absl::GetFlag(FLAGS_graph_250k);
  if (!graph_250k.empty()) {
    const gopt::v1::GraphInput input = GraphFromFile(graph_250k);
    all &= h.Case("250k-node FINE_TUNE", C::RESOURCE_EXHAUSTED, [&] {
      OptimizeRequest request;
      *request.mutable_graph() = input;
      request.mutable_topology()->set_preset("v100x4-nvlink");
      request.mutable_budget()->set_mode(gopt::v1::Budget::FINE_TUNE);
      request.mutable_budget()->set_fine_tune_steps(5);
      return h.Optimize(request, absl::Seconds(300));
    });
    all &= h.Case("250k-node Evaluate with trace", C::RESOURCE_EXHAUSTED, [&] {
      gopt::v1::EvaluateRequest request;
      *request.mutable_graph() = input;
      request.mutable_topology()->set_preset("v100x4-nvlink");
      request.set_include_trace(true);
      return h.Evaluate(request);
    });
  }
  return all;
}

// An HLO module of one entry computation: `lines` are its instructions
// (the last is the root), each "name = type op(...)".
gopt::v1::GraphInput HloInput(const std::string& name,
                              const std::vector<std::string>& lines) {
  std::string text = absl::StrCat("HloModule ", name, "\n\nENTRY main {\n");
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StrAppend(&text, i + 1 == lines.size() ? "  ROOT " : "  ", lines[i],
                    "\n");
  }
  gopt::v1::GraphInput input;
  input.set_serialized(text + "}\n");
  input.set_format("hlo");
  input.set_name(name);
  return input;
}

// The first warning that contains `needle`, or "".
template <typename Response>
std::string WarningWith(const Response& response, const std::string& needle) {
  for (const std::string& warning : response.warnings()) {
    if (warning.find(needle) != std::string::npos) return warning;
  }
  return "";
}

// Issue 37 item 3: measuring runs untrusted work. A plan that would hold
// more than a measurement may is answered with a refusal (OK, simulated
// numbers, a warning) without the server's memory growing; a plan whose
// kernels run past the per-plan timeout answers within the timeout plus a
// few seconds (the worker is killed and restarted).
bool MeasureCases(Hostile& h) {
  using C = grpc::StatusCode;
  bool all = true;
  all &= h.Case(
      "f32[23000,23000] + six chained adds, Evaluate measure=true", C::OK, [&] {
        const std::string type = "f32[23000,23000]{1,0}";
        std::vector<std::string> lines = {
            absl::StrCat("p = ", type, " parameter(0)"),
            absl::StrCat("a1 = ", type, " add(p, p)")};
        for (int i = 2; i <= 6; ++i) {
          lines.push_back(
              absl::StrCat("a", i, " = ", type, " add(a", i - 1, ", p)"));
        }
        gopt::v1::EvaluateRequest request;
        *request.mutable_graph() = HloInput("six_adds", lines);
        request.mutable_topology()->set_preset("cpu-host");
        for (size_t i = 0; i < lines.size(); ++i) {
          request.mutable_plan()->add_device(0);
        }
        request.set_measure(true);
        grpc::ClientContext context;
        context.set_deadline(
            absl::ToChronoTime(absl::Now() + absl::Seconds(300)));
        gopt::v1::EvaluateResponse response;
        const grpc::Status status =
            h.stub()->Evaluate(&context, request, &response);
        Outcome outcome{status.error_code(), status.error_message()};
        if (!status.ok()) return outcome;
        const std::string refusal = WarningWith(response, "measure: ");
        outcome.message =
            refusal.empty() ? "no measure warning: it was run" : refusal;
        if (refusal.empty() || response.measured_step_time_s() > 0) {
          outcome.code = C::UNKNOWN;
        }
        return outcome;
      });
  all &=
      h.Case("three dots on f32[16384,16384], Optimize verify=1", C::OK, [&] {
        const std::string type = "f32[16384,16384]{1,0}";
        const std::string dims =
            "lhs_contracting_dims={1}, "
            "rhs_contracting_dims={0}";
        const std::vector<std::string> lines = {
            absl::StrCat("a = ", type, " parameter(0)"),
            absl::StrCat("b = ", type, " parameter(1)"),
            absl::StrCat("d1 = ", type, " dot(a, b), ", dims),
            absl::StrCat("d2 = ", type, " dot(d1, b), ", dims),
            absl::StrCat("d3 = ", type, " dot(d2, b), ", dims)};
        OptimizeRequest request;
        *request.mutable_graph() = HloInput("three_dots", lines);
        request.mutable_topology()->set_preset("cpu-host");
        request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
        request.set_verify(1);
        grpc::ClientContext context;
        context.set_deadline(
            absl::ToChronoTime(absl::Now() + absl::Seconds(600)));
        gopt::v1::OptimizeResponse response;
        const absl::Time start = absl::Now();
        const grpc::Status status =
            h.stub()->Optimize(&context, request, &response);
        const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
        Outcome outcome{status.error_code(), status.error_message()};
        if (!status.ok()) return outcome;
        const std::string warning = WarningWith(response, "verify: ");
        outcome.message =
            warning.empty()
                ? absl::StrCat("measured ", response.measured_step_time_s(),
                               " s")
                : warning;
        if (seconds > absl::GetFlag(FLAGS_plan_timeout_seconds) + 15) {
          outcome.code = C::DEADLINE_EXCEEDED;
          outcome.detail = "(ran past the plan timeout + 15 s)";
        }
        return outcome;
      });
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "gopt-hostile --server=HOST:PORT [--pid=PID] [--graph_85k=FILE] "
      "[--graph_250k=FILE]: hostile requests against a gopt-server, one "
      "table row each");
  absl::ParseCommandLine(argc, argv);
  Hostile h;
  bool all = true;
  std::cout << "| case | code | message / result | time | server CPU | "
               "server RSS before / peak / after, MiB | health |\n"
               "|---|---|---|---|---|---|---|\n";
  if (absl::GetFlag(FLAGS_measure_only)) {
    all = MeasureCases(h);
    std::cout << (all ? "every case as expected\n" : "SOME CASE FAILED\n");
    return all ? 0 : 1;
  }
  all &= TopologyAndCostCases(h);
  all &= WireAndCapCases(h);
  all &= SerializedGraphCases(h);
  all &= MessageLimitCases(h);
  all &= SmallerCases(h);
  all &= LoadCases(h);
  all &= LargeGraphCases(h);
  all &= MeasureCases(h);
  std::cout << (all ? "every case as expected; the server still serves\n"
                    : "SOME CASE FAILED\n");
  return all ? 0 : 1;
}
