// gopt-soak: drives a running gopt-server on loopback with a mix of real and
// malformed requests at a fixed concurrency, for a bounded time and count,
// then prints a report: throughput, the count of each gRPC code per request
// kind, latency, the server's RSS and open fds (from /proc) at start and
// end and its RSS peak, and whether health still says SERVING.
//
// Real requests: graphs from ../shared/data that the server can plan (it is
// asked for a baseline plan of each at start; the others are only sent
// corrupted), Optimize BASELINES_ONLY and
// zero-shot, OptimizeStream, Evaluate with and without trace. Malformed and
// hostile ones: corrupt graph bytes, random bytes on the wire, topologies
// with inf/NaN/denormal/out-of-range values, plans that do not fit, huge
// fine_tune_steps, thousands of baseline methods, 1 ms deadlines and
// cancellations mid-call.
//
// Exit status: 0 when the server is alive and SERVING at the end and no
// call got INTERNAL, UNKNOWN or DATA_LOSS or an OK answer with a
// non-finite or non-positive step time; 1 otherwise; 2 on bad flags.
//
// usage: gopt-soak --target=127.0.0.1:PORT [--server_pid=PID]
//                  [--duration_s=1800] [--max_requests=200000]
//                  [--concurrency=8] [--data=../shared/data]
// scripts/soak.sh starts a server and runs this against it.

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/optimizer_client.h"
#include "gopt/v1/optimizer.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "tests/util/hostile_inputs.h"

ABSL_FLAG(std::string, target, "",
          "gopt-server address; loopback only (127.0.0.1:PORT, localhost:PORT "
          "or [::1]:PORT)");
ABSL_FLAG(int, server_pid, 0,
          "the server's pid, for RSS and open fds from /proc (0 = not read)");
ABSL_FLAG(std::string, data, "../shared/data",
          "directory of real graphs (hlo/, onnx/, tf_graphdef/, tfjs/, "
          "tpugraphs/)");
ABSL_FLAG(double, duration_s, 1800, "stop sending after this many seconds");
ABSL_FLAG(int64_t, max_requests, 200'000, "stop after this many requests");
ABSL_FLAG(int, concurrency, 8, "requests in flight at once (one thread each)");
ABSL_FLAG(double, timeout_s, 60, "deadline of the well-formed requests");
ABSL_FLAG(int64_t, max_graph_bytes, 1 << 20,
          "skip graph files larger than this (keeps one request short)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the request mix");

namespace {

using gopt::v1::EvaluateRequest;
using gopt::v1::GraphOptimizer;
using gopt::v1::OptimizeRequest;
using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// Request kinds and their share of the mix.
enum class Kind {
  kOptimizeBaselines,
  kOptimizeZeroShot,
  kOptimizeStream,
  kEvaluate,
  kEvaluateTrace,
  kCorruptGraph,
  kHostileSerialized,
  kWireGarbage,
  kBadTopology,
  kBadPlan,
  kHugeFineTune,
  kManyBaselineMethods,
  kTinyDeadline,
  kCancelled,
};

struct KindInfo {
  Kind kind;
  const char* name;
  int weight;
};

constexpr KindInfo kKinds[] = {
    {Kind::kOptimizeBaselines, "optimize_baselines", 14},
    {Kind::kOptimizeZeroShot, "optimize_zero_shot", 8},
    {Kind::kOptimizeStream, "optimize_stream", 6},
    {Kind::kEvaluate, "evaluate", 8},
    {Kind::kEvaluateTrace, "evaluate_trace", 4},
    {Kind::kCorruptGraph, "corrupt_graph", 8},
    {Kind::kHostileSerialized, "empty_nodes_or_deep_json", 4},
    {Kind::kWireGarbage, "wire_garbage", 4},
    {Kind::kBadTopology, "bad_topology", 8},
    {Kind::kBadPlan, "bad_plan", 4},
    {Kind::kHugeFineTune, "huge_fine_tune", 2},
    {Kind::kManyBaselineMethods, "many_baseline_methods", 2},
    {Kind::kTinyDeadline, "tiny_deadline_1ms", 8},
    {Kind::kCancelled, "cancelled", 6},
};

constexpr const char* kPresets[] = {"v100x4-nvlink", "a100x8-nvlink",
                                    "h100x8-nvlink", "v100x2-pcie",
                                    "tpuv3x8",       "cpu-host"};

// One real graph and, when a baseline plan was made for it at start, that
// plan (for Evaluate).
struct RealGraph {
  std::string path;
  gopt::v1::GraphInput input;
  std::string bytes;  // the file's contents
  bool has_plan = false;
  gopt::v1::Plan plan;
  std::string plan_preset;
};

// What the server process looks like from /proc.
struct ProcessSample {
  bool alive = false;
  int64_t rss_kib = 0;
  int64_t hwm_kib = 0;  // VmHWM: peak RSS since the process started
  int64_t fds = 0;
};

ProcessSample SampleProcess(int pid) {
  ProcessSample sample;
  if (pid <= 0) return sample;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  if (!status) return sample;
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "VmRSS:") fields >> sample.rss_kib;
    if (key == "VmHWM:") fields >> sample.hwm_kib;
    if (key == "State:") {
      std::string state;
      fields >> state;
      if (state == "Z") return sample;  // a zombie is a dead server
    }
  }
  DIR* dir = opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
  if (dir != nullptr) {
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++sample.fds;
    }
    closedir(dir);
  }
  sample.alive = true;
  return sample;
}

