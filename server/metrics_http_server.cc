#include "server/metrics_http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gopt::server {
namespace {

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

std::string Response(const std::string& status, const std::string& body) {
  return absl::StrCat("HTTP/1.0 ", status,
                      "\r\nContent-Type: text/plain; version=0.0.4; "
                      "charset=utf-8\r\nContent-Length: ",
                      body.size(), "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(std::function<std::string()> scrape)
    : scrape_(std::move(scrape)) {}

MetricsHttpServer::~MetricsHttpServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  // Connections end by themselves within kConnectionSeconds.
  for (Connection& c : connections_) c.thread.join();
}

absl::StatusOr<int> MetricsHttpServer::Start(const std::string& address) {
  if (listen_fd_ >= 0) {
    return absl::FailedPreconditionError("the metrics server already runs");
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address,
                     "' is not HOST:PORT (e.g. 0.0.0.0:9464)"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                    port.c_str(), &hints, &found);
      error != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "': ", gai_strerror(error)));
  }
  std::string last_error = "no address";
  for (addrinfo* candidate = found; candidate != nullptr;
       candidate = candidate->ai_next) {
    const int fd =
        socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        listen(fd, 16) == 0) {
      listen_fd_ = fd;
      break;
    }
    last_error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on '", address, "': ", last_error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  thread_ = std::thread([this] { Serve(); });
  return bound_port;
}

void MetricsHttpServer::Serve() {
  while (!stop_) {
    // Wake up regularly to notice stop_ (the destructor's join).
    pollfd listening{listen_fd_, POLLIN, 0};
    if (poll(&listening, 1, /*timeout_ms=*/100) <= 0) continue;
    const int connection = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    // Threads of connections answered since are joined (at once).
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    if (connections_.size() >= kMaxConnections) {
      // Every slot is held by a client that is slow to send or read.
      close(connection);
      continue;
    }
    // Each connection on its own thread, so a slow client delays only
    // itself.
    auto done = std::make_shared<std::atomic<bool>>(false);
    connections_.push_back(Connection{std::thread([this, connection, done] {
                                        Answer(connection);
                                        close(connection);
                                        done->store(true);
                                      }),
                                      done});
  }
}

void MetricsHttpServer::Answer(int connection) {
  // Read the request head (bounded in size and in total time, however
  // slowly the client trickles it: a scraper sends a few hundred bytes at
  // once).
  const absl::Time give_up = absl::Now() + absl::Seconds(kConnectionSeconds);
  const timeval send_timeout{kConnectionSeconds, 0};
  setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &send_timeout,
             sizeof(send_timeout));
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.size() < 8192) {
    const int64_t left_ms = absl::ToInt64Milliseconds(give_up - absl::Now());
    if (left_ms <= 0) return;
    pollfd readable{connection, POLLIN, 0};
    if (poll(&readable, 1, static_cast<int>(left_ms)) <= 0) return;
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  if (!absl::StartsWith(request, "GET ")) {
    SendAll(connection, Response("405 Method Not Allowed", "GET only\n"));
    return;
  }
  const size_t path_end = request.find(' ', 4);
  const std::string path = request.substr(4, path_end - 4);
  if (path != "/metrics" && !absl::StartsWith(path, "/metrics?")) {
    SendAll(connection, Response("404 Not Found", "see /metrics\n"));
    return;
  }
  SendAll(connection, Response("200 OK", scrape_()));
}

}  // namespace gopt::server
