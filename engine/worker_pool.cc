#include "engine/worker_pool.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/child_worker.h"
#include "glog/logging.h"
#include "gopt/v1/worker.grpc.pb.h"
#include "graph/native/graph_proto.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/plan_proto.h"
#include "simulator/simulator.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"
#include "worker/worker_proto.h"

namespace gopt::engine {
namespace {

constexpr char kDnsPrefix[] = "dns:///";
// Extra time the gRPC deadline of a remote plan gets over the plan's own
// timeout, so that the worker's DEADLINE_EXCEEDED (with its message)
// arrives before the call's.
constexpr absl::Duration kRemoteDeadlineSlack = absl::Seconds(1);
constexpr absl::Duration kHealthCheckTimeout = absl::Seconds(2);
// How often a remote plan's caller looks at its cancellation flag.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(20);
constexpr int64_t kMaxMessageBytes = int64_t{256} << 20;

class InProcessWorker : public PoolWorker {
 public:
  explicit InProcessWorker(std::shared_ptr<worker::Executor> executor)
      : executor_(std::move(executor)) {}
  const std::string& name() const override { return name_; }
  absl::StatusOr<worker::ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const worker::ExecuteOptions& options, absl::Time /*deadline*/) override {
    return executor_->Execute(graph, plan, options);
  }
  absl::Status CheckHealth(absl::Time /*deadline*/) override {
    return absl::OkStatus();
  }
  absl::StatusOr<simulator::Topology> Devices(
      absl::Time /*deadline*/) override {
    return executor_->HostTopology();
  }

 private:
  const std::string name_ = "in-process";
  const std::shared_ptr<worker::Executor> executor_;
};

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

class RemoteWorker : public PoolWorker {
 public:
  explicit RemoteWorker(std::string address) : name_(std::move(address)) {
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
    arguments.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
    channel_ = grpc::CreateCustomChannel(
        name_, grpc::InsecureChannelCredentials(), arguments);
    worker_rpc_ = gopt::v1::Worker::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }
  const std::string& name() const override { return name_; }

  absl::StatusOr<worker::ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const worker::ExecuteOptions& options, absl::Time deadline) override {
    gopt::v1::ExecuteRequest request;
    *request.mutable_graph() = graph::GraphToProto(graph);
    *request.mutable_plan() = simulator::PlanToProto(plan);
    *request.mutable_options() = worker::ExecuteOptionsToProto(options);
    grpc::ClientContext context;
    // The deadline travels with the call: the worker stops the plan there.
    context.set_deadline(absl::ToChronoTime(deadline + kRemoteDeadlineSlack));
    gopt::v1::ExecuteResponse response;
    absl::Mutex mutex;
    bool done = false;
    grpc::Status status;
    worker_rpc_->async()->Execute(&context, &request, &response,
                                  [&](grpc::Status finished) {
                                    absl::MutexLock lock(&mutex);
                                    status = std::move(finished);
                                    done = true;
                                  });
    // A caller's cancellation cancels the call: the worker sees it
    // (ServerUnaryReactor::OnCancel) and stops the plan at its next node,
    // so it is free for the next plan.
    bool cancel_sent = false;
    while (true) {
      {
        absl::MutexLock lock(&mutex);
        if (mutex.AwaitWithTimeout(absl::Condition(&done), kCancelPoll)) {
          break;
        }
      }
      if (!cancel_sent && options.cancelled != nullptr &&
          options.cancelled->load()) {
        context.TryCancel();
        cancel_sent = true;
      }
    }
    if (!status.ok()) return FromGrpc(status);
    return worker::ExecutionResultFromProto(response);
  }

