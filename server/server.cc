#include "server/server.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/importer.h"
#include "graph/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace gopt::server {
namespace {

constexpr char kServiceName[] = "gopt.v1.GraphOptimizer";
constexpr char kLivenessService[] = "liveness";

int Milliseconds(absl::Duration duration) {
  return static_cast<int>(absl::ToInt64Milliseconds(duration));
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
    : queue_(options.threads, options.queue_length),
      service_(&queue_, metrics) {
  if (metrics != nullptr) {
    queue_.set_queue_length_observer(
        [metrics](int64_t queued) { metrics->SetQueuedRequests(queued); });
  }
}

absl::StatusOr<std::unique_ptr<OptimizerServer>> OptimizerServer::Start(
    const ServerOptions& options, Metrics* metrics) {
  if (options.threads < 1 || options.queue_length < 0 ||
      options.max_message_bytes < 1 ||
      options.max_message_bytes > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "need threads >= 1 (got ", options.threads, "), queue_length >= 0 (",
        options.queue_length, ") and 1 <= max_message_bytes <= 2^31-1 (",
        options.max_message_bytes, ")"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(options.tls));
  std::unique_ptr<OptimizerServer> server(
      new OptimizerServer(options, metrics));

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, credentials, &server->port_);
  builder.RegisterService(&server->service_);
  const int max_bytes = static_cast<int>(options.max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             Milliseconds(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Milliseconds(options.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      Milliseconds(options.min_client_ping_interval));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on '", options.listen_address, "' (address in use?)"));
  }
  server->SetServing(false);
  return server;
}

OptimizerServer::~OptimizerServer() { Shutdown(absl::Now()); }

void OptimizerServer::SetServing(bool serving) {
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
  // "liveness" answers whether the process is alive, not whether it takes
  // work: it stays SERVING through startup and drain (the Kubernetes
  // liveness probe asks for it, so a draining pod is not restarted).
  health->SetServingStatus(kLivenessService, true);
}

void OptimizerServer::SetEngine(std::shared_ptr<const Engine> engine) {
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
  queue_.Shutdown();
}

}  // namespace gopt::server