bool IsLoopbackTarget(const std::string& target) {
  for (const char* host : {"127.0.0.1:", "localhost:", "[::1]:"}) {
    if (target.rfind(host, 0) == 0 && target.size() > std::strlen(host)) {
      return true;
    }
  }
  return false;
}

// Counts per kind and code, latencies, and the first message of each
// (kind, code) so the report can say what a code meant. Thread-safe.
class Tally {
 public:
  void Record(const char* kind, grpc::StatusCode code,
              const std::string& message, double seconds) {
    absl::MutexLock lock(&mutex_);
    KindTally& tally = kinds_[kind];
    if (tally.codes[code]++ == 0) tally.first_message[code] = message;
    tally.seconds.push_back(seconds);
    ++total_;
  }
  void RecordBadAnswer(const char* kind, const std::string& what) {
    absl::MutexLock lock(&mutex_);
    if (bad_answers_.size() < 20)
      bad_answers_.push_back(absl::StrCat(kind, ": ", what));
    ++num_bad_answers_;
  }
  int64_t total() const {
    absl::MutexLock lock(&mutex_);
    return total_;
  }

  // Appends the per-kind table; returns the calls that got a code no
  // request may get (INTERNAL, UNKNOWN, DATA_LOSS) plus bad answers.
  int64_t Report(std::ostream& out) const;

 private:
  struct KindTally {
    std::map<grpc::StatusCode, int64_t> codes;
    std::map<grpc::StatusCode, std::string> first_message;
    std::vector<double> seconds;
  };
  mutable absl::Mutex mutex_;
  std::map<std::string, KindTally> kinds_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> bad_answers_ ABSL_GUARDED_BY(mutex_);
  int64_t num_bad_answers_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t total_ ABSL_GUARDED_BY(mutex_) = 0;
};

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::UNKNOWN:
      return "UNKNOWN";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::ABORTED:
      return "ABORTED";
    case grpc::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "CODE_?";
  }
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int64_t Tally::Report(std::ostream& out) const {
  absl::MutexLock lock(&mutex_);
  int64_t failures = num_bad_answers_;
  out << absl::StrFormat("%-22s %7s %8s %8s  %s\n", "kind", "calls", "p50_s",
                         "p99_s", "codes");
  for (const auto& [kind, tally] : kinds_) {
    std::string codes;
    for (const auto& [code, count] : tally.codes) {
      absl::StrAppend(&codes, codes.empty() ? "" : " ", CodeName(code), "=",
                      count);
      if (code == grpc::INTERNAL || code == grpc::UNKNOWN ||
          code == grpc::DATA_LOSS) {
        failures += count;
      }
    }
    out << absl::StrFormat("%-22s %7d %8.3f %8.3f  %s\n", kind,
                           tally.seconds.size(), Percentile(tally.seconds, 0.5),
                           Percentile(tally.seconds, 0.99), codes);
  }
  out << "first message per kind and code:\n";
  for (const auto& [kind, tally] : kinds_) {
    for (const auto& [code, message] : tally.first_message) {
      if (code == grpc::OK) continue;
      std::string shown = message.substr(0, 160);
      std::replace(shown.begin(), shown.end(), '\n', ' ');
      out << "  " << kind << " " << CodeName(code) << ": " << shown
          << (message.size() > 160 ? "..." : "") << "\n";
    }
  }
  if (num_bad_answers_ > 0) {
    out << num_bad_answers_ << " OK answers with impossible numbers:\n";
    for (const std::string& bad : bad_answers_) out << "  " << bad << "\n";
  }
  return failures;
}