  absl::Status CheckHealth(absl::Time deadline) override {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status = health_->Check(&context, request, &response);
    if (!status.ok()) return FromGrpc(status);
    if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
      return absl::UnavailableError("health: NOT_SERVING");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<simulator::Topology> Devices(absl::Time deadline) override {
    {
      absl::MutexLock lock(&mutex_);
      if (devices_.has_value()) return *devices_;
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    gopt::v1::DescribeResponse response;
    const grpc::Status status =
        worker_rpc_->Describe(&context, gopt::v1::DescribeRequest(), &response);
    if (!status.ok()) return FromGrpc(status);
    absl::StatusOr<simulator::Topology> topology =
        simulator::TopologyFromProto(response.topology());
    if (!topology.ok()) {
      return absl::InternalError(
          absl::StrCat("its Describe answered a bad topology: ",
                       topology.status().message()));
    }
    absl::MutexLock lock(&mutex_);
    devices_ = *topology;
    return *devices_;
  }

 private:
  const std::string name_;
  absl::Mutex mutex_;
  // The worker's devices, once Describe answered.
  std::optional<simulator::Topology> devices_ ABSL_GUARDED_BY(mutex_);
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<gopt::v1::Worker::Stub> worker_rpc_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

// The metric label of a plan's outcome.
absl::string_view StatusLabel(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return "ok";
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout";
    case absl::StatusCode::kInvalidArgument:
      return "invalid";
    case absl::StatusCode::kCancelled:
      return "cancelled";
    default:
      return "failed";
  }
}

PlanMeasurement ToMeasurement(const worker::ExecutionResult& result,
                              const std::string& worker) {
  PlanMeasurement measurement;
  measurement.measured_step_time_s = result.measured_step_time_s;
  measurement.measured_spread = result.measured_spread;
  measurement.measured_min_step_time_s = result.measured_min_step_time_s;
  measurement.real_op_fraction =
      result.total_nodes > 0 ? static_cast<double>(result.real_op_nodes) /
                                   static_cast<double>(result.total_nodes)
                             : 1.0;
  measurement.real_op_flop_fraction = result.real_op_flop_fraction;
  measurement.runs = result.runs;
  measurement.worker = worker;
  measurement.warnings = result.warnings;
  return measurement;
}

// Whether `line` (leading blanks stripped) is a frame of a C++ backtrace:
// "frame #12: ...".
bool IsFrameLine(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "frame #")) return false;
  return !line.empty() && absl::ascii_isdigit(line[0]);
}

// `line` with each 0x followed by 4 or more hex digits (a code address)
// replaced by "0x?".
std::string WithoutAddresses(absl::string_view line) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == '0' && i + 1 < line.size() &&
        (line[i + 1] == 'x' || line[i + 1] == 'X')) {
      size_t end = i + 2;
      while (end < line.size() && absl::ascii_isxdigit(line[end])) ++end;
      if (end - i - 2 >= 4) {
        out += "0x?";
        i = end;
        continue;
      }
    }
    out += line[i++];
  }
  return out;
}

std::string Gib(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1 << 30));
}

}  // namespace

absl::StatusOr<PlanMemoryEstimate> EstimatePlanMemory(
    const graph::Graph& graph, const simulator::Plan& plan,
    const simulator::Topology& topology) {
  RETURN_IF_ERROR(simulator::ValidatePlan(plan, graph, topology));
  const simulator::RooflineCostModel roofline;
  const simulator::Simulator simulator(graph, topology, roofline);
  simulator::SimulationOptions options;
  options.record_timeline = false;
  ASSIGN_OR_RETURN(const simulator::SimulationResult result,
                   simulator.Simulate(plan, options));
  PlanMemoryEstimate estimate;
  estimate.device_bytes = result.peak_memory_bytes;
  for (size_t d = 0; d < estimate.device_bytes.size(); ++d) {
    if (d < topology.devices.size() &&
        topology.devices[d].kind == simulator::DeviceKind::kCpu) {
      estimate.host_bytes += estimate.device_bytes[d];
    }
  }
  return estimate;
}

