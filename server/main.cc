// gopt-server: the GraphOptimizer gRPC service. Flags (each also settable
// by an environment variable GOPT_<FLAG NAME IN CAPITALS>, e.g.
// GOPT_LISTEN=0.0.0.0:50051; a command-line flag wins) are read here once
// and turned into options.
//
// Lifecycle: listen (health NOT_SERVING) -> load policies -> SERVING ->
// SIGTERM/SIGINT -> NOT_SERVING, keep serving for --drain_seconds -> refuse
// new calls, let calls in flight finish for --shutdown_timeout_seconds,
// cancel the rest -> exit 0.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/builtin_policies.h"
#include "engine/engine.h"
#include "engine/plan_refiner.h"
#include "engine/plan_store.h"
#include "engine/policy_registry.h"
#include "engine/worker_pool.h"
#include "glog/logging.h"
#include "server/container_limits.h"
#include "server/metrics.h"
#include "server/server.h"
#include "simulator/topology_proto.h"
#include "util/malloc_tuning.h"
#include "util/service_main.h"
#include "worker/executor.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "gRPC address host:port (port 0 = any free port)");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics address host:port; empty = no metrics port");
ABSL_FLAG(std::string, policy_dir, GOPT_DEFAULT_POLICY_DIR,
          "directory of policies: each sub-directory with a card.json");
ABSL_FLAG(int64_t, max_graph_nodes, 1'000'000,
          "larger graphs are refused (RESOURCE_EXHAUSTED)");
ABSL_FLAG(int64_t, max_message_bytes, 32 << 20,
          "larger request messages are refused (RESOURCE_EXHAUSTED)");
ABSL_FLAG(int64_t, grpc_memory_bytes, 0,
          "memory gRPC's transport may buffer for all connections together; "
          "a message that needs more has its stream reset "
          "(RESOURCE_EXHAUSTED). 0 = 2 x --max_message_bytes + 24 MiB");
ABSL_FLAG(bool, accept_compressed_requests, false,
          "accept gzip/deflate-compressed requests (gRPC decompresses them "
          "in full before the size limit applies: enable only for trusted "
          "clients)");
ABSL_FLAG(int32_t, threads, 0,
          "threads running requests; 0 = one per CPU the container may "
          "use (affinity mask and cgroup CPU quota)");
ABSL_FLAG(int32_t, queue_length, 64,
          "requests admitted while every thread is busy; more are refused "
          "(RESOURCE_EXHAUSTED)");
ABSL_FLAG(double, drain_seconds, 5,
          "after SIGTERM: seconds health reports NOT_SERVING while requests "
          "are still served");
ABSL_FLAG(double, shutdown_timeout_seconds, 10,
          "after the drain: seconds calls in flight may take to finish "
          "before they are cancelled");
ABSL_FLAG(double, keepalive_time_seconds, 60,
          "HTTP/2 keepalive ping interval on idle connections");
ABSL_FLAG(double, keepalive_timeout_seconds, 20,
          "drop a connection whose keepalive ping is not acked in time");
ABSL_FLAG(double, keepalive_min_ping_interval_seconds, 10,
          "refuse client pings more frequent than this");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate; enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA for client certificates; enables mTLS");
ABSL_FLAG(std::string, health_listen, "",
          "host:port of a plaintext port serving only grpc.health.v1 (for "
          "probes when --tls_cert is set); empty = none");
ABSL_FLAG(bool, reflection, false,
          "serve gRPC server reflection (for grpcurl without .proto files)");
ABSL_FLAG(int64_t, memory_budget_bytes, 0,
          "memory the requests in flight may hold together, by estimate; a "
          "request that does not fit is refused (RESOURCE_EXHAUSTED); 0 = "
          "75% of the container's memory limit (cgroup), else of the "
          "machine's memory");
ABSL_FLAG(double, default_deadline_seconds, 600,
          "deadline of requests whose client sets none");
ABSL_FLAG(int32_t, max_fine_tune_steps, 10'000,
          "largest budget.fine_tune_steps accepted (INVALID_ARGUMENT above)");
ABSL_FLAG(int32_t, default_fine_tune_steps, 50,
          "fine-tuning steps of a FINE_TUNE request that sets neither "
          "budget.fine_tune_steps nor budget.seconds");
ABSL_FLAG(double, default_fine_tune_seconds, 60,
          "seconds of fine-tuning for a FINE_TUNE request that sets neither "
          "budget.fine_tune_steps nor budget.seconds");
