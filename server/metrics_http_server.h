#ifndef GOPT_SERVER_METRICS_HTTP_SERVER_H_
#define GOPT_SERVER_METRICS_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gopt::server {

// What one MetricsHttpServer holds at most, and for how long.
struct MetricsHttpServerOptions {
  // Open connections. Over it, accepting one more first closes the oldest
  // connection that is not being answered (then the oldest of all), so a
  // crowd of idle clients can delay a scrape by at most one accept.
  size_t max_connections = 128;
  // A request head (up to the blank line) larger than this answers 431.
  size_t max_request_bytes = 8192;
  // From accept to the end of the request head, however slowly the client
  // sends it (a slowloris gets exactly this much).
  absl::Duration request_timeout = absl::Seconds(5);
  // From the complete request to the last byte of the answer handed to the
  // kernel, however slowly the client reads it.
  absl::Duration response_timeout = absl::Seconds(10);
};

// A minimal HTTP server for Prometheus scrapes: GET /metrics (with or
// without a query) answers 200 with `scrape()` as text/plain (exposition
// format 0.0.4); any other path 404, any other method 405, a request head
// over max_request_bytes 431. Every answer is HTTP/1.0 with
// "Connection: close".
//
// One thread serves every connection with poll(2) over non-blocking
// sockets, so no client, however slow to send or read, blocks another:
// each connection has a deadline for its request and one for its answer,
// its request buffer is capped, and at most max_connections are open (the
// oldest idle one gives way to a new one). What it holds is therefore
// bounded: max_connections descriptors, and per connection
// max_request_bytes plus one answer. `scrape` runs on that thread.
//
// Why not prometheus-cpp's Exposer: its civetweb starts worker threads with
// a fixed small stack, and once LibTorch is loaded the process's static TLS
// no longer fits in it, so pthread_create fails ("Cannot create threads")
// and the exposer cannot start in gopt-server. This server's one thread has
// the default stack.
//
// Start once; the destructor stops the thread and closes every socket
// (clients still connected see the connection closed). Thread-safe as far
// as `scrape` is.
class MetricsHttpServer {
 public:
  explicit MetricsHttpServer(std::function<std::string()> scrape,
                             MetricsHttpServerOptions options = {});
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  ~MetricsHttpServer();

  // Listens on `address` ("HOST:PORT"; port 0 picks a free one) and returns
  // the bound port. InvalidArgument for a malformed address; Unavailable
  // when it cannot be bound; FailedPrecondition when already started.
  absl::StatusOr<int> Start(const std::string& address);

 private:
  struct Connection;

  void Serve();
  // Reads what `c` sent; answers once its request head is complete.
  // False when `c` is to be closed.
  bool Receive(Connection& c);
  // Hands the kernel what it takes of `c`'s answer. False when `c` is to be
  // closed.
  bool Send(Connection& c);
  // Accepts what waits on the listening socket (a few at a time), making
  // room by closing the oldest idle connection.
  void AcceptSome();
  void Close(std::list<Connection>::iterator c);

  const std::function<std::string()> scrape_;
  const MetricsHttpServerOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd the destructor signals
  std::thread thread_;
  // Touched only by thread_ (and the destructor once it has joined); in
  // the order accepted, oldest first.
  std::list<Connection> connections_;
  // While accept fails for lack of descriptors, the listening socket is
  // left alone until then (rather than polled in a busy loop).
  std::chrono::steady_clock::time_point accept_paused_until_;
};

}  // namespace gopt::server

#endif  // GOPT_SERVER_METRICS_HTTP_SERVER_H_