absl::Status CheckPlanMemory(const PlanMemoryEstimate& estimate,
                             const simulator::Topology& topology,
                             int64_t worker_memory_bytes) {
  std::vector<std::string> peaks;
  for (size_t d = 0; d < estimate.device_bytes.size(); ++d) {
    if (estimate.device_bytes[d] > 0) {
      peaks.push_back(
          absl::StrCat("device ", d, ": ", Gib(estimate.device_bytes[d])));
    }
  }
  const std::string per_device =
      absl::StrCat("simulated peak per device: ", absl::StrJoin(peaks, ", "));
  if (worker_memory_bytes > 0 && estimate.host_bytes > worker_memory_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("refused before running: it would hold about ",
                     Gib(estimate.host_bytes), " of host memory (", per_device,
                     "), over the ", Gib(worker_memory_bytes),
                     " a measurement may use (--worker_memory_bytes)"));
  }
  for (size_t d = 0;
       d < estimate.device_bytes.size() && d < topology.devices.size(); ++d) {
    const simulator::DeviceProfile& device = topology.devices[d];
    if (device.kind == simulator::DeviceKind::kGpu && device.memory_bytes > 0 &&
        estimate.device_bytes[d] > device.memory_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("refused before running: it would hold about ",
                       Gib(estimate.device_bytes[d]), " on GPU device ", d,
                       " (", device.name, "), over its ",
                       Gib(device.memory_bytes), " (", per_device, ")"));
    }
  }
  return absl::OkStatus();
}

std::string WithoutBacktrace(absl::string_view text) {
  std::vector<std::string> kept;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(stripped, "Exception raised from") ||
        IsFrameLine(stripped)) {
      break;
    }
    kept.push_back(WithoutAddresses(line));
  }
  return std::string(
      absl::StripTrailingAsciiWhitespace(absl::StrJoin(kept, "\n")));
}

std::unique_ptr<PoolWorker> MakeInProcessWorker(
    std::shared_ptr<worker::Executor> executor) {
  return std::make_unique<InProcessWorker>(std::move(executor));
}

std::unique_ptr<PoolWorker> MakeRemoteWorker(const std::string& address) {
  return std::make_unique<RemoteWorker>(address);
}

absl::StatusOr<std::vector<std::string>> ResolveWorkerAddresses(
    const std::string& name) {
  const size_t colon = name.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(name.substr(colon + 1), &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker name '", name, "': expected NAME:PORT (e.g. ",
                     "gopt-worker.gopt.svc.cluster.local:50052)"));
  }
  const std::string host = name.substr(0, colon);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), nullptr, &hints, &found);
      error != 0) {
    return absl::NotFoundError(absl::StrCat(
        "worker name '", host, "' does not resolve: ", gai_strerror(error)));
  }
  std::set<std::string> addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof(text), nullptr, 0,
                    NI_NUMERICHOST) != 0) {
      continue;
    }
    addresses.insert(a->ai_family == AF_INET6
                         ? absl::StrCat("[", text, "]:", port)
                         : absl::StrCat(text, ":", port));
  }
  freeaddrinfo(found);
  if (addresses.empty()) {
    return absl::NotFoundError(
        absl::StrCat("worker name '", host, "' resolves to no address"));
  }
  return std::vector<std::string>(addresses.begin(), addresses.end());
}

absl::StatusOr<std::unique_ptr<WorkerPool>> WorkerPool::FromSpec(
    const std::string& spec, const worker::ExecutorOptions& executor_options,
    const WorkerPoolOptions& options) {
  std::vector<std::unique_ptr<PoolWorker>> workers;
  std::vector<std::string> dns_names;
  if (spec.empty() || spec == "local") {
    ChildWorkerOptions child;
    child.binary = options.worker_binary;
    child.executor = executor_options;
    if (options.worker_memory_bytes > 0) {
      child.data_limit_bytes = options.worker_memory_bytes + kChildRuntimeBytes;
    }
    absl::StatusOr<std::unique_ptr<ChildWorker>> worker =
        ChildWorker::Start(child);
    if (!worker.ok()) return worker.status();
    workers.push_back(*std::move(worker));
    return std::make_unique<WorkerPool>(std::move(workers), options);
  }
  if (spec == "in-process") {
    absl::StatusOr<std::unique_ptr<worker::Executor>> executor =
        worker::Executor::Create(executor_options);
    if (!executor.ok()) return executor.status();
    workers.push_back(MakeInProcessWorker(std::move(*executor)));
    return std::make_unique<WorkerPool>(std::move(workers), options);
  }
  for (absl::string_view entry :
       absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    if (absl::ConsumePrefix(&entry, kDnsPrefix)) {
      // Validated now; resolved by the pool (now and at each health check).
      absl::StatusOr<std::vector<std::string>> resolved =
          ResolveWorkerAddresses(std::string(entry));
      if (absl::IsInvalidArgument(resolved.status())) return resolved.status();
      dns_names.emplace_back(entry);
      continue;
    }
    const size_t colon = entry.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(entry.substr(colon + 1), &port) || port <= 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--workers: '", entry,
          "' is not HOST:PORT, dns:///NAME:PORT, 'local' or ", "'in-process'"));
    }
    workers.push_back(MakeRemoteWorker(std::string(entry)));
  }
  if (workers.empty() && dns_names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers: no worker in '", spec, "'"));
  }
  return std::make_unique<WorkerPool>(std::move(workers), options,
                                      std::move(dns_names));
}

