#include "engine/plan_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "engine/engine.h"
#include "engine/plan_store.h"
#include "engine/testing/test_stores.h"

namespace gopt::engine {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::RequestContext;
using ::testing::Contains;
using ::testing::HasSubstr;

// Three convolution-free branches of matmuls and activations, summed:
// worth spreading over two devices.
constexpr char kBranches[] = R"(HloModule branches
ENTRY main {
  x = f32[1024,4096]{1,0} parameter(0)
  w = f32[4096,4096]{1,0} parameter(1)
  m0 = f32[1024,4096]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e0 = f32[1024,4096]{1,0} exponential(m0)
  m1 = f32[1024,4096]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e1 = f32[1024,4096]{1,0} tanh(m1)
  m2 = f32[1024,4096]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s0 = f32[1024,4096]{1,0} add(e0, e1)
  ROOT s1 = f32[1024,4096]{1,0} add(s0, m2)
}
)";

gopt::v1::OptimizeRequest Request(const std::string& hlo = kBranches) {
  gopt::v1::OptimizeRequest request;
  request.mutable_graph()->set_serialized(hlo);
  request.mutable_graph()->set_format("hlo");
  request.mutable_topology()->set_preset("v100x2-pcie");
  request.mutable_budget()->set_mode(gopt::v1::Budget::BASELINES_ONLY);
  return request;
}

Engine EngineWith(std::shared_ptr<PlanStore> store) {
  EngineOptions options;
  options.plan_store = std::move(store);
  return Engine(options, nullptr);
}

gopt::v1::OptimizeResponse Optimize(const Engine& engine,
                                    const gopt::v1::OptimizeRequest& request) {
  absl::StatusOr<gopt::v1::OptimizeResponse> response =
      engine.Optimize(request, RequestContext());
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? *std::move(response) : gopt::v1::OptimizeResponse();
}

TEST(PlanCacheTest, MissStoresThenTheSameRequestHits) {
  const Engine engine = EngineWith(testing::FreshSqliteStore());
  const gopt::v1::OptimizeResponse miss = Optimize(engine, Request());
  EXPECT_EQ(miss.store_result(), "miss");
  EXPECT_TRUE(miss.stored());
  EXPECT_FALSE(miss.from_store());
  EXPECT_THAT(miss.fingerprint(), HasSubstr("g2-"));
  EXPECT_GT(miss.baselines_size(), 0);

  const gopt::v1::OptimizeResponse hit = Optimize(engine, Request());
  EXPECT_EQ(hit.store_result(), "hit");
  EXPECT_TRUE(hit.from_store());
  EXPECT_EQ(hit.baselines_size(), 0);
  EXPECT_EQ(hit.step_time_s(), miss.step_time_s());
  EXPECT_EQ(hit.default_step_time_s(), miss.default_step_time_s());
  EXPECT_THAT(hit.plan().device(),
              ::testing::ElementsAreArray(miss.plan().device()));
  EXPECT_EQ(hit.store_entry().hits(), 1);
  EXPECT_EQ(hit.store_entry().provenance().method(), miss.method());
  EXPECT_FALSE(hit.store_entry().has_plan());

  // The third time the kept answer serves it, without an import.
  const gopt::v1::OptimizeResponse kept = Optimize(engine, Request());
  EXPECT_TRUE(kept.from_store());
  EXPECT_EQ(kept.step_time_s(), miss.step_time_s());
  EXPECT_EQ(kept.store_entry().hits(), 2);
  std::vector<std::string> stages;
  for (const auto& timing : kept.timings()) stages.push_back(timing.stage());
  EXPECT_THAT(stages, ::testing::ElementsAre("store", "total"));
}

std::vector<std::string> Stages(const gopt::v1::OptimizeResponse& response) {
  std::vector<std::string> stages;
  for (const auto& timing : response.timings())
    stages.push_back(timing.stage());
  return stages;
}

