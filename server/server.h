#ifndef GOPT_SERVER_SERVER_H_
#define GOPT_SERVER_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "grpcpp/server.h"
#include "server/metrics.h"
#include "server/optimizer_service.h"
#include "server/work_queue.h"

namespace gopt::server {

// TLS for the gRPC port. All empty = plaintext.
struct TlsOptions {
  std::string cert_file;       // PEM server certificate (chain)
  std::string key_file;        // PEM private key of cert_file
  std::string client_ca_file;  // PEM CA; set = mTLS (clients must present a
                               // certificate it signed)
};

// How gopt-server listens and admits work. Defaults are the flag defaults.
struct ServerOptions {
  // host:port; port 0 picks a free one (see OptimizerServer::port()).
  std::string listen_address = "0.0.0.0:50051";
  // Largest request or response message; larger requests are
  // RESOURCE_EXHAUSTED. Default 256 MiB.
  int64_t max_message_bytes = 256 << 20;
  // Memory gRPC's transport may hold for every connection together
  // (grpc::ResourceQuota): a message that would take more, such as one
  // over max_message_bytes that gRPC would otherwise buffer whole before
  // checking its size, has its stream reset (the client sees
  // RESOURCE_EXHAUSTED). 0 = 2 x max_message_bytes + 24 MiB (two messages
  // of the largest size and the buffers of other calls). Default 0.
  int64_t grpc_memory_bytes = 0;
  // Accept gzip/deflate-compressed requests. gRPC (1.51) decompresses a
  // message in full before its size limit applies, so a 1 MB gzip bomb
  // becomes 1 GB; off, such calls are UNIMPLEMENTED before any byte is
  // decompressed. Responses are not compressed either way. Default off.
  bool accept_compressed_requests = false;
  // Threads running requests (the WorkQueue). Default 4.
  int threads = 4;
  // Requests admitted while all threads are busy; more are
  // RESOURCE_EXHAUSTED. Default 64.
  int queue_length = 64;
  // HTTP/2 keepalive: ping an idle connection every keepalive_time, drop
  // it when the ack takes longer than keepalive_timeout; refuse client pings
  // more frequent than min_client_ping_interval. Defaults 60 s, 20 s, 10 s.
  absl::Duration keepalive_time = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  absl::Duration min_client_ping_interval = absl::Seconds(10);
  TlsOptions tls;
  // Deadline of calls whose client set none. Default 10 minutes.
  absl::Duration default_deadline = absl::Minutes(10);
  // Memory the requests in flight may hold together (MemoryBudget);
  // 0 = no budget. Default 0 (gopt-server sets it from the cgroup limit).
  int64_t memory_budget_bytes = 0;
  // Serve gRPC server reflection (grpcurl without .proto files). Default
  // off: it describes the whole API to anyone who can connect.
  bool reflection = false;
  // host:port of a second, plaintext port that serves only grpc.health.v1
  // (for probes that cannot speak TLS, e.g. Kubernetes gRPC probes, when
  // the main port has TLS). Empty = none. Default empty.
  std::string health_listen_address;
};

// Reads the TLS files into server credentials (insecure when tls is
// empty). InvalidArgument for a certificate without key (or the reverse), or
// a client CA without a certificate; NotFound etc. for unreadable files.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& tls);

// A running gopt-server: the GraphOptimizer service, grpc.health.v1 and
// (when enabled) server reflection on one port, with keepalive and TLS as
// configured; optionally grpc.health.v1 alone on a plaintext port.
// Health starts NOT_SERVING; SetEngine makes it SERVING (call it once the
// policies are loaded); BeginDrain makes it NOT_SERVING again while calls
// are still served; Shutdown stops. Thread-safe.
//
//   ASSIGN_OR_RETURN(auto server, OptimizerServer::Start(options, &metrics));
//   server->SetEngine(std::make_shared<Engine>(engine_options, policies));
//   ... SIGTERM ...
//   server->BeginDrain();
//   absl::SleepFor(drain);
//   server->Shutdown(absl::Now() + grace);
class OptimizerServer {
 public:
  // The one server-assembly function. `metrics` may be null and must outlive
  // the server. Unavailable when the address is in use (it is never shared:
  // SO_REUSEPORT is off) or cannot be bound, FailedPrecondition when the
  // TLS key does not belong to the certificate; InvalidArgument for bad
  // options; TLS file errors as MakeServerCredentials.
  static absl::StatusOr<std::unique_ptr<OptimizerServer>> Start(
      const ServerOptions& options, Metrics* metrics);

  OptimizerServer(const OptimizerServer&) = delete;
  OptimizerServer& operator=(const OptimizerServer&) = delete;
  // Shutdown(now).
  ~OptimizerServer();

  // The bound port.
  int port() const { return port_; }
  // The bound health-only port; 0 when there is none.
  int health_port() const { return health_port_; }

  // Serves requests with `engine` and reports SERVING.
  void SetEngine(std::shared_ptr<const engine::Engine> engine);
  // Reports NOT_SERVING; requests are still served.
  void BeginDrain();
  // Refuses new calls (UNAVAILABLE), lets calls in flight finish until
  // `deadline`, cancels the rest (the engine stops at its next stage
  // boundary), then stops the worker threads. Idempotent.
  void Shutdown(absl::Time deadline);

  // Admitted requests waiting for a worker thread.
  int64_t queued_requests() const { return queue_.queued(); }

  // The requests' memory budget (null without one), for the worker pool to
  // charge its measurements to; lives as long as the server.
  engine::MemoryBudget* memory_budget() const { return memory_.get(); }

 private:
  OptimizerServer(const ServerOptions& options, Metrics* metrics);
  void SetServing(bool serving);

  std::unique_ptr<engine::MemoryBudget> memory_;  // null: no budget
  WorkQueue queue_;
  OptimizerService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> health_server_;  // null: no health port
  int port_ = 0;
  int health_port_ = 0;
  absl::Mutex mutex_;
  bool shut_down_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_SERVER_H_