WorkerPool::WorkerPool(std::vector<std::unique_ptr<PoolWorker>> workers,
                       const WorkerPoolOptions& options,
                       std::vector<std::string> dns_names)
    : options_(options), dns_names_(std::move(dns_names)) {
  {
    absl::MutexLock lock(&mutex_);
    for (std::unique_ptr<PoolWorker>& worker : workers) {
      Entry entry;
      entry.state.name = worker->name();
      entry.worker = std::move(worker);
      entries_.push_back(std::move(entry));
    }
  }
  AddResolvedWorkers();
  if (options_.health_check_interval_seconds > 0) {
    health_thread_ = std::thread([this] { HealthLoop(); });
  }
}

WorkerPool::~WorkerPool() {
  stop_.Notify();
  if (health_thread_.joinable()) health_thread_.join();
}

void WorkerPool::AddResolvedWorkers() {
  for (const std::string& name : dns_names_) {
    absl::StatusOr<std::vector<std::string>> addresses =
        ResolveWorkerAddresses(name);
    if (!addresses.ok()) {
      LOG(WARNING) << "worker pool: " << addresses.status().message();
      continue;
    }
    absl::MutexLock lock(&mutex_);
    for (const std::string& address : *addresses) {
      const bool known =
          std::any_of(entries_.begin(), entries_.end(),
                      [&](const Entry& e) { return e.state.name == address; });
      if (known) continue;
      LOG(INFO) << "worker pool: " << name << " -> new worker " << address;
      Entry entry;
      entry.worker = MakeRemoteWorker(address);
      entry.state.name = address;
      entries_.push_back(std::move(entry));
    }
  }
}

void WorkerPool::HealthLoop() {
  while (!stop_.WaitForNotificationWithTimeout(
      absl::Seconds(options_.health_check_interval_seconds))) {
    CheckHealthNow();
  }
}

void WorkerPool::CheckHealthNow() {
  AddResolvedWorkers();
  std::vector<std::shared_ptr<PoolWorker>> workers;
  {
    absl::MutexLock lock(&mutex_);
    for (const Entry& entry : entries_) workers.push_back(entry.worker);
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    const absl::Status health =
        workers[i]->CheckHealth(absl::Now() + kHealthCheckTimeout);
    absl::MutexLock lock(&mutex_);
    PoolWorkerState& state = entries_[i].state;
    if (state.healthy != health.ok()) {
      LOG(WARNING) << "worker pool: worker " << state.name << " is "
                   << (health.ok()
                           ? "healthy again"
                           : absl::StrCat("unhealthy: ", health.message()));
    }
    state.healthy = health.ok();
    if (!health.ok()) state.last_error = std::string(health.message());
  }
}

std::vector<PoolWorkerState> WorkerPool::Workers() const {
  absl::MutexLock lock(&mutex_);
  std::vector<PoolWorkerState> states;
  const absl::Time now = absl::Now();
  for (const Entry& entry : entries_) {
    states.push_back(entry.state);
    states.back().taken_out = now < entry.out_until;
  }
  return states;
}