// Another writer (a replica on the same store) improves the entry: the
// kept answer's digest no longer matches, so the next request reads the new
// entry and simulates it afresh (its hit counted once), and that answer is
// kept in turn.
TEST(PlanCacheTest, KeptAnswerIsDroppedOnceAnotherWriterImprovesTheEntry) {
  const std::shared_ptr<PlanStore> store = testing::FreshSqliteStore();
  const Engine engine = EngineWith(store);
  Optimize(engine, Request());
  Optimize(engine, Request());
  const gopt::v1::OptimizeResponse kept = Optimize(engine, Request());
  ASSERT_THAT(Stages(kept), ::testing::ElementsAre("store", "total"));
  absl::StatusOr<PlanStoreEntry> better =
      store->Lookup(kept.store_entry().key());
  ASSERT_TRUE(better.ok()) << better.status();
  better->mutable_provenance()->set_method("another-replica");
  better->set_step_time_s(better->step_time_s() / 2);
  ASSERT_TRUE(store->Put(*better, "", PutMode::kKeepBest).ok());

  const gopt::v1::OptimizeResponse fresh = Optimize(engine, Request());
  EXPECT_EQ(fresh.store_result(), "hit");
  EXPECT_EQ(fresh.store_entry().provenance().method(), "another-replica");
  EXPECT_THAT(Stages(fresh), Contains("import"));
  EXPECT_EQ(fresh.store_entry().hits(), 3);
  const gopt::v1::OptimizeResponse again = Optimize(engine, Request());
  EXPECT_THAT(Stages(again), ::testing::ElementsAre("store", "total"));
  EXPECT_EQ(again.store_entry().provenance().method(), "another-replica");
  EXPECT_EQ(again.store_entry().hits(), 4);
  EXPECT_EQ(again.step_time_s(), fresh.step_time_s());
}

TEST(PlanCacheTest, RenamedNodesHitThroughTheFingerprint) {
  const Engine engine = EngineWith(testing::FreshSqliteStore());
  const gopt::v1::OptimizeResponse miss = Optimize(engine, Request());
  const std::string renamed = absl::StrReplaceAll(
      kBranches,
      {{"m0", "matmul_0"}, {"e1", "tanh_1"}, {"ROOT s1", "ROOT sum"}});
  const gopt::v1::OptimizeResponse hit = Optimize(engine, Request(renamed));
  EXPECT_EQ(hit.store_result(), "hit");
  EXPECT_EQ(hit.fingerprint(), miss.fingerprint());
  EXPECT_EQ(hit.step_time_s(), miss.step_time_s());
}

TEST(PlanCacheTest, MoreEffortWarmStartsAndRecordsTheEffort) {
  const Engine engine = EngineWith(testing::FreshSqliteStore());
  Optimize(engine, Request());
  gopt::v1::OptimizeRequest zero_shot = Request();
  zero_shot.mutable_budget()->set_mode(gopt::v1::Budget::ZERO_SHOT);
  const gopt::v1::OptimizeResponse warm = Optimize(engine, zero_shot);
  EXPECT_EQ(warm.store_result(), "warm_start");
  EXPECT_GT(warm.baselines_size(), 0);
  EXPECT_EQ(warm.store_entry().provenance().budget_mode(),
            gopt::v1::Budget::ZERO_SHOT);
  EXPECT_EQ(Optimize(engine, zero_shot).store_result(), "hit");
}

TEST(PlanCacheTest, SkipAndReadOnlyNeverWrite) {
  const std::shared_ptr<PlanStore> store = testing::FreshSqliteStore();
  const Engine engine = EngineWith(store);
  gopt::v1::OptimizeRequest request = Request();
  request.set_store(gopt::v1::OptimizeRequest::SKIP);
  EXPECT_EQ(Optimize(engine, request).store_result(), "skip");
  request.set_store(gopt::v1::OptimizeRequest::READ_ONLY);
  const gopt::v1::OptimizeResponse read_only = Optimize(engine, request);
  EXPECT_EQ(read_only.store_result(), "miss");
  EXPECT_FALSE(read_only.stored());
  EXPECT_EQ(store->Stats()->entries, 0);
}

TEST(PlanCacheTest, StalePlanIsIgnoredAndReplaced) {
  const std::shared_ptr<PlanStore> store = testing::FreshSqliteStore();
  const Engine engine = EngineWith(store);
  const gopt::v1::OptimizeResponse first = Optimize(engine, Request());
  PlanStoreEntry stale = *store->Lookup(first.store_entry().key());
  stale.mutable_plan()->clear_device();
  stale.mutable_plan()->add_device(0);  // 1 node: not this graph
  stale.set_step_time_s(1e-9);
  ASSERT_TRUE(store->Put(stale, "", PutMode::kReplace).ok());
  gopt::v1::OptimizeRequest refresh_kept = Request();
  refresh_kept.mutable_graph()->set_name("another name: no kept answer");
  const gopt::v1::OptimizeResponse second = Optimize(engine, refresh_kept);
  EXPECT_THAT(second.warnings(), Contains(HasSubstr("no longer fits")));
  EXPECT_TRUE(second.stored());
  EXPECT_EQ(store->Lookup(first.store_entry().key())->plan().device_size(), 9);
}