// Checks the numbers of an OK answer; a NaN, inf or non-positive step time
// must never reach a client.
std::string BadOptimizeAnswer(const gopt::v1::OptimizeResponse& response) {
  const double step = response.step_time_s();
  if (!std::isfinite(step) || step <= 0) {
    return absl::StrCat("step_time_s = ", step);
  }
  if (!std::isfinite(response.speedup_over_default())) {
    return absl::StrCat("speedup_over_default = ",
                        response.speedup_over_default());
  }
  return "";
}

std::string BadEvaluateAnswer(const gopt::v1::EvaluateResponse& response) {
  const double step = response.step_time_s();
  if (!std::isfinite(step) || step <= 0) {
    return absl::StrCat("step_time_s = ", step);
  }
  return "";
}

class Soak {
 public:
  Soak(std::shared_ptr<grpc::Channel> channel, std::vector<RealGraph> graphs,
       absl::Duration timeout)
      : channel_(std::move(channel)),
        stub_(GraphOptimizer::NewStub(channel_)),
        generic_(channel_),
        graphs_(std::move(graphs)),
        timeout_(timeout) {
    for (const RealGraph& graph : graphs_) {
      if (graph.has_plan) planned_.push_back(&graph);
    }
  }

  // Sends requests on one thread until `stop` or the request budget.
  void Worker(uint64_t seed, const std::atomic<bool>* stop,
              std::atomic<int64_t>* budget, Tally* tally) {
    std::mt19937_64 rng(seed);
    std::vector<int> weights;
    for (const KindInfo& info : kKinds) weights.push_back(info.weight);
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    while (!stop->load() && budget->fetch_sub(1) > 0) {
      const KindInfo& info = kKinds[pick(rng)];
      const absl::Time start = absl::Now();
      std::string bad_answer;
      const grpc::Status status = Send(info.kind, rng, &bad_answer);
      tally->Record(info.name, status.error_code(), status.error_message(),
                    absl::ToDoubleSeconds(absl::Now() - start));
      if (!bad_answer.empty()) tally->RecordBadAnswer(info.name, bad_answer);
    }
  }

  // grpc.health.v1 status of the whole server ("" when unreachable).
  std::string HealthStatus() const {
    auto health = Health::NewStub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    HealthCheckResponse response;
    const grpc::Status status =
        health->Check(&context, HealthCheckRequest(), &response);
    if (!status.ok())
      return absl::StrCat("unreachable (", CodeName(status.error_code()), ")");
    return HealthCheckResponse::ServingStatus_Name(response.status());
  }