bool WorkerPool::Eligible(const Entry& entry, absl::Time now) const {
  return entry.state.healthy && now >= entry.out_until;
}

std::string WorkerPool::WhyNoWorker(int exclude) const {
  if (entries_.empty()) {
    return absl::StrCat("the worker pool has no worker (",
                        absl::StrJoin(dns_names_, ", "),
                        " resolved to no address)");
  }
  std::vector<std::string> reasons;
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (static_cast<int>(i) == exclude) {
      reasons.push_back(absl::StrCat(entry.state.name, ": already failed it"));
    } else if (!entry.state.healthy) {
      reasons.push_back(absl::StrCat(entry.state.name, ": unhealthy (",
                                     entry.state.last_error, ")"));
    } else if (now < entry.out_until) {
      reasons.push_back(absl::StrCat(entry.state.name,
                                     ": taken out after repeated failures (",
                                     entry.state.last_error, ")"));
    }
  }
  return absl::StrCat("no worker can run the plan: ",
                      absl::StrJoin(reasons, "; "));
}

absl::StatusOr<int> WorkerPool::Acquire(int exclude, absl::Time deadline,
                                        const std::atomic<bool>* cancelled) {
  absl::MutexLock lock(&mutex_);
  bool waiting = false;
  auto stop_waiting = [&] {
    if (!waiting) return;
    --waiting_;
    if (options_.on_queue_depth) options_.on_queue_depth(waiting_);
  };
  while (true) {
    const absl::Time now = absl::Now();
    int candidates = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (static_cast<int>(i) == exclude || !Eligible(entries_[i], now)) {
        continue;
      }
      ++candidates;
      if (!entries_[i].busy) {
        entries_[i].busy = true;
        stop_waiting();
        return static_cast<int>(i);
      }
    }
    if (candidates == 0) {
      stop_waiting();
      return absl::UnavailableError(WhyNoWorker(exclude));
    }
    if (cancelled != nullptr && cancelled->load()) {
      stop_waiting();
      return absl::CancelledError("cancelled while waiting for a worker");
    }
    if (now >= deadline) {
      stop_waiting();
      return absl::DeadlineExceededError(
          "the deadline passed while every worker was busy");
    }
    if (!waiting) {
      if (waiting_ >= options_.queue_length) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the worker pool's queue is full (", waiting_,
                         " plans wait for a worker; --worker_queue_length)"));
      }
      waiting = true;
      ++waiting_;
      if (options_.on_queue_depth) options_.on_queue_depth(waiting_);
    }
    // Wakes on a release, else every 50 ms to look at `cancelled`.
    const uint64_t releases = releases_;
    const auto released = [this, releases]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                              mutex_) { return releases_ != releases; };
    mutex_.AwaitWithDeadline(absl::Condition(&released),
                             std::min(deadline, now + absl::Milliseconds(50)));
  }
}

void WorkerPool::Release(int index, const absl::Status& status) {
  absl::MutexLock lock(&mutex_);
  Entry& entry = entries_[index];
  entry.busy = false;
  ++releases_;
  // Only the worker's own failures count against it: a bad plan, a plan
  // over its timeout or over the memory it may use, and a cancelled
  // request do not.
  if (status.ok() || absl::IsInvalidArgument(status) ||
      absl::IsDeadlineExceeded(status) || absl::IsResourceExhausted(status)) {
    entry.state.consecutive_failures = 0;
    return;
  }
  entry.state.last_error = std::string(status.message());
  if (++entry.state.consecutive_failures >= options_.failures_to_eject) {
    entry.out_until = absl::Now() + absl::Seconds(options_.eject_seconds);
    entry.state.consecutive_failures = 0;
    LOG(WARNING) << "worker pool: worker " << entry.state.name
                 << " taken out for " << options_.eject_seconds << " s after "
                 << options_.failures_to_eject
                 << " failures in a row; last: " << status.message();
  }
}

