#ifndef GOPT_SERVER_METRICS_HTTP_SERVER_H_
#define GOPT_SERVER_METRICS_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace gopt::server {

// A minimal HTTP/1.0 server for Prometheus scrapes: GET /metrics answers
// 200 with `scrape()` as text/plain (exposition format 0.0.4); any other
// path 404, any other method 405. Each connection is answered on its own
// thread within kConnectionSeconds (reading the request and sending the
// answer), at most kMaxConnections at once (more are closed at once), so
// a slow or stalled client never blocks the scrapes of others.
//
// Why not prometheus-cpp's Exposer: its civetweb starts worker threads with
// a fixed small stack, and once LibTorch is loaded the process's static TLS
// no longer fits in it, so pthread_create fails ("Cannot create threads")
// and the exposer cannot start in gopt-server. This server's thread has the
// default stack.
//
// Start once; the destructor stops the thread and closes the socket.
// Thread-safe as far as `scrape` is.
class MetricsHttpServer {
 public:
  explicit MetricsHttpServer(std::function<std::string()> scrape);
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  ~MetricsHttpServer();

  // Listens on `address` ("HOST:PORT"; port 0 picks a free one) and returns
  // the bound port. InvalidArgument for a malformed address; Unavailable
  // when it cannot be bound; FailedPrecondition when already started.
  absl::StatusOr<int> Start(const std::string& address);

 private:
  static constexpr int kConnectionSeconds = 5;
  static constexpr size_t kMaxConnections = 16;
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;  // set by the thread at its end
  };

  void Serve();
  void Answer(int connection);

  const std::function<std::string()> scrape_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  // Touched only by thread_ (and the destructor once it has joined).
  std::list<Connection> connections_;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_METRICS_HTTP_SERVER_H_