ABSL_FLAG(int32_t, max_baseline_methods, 256,
          "most distinct options.baseline_methods accepted");
ABSL_FLAG(int64_t, max_trace_bytes, 32 << 20,
          "largest Chrome trace Evaluate sends (RESOURCE_EXHAUSTED above)");
ABSL_FLAG(std::string, workers, "local",
          "where Optimize verify=K and Evaluate measure run plans: 'local' "
          "= a gopt-worker child process of this server (restarted when a "
          "plan kills it); 'in-process' = CPU executors in this process (no "
          "isolation); HOST:PORT,... of gopt-workers; "
          "dns:///NAME:PORT = every address NAME resolves to (a Kubernetes "
          "headless service); 'none' = no measuring (simulated numbers and "
          "a warning)");
ABSL_FLAG(int32_t, worker_queue_length, 16,
          "plans that may wait for a free worker; more are refused "
          "(RESOURCE_EXHAUSTED, the request answers with simulated numbers)");
ABSL_FLAG(double, worker_plan_timeout_seconds, 120,
          "most seconds one plan may run on one worker");
ABSL_FLAG(int32_t, worker_failures_to_eject, 3,
          "a worker failing this many plans in a row is taken out for "
          "--worker_eject_seconds");
ABSL_FLAG(double, worker_eject_seconds, 30,
          "how long a failing worker stays out of the pool");
ABSL_FLAG(double, worker_health_interval_seconds, 5,
          "seconds between grpc.health.v1 checks of remote workers (and "
          "re-resolutions of dns:/// names)");
ABSL_FLAG(int64_t, worker_memory_bytes, 0,
          "host memory one measured plan may use by the simulator's peak; "
          "plans over it are refused before running (simulated numbers and "
          "a warning); charged to the memory budget while a plan runs; also "
          "the local gopt-worker's RLIMIT_DATA (+2 GiB for its runtime). "
          "0 = a quarter of the memory budget");
ABSL_FLAG(std::string, worker_binary, "",
          "gopt-worker binary of --workers=local; empty = the gopt-worker "
          "beside this gopt-server");
ABSL_FLAG(std::string, state_dir, "",
          "directory of the server's persistent state; the default plan "
          "store is STATE_DIR/plans.sqlite. Empty: no state (and no plan "
          "store unless --plan_store names one)");
ABSL_FLAG(std::string, plan_store, "",
          "the plan store: a SQLite file path, redis://HOST:PORT[/DB] for a "
          "store shared by replicas, or none. Empty: STATE_DIR/plans.sqlite "
          "when --state_dir is set (docs/plan-store.md)");
ABSL_FLAG(int64_t, plan_store_max_bytes, int64_t{256} << 20,
          "size cap of a SQLite plan store's values; least recently used "
          "entries are evicted past it");
ABSL_FLAG(bool, refine_idle, false,
          "in idle time, continue the plan search on the most asked-for "
          "plan store entries and write back better plans (yields to "
          "requests; needs a plan store)");
ABSL_FLAG(double, refine_cpu_share, 0.25,
          "with --refine_idle: the share of one CPU the refinement takes "
          "over time, in (0, 1]");
ABSL_FLAG(int32_t, plan_store_kept_answers, 64,
          "answers from the plan store kept in memory, so that an identical "
          "request skips the import; 0 = import every request");
ABSL_FLAG(std::string, topology, "",
          "a topology JSON file (e.g. from gopt calibrate [--learn]) served "
          "with its learned runtime model: requests name it in "
          "topology.preset by this path or its name, and requests that set "
          "no topology get it; empty: built-in presets and inline "
          "topologies only");
ABSL_FLAG(int64_t, plan_store_kept_bytes, gopt::engine::kDefaultKeptAnswerBytes,
          "bytes of memory those kept answers may take (their request "
          "graphs and responses); least recently used dropped past it");