// Neither an unreachable Redis nor one killed mid-use fails a request.
TEST(PlanCacheTest, StoreFaultsBecomeWarnings) {
  testing::RedisServer redis;
  absl::StatusOr<std::unique_ptr<PlanStore>> opened =
      OpenPlanStore(redis.url());
  ASSERT_TRUE(opened.ok()) << opened.status();
  const Engine engine =
      EngineWith(std::shared_ptr<PlanStore>(*std::move(opened)));
  EXPECT_EQ(Optimize(engine, Request()).store_result(), "miss");
  redis.Kill();
  for (int i = 0; i < 3; ++i) {
    gopt::v1::OptimizeRequest request = Request();
    request.mutable_graph()->set_name(absl::StrCat("request ", i));
    const gopt::v1::OptimizeResponse response = Optimize(engine, request);
    EXPECT_EQ(response.store_result(), "error");
    EXPECT_THAT(response.warnings(),
                Contains(HasSubstr("answering without the store")));
    EXPECT_EQ(response.plan().device_size(), 9);
  }
}

// redis-server SIGKILLed while requests stream through the engine from
// several threads: no request fails; every request that started after the
// kill answers without the store and says so; once redis-server is back
// and the reconnect backoff (a fake clock) has passed, requests store and
// hit again. The kill comes after a count of answers, never a time.
TEST(PlanCacheTest, RedisKilledMidLoadFailsNoRequest) {
  testing::RedisServer redis;
  FakeClock clock;
  PlanStoreOptions options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<PlanStore>> opened =
      OpenPlanStore(redis.url(), options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const Engine engine =
      EngineWith(std::shared_ptr<PlanStore>(*std::move(opened)));
  ASSERT_EQ(Optimize(engine, Request()).store_result(), "miss");

  constexpr int kThreads = 4;
  constexpr int kRequestsPerThread = 8;
  constexpr int kKillAfter = 6;  // answers
  struct Answer {
    bool after_kill = false;
    absl::StatusOr<gopt::v1::OptimizeResponse> response;
  };
  absl::Mutex mutex;
  int answered = 0;
  bool killed = false;
  std::vector<std::vector<Answer>> answers(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRequestsPerThread; ++i) {
        // Half the requests are the stored one byte for byte (the memo's
        // path), half renamed graphs (import, then the fingerprint).
        gopt::v1::OptimizeRequest request = Request();
        if (i % 2 == 1) {
          request.mutable_graph()->set_name(absl::StrCat("t", t, "-", i));
        }
        Answer answer;
        {
          absl::MutexLock lock(&mutex);
          answer.after_kill = killed;
        }
        answer.response = engine.Optimize(request, RequestContext());
        absl::MutexLock lock(&mutex);
        ++answered;
        answers[t].push_back(std::move(answer));
      }
    });
  }
  {
    absl::MutexLock lock(&mutex);
    mutex.Await(absl::Condition(
        +[](int* count) { return *count >= kKillAfter; }, &answered));
    redis.Kill();
    killed = true;
  }
  for (std::thread& thread : threads) thread.join();

  int after_kill = 0;
  for (const std::vector<Answer>& thread_answers : answers) {
    for (const Answer& answer : thread_answers) {
      ASSERT_TRUE(answer.response.ok()) << answer.response.status();
      EXPECT_EQ(answer.response->plan().device_size(), 9);
      const std::string& result = answer.response->store_result();
      if (result == "error") {
        EXPECT_THAT(answer.response->warnings(),
                    Contains(HasSubstr("answering without the store")));
      } else {
        EXPECT_THAT(result, ::testing::AnyOf("hit", "miss"));
      }
      if (answer.after_kill) {
        ++after_kill;
        EXPECT_EQ(result, "error");
      }
    }
  }
  EXPECT_GT(after_kill, 0);

  // Back, but within the backoff: still without the store.
  redis.Restart();
  gopt::v1::OptimizeRequest request = Request();
  EXPECT_EQ(Optimize(engine, request).store_result(), "error");
  // Once the backoff has passed, the store is used again (the restarted
  // server has no persistence: a miss that stores, then a hit).
  clock.Advance(options.redis_max_backoff);
  const gopt::v1::OptimizeResponse miss = Optimize(engine, request);
  EXPECT_EQ(miss.store_result(), "miss");
  EXPECT_TRUE(miss.stored());
  EXPECT_THAT(miss.warnings(),
              ::testing::Not(Contains(HasSubstr("answering without"))));
  EXPECT_EQ(Optimize(engine, request).store_result(), "hit");
}

}  // namespace
}  // namespace gopt::engine
