#include "server/metrics_http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gopt::server {
namespace {

using Clock = std::chrono::steady_clock;

// Connections accepted per turn of the loop: those already open are read
// between batches, so a flood of new ones cannot push out a scrape that has
// just connected before its request is read.
constexpr int kAcceptBatch = 16;
// After the whole answer is handed to the kernel, what the client still
// sends is read and dropped (so that closing never resets the answer in
// flight) for at most this long and this much.
constexpr std::chrono::seconds kDrainTimeout{1};
constexpr size_t kMaxDrainBytes = 64 << 10;
// How long accept is left alone once it fails for lack of descriptors.
constexpr std::chrono::milliseconds kAcceptPause{100};

// `d` within [0, 1 day], so that adding it to now cannot overflow.
Clock::duration ToClock(absl::Duration d) {
  return std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(
      std::clamp(d, absl::ZeroDuration(), absl::Hours(24))));
}

std::string Response(absl::string_view status, absl::string_view extra_header,
                     absl::string_view body) {
  return absl::StrCat("HTTP/1.0 ", status,
                      "\r\nContent-Type: text/plain; version=0.0.4; "
                      "charset=utf-8\r\nContent-Length: ",
                      body.size(), "\r\n", extra_header,
                      "Connection: close\r\n\r\n", body);
}

// Where the request head ends (just past its blank line), npos while
// incomplete. Bare LF line ends are accepted as well.
size_t HeadEnd(const std::string& request) {
  const size_t crlf = request.find("\r\n\r\n");
  if (crlf != std::string::npos) return crlf + 4;
  const size_t lf = request.find("\n\n");
  return lf == std::string::npos ? std::string::npos : lf + 2;
}

}  // namespace

struct MetricsHttpServer::Connection {
  enum class State {
    kReading,   // the request head, until `deadline`
    kWriting,   // `answer` from `sent` on, until `deadline`
    kDraining,  // answered and shut down for writing; reading to the end
  };
  int fd;
  State state;
  Clock::time_point deadline;
  std::string request;
  std::string answer;
  size_t sent = 0;
  size_t drained = 0;
};

MetricsHttpServer::MetricsHttpServer(std::function<std::string()> scrape,
                                     MetricsHttpServerOptions options)
    : scrape_(std::move(scrape)), options_([&] {
        options.max_connections = std::max<size_t>(options.max_connections, 1);
        return options;
      }()) {}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    // An eventfd write of 1 cannot fail short of overflow.
    (void)!write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  while (!connections_.empty()) Close(connections_.begin());
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
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
        socket(candidate->ai_family,
               candidate->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        listen(fd, SOMAXCONN) == 0) {
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
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    const std::string error = std::strerror(errno);
    close(listen_fd_);
    listen_fd_ = -1;
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on '", address, "': ", error));
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
  std::vector<pollfd> polled;
  std::vector<std::list<Connection>::iterator> polled_connections;
  while (true) {
    // Close what ran out of time; poll until the next deadline.
    const Clock::time_point now = Clock::now();
    Clock::time_point wake_up = Clock::time_point::max();
    for (auto c = connections_.begin(); c != connections_.end();) {
      const auto next = std::next(c);
      if (c->deadline <= now) {
        Close(c);
      } else {
        wake_up = std::min(wake_up, c->deadline);
      }
      c = next;
    }
    const bool accepting = now >= accept_paused_until_;
    if (!accepting) wake_up = std::min(wake_up, accept_paused_until_);

    polled.clear();
    polled_connections.clear();
    polled.push_back(pollfd{wake_fd_, POLLIN, 0});
    if (accepting) polled.push_back(pollfd{listen_fd_, POLLIN, 0});
    const size_t first_connection = polled.size();
    for (auto c = connections_.begin(); c != connections_.end(); ++c) {
      const short events =
          c->state == Connection::State::kWriting ? POLLOUT : POLLIN;
      polled.push_back(pollfd{c->fd, events, 0});
      polled_connections.push_back(c);
    }
    int timeout_ms = -1;
    if (wake_up != Clock::time_point::max()) {
      // Rounded up, so that the deadline has passed when poll returns.
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(wake_up - now);
      timeout_ms =
          static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0) {
      // EINTR, or ENOMEM that a later turn may not meet.
      if (errno != EINTR) poll(nullptr, 0, 10);
      continue;
    }
    if (polled[0].revents != 0) return;  // the destructor
    for (size_t i = first_connection; i < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      const auto c = polled_connections[i - first_connection];
      const bool keep =
          c->state == Connection::State::kWriting ? Send(*c) : Receive(*c);
      if (!keep) Close(c);
    }
    if (accepting && polled[1].revents != 0) AcceptSome();
  }
}