namespace {

constexpr int kExitUsage = 64;

// The plan store the flags name; null for none. A malformed spec is
// InvalidArgument (a usage error); a store that cannot be opened is logged
// and the server runs without one (a store never fails a request).
absl::StatusOr<std::shared_ptr<gopt::engine::PlanStore>>
OpenPlanStoreFromFlags() {
  std::string spec = absl::GetFlag(FLAGS_plan_store);
  if (spec == "none") return nullptr;
  if (spec.empty()) {
    if (absl::GetFlag(FLAGS_state_dir).empty()) return nullptr;
    spec = absl::StrCat(absl::GetFlag(FLAGS_state_dir), "/plans.sqlite");
  }
  gopt::engine::PlanStoreOptions options;
  options.max_bytes = absl::GetFlag(FLAGS_plan_store_max_bytes);
  absl::StatusOr<std::unique_ptr<gopt::engine::PlanStore>> store =
      gopt::engine::OpenPlanStore(spec, options);
  if (absl::IsInvalidArgument(store.status())) return store.status();
  if (!store.ok()) {
    LOG(WARNING) << "--plan_store: " << store.status().message()
                 << "; running without a plan store";
    return nullptr;
  }
  LOG(INFO) << "plan store: " << (*store)->Describe();
  return std::shared_ptr<gopt::engine::PlanStore>(*std::move(store));
}

// The plan store's background work while the server runs: its size gauges
// (every 30 s) and, with --refine_idle, the idle refinement of its entries.
// Stops both when destroyed.
class PlanStoreBackground {
 public:
  // Nothing runs without a store. InvalidArgument for a bad
  // --refine_cpu_share.
  static absl::StatusOr<std::unique_ptr<PlanStoreBackground>> Start(
      std::shared_ptr<gopt::engine::PlanStore> store,
      std::shared_ptr<const gopt::engine::Engine> engine,
      gopt::server::Metrics* metrics) {
    const double share = absl::GetFlag(FLAGS_refine_cpu_share);
    if (!(share > 0 && share <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--refine_cpu_share must be in (0, 1], got ", share));
    }
    auto background = std::make_unique<PlanStoreBackground>();
    if (store == nullptr) {
      if (absl::GetFlag(FLAGS_refine_idle)) {
        LOG(WARNING) << "--refine_idle: no plan store (--plan_store or "
                        "--state_dir); not refining";
      }
      return background;
    }
    background->gauges_ =
        std::thread([store, metrics, stop = &background->stop_] {
          do {
            absl::StatusOr<gopt::engine::PlanStoreStats> stats = store->Stats();
            if (stats.ok())
              metrics->SetPlanStoreSize(stats->entries, stats->bytes);
          } while (!stop->WaitForNotificationWithTimeout(absl::Seconds(30)));
        });
    if (!absl::GetFlag(FLAGS_refine_idle)) return background;
    gopt::engine::PlanRefinerOptions refine;
    refine.cpu_share = share;
    background->refiner_ = std::make_unique<gopt::engine::PlanRefiner>(
        store.get(),
        [engine, metrics](const gopt::v1::OptimizeRequest& request,
                          absl::Time deadline,
                          const std::atomic<bool>* cancelled) {
          gopt::engine::RequestContext context;
          context.deadline = deadline;
          context.cancelled = cancelled;
          absl::StatusOr<gopt::v1::OptimizeResponse> response =
              engine->Optimize(request, context);
          if (response.ok() && response->stored()) {
            metrics->AddPlanStoreImprovement();
          }
          return response;
        },
        [metrics] { return metrics->InflightRequests() > 0; }, refine);
    background->refiner_->Start();
    LOG(INFO) << "refining plan store entries in idle time (" << share
              << " of a CPU)";
    return background;
  }

  ~PlanStoreBackground() {
    if (refiner_ != nullptr) refiner_->Stop();
    stop_.Notify();
    if (gauges_.joinable()) gauges_.join();
  }

 private:
  absl::Notification stop_;
  std::thread gauges_;
  std::unique_ptr<gopt::engine::PlanRefiner> refiner_;
};

// The flags of this binary, in the order the effective config is logged.
constexpr const char* kFlagNames[] = {
    "listen",
    "metrics_listen",
    "policy_dir",
    "max_graph_nodes",
    "max_message_bytes",
    "grpc_memory_bytes",
    "accept_compressed_requests",
    "threads",
    "queue_length",
    "drain_seconds",
    "shutdown_timeout_seconds",
    "keepalive_time_seconds",
    "keepalive_timeout_seconds",
    "keepalive_min_ping_interval_seconds",
    "tls_cert",
    "tls_key",
    "tls_client_ca",
    "health_listen",
    "reflection",
    "memory_budget_bytes",
    "default_deadline_seconds",
    "max_fine_tune_steps",
    "default_fine_tune_steps",
    "default_fine_tune_seconds",
    "max_baseline_methods",
    "max_trace_bytes",
    "workers",
    "worker_queue_length",
    "worker_plan_timeout_seconds",
    "worker_failures_to_eject",
    "worker_eject_seconds",
    "worker_health_interval_seconds",
    "worker_memory_bytes",
    "worker_binary",
    "state_dir",
    "plan_store",
    "plan_store_max_bytes",
    "plan_store_kept_answers",
    "plan_store_kept_bytes",
    "refine_idle",
    "refine_cpu_share",
    "topology",
};

// GOPT_<NAME> environment variables set the flags before the command line
// is parsed, so a command-line flag overrides its variable.
bool ApplyEnvironment() {
  for (const char* name : kFlagNames) {
    std::string variable = absl::StrCat("GOPT_", name);
    std::transform(variable.begin(), variable.end(), variable.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string error;
    if (flag == nullptr || !flag->ParseFrom(value, &error)) {
      std::cerr << "gopt-server: " << variable << "=" << value << ": " << error
                << "\n";
      return false;
    }
  }
  return true;
}

absl::Duration Seconds(double seconds) {
  return absl::Seconds(std::max(seconds, 0.0));
}

// 75% of the memory this process may use: the container's limit when
// there is one, else the machine's memory. The rest is for the policies,
// gRPC buffers and what the estimates miss.
int64_t DefaultMemoryBudgetBytes(const gopt::server::ContainerLimits& limits) {
  const int64_t machine = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                          static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
  return limits.memory_limit_bytes.value_or(machine) / 4 * 3;
}

// The worker pool of --workers; null for 'none'. Its executions and queue
// depth go to `metrics`; its measurements are charged to `memory_budget`
// (may be null).
absl::StatusOr<std::shared_ptr<gopt::engine::PlanMeasurer>> MakeWorkerPool(
    gopt::server::Metrics* metrics, gopt::engine::MemoryBudget* memory_budget) {
  const std::string spec = absl::GetFlag(FLAGS_workers);
  if (spec == "none") return nullptr;
  gopt::engine::WorkerPoolOptions options;
  options.queue_length = absl::GetFlag(FLAGS_worker_queue_length);
  options.plan_timeout_seconds =
      absl::GetFlag(FLAGS_worker_plan_timeout_seconds);
  options.failures_to_eject = absl::GetFlag(FLAGS_worker_failures_to_eject);
  options.eject_seconds = absl::GetFlag(FLAGS_worker_eject_seconds);
  options.health_check_interval_seconds =
      absl::GetFlag(FLAGS_worker_health_interval_seconds);
  options.memory_budget = memory_budget;
  options.worker_memory_bytes =
      absl::GetFlag(FLAGS_worker_memory_bytes) > 0
          ? absl::GetFlag(FLAGS_worker_memory_bytes)
          : (memory_budget != nullptr ? memory_budget->budget_bytes() / 4 : 0);
  LOG(INFO) << "a measured plan may use " << (options.worker_memory_bytes >> 20)
            << " MiB of host memory (--worker_memory_bytes)";
  options.worker_binary = absl::GetFlag(FLAGS_worker_binary);
  options.on_execution = [metrics](absl::string_view status, double seconds) {
    metrics->RecordWorkerExecution(status);
    metrics->RecordWorkerExecutionSeconds(seconds);
  };
  options.on_queue_depth = [metrics](int64_t waiting) {
    metrics->SetWorkerQueueDepth(waiting);
  };
  absl::StatusOr<std::unique_ptr<gopt::engine::WorkerPool>> pool =
      gopt::engine::WorkerPool::FromSpec(spec, gopt::worker::ExecutorOptions(),
                                         options);
  if (!pool.ok()) return pool.status();
  return std::shared_ptr<gopt::engine::PlanMeasurer>(std::move(*pool));
}

// gopt-server's ServerOptions from its flags and the container's limits
// (threads and the memory budget default to what the container allows).
gopt::server::ServerOptions ServerOptionsFromFlags() {
  gopt::server::ServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.grpc_memory_bytes = absl::GetFlag(FLAGS_grpc_memory_bytes);
  options.accept_compressed_requests =
      absl::GetFlag(FLAGS_accept_compressed_requests);
  // hardware_concurrency() ignores a container's cpuset and CPU quota.
  const gopt::server::ContainerLimits limits =
      gopt::server::ReadContainerLimits();
  LOG(INFO) << "container limits: " << limits.cpus << " CPUs, memory "
            << (limits.memory_limit_bytes
                    ? absl::StrCat(*limits.memory_limit_bytes, " bytes")
                    : std::string("unlimited"));
  options.threads = absl::GetFlag(FLAGS_threads) > 0
                        ? absl::GetFlag(FLAGS_threads)
                        : limits.cpus;
  LOG(INFO) << "worker threads: " << options.threads;
  options.queue_length = absl::GetFlag(FLAGS_queue_length);
  options.keepalive_time = Seconds(absl::GetFlag(FLAGS_keepalive_time_seconds));
  options.keepalive_timeout =
      Seconds(absl::GetFlag(FLAGS_keepalive_timeout_seconds));
  options.min_client_ping_interval =
      Seconds(absl::GetFlag(FLAGS_keepalive_min_ping_interval_seconds));
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.health_listen_address = absl::GetFlag(FLAGS_health_listen);
  options.reflection = absl::GetFlag(FLAGS_reflection);
  options.default_deadline =
      Seconds(absl::GetFlag(FLAGS_default_deadline_seconds));
  options.memory_budget_bytes = absl::GetFlag(FLAGS_memory_budget_bytes) > 0
                                    ? absl::GetFlag(FLAGS_memory_budget_bytes)
                                    : DefaultMemoryBudgetBytes(limits);
  LOG(INFO) << "memory budget for requests: "
            << options.memory_budget_bytes / (1 << 20) << " MiB";
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // Signals are taken synchronously by signals.Wait() below; blocked before
  // any thread starts so that every thread inherits the mask.
  const gopt::util::TerminationSignals signals;
  gopt::util::SetServiceUsage(
      "the gopt.v1.GraphOptimizer gRPC service.\n"
      "usage: gopt-server [--listen=HOST:PORT] [--policy_dir=DIR] ...\n"
      "Every flag can also be set by GOPT_<FLAG> (e.g. GOPT_LISTEN).",
      "server/main.cc");
  if (!ApplyEnvironment()) return kExitUsage;
  if (!gopt::util::ParseServiceCommandLine(argc, argv, "gopt-server")) {
    return kExitUsage;
  }
  if (absl::GetFlag(FLAGS_default_fine_tune_steps) < 1 ||
      !(absl::GetFlag(FLAGS_default_fine_tune_seconds) > 0)) {
    std::cerr << "gopt-server: --default_fine_tune_steps must be >= 1 and "
                 "--default_fine_tune_seconds > 0\n";
    return kExitUsage;
  }
  // Fine-tuning runs the GO network in a loop; without this its large
  // temporaries are mapped and faulted in afresh on every pass (a PPO step
  // on an 85k-node graph takes 3x as long).
  gopt::KeepFreedMemory();

  LOG(INFO) << "gopt-server " << GOPT_VERSION << " (" << GOPT_GIT_REVISION
            << ") starting with:";
  for (const char* name : kFlagNames) {
    LOG(INFO) << "  --" << name << "="
              << absl::FindCommandLineFlag(name)->CurrentValue();
  }

  const gopt::server::ServerOptions options = ServerOptionsFromFlags();

  gopt::server::Metrics metrics(GOPT_VERSION, GOPT_GIT_REVISION);
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty()) {
    if (absl::Status status = metrics.StartExposer(metrics_listen);
        !status.ok()) {
      LOG(ERROR) << status.message();
      return 1;
    }
    LOG(INFO) << "metrics on port " << metrics.exposer_port() << " (/metrics)";
  }
  absl::StatusOr<std::unique_ptr<gopt::server::OptimizerServer>> server =
      gopt::server::OptimizerServer::Start(options, &metrics);
  if (!server.ok()) {
    LOG(ERROR) << server.status().message();
    return 1;
  }
  LOG(INFO) << "listening on port " << (*server)->port()
            << (options.tls.cert_file.empty()        ? " (plaintext)"
                : options.tls.client_ca_file.empty() ? " (TLS)"
                                                     : " (mTLS)")
            << "; health NOT_SERVING while policies load";

  const std::string policy_dir = absl::GetFlag(FLAGS_policy_dir);
  absl::StatusOr<std::shared_ptr<const gopt::engine::PolicyRegistry>> policies =
      gopt::engine::LoadBuiltinPolicies(policy_dir);
  if (!policies.ok()) {
    LOG(ERROR) << "cannot load policies: " << policies.status().message();
    (*server)->Shutdown(absl::Now());
    return 1;
  }
  for (const gopt::policy::Policy* policy : (*policies)->policies()) {
    LOG(INFO) << "policy " << policy->info().name << "@"
              << policy->info().version << " (" << policy->info().kind << ", "
              << gopt::engine::TaskSetName(policy->info().tasks) << ") from "
              << policy->info().directory;
  }
  if ((*policies)->policies().empty()) {
    LOG(WARNING) << "no policy in " << policy_dir
                 << ": Optimize answers with the best baseline plan";
  }
  gopt::engine::EngineOptions engine_options;
  engine_options.max_graph_nodes = absl::GetFlag(FLAGS_max_graph_nodes);
  engine_options.max_fine_tune_steps = absl::GetFlag(FLAGS_max_fine_tune_steps);
  engine_options.default_fine_tune_steps =
      absl::GetFlag(FLAGS_default_fine_tune_steps);
  engine_options.default_fine_tune_seconds =
      absl::GetFlag(FLAGS_default_fine_tune_seconds);
  engine_options.max_baseline_methods =
      absl::GetFlag(FLAGS_max_baseline_methods);
  engine_options.max_trace_bytes = absl::GetFlag(FLAGS_max_trace_bytes);
  engine_options.max_response_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  absl::StatusOr<std::shared_ptr<gopt::engine::PlanMeasurer>> pool =
      MakeWorkerPool(&metrics, (*server)->memory_budget());
  if (!pool.ok()) {
    LOG(ERROR) << "--workers: " << pool.status().message();
    (*server)->Shutdown(absl::Now());
    return kExitUsage;
  }
  engine_options.measurer = *std::move(pool);
  LOG(INFO) << "worker pool: " << absl::GetFlag(FLAGS_workers);
  absl::StatusOr<std::shared_ptr<gopt::engine::PlanStore>> plan_store =
      OpenPlanStoreFromFlags();
  if (!plan_store.ok()) {
    LOG(ERROR) << "--plan_store: " << plan_store.status().message();
    (*server)->Shutdown(absl::Now());
    return kExitUsage;
  }
  engine_options.plan_store = *plan_store;
  engine_options.plan_store_kept_answers =
      absl::GetFlag(FLAGS_plan_store_kept_answers);
  engine_options.plan_store_kept_answer_bytes =
      absl::GetFlag(FLAGS_plan_store_kept_bytes);
  if (const std::string path = absl::GetFlag(FLAGS_topology); !path.empty()) {
    absl::StatusOr<gopt::simulator::Topology> topology =
        gopt::simulator::LoadTopology(path);
    if (!topology.ok()) {
      LOG(ERROR) << "--topology: " << topology.status().message();
      (*server)->Shutdown(absl::Now());
      return kExitUsage;
    }
    engine_options.named_topologies = {{path, *topology},
                                       {topology->name, *topology}};
    LOG(INFO) << "topology " << path << " ('" << topology->name << "', "
              << topology->num_devices() << " devices"
              << (topology->runtime_model_path.empty()
                      ? ""
                      : ", learned runtime model " +
                            topology->runtime_model_path)
              << "): the default for requests without one";
  }

  const auto engine =
      std::make_shared<gopt::engine::Engine>(engine_options, *policies);
  (*server)->SetEngine(engine);
  absl::StatusOr<std::unique_ptr<PlanStoreBackground>> store_background =
      PlanStoreBackground::Start(engine_options.plan_store, engine, &metrics);
  if (!store_background.ok()) {
    LOG(ERROR) << store_background.status().message();
    (*server)->Shutdown(absl::Now());
    return kExitUsage;
  }
  LOG(INFO) << "SERVING";

  const int signal = signals.Wait();
  const absl::Duration drain = Seconds(absl::GetFlag(FLAGS_drain_seconds));
  LOG(INFO) << "signal " << signal << ": health NOT_SERVING, draining for "
            << drain;
  store_background->reset();
  (*server)->BeginDrain();
  absl::SleepFor(drain);
  const absl::Duration grace =
      Seconds(absl::GetFlag(FLAGS_shutdown_timeout_seconds));
  LOG(INFO) << "refusing new calls; calls in flight have " << grace;
  (*server)->Shutdown(absl::Now() + grace);
  LOG(INFO) << "stopped";
  return 0;
}
