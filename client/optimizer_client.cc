#include "client/optimizer_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "graph/importer.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "util/status_macros.h"

namespace gopt::client {

absl::StatusOr<gopt::v1::GraphInput> GraphInputFromFile(
    const std::string& path, const std::string& format) {
  gopt::v1::GraphInput input;
  ASSIGN_OR_RETURN(*input.mutable_serialized(), graph::ReadFileToString(path));
  input.set_format(format == "auto" ? "" : format);
  input.set_name(path);
  return input;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<std::unique_ptr<OptimizerClient>> OptimizerClient::Connect(
    const ClientOptions& options) {
  if (options.target.empty()) {
    return absl::InvalidArgumentError("no server address (host:port)");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(options.max_message_bytes);
  arguments.SetMaxSendMessageSize(options.max_message_bytes);
  // gopt retries itself (WithRetries), with its own deadline accounting.
  arguments.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  if (options.tls_ca_file.empty()) {
    if (!options.tls_cert_file.empty()) {
      return absl::InvalidArgumentError(
          "a client certificate needs TLS: set the server's CA too");
    }
    credentials = grpc::InsecureChannelCredentials();
  } else {
    if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "a client certificate needs its key (and the reverse)");
    }
    grpc::SslCredentialsOptions ssl;
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     graph::ReadFileToString(options.tls_ca_file));
    if (!options.tls_cert_file.empty()) {
      ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                       graph::ReadFileToString(options.tls_cert_file));
      ASSIGN_OR_RETURN(ssl.pem_private_key,
                       graph::ReadFileToString(options.tls_key_file));
    }
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_server_name_override.empty()) {
      arguments.SetSslTargetNameOverride(options.tls_server_name_override);
    }
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.target, credentials, arguments);
  return std::unique_ptr<OptimizerClient>(
      new OptimizerClient(options, std::move(channel)));
}

OptimizerClient::OptimizerClient(const ClientOptions& options,
                                 std::shared_ptr<grpc::Channel> channel)
    : options_(options),
      channel_(std::move(channel)),
      stub_(gopt::v1::GraphOptimizer::NewStub(channel_)),
      generic_(std::make_unique<grpc::GenericStub>(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)) {}

absl::Status OptimizerClient::WithRetries(
    const std::function<grpc::Status(grpc::ClientContext*)>& attempt) const {
  const absl::Time deadline = absl::Now() + options_.timeout;
  absl::Duration backoff = options_.initial_backoff;
  grpc::Status status;
  for (int i = 0; i < std::max(options_.max_attempts, 1); ++i) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    status = attempt(&context);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    if (absl::Now() + backoff >= deadline) break;
    absl::SleepFor(backoff);
    backoff *= 2;
  }
  return FromGrpcStatus(status);
}

absl::StatusOr<gopt::v1::OptimizeResponse> OptimizerClient::Optimize(
    const gopt::v1::OptimizeRequest& request) const {
  gopt::v1::OptimizeResponse response;
  RETURN_IF_ERROR(WithRetries([&](grpc::ClientContext* context) {
    return stub_->Optimize(context, request, &response);
  }));
  return response;
}

absl::StatusOr<grpc::ByteBuffer> OptimizerClient::OptimizeSerialized(
    const grpc::ByteBuffer& request) const {
  grpc::ByteBuffer response;
  RETURN_IF_ERROR(WithRetries([&](grpc::ClientContext* context) {
    absl::Notification done;
    grpc::Status status;
    generic_->UnaryCall(context, "/gopt.v1.GraphOptimizer/Optimize",
                        grpc::StubOptions(), &request, &response,
                        [&](grpc::Status finished) {
                          status = std::move(finished);
                          done.Notify();
                        });
    done.WaitForNotification();
    return status;
  }));
  return response;
}

absl::StatusOr<gopt::v1::OptimizeResponse> OptimizerClient::OptimizeStream(
    const gopt::v1::OptimizeRequest& request,
    const std::function<void(const gopt::v1::OptimizeProgress&)>& on_progress)
    const {
  gopt::v1::OptimizeResponse result;
  bool got_result = false;
  RETURN_IF_ERROR(WithRetries([&](grpc::ClientContext* context) {
    std::unique_ptr<grpc::ClientReader<gopt::v1::OptimizeStreamResponse>>
        reader = stub_->OptimizeStream(context, request);
    gopt::v1::OptimizeStreamResponse message;
    bool any = false;
    while (reader->Read(&message)) {
      any = true;
      if (message.has_progress()) {
        if (on_progress) on_progress(message.progress());
      } else if (message.has_result()) {
        result = std::move(*message.mutable_result());
        got_result = true;
      }
    }
    grpc::Status status = reader->Finish();
    // Progress was already delivered: do not start over.
    if (any && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return grpc::Status(grpc::StatusCode::ABORTED, status.error_message());
    }
    return status;
  }));
  if (!got_result) {
    return absl::InternalError("the stream ended without a result");
  }
  return result;
}

absl::StatusOr<gopt::v1::EvaluateResponse> OptimizerClient::Evaluate(
    const gopt::v1::EvaluateRequest& request) const {
  gopt::v1::EvaluateResponse response;
  RETURN_IF_ERROR(WithRetries([&](grpc::ClientContext* context) {
    return stub_->Evaluate(context, request, &response);
  }));
  return response;
}

absl::StatusOr<gopt::v1::ListPoliciesResponse> OptimizerClient::ListPolicies()
    const {
  gopt::v1::ListPoliciesResponse response;
  RETURN_IF_ERROR(WithRetries([&](grpc::ClientContext* context) {
    return stub_->ListPolicies(context, gopt::v1::ListPoliciesRequest(),
                               &response);
  }));
  return response;
}

absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
OptimizerClient::Health(const std::string& service) const {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  RETURN_IF_ERROR(FromGrpcStatus(health_->Check(&context, request, &response)));
  return response.status();
}

}  // namespace gopt::client
