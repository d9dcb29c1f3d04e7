#include "server/metrics_http_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Only a guard against a hung test, never a measured bound: every wait
// below ends as soon as the event it waits for happens.
constexpr int kHangGuardMs = 60'000;

// A blocking client socket connected to 127.0.0.1:port; -1 on failure.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Everything the server sends on `fd` until it closes the connection.
std::string ReadToEnd(int fd) {
  std::string got;
  char buffer[1 << 16];
  while (true) {
    pollfd readable{fd, POLLIN, 0};
    if (poll(&readable, 1, kHangGuardMs) <= 0) {
      ADD_FAILURE() << "the server neither answered nor closed";
      return got;
    }
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return got;
    got.append(buffer, static_cast<size_t>(n));
  }
}

// The whole answer to `request` sent on a new connection ("" when the
// connection fails).
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  std::string answer = SendAll(fd, request) ? ReadToEnd(fd) : "";
  close(fd);
  return answer;
}

std::string Scrape(int port) {
  return Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
}

std::string Body(const std::string& answer) {
  const size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? "" : answer.substr(end + 4);
}

// True once the server has closed `fd` (what it still had sent is read
// and dropped).
bool WaitClosedByServer(int fd) {
  ReadToEnd(fd);
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// True while the server keeps `fd` open and has sent nothing on it.
bool StillOpen(int fd) {
  char byte;
  return recv(fd, &byte, 1, MSG_DONTWAIT) < 0 &&
         (errno == EAGAIN || errno == EWOULDBLOCK);
}

std::string Exposition() {
  std::string text;
  for (int i = 0; text.size() < 20000; ++i) {
    absl::StrAppend(&text, "gopt_example{le=\"", i, "\"} 1\n");
  }
  return text;
}

class Clients {
 public:
  ~Clients() {
    for (int fd : fds_) close(fd);
  }
  int Open(int port) {
    const int fd = Connect(port);
    EXPECT_GE(fd, 0) << "connect: " << std::strerror(errno);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  const std::vector<int>& fds() const { return fds_; }

 private:
  std::vector<int> fds_;
};

TEST(MetricsHttpServerTest, AnswersMetrics) {
  const std::string text = Exposition();
  MetricsHttpServer server([&] { return text; });
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  for (const char* request :
       {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /metrics?name[]=x HTTP/1.0\r\n\r\n", "GET /metrics\n\n"}) {
    const std::string answer = Exchange(*port, request);
    EXPECT_THAT(answer, StartsWith("HTTP/1.0 200 OK\r\n")) << request;
    EXPECT_THAT(answer, HasSubstr("text/plain; version=0.0.4"));
    EXPECT_THAT(answer, HasSubstr("Connection: close\r\n"));
    EXPECT_EQ(Body(answer), text);
  }
}

TEST(MetricsHttpServerTest, OtherPathsAndMethods) {
  std::atomic<int> scrapes{0};
  MetricsHttpServer server([&] { return std::to_string(++scrapes); });
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_THAT(Exchange(*port, "GET / HTTP/1.1\r\n\r\n"),
              StartsWith("HTTP/1.0 404 Not Found\r\n"));
  EXPECT_THAT(Exchange(*port, "GET /metricsx HTTP/1.1\r\n\r\n"),
              StartsWith("HTTP/1.0 404 Not Found\r\n"));
  const std::string post =
      Exchange(*port, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_THAT(post, StartsWith("HTTP/1.0 405 Method Not Allowed\r\n"));
  EXPECT_THAT(post, HasSubstr("Allow: GET\r\n"));
  EXPECT_THAT(Exchange(*port, "HEAD /metrics HTTP/1.1\r\n\r\n"),
              StartsWith("HTTP/1.0 405 "));
  // A client that shuts down its side after a partial request gets an
  // answer to what it sent.
  const int fd = Connect(*port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "PUT"));
  shutdown(fd, SHUT_WR);
  EXPECT_THAT(ReadToEnd(fd), StartsWith("HTTP/1.0 405 "));
  close(fd);
  EXPECT_EQ(scrapes, 0);
}

TEST(MetricsHttpServerTest, RequestHeadOverTheCapAnswers431) {
  MetricsHttpServerOptions options;
  options.max_request_bytes = 1024;
  MetricsHttpServer server([] { return "x"; }, options);
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string answer =
      Exchange(*port, absl::StrCat("GET /metrics HTTP/1.1\r\nX: ",
                                   std::string(4000, 'a'), "\r\n\r\n"));
  EXPECT_THAT(answer, StartsWith("HTTP/1.0 431 "));
}

TEST(MetricsHttpServerTest, FiveHundredIdleClientsDoNotBlockScrapes) {
  const std::string text = Exposition();
  MetricsHttpServer server([&] { return text; });  // default options
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  // Clients that connect and never send a byte: more than the server keeps
  // open, so it closes the oldest of them to take new ones.
  Clients idle;
  for (int i = 0; i < 500; ++i) ASSERT_GE(idle.Open(*port), 0);
  for (int i = 0; i < 20; ++i) {
    const std::string answer = Scrape(*port);
    ASSERT_THAT(answer, StartsWith("HTTP/1.0 200 OK\r\n")) << "scrape " << i;
    EXPECT_EQ(Body(answer), text);
    // Idle clients keep arriving between scrapes.
    for (int j = 0; j < 10; ++j) ASSERT_GE(idle.Open(*port), 0);
  }
}

TEST(MetricsHttpServerTest, SlowlorisClientsDoNotBlockScrapes) {
  const std::string text = Exposition();
  MetricsHttpServer server([&] { return text; });
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  // 50 clients trickle a never-ending request head, one byte each per turn.
  Clients slow;
  for (int i = 0; i < 50; ++i) ASSERT_GE(slow.Open(*port), 0);
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: ";
    for (size_t turn = 0; !stop; ++turn) {
      const char byte = turn < head.size() ? head[turn] : 'a';
      for (int fd : slow.fds()) send(fd, &byte, 1, MSG_NOSIGNAL);
      poll(nullptr, 0, 5);
    }
  });
  for (int i = 0; i < 20; ++i) {
    const std::string answer = Scrape(*port);
    EXPECT_THAT(answer, StartsWith("HTTP/1.0 200 OK\r\n")) << "scrape " << i;
    EXPECT_EQ(Body(answer), text);
  }
  stop = true;
  trickle.join();
}

TEST(MetricsHttpServerTest, SlowRequestIsClosedAtItsDeadlineUnanswered) {
  MetricsHttpServerOptions options;
  options.request_timeout = absl::Milliseconds(50);
  MetricsHttpServer server([] { return "x"; }, options);
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  Clients clients;
  const int silent = clients.Open(*port);
  const int slow = clients.Open(*port);
  ASSERT_TRUE(SendAll(slow, "GET /met"));
  EXPECT_EQ(ReadToEnd(silent), "");
  EXPECT_TRUE(WaitClosedByServer(silent));
  EXPECT_EQ(ReadToEnd(slow), "");
  EXPECT_TRUE(WaitClosedByServer(slow));
}

TEST(MetricsHttpServerTest, ClientsThatNeverReadDoNotBlockOthers) {
  // More than the socket buffers of a client that does not read hold
  // (its receive window stays at tcp_rmem's default, 128 KiB, and the send
  // buffer is at most tcp_wmem's 4 MiB), so the answers to the clients
  // that never read cannot be handed over whole.
  const std::string text(8 << 20, 'm');
  MetricsHttpServer server([&] { return text; });
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  Clients stalled;
  for (int i = 0; i < 4; ++i) {
    const int fd = stalled.Open(*port);
    ASSERT_TRUE(SendAll(fd, "GET /metrics HTTP/1.1\r\n\r\n"));
  }
  for (int i = 0; i < 3; ++i) {
    const std::string answer = Scrape(*port);
    ASSERT_THAT(answer, StartsWith("HTTP/1.0 200 OK\r\n")) << "scrape " << i;
    EXPECT_EQ(Body(answer).size(), text.size());
  }
}

TEST(MetricsHttpServerTest, AnswerNotReadInTimeIsCutOff) {
  const std::string text(8 << 20, 'm');
  MetricsHttpServerOptions options;
  options.response_timeout = absl::Milliseconds(50);
  MetricsHttpServer server([&] { return text; }, options);
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  Clients clients;
  const int fd = clients.Open(*port);
  ASSERT_TRUE(SendAll(fd, "GET /metrics HTTP/1.1\r\n\r\n"));
  // Read nothing: the server gives up on this client at its deadline and
  // resets the connection ...
  pollfd reset{fd, POLLRDHUP, 0};
  ASSERT_EQ(poll(&reset, 1, kHangGuardMs), 1)
      << "the server kept an unread answer open";
  EXPECT_NE(reset.revents & (POLLERR | POLLHUP | POLLRDHUP), 0);
  // ... and the client never gets the whole answer.
  EXPECT_LT(ReadToEnd(fd).size(), text.size());
}

TEST(MetricsHttpServerTest, OverTheCapTheOldestIdleConnectionIsClosed) {
  MetricsHttpServerOptions options;
  options.max_connections = 4;
  MetricsHttpServer server([] { return "x"; }, options);
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  Clients clients;
  for (int i = 0; i < 5; ++i) ASSERT_GE(clients.Open(*port), 0);
  const std::vector<int>& fds = clients.fds();
  EXPECT_TRUE(WaitClosedByServer(fds[0]));  // the oldest gave way
  for (int i = 1; i < 5; ++i) EXPECT_TRUE(StillOpen(fds[i])) << i;
  // A scrape is answered with the cap still full of idle clients.
  EXPECT_THAT(Scrape(*port), StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_TRUE(WaitClosedByServer(fds[1]));
  for (int i = 2; i < 5; ++i) EXPECT_TRUE(StillOpen(fds[i])) << i;
}

TEST(MetricsHttpServerTest, DestructorClosesConnectedClients) {
  const std::string text(8 << 20, 'm');
  auto server = std::make_unique<MetricsHttpServer>([&] { return text; });
  const absl::StatusOr<int> port = server->Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  Clients clients;
  const int idle = clients.Open(*port);
  const int slow = clients.Open(*port);
  ASSERT_TRUE(SendAll(slow, "GET /met"));
  const int stalled = clients.Open(*port);
  ASSERT_TRUE(SendAll(stalled, "GET /metrics HTTP/1.1\r\n\r\n"));
  // The server has taken all three once a scrape after them is answered.
  EXPECT_THAT(Scrape(*port), StartsWith("HTTP/1.0 200 OK\r\n"));
  server.reset();
  EXPECT_TRUE(WaitClosedByServer(idle));
  EXPECT_TRUE(WaitClosedByServer(slow));
  EXPECT_TRUE(WaitClosedByServer(stalled));
  EXPECT_LT(Connect(*port), 0) << "still listening";
}

TEST(MetricsHttpServerTest, StartErrors) {
  MetricsHttpServer server([] { return "x"; });
  EXPECT_EQ(server.Start("no-port").status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::StatusOr<int> port = server.Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(server.Start("127.0.0.1:0").status().code(),
            absl::StatusCode::kFailedPrecondition);
  MetricsHttpServer other([] { return "x"; });
  EXPECT_EQ(other.Start(absl::StrCat("127.0.0.1:", *port)).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gopt::server
