// gopt-worker: serves the gopt.v1.Worker service (run a plan of a graph for
// real on this host's devices and measure it) with grpc.health.v1, for
// gopt-server's worker pool (--workers=HOST:PORT,... or a DNS name).
//
// Lifecycle: create the executors -> listen, health SERVING -> SIGTERM/SIGINT
// -> health NOT_SERVING, refuse new calls, let the running plan finish for
// --shutdown_timeout_seconds, cancel the rest -> exit 0.

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "util/service_main.h"
#include "worker/executor.h"
#include "worker/worker_service.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50052",
          "gRPC address host:port of the Worker service and grpc.health.v1 "
          "(port 0 = any free port; the bound port is printed)");
ABSL_FLAG(int32_t, cpu_executors, 0,
          "CPU executors (plan devices 0..N-1), each with its own threads; "
          "0 = one per hardware thread, at most 8");
ABSL_FLAG(int32_t, threads_per_executor, 1,
          "intra-op threads of each CPU executor");
ABSL_FLAG(bool, pin_threads, true,
          "pin each CPU executor's threads to its own cores");
ABSL_FLAG(int32_t, cuda_devices, -1,
          "CUDA devices after the CPU executors; -1 = every visible one "
          "(none when built against a CPU-only LibTorch)");
ABSL_FLAG(int32_t, queue_length, 8,
          "plans waiting while one runs; more are refused "
          "(RESOURCE_EXHAUSTED)");
ABSL_FLAG(int64_t, max_graph_nodes, 1'000'000,
          "larger graphs are refused (INVALID_ARGUMENT)");
ABSL_FLAG(int64_t, max_message_bytes, 256 << 20,
          "largest request message (a graph with its plan)");
ABSL_FLAG(double, shutdown_timeout_seconds, 30,
          "after SIGTERM: seconds the running plan may take to finish "
          "before it is cancelled");

namespace {

constexpr int kExitUsage = 64;

}  // namespace

int main(int argc, char** argv) {
  const gopt::util::TerminationSignals signals;
  gopt::util::SetServiceUsage(
      "runs plans of graphs for real on this host's devices "
      "(LibTorch ops per node, real copies between devices) and measures "
      "them; serves gopt.v1.Worker and grpc.health.v1.\n"
      "usage: gopt-worker [--listen=HOST:PORT] [--cpu_executors=N] ...\n"
      "gopt-server uses it with --workers=HOST:PORT[,HOST:PORT...] or "
      "--workers=dns:///NAME:PORT (every address NAME resolves to).",
      "worker/main.cc");
  if (!gopt::util::ParseServiceCommandLine(argc, argv, "gopt-worker")) {
    return kExitUsage;
  }

  gopt::worker::ExecutorOptions executor_options;
  executor_options.cpu_executors = absl::GetFlag(FLAGS_cpu_executors);
  executor_options.threads_per_executor =
      absl::GetFlag(FLAGS_threads_per_executor);
  executor_options.pin_threads = absl::GetFlag(FLAGS_pin_threads);
  executor_options.cuda_devices = absl::GetFlag(FLAGS_cuda_devices);
  absl::StatusOr<std::unique_ptr<gopt::worker::Executor>> executor =
      gopt::worker::Executor::Create(executor_options);
  if (!executor.ok()) {
    LOG(ERROR) << "cannot create the executors: " << executor.status();
    return 1;
  }
  for (const gopt::worker::DeviceDescription& device :
       (*executor)->Describe()) {
    LOG(INFO) << "device " << device.name << ": " << device.threads
              << " thread(s)" << (device.pinned ? ", pinned" : "");
  }

  gopt::worker::WorkerServiceOptions service_options;
  service_options.queue_length = absl::GetFlag(FLAGS_queue_length);
  service_options.max_graph_nodes = absl::GetFlag(FLAGS_max_graph_nodes);
  service_options.name = absl::GetFlag(FLAGS_listen);
  gopt::worker::WorkerService service(executor->get(), service_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen),
                           grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(absl::GetFlag(FLAGS_max_message_bytes)));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    LOG(ERROR) << "cannot listen on " << absl::GetFlag(FLAGS_listen);
    return 1;
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  // Tests and scripts read the bound port from this line.
  std::cout << "gopt-worker listening on port " << port << std::endl;
  // Not "] SERVING": gopt-server, whose child this may be, logs that.
  LOG(INFO) << "health SERVING on port " << port;

  const int signal = signals.Wait();
  LOG(INFO) << "signal " << signal << ": NOT_SERVING, shutting down";
  server->GetHealthCheckService()->SetServingStatus(false);
  server->Shutdown(absl::ToChronoTime(
      absl::Now() + absl::Seconds(std::max(
                        0.0, absl::GetFlag(FLAGS_shutdown_timeout_seconds)))));
  service.Stop();
  LOG(INFO) << "stopped";
  return 0;
}