absl::Status WorkerPool::Admit(PoolWorker& worker, const graph::Graph& graph,
                               const simulator::Plan& plan, absl::Time deadline,
                               MemoryBudget::Reservation* charge) {
  if (options_.worker_memory_bytes <= 0 && options_.memory_budget == nullptr) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const simulator::Topology devices, worker.Devices(deadline));
  ASSIGN_OR_RETURN(const PlanMemoryEstimate estimate,
                   EstimatePlanMemory(graph, plan, devices));
  RETURN_IF_ERROR(
      CheckPlanMemory(estimate, devices, options_.worker_memory_bytes));
  if (options_.memory_budget != nullptr) {
    absl::StatusOr<MemoryBudget::Reservation> reserved =
        options_.memory_budget->Reserve(
            estimate.host_bytes,
            absl::StrCat("measuring a plan of graph '", graph.name(),
                         "' on worker ", worker.name()));
    if (!reserved.ok()) return reserved.status();
    *charge = *std::move(reserved);
  }
  return absl::OkStatus();
}

absl::StatusOr<PlanMeasurement> WorkerPool::Measure(
    const graph::Graph& graph, const simulator::Plan& plan, absl::Time deadline,
    const std::atomic<bool>* cancelled) {
  std::vector<std::string> failures;
  int failed_worker = -1;
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<int> index = Acquire(failed_worker, deadline, cancelled);
    if (!index.ok()) {
      if (failures.empty()) return index.status();
      return absl::UnavailableError(
          absl::StrCat(absl::StrJoin(failures, "; "),
                       "; no retry: ", index.status().message()));
    }
    std::shared_ptr<PoolWorker> worker;
    {
      absl::MutexLock lock(&mutex_);
      worker = entries_[*index].worker;
    }
    // A restarting local child is waited for with the request's deadline;
    // the plan's timeout starts once a worker can run it.
    absl::Status status = worker->WaitReady(deadline);
    const absl::Time start = absl::Now();
    const absl::Time plan_deadline = std::min(
        deadline, start + absl::Seconds(options_.plan_timeout_seconds));
    // Refused plans never reach the worker; the charge is held until the
    // plan is done.
    MemoryBudget::Reservation charge;
    if (status.ok()) {
      status = Admit(*worker, graph, plan, plan_deadline, &charge);
    }
    const bool admitted = status.ok();
    absl::StatusOr<worker::ExecutionResult> result;
    if (admitted) {
      worker::ExecuteOptions execute = options_.execute;
      execute.timeout_seconds =
          std::max(0.001, absl::ToDoubleSeconds(plan_deadline - start));
      execute.cancelled = cancelled;
      result = worker->Execute(graph, plan, execute, plan_deadline);
      status = result.status();
    }
    charge = MemoryBudget::Reservation();
    status = absl::Status(status.code(), WithoutBacktrace(status.message()));
    const bool caller_cancelled = cancelled != nullptr && cancelled->load();
    if (caller_cancelled && !status.ok()) {
      status = absl::CancelledError("the request was cancelled");
    }
    Release(*index, status);
    const bool refused = !admitted && absl::IsResourceExhausted(status);
    if (options_.on_execution) {
      options_.on_execution(
          refused ? "refused" : StatusLabel(status),
          refused ? 0 : absl::ToDoubleSeconds(absl::Now() - start));
    }
    if (status.ok()) {
      PlanMeasurement measurement = ToMeasurement(*result, worker->name());
      for (std::string& warning : measurement.warnings) {
        warning = WithoutBacktrace(warning);
      }
      return measurement;
    }
    if (absl::IsInvalidArgument(status) || absl::IsResourceExhausted(status) ||
        (absl::IsCancelled(status) && caller_cancelled)) {
      return status;
    }
    if (absl::IsDeadlineExceeded(status)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the plan ran over its timeout (",
          absl::ToDoubleSeconds(plan_deadline - start), " s) on worker ",
          worker->name(), ": ", status.message()));
    }
    failures.push_back(
        absl::StrCat("worker ", worker->name(), " failed: ", status.message()));
    failed_worker = *index;
  }
  return absl::UnavailableError(absl::StrJoin(failures, "; retried: "));
}

}  // namespace gopt::engine
