#include "server/server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/importer.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "util/status_macros.h"

namespace gopt::server {
namespace {

constexpr char kServiceName[] = "gopt.v1.GraphOptimizer";

// ServerOptions::grpc_memory_bytes with its default applied: room for two
// messages of the largest size (gRPC hands a reset stream's buffers back
// to the quota some time after the reset) and the buffers of other calls.
int64_t GrpcMemoryBytes(const ServerOptions& options) {
  constexpr int64_t kOtherCallsBytes = int64_t{24} << 20;
  return options.grpc_memory_bytes > 0
             ? options.grpc_memory_bytes
             : 2 * options.max_message_bytes + kOtherCallsBytes;
}
constexpr char kLivenessService[] = "liveness";

int Milliseconds(absl::Duration duration) {
  return static_cast<int>(absl::ToInt64Milliseconds(duration));
}

// Unavailable, saying so, when something already listens on `address`
// (host:port; port 0 and unresolvable hosts are left to gRPC). gRPC alone
// reports a taken port only as a failed start.
absl::Status CheckAddressFree(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return absl::OkStatus();
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (port.empty() || port == "0") return absl::OkStatus();
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints,
                  &found) != 0) {
    return absl::OkStatus();
  }
  absl::Status status;
  for (addrinfo* a = found; a != nullptr && status.ok(); a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    // As gRPC binds: SO_REUSEADDR (TIME_WAIT is no conflict), no
    // SO_REUSEPORT (a listener is).
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE) {
      status = absl::UnavailableError(absl::StrCat(
          "cannot listen on '", address,
          "': the address is already in use (another gopt-server?)"));
    }
    close(fd);
  }
  freeaddrinfo(found);
  return status;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca (mTLS) needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both --tls_cert and --tls_key");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.private_key, graph::ReadFileToString(tls.key_file));
  ASSIGN_OR_RETURN(pair.cert_chain, graph::ReadFileToString(tls.cert_file));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     graph::ReadFileToString(tls.client_ca_file));
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

OptimizerServer::OptimizerServer(const ServerOptions& options, Metrics* metrics)
    : memory_(options.memory_budget_bytes > 0
                  ? std::make_unique<engine::MemoryBudget>(
                        options.memory_budget_bytes)
                  : nullptr),
      queue_(options.threads, options.queue_length),
      service_(ServiceOptions{options.default_deadline, memory_.get()}, &queue_,
               metrics) {
  if (metrics != nullptr) {
    queue_.set_queue_length_observer(
        [metrics](int64_t queued) { metrics->SetQueuedRequests(queued); });
  }
}

absl::StatusOr<std::unique_ptr<OptimizerServer>> OptimizerServer::Start(
    const ServerOptions& options, Metrics* metrics) {
  if (options.threads < 1 || options.queue_length < 0 ||
      options.max_message_bytes < 1 ||
      options.max_message_bytes > std::numeric_limits<int>::max() ||
      options.grpc_memory_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "need threads >= 1 (got ", options.threads, "), queue_length >= 0 (",
        options.queue_length, "), 1 <= max_message_bytes <= 2^31-1 (",
        options.max_message_bytes, ") and grpc_memory_bytes >= 0 (",
        options.grpc_memory_bytes, ")"));
  }
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the default deadline must be > 0");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(options.tls));
  RETURN_IF_ERROR(CheckAddressFree(options.listen_address));
  if (!options.health_listen_address.empty()) {
    RETURN_IF_ERROR(CheckAddressFree(options.health_listen_address));
  }
  std::unique_ptr<OptimizerServer> server(
      new OptimizerServer(options, metrics));

  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) {
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, credentials, &server->port_);
  builder.RegisterService(&server->service_);
  const int max_bytes = static_cast<int>(options.max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  // gRPC buffers a message whole before its size check; the quota bounds
  // what it may buffer (hostile-cases: a 1 GiB message cost 1 GB of RSS
  // without it, ~90 MB with it).
  grpc::ResourceQuota quota("gopt-server");
  quota.Resize(static_cast<size_t>(GrpcMemoryBytes(options)));
  builder.SetResourceQuota(quota);
  if (!options.accept_compressed_requests) {
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
  }
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             Milliseconds(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Milliseconds(options.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      Milliseconds(options.min_client_ping_interval));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  // Two servers must never share a port: with SO_REUSEPORT the kernel
  // would split connections between them.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    if (!options.tls.cert_file.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot start TLS on '", options.listen_address, "': --tls_key '",
          options.tls.key_file, "' does not belong to --tls_cert '",
          options.tls.cert_file, "', or a file is not valid PEM"));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot listen on '", options.listen_address, "'"));
  }
  if (!options.health_listen_address.empty()) {
    grpc::ServerBuilder health;
    health.AddListeningPort(options.health_listen_address,
                            grpc::InsecureServerCredentials(),
                            &server->health_port_);
    health.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    server->health_server_ = health.BuildAndStart();
    if (server->health_server_ == nullptr || server->health_port_ == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on '",
                                                 options.health_listen_address,
                                                 "' (--health_listen)"));
    }
  }
  server->SetServing(false);
  return server;
}

OptimizerServer::~OptimizerServer() { Shutdown(absl::Now()); }

void OptimizerServer::SetServing(bool serving) {
  for (grpc::Server* s : {server_.get(), health_server_.get()}) {
    if (s == nullptr) continue;
    grpc::HealthCheckServiceInterface* health = s->GetHealthCheckService();
    health->SetServingStatus(serving);
    health->SetServingStatus(kServiceName, serving);
    // "liveness" answers whether the process is alive, not whether it
    // takes work: it stays SERVING through startup and drain (the
    // Kubernetes liveness probe asks for it, so a draining pod is not
    // restarted).
    health->SetServingStatus(kLivenessService, true);
  }
}

void OptimizerServer::SetEngine(std::shared_ptr<const engine::Engine> engine) {
  service_.SetEngine(std::move(engine));
  SetServing(true);
}

void OptimizerServer::BeginDrain() { SetServing(false); }

void OptimizerServer::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock lock(&mutex_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  service_.StopAccepting();
  if (server_ != nullptr) {
    SetServing(false);
    server_->Shutdown(absl::ToChronoTime(deadline));
  }
  if (health_server_ != nullptr) {
    health_server_->Shutdown(absl::ToChronoTime(absl::Now()));
  }
  queue_.Shutdown();
}

}  // namespace gopt::server
