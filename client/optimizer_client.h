#ifndef GOPT_CLIENT_OPTIMIZER_CLIENT_H_
#define GOPT_CLIENT_OPTIMIZER_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gopt/v1/optimizer.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace gopt::client {

// How to reach a gopt-server. Defaults suit a build system calling a
// server on the same network.
struct ClientOptions {
  std::string target;  // "host:port"
  // Deadline of each call, retries included. Default 60 s. The server stops
  // optimizing early enough to answer within it.
  absl::Duration timeout = absl::Seconds(60);
  // Attempts per call; only UNAVAILABLE (server starting, draining or
  // unreachable) is retried, with exponential backoff from
  // initial_backoff. Defaults: 3 attempts, 100 ms.
  int max_attempts = 3;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // TLS: the CA that signed the server's certificate (empty = plaintext),
  // and for mTLS this client's certificate and key. server_name_override
  // checks the server certificate against that name instead of the host
  // (e.g. "localhost" when connecting to 127.0.0.1).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name_override;
  // Largest message sent or received. Default 256 MiB.
  int max_message_bytes = 256 << 20;
};

// Reads a graph file into a request's GraphInput (format "" = the server
// sniffs it). NotFound etc. naming the path.
absl::StatusOr<gopt::v1::GraphInput> GraphInputFromFile(
    const std::string& path, const std::string& format);

// gRPC status -> absl::Status, same code and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

// A connection to gopt-server. Every call has a deadline (options.timeout)
// and is retried on UNAVAILABLE; errors carry the server's code and
// message. Thread-safe: one client serves many threads.
//
//   ASSIGN_OR_RETURN(auto client, OptimizerClient::Connect({"gopt:50051"}));
//   ASSIGN_OR_RETURN(gopt::v1::OptimizeResponse response,
//                    client->Optimize(request));
class OptimizerClient {
 public:
  // Creates the channel (connects lazily). InvalidArgument for an empty
  // target or a client certificate without key; file errors for TLS files.
  static absl::StatusOr<std::unique_ptr<OptimizerClient>> Connect(
      const ClientOptions& options);

  OptimizerClient(const OptimizerClient&) = delete;
  OptimizerClient& operator=(const OptimizerClient&) = delete;

  absl::StatusOr<gopt::v1::OptimizeResponse> Optimize(
      const gopt::v1::OptimizeRequest& request) const;
  // Optimize with a request already serialized, answered with the
  // response's bytes, unparsed (what `gopt load` sends, so that its own CPU
  // goes to gRPC rather than to protobuf).
  absl::StatusOr<grpc::ByteBuffer> OptimizeSerialized(
      const grpc::ByteBuffer& request) const;
  // Optimize with progress: `on_progress` is called (on this thread) for
  // each progress event before the result arrives. Retried on UNAVAILABLE
  // only before the first event.
  absl::StatusOr<gopt::v1::OptimizeResponse> OptimizeStream(
      const gopt::v1::OptimizeRequest& request,
      const std::function<void(const gopt::v1::OptimizeProgress&)>& on_progress)
      const;
  absl::StatusOr<gopt::v1::EvaluateResponse> Evaluate(
      const gopt::v1::EvaluateRequest& request) const;
  absl::StatusOr<gopt::v1::ListPoliciesResponse> ListPolicies() const;
  // grpc.health.v1 Check of `service` ("" = the whole server). Not retried:
  // UNAVAILABLE means the server cannot be reached.
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> Health(
      const std::string& service = "") const;

  const ClientOptions& options() const { return options_; }

 private:
  OptimizerClient(const ClientOptions& options,
                  std::shared_ptr<grpc::Channel> channel);

  // Runs `attempt` (one RPC with the given context) until it returns
  // anything but UNAVAILABLE, the attempts are used up or the deadline
  // passes.
  absl::Status WithRetries(
      const std::function<grpc::Status(grpc::ClientContext*)>& attempt) const;

  const ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<gopt::v1::GraphOptimizer::Stub> stub_;
  std::unique_ptr<grpc::GenericStub> generic_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace gopt::client

#endif  // GOPT_CLIENT_OPTIMIZER_CLIENT_H_
