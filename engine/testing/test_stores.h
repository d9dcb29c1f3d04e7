#ifndef GOPT_ENGINE_TESTING_TEST_STORES_H_
#define GOPT_ENGINE_TESTING_TEST_STORES_H_

#include <memory>
#include <string>

#include "engine/plan_store.h"
#include "tests/util/child_process.h"

namespace gopt::engine::testing {

// An empty SQLite plan store in a folder of its own under the test's temp
// directory, named after the running test. Fails the test (and returns
// null) when it cannot be opened.
std::shared_ptr<PlanStore> FreshSqliteStore();

// A real redis-server (the Debian package's /usr/bin/redis-server) on a
// free loopback port, without persistence, for tests; killed when
// destroyed. Fails the test when redis-server is missing or never becomes
// ready.
class RedisServer {
 public:
  // Starts on a free port.
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // redis://127.0.0.1:PORT/0
  std::string url() const;
  int port() const { return port_; }

  // SIGKILLs the server (a crash), then starts a new one on the same port.
  void Kill();
  void Restart();

 private:
  void Start();

  int port_ = 0;
  std::unique_ptr<gopt::testing::ChildProcess> process_;
};

}  // namespace gopt::engine::testing

#endif  // GOPT_ENGINE_TESTING_TEST_STORES_H_
