#include "engine/testing/test_stores.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gopt::engine::testing {
namespace {

constexpr char kRedisServer[] = "/usr/bin/redis-server";

// A port nothing listens on now (bound, read, released).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t size = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

std::shared_ptr<PlanStore> FreshSqliteStore() {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "plan_stores" /
      test->test_suite_name() / test->name();
  std::filesystem::remove_all(dir);
  absl::StatusOr<std::unique_ptr<PlanStore>> store =
      OpenPlanStore((dir / "plans.sqlite").string());
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::shared_ptr<PlanStore>(*std::move(store)) : nullptr;
}

RedisServer::RedisServer() : port_(FreeLoopbackPort()) { Start(); }

RedisServer::~RedisServer() = default;

std::string RedisServer::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_, "/0");
}

void RedisServer::Start() {
  if (!std::filesystem::exists(kRedisServer)) {
    ADD_FAILURE() << kRedisServer
                  << " is missing: apt-get install redis-server "
                     "(scripts/install-deps.sh)";
    return;
  }
  process_ = std::make_unique<gopt::testing::ChildProcess>(
      kRedisServer,
      std::vector<std::string>{"--port", absl::StrCat(port_), "--bind",
                               "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", ::testing::TempDir()});
  process_->WaitForLog("Ready to accept connections", "redis-server ready");
}

void RedisServer::Kill() {
  if (process_ == nullptr) return;
  process_->Signal(SIGKILL);
  process_->Wait();
  process_.reset();
}

void RedisServer::Restart() { Start(); }

}  // namespace gopt::engine::testing