 private:
  // A graph the server could plan at start (any graph when none could).
  const RealGraph& AnyGraph(std::mt19937_64& rng) const {
    if (planned_.empty()) return graphs_[rng() % graphs_.size()];
    return *planned_[rng() % planned_.size()];
  }
  const char* AnyPreset(std::mt19937_64& rng) const {
    return kPresets[rng() % std::size(kPresets)];
  }
  void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) const {
    context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }

  OptimizeRequest RealOptimize(std::mt19937_64& rng,
                               gopt::v1::Budget::Mode mode) const {
    OptimizeRequest request;
    *request.mutable_graph() = AnyGraph(rng).input;
    request.mutable_topology()->set_preset(AnyPreset(rng));
    request.mutable_budget()->set_mode(mode);
    request.set_allow_partial_result(true);
    request.mutable_options()->set_seed(rng());
    return request;
  }

  grpc::Status Optimize(const OptimizeRequest& request, absl::Duration timeout,
                        std::string* bad_answer,
                        absl::Duration cancel_after = absl::ZeroDuration()) {
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    std::thread canceller;
    if (cancel_after > absl::ZeroDuration()) {
      canceller = std::thread([&context, cancel_after] {
        absl::SleepFor(cancel_after);
        context.TryCancel();
      });
    }
    gopt::v1::OptimizeResponse response;
    const grpc::Status status = stub_->Optimize(&context, request, &response);
    if (canceller.joinable()) canceller.join();
    if (status.ok()) *bad_answer = BadOptimizeAnswer(response);
    return status;
  }

  grpc::Status OptimizeStream(const OptimizeRequest& request,
                              std::string* bad_answer,
                              absl::Duration cancel_after) {
    grpc::ClientContext context;
    SetDeadline(&context, timeout_);
    std::thread canceller;
    if (cancel_after > absl::ZeroDuration()) {
      canceller = std::thread([&context, cancel_after] {
        absl::SleepFor(cancel_after);
        context.TryCancel();
      });
    }
    auto reader = stub_->OptimizeStream(&context, request);
    gopt::v1::OptimizeStreamResponse event;
    bool got_result = false;
    while (reader->Read(&event)) {
      if (event.has_result()) {
        got_result = true;
        *bad_answer = BadOptimizeAnswer(event.result());
      }
    }
    const grpc::Status status = reader->Finish();
    if (canceller.joinable()) canceller.join();
    if (status.ok() && !got_result)
      *bad_answer = "stream ended OK without a result";
    return status;
  }

  grpc::Status Evaluate(const EvaluateRequest& request, absl::Duration timeout,
                        std::string* bad_answer) {
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    gopt::v1::EvaluateResponse response;
    const grpc::Status status = stub_->Evaluate(&context, request, &response);
    if (status.ok()) *bad_answer = BadEvaluateAnswer(response);
    return status;
  }

  EvaluateRequest RealEvaluate(std::mt19937_64& rng) const {
    EvaluateRequest request;
    const RealGraph& graph = *planned_[rng() % planned_.size()];
    *request.mutable_graph() = graph.input;
    request.mutable_topology()->set_preset(graph.plan_preset);
    *request.mutable_plan() = graph.plan;
    return request;
  }

  // A well-formed explicit machine (two GPUs, NVLink between them).
  static gopt::v1::Topology ExplicitTopology() {
    gopt::v1::Topology topology;
    topology.set_name("soak-2gpu");
    for (int i = 0; i < 2; ++i) {
      gopt::v1::DeviceProfile* device = topology.add_devices();
      device->set_name(absl::StrCat("gpu", i));
      device->set_kind("gpu");
      device->set_peak_f32_flops(1.5e13);
      device->set_memory_bandwidth_bytes_per_s(9e11);
      device->set_memory_bytes(int64_t{16} << 30);
      device->set_launch_overhead_s(5e-6);
    }
    for (int i = 0; i < 2; ++i) {
      gopt::v1::Link* link = topology.add_links();
      link->set_src(i);
      link->set_dst(1 - i);
      link->set_bandwidth_bytes_per_s(1.5e11);
      link->set_latency_s(2e-6);
    }
    topology.mutable_default_link()->set_bandwidth_bytes_per_s(1.6e10);
    topology.mutable_default_link()->set_latency_s(1e-5);
    return topology;
  }

  // The explicit machine with one value a server must refuse or survive.
  static gopt::v1::Topology BadTopology(std::mt19937_64& rng) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    gopt::v1::Topology topology = ExplicitTopology();
    gopt::v1::DeviceProfile* device = topology.mutable_devices(rng() % 2);
    gopt::v1::Link* link = topology.mutable_links(rng() % 2);
    switch (rng() % 14) {
      case 0:
        device->set_launch_overhead_s(inf);
        break;
      case 1:
        device->set_launch_overhead_s(nan);
        break;
      case 2:
        device->set_peak_f32_flops(1e-320);
        break;
      case 3:
        device->set_memory_bandwidth_bytes_per_s(1e-320);
        break;
      case 4:
        link->set_latency_s(nan);
        break;
      case 5:
        link->set_bandwidth_bytes_per_s(0);
        break;
      case 6:
        link->set_bandwidth_bytes_per_s(-1e9);
        break;
      case 7:
        link->set_dst(99);
        break;
      case 8:
        topology.clear_devices();
        return topology;
      case 9:
        device->set_memory_bytes(-1);
        break;
      case 10:
        device->set_max_efficiency(nan);
        break;
      case 11:
        device->set_peak_f32_flops(inf);
        break;
      case 12:
        device->set_peak_f32_flops(1e308);
        break;
      default:
        topology.mutable_default_link()->set_latency_s(-inf);
        break;
    }
    // A third of the time every device is the bad one, so no placer can
    // fall back on a good device.
    if (rng() % 3 == 0 && topology.devices_size() > 0) {
      const gopt::v1::DeviceProfile bad = *device;
      for (auto& each : *topology.mutable_devices()) each = bad;
    }
    return topology;
  }

  grpc::Status Send(Kind kind, std::mt19937_64& rng, std::string* bad_answer) {
    switch (kind) {
      case Kind::kOptimizeBaselines:
        return Optimize(RealOptimize(rng, gopt::v1::Budget::BASELINES_ONLY),
                        timeout_, bad_answer);
      case Kind::kOptimizeZeroShot:
        return Optimize(RealOptimize(rng, gopt::v1::Budget::ZERO_SHOT),
                        timeout_, bad_answer);
      case Kind::kOptimizeStream:
        return OptimizeStream(RealOptimize(rng, gopt::v1::Budget::ZERO_SHOT),
                              bad_answer, absl::ZeroDuration());
      case Kind::kEvaluate:
      case Kind::kEvaluateTrace: {
        if (planned_.empty()) return grpc::Status(grpc::ABORTED, "no plans");
        EvaluateRequest request = RealEvaluate(rng);
        request.set_include_trace(kind == Kind::kEvaluateTrace);
        return Evaluate(request, timeout_, bad_answer);
      }
      case Kind::kHostileSerialized: {
        // Empty nodes in a binary format, or JSON opened too deep / full of
        // empty nodes: refused from a count on the wire before any parse.
        constexpr const char* kFormats[] = {"onnx", "graphdef",  "hlo-proto",
                                            "gopt", "tpugraphs", "tfjs"};
        const std::string format = kFormats[rng() % std::size(kFormats)];
        const size_t size = (size_t{256} << 10) << (rng() % 5);  // to 4 MiB
        const bool json = format == "tfjs" || rng() % 2 == 0;
        OptimizeRequest request =
            RealOptimize(rng, gopt::v1::Budget::BASELINES_ONLY);
        request.mutable_graph()->set_serialized(
            json ? gopt::testing::HostileJson(format, size, rng() % 2 == 0)
                 : gopt::testing::EmptyNodesFile(format, size));
        request.mutable_graph()->set_format(format);
        return Optimize(request, timeout_, bad_answer);
      }
      case Kind::kCorruptGraph: {
        const RealGraph& graph = graphs_[rng() % graphs_.size()];
        std::string bytes = graph.bytes;
        if (rng() % 4 == 0) bytes.resize(rng() % (bytes.size() + 1));
        const int flips = 1 + static_cast<int>(rng() % 64);
        for (int i = 0; i < flips && !bytes.empty(); ++i) {
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
        }
        OptimizeRequest request =
            RealOptimize(rng, gopt::v1::Budget::BASELINES_ONLY);
        *request.mutable_graph() = graph.input;
        request.mutable_graph()->set_serialized(bytes);
        return Optimize(request, timeout_, bad_answer);
      }
      case Kind::kWireGarbage: {
        std::string bytes(1 + rng() % 4096, '\0');
        for (char& c : bytes) c = static_cast<char>(rng());
        grpc::Slice slice(bytes);
        const grpc::ByteBuffer request(&slice, 1);
        grpc::ByteBuffer response;
        grpc::ClientContext context;
        SetDeadline(&context, timeout_);
        std::promise<grpc::Status> done;
        generic_.UnaryCall(&context,
                           rng() % 2 ? "/gopt.v1.GraphOptimizer/Optimize"
                                     : "/gopt.v1.GraphOptimizer/Evaluate",
                           grpc::StubOptions(), &request, &response,
                           [&done](grpc::Status s) { done.set_value(s); });
        return done.get_future().get();
      }
      case Kind::kBadTopology: {
        const gopt::v1::Topology topology = BadTopology(rng);
        if (rng() % 3 == 0 && !planned_.empty()) {
          EvaluateRequest request = RealEvaluate(rng);
          *request.mutable_topology()->mutable_topology() = topology;
          // The plan was made for a preset; keep it within two devices.
          for (int i = 0; i < request.plan().device_size(); ++i) {
            request.mutable_plan()->set_device(i, request.plan().device(i) % 2);
          }
          return Evaluate(request, timeout_, bad_answer);
        }
        OptimizeRequest request =
            RealOptimize(rng, gopt::v1::Budget::BASELINES_ONLY);
        *request.mutable_topology()->mutable_topology() = topology;
        return Optimize(request, timeout_, bad_answer);
      }
      case Kind::kBadPlan: {
        if (planned_.empty()) return grpc::Status(grpc::ABORTED, "no plans");
        EvaluateRequest request = RealEvaluate(rng);
        gopt::v1::Plan* plan = request.mutable_plan();
        switch (rng() % 4) {
          case 0:
            plan->add_device(0);
            break;
          case 1:
            if (plan->device_size() > 0) plan->set_device(0, 1 << 30);
            break;
          case 2:
            plan->add_fusion_group(-7);
            break;
          default:
            plan->mutable_priority()->Clear();
            for (int i = 0; i < plan->device_size(); ++i) {
              plan->add_priority(static_cast<int32_t>(rng()));
            }
            break;
        }
        return Evaluate(request, timeout_, bad_answer);
      }
      case Kind::kHugeFineTune: {
        OptimizeRequest request =
            RealOptimize(rng, gopt::v1::Budget::FINE_TUNE);
        // 2^31-1 steps (a server with a step cap refuses it), or 10,000:
        // as many as gopt-server accepts by default, so only the 5 s
        // deadline can stop the work.
        request.mutable_budget()->set_fine_tune_steps(
            rng() % 2 ? std::numeric_limits<int32_t>::max() : 10'000);
        return Optimize(request, absl::Seconds(5), bad_answer);
      }
      case Kind::kManyBaselineMethods: {
        OptimizeRequest request =
            RealOptimize(rng, gopt::v1::Budget::BASELINES_ONLY);
        for (int i = 0; i < 5000; ++i) {
          request.mutable_options()->add_baseline_methods(
              i % 2 ? "heft+critical-path+greedy" : "metis");
        }
        return Optimize(request, absl::Seconds(3), bad_answer);
      }
      case Kind::kTinyDeadline:
        return Optimize(RealOptimize(rng, gopt::v1::Budget::ZERO_SHOT),
                        absl::Milliseconds(1), bad_answer);
      case Kind::kCancelled: {
        const absl::Duration after = absl::Milliseconds(5 + rng() % 300);
        OptimizeRequest request =
            RealOptimize(rng, rng() % 2 ? gopt::v1::Budget::ZERO_SHOT
                                        : gopt::v1::Budget::FINE_TUNE);
        if (rng() % 2) return OptimizeStream(request, bad_answer, after);
        return Optimize(request, timeout_, bad_answer, after);
      }
    }
    return grpc::Status(grpc::INTERNAL, "unknown kind");
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<GraphOptimizer::Stub> stub_;
  grpc::GenericStub generic_;
  const std::vector<RealGraph> graphs_;
  std::vector<const RealGraph*> planned_;
  const absl::Duration timeout_;
};

// The real graphs under `data` no larger than `max_bytes`, sorted by path.
std::vector<RealGraph> LoadGraphs(const std::string& data, int64_t max_bytes) {
  std::vector<RealGraph> graphs;
  for (const char* folder :
       {"hlo", "onnx", "tf_graphdef", "tfjs", "tpugraphs"}) {
    const std::filesystem::path dir = std::filesystem::path(data) / folder;
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".hlo" && ext != ".onnx" && ext != ".pb" && ext != ".json") {
        continue;
      }
      if (static_cast<int64_t>(entry.file_size()) > max_bytes) continue;
      absl::StatusOr<gopt::v1::GraphInput> input =
          gopt::client::GraphInputFromFile(entry.path().string(), "auto");
      if (!input.ok()) {
        std::cerr << "gopt-soak: skipping " << entry.path() << ": "
                  << input.status() << "\n";
        continue;
      }
      RealGraph graph;
      graph.path = entry.path().string();
      graph.input = *std::move(input);
      graph.input.set_name(entry.path().filename().string());
      graph.bytes = graph.input.serialized();
      graphs.push_back(std::move(graph));
    }
  }
  std::sort(
      graphs.begin(), graphs.end(),
      [](const RealGraph& a, const RealGraph& b) { return a.path < b.path; });
  return graphs;
}