bool MetricsHttpServer::Receive(Connection& c) {
  char buffer[4096];
  while (true) {
    if (c.state == Connection::State::kDraining) {
      const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
      if (n > 0) {
        c.drained += static_cast<size_t>(n);
        if (c.drained > kMaxDrainBytes) return false;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      // The client closed (or failed): done. Nothing more yet: wait.
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    // One byte over the cap is read, to tell a head that is too large.
    const size_t room = options_.max_request_bytes + 1 - c.request.size();
    const ssize_t n = recv(c.fd, buffer, std::min(room, sizeof(buffer)), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (n == 0 && c.request.empty()) return false;  // closed without asking
    c.request.append(buffer, static_cast<size_t>(n));
    // The head is complete, too large, or all the client will send (it
    // shut down its side): answer what it holds.
    const size_t head_end = HeadEnd(c.request);
    if (head_end == std::string::npos && n > 0 &&
        c.request.size() <= options_.max_request_bytes) {
      continue;
    }
    if (head_end == std::string::npos &&
        c.request.size() > options_.max_request_bytes) {
      c.answer = Response("431 Request Header Fields Too Large", "",
                          absl::StrCat("a request head is at most ",
                                       options_.max_request_bytes, " bytes\n"));
    } else if (!absl::StartsWith(c.request, "GET ")) {
      c.answer =
          Response("405 Method Not Allowed", "Allow: GET\r\n", "GET only\n");
    } else {
      const size_t path_end = c.request.find_first_of(" \r\n", 4);
      const absl::string_view path =
          absl::string_view(c.request).substr(4, path_end - 4);
      c.answer = path == "/metrics" || absl::StartsWith(path, "/metrics?")
                     ? Response("200 OK", "", scrape_())
                     : Response("404 Not Found", "", "see /metrics\n");
    }
    c.request = std::string();
    c.state = Connection::State::kWriting;
    c.deadline = Clock::now() + ToClock(options_.response_timeout);
    return Send(c);
  }
}

bool MetricsHttpServer::Send(Connection& c) {
  while (c.sent < c.answer.size()) {
    const ssize_t n = send(c.fd, c.answer.data() + c.sent,
                           c.answer.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      // A full socket buffer: wait for POLLOUT. Else the client is gone.
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  // Answered: say so with FIN, and read to the client's close so that
  // closing never resets the answer on its way (data left unread makes
  // close send RST).
  shutdown(c.fd, SHUT_WR);
  c.answer = std::string();
  c.state = Connection::State::kDraining;
  c.deadline = Clock::now() + kDrainTimeout;
  return true;
}

void MetricsHttpServer::AcceptSome() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        // The process (or system) is out of descriptors: the queued
        // connection stays queued; try again shortly rather than spin.
        accept_paused_until_ = Clock::now() + kAcceptPause;
      }
      return;  // EAGAIN: none left
    }
    if (connections_.size() >= options_.max_connections) {
      // The oldest of the lowest rank gives way: answered ones first, then
      // those still sending their request, then those being answered.
      auto rank = [](const Connection& c) {
        switch (c.state) {
          case Connection::State::kDraining:
            return 0;
          case Connection::State::kReading:
            return 1;
          case Connection::State::kWriting:
            return 2;
        }
        return 2;
      };
      auto victim = connections_.begin();
      for (auto c = connections_.begin(); c != connections_.end(); ++c) {
        if (rank(*c) < rank(*victim)) victim = c;
      }
      Close(victim);
    }
    connections_.push_back(
        Connection{fd,
                   Connection::State::kReading,
                   Clock::now() + ToClock(options_.request_timeout),
                   {},
                   {}});
  }
}

void MetricsHttpServer::Close(std::list<Connection>::iterator c) {
  if (c->state == Connection::State::kWriting) {
    // The answer is abandoned: reset the connection, so the kernel drops
    // what it still queues for a client that does not read rather than
    // keeping it after the close.
    const linger reset{1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  }
  close(c->fd);
  connections_.erase(c);
}

}  // namespace gopt::server