// Asks the server for a baseline plan of each graph, for Evaluate.
void MakePlans(GraphOptimizer::Stub* stub, std::vector<RealGraph>* graphs) {
  for (RealGraph& graph : *graphs) {
    OptimizeRequest request;
    *request.mutable_graph() = graph.input;
    request.mutable_topology()->set_preset("v100x4-nvlink");
    request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(120));
    gopt::v1::OptimizeResponse response;
    const grpc::Status status = stub->Optimize(&context, request, &response);
    if (!status.ok()) {
      std::cerr << "gopt-soak: no plan for " << graph.path << ": "
                << CodeName(status.error_code()) << " "
                << status.error_message().substr(0, 200) << "\n";
      continue;
    }
    graph.has_plan = true;
    graph.plan = response.plan();
    graph.plan_preset = "v100x4-nvlink";
  }
}

std::string Mib(int64_t kib) {
  return absl::StrFormat("%.1f MiB", kib / 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "gopt-soak: mixed real and malformed requests against a gopt-server "
      "on loopback.\nusage: gopt-soak --target=127.0.0.1:PORT "
      "[--server_pid=PID] [--duration_s=1800] [--concurrency=8]");
  absl::ParseCommandLine(argc, argv);
  const std::string target = absl::GetFlag(FLAGS_target);
  if (!IsLoopbackTarget(target)) {
    std::cerr << "gopt-soak: --target must be a loopback address "
                 "(127.0.0.1:PORT, localhost:PORT or [::1]:PORT), got '"
              << target << "'\n";
    return 2;
  }
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const double duration_s = absl::GetFlag(FLAGS_duration_s);
  const int64_t max_requests = absl::GetFlag(FLAGS_max_requests);
  if (concurrency < 1 || duration_s <= 0 || max_requests < 1) {
    std::cerr << "gopt-soak: --concurrency, --duration_s and --max_requests "
                 "must be positive\n";
    return 2;
  }
  const int pid = absl::GetFlag(FLAGS_server_pid);

  std::vector<RealGraph> graphs = LoadGraphs(
      absl::GetFlag(FLAGS_data), absl::GetFlag(FLAGS_max_graph_bytes));
  if (graphs.empty()) {
    std::cerr << "gopt-soak: no graphs found under "
              << absl::GetFlag(FLAGS_data)
              << " (set --data to ../shared/data)\n";
    return 2;
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxSendMessageSize(256 << 20);
  arguments.SetMaxReceiveMessageSize(256 << 20);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), arguments);
  {
    auto stub = GraphOptimizer::NewStub(channel);
    MakePlans(stub.get(), &graphs);
  }
  Soak soak(channel, std::move(graphs),
            absl::Seconds(absl::GetFlag(FLAGS_timeout_s)));
  const std::string health_start = soak.HealthStatus();
  const ProcessSample start_sample = SampleProcess(pid);
  if (pid > 0 && !start_sample.alive) {
    std::cerr << "gopt-soak: no process " << pid << "\n";
    return 2;
  }

  Tally tally;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> budget{max_requests};
  int64_t peak_rss_kib = start_sample.rss_kib;
  bool server_died = false;
  const absl::Time start = absl::Now();
  std::vector<std::thread> workers;
  for (int i = 0; i < concurrency; ++i) {
    workers.emplace_back(&Soak::Worker, &soak,
                         absl::GetFlag(FLAGS_seed) * 1000 + i, &stop, &budget,
                         &tally);
  }
  // Sample the server once a second; stop at the duration, when the budget
  // is spent, or when the server dies.
  int64_t last_progress = 0;
  while (true) {
    absl::SleepFor(absl::Seconds(1));
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    if (pid > 0) {
      const ProcessSample sample = SampleProcess(pid);
      if (!sample.alive) {
        server_died = true;
        break;
      }
      peak_rss_kib = std::max(peak_rss_kib, sample.rss_kib);
    }
    const int64_t done = tally.total();
    if (elapsed >= duration_s || done >= max_requests) break;
    if (elapsed - last_progress >= 60) {
      last_progress = static_cast<int64_t>(elapsed);
      std::cerr << absl::StrFormat("gopt-soak: %.0f s, %d requests\n", elapsed,
                                   done);
    }
  }
  stop = true;
  for (std::thread& worker : workers) worker.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const ProcessSample end_sample = SampleProcess(pid);
  if (pid > 0 && !end_sample.alive) server_died = true;
  if (end_sample.alive)
    peak_rss_kib = std::max(peak_rss_kib, end_sample.rss_kib);
  const std::string health_end =
      server_died ? "server exited" : soak.HealthStatus();

  std::ostringstream report;
  const int64_t total = tally.total();
  report << "gopt-soak report\n";
  report << absl::StrFormat(
      "target %s, concurrency %d, %.1f s, %d requests, %.2f requests/s\n",
      target, concurrency, seconds, total, total / std::max(seconds, 1e-9));
  if (pid > 0) {
    report << absl::StrFormat(
        "server pid %d: RSS start %s, end %s, peak sampled %s, VmHWM %s; "
        "open fds start %d, end %d\n",
        pid, Mib(start_sample.rss_kib),
        end_sample.alive ? Mib(end_sample.rss_kib) : "-", Mib(peak_rss_kib),
        end_sample.alive ? Mib(end_sample.hwm_kib) : "-", start_sample.fds,
        end_sample.alive ? end_sample.fds : -1);
  }
  report << "health at start: " << health_start << ", at end: " << health_end
         << "\n";
  const int64_t failures = tally.Report(report);
  const bool serving = health_end == "SERVING";
  report << "verdict: "
         << (serving && failures == 0 && !server_died ? "PASS" : "FAIL")
         << (server_died ? " (server died)" : "")
         << (failures > 0 ? absl::StrCat(" (", failures,
                                         " INTERNAL/UNKNOWN/DATA_LOSS or "
                                         "impossible answers)")
                          : "")
         << "\n";
  std::cout << report.str();
  return serving && failures == 0 && !server_died ? 0 : 1;
}
