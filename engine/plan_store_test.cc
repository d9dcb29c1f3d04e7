#include "engine/plan_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/redis_plan_store.h"
#include "engine/sqlite_plan_store.h"
#include "engine/testing/test_stores.h"
#include "gopt/v1/optimizer.pb.h"

namespace gopt::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// An entry whose plan puts `num_nodes` nodes on device `device`.
PlanStoreEntry MakeEntry(const std::string& key, double step_time_s,
                         int device = 0, int num_nodes = 4) {
  PlanStoreEntry entry;
  entry.set_key(key);
  entry.set_fingerprint("g2-test");
  entry.set_step_time_s(step_time_s);
  for (int i = 0; i < num_nodes; ++i) entry.mutable_plan()->add_device(device);
  entry.mutable_plan()->set_method(absl::StrCat("method-", device));
  entry.mutable_provenance()->set_method(absl::StrCat("method-", device));
  entry.mutable_provenance()->set_budget_mode(gopt::v1::Budget::ZERO_SHOT);
  entry.mutable_provenance()->set_num_simulations(10);
  entry.set_graph_name("g");
  return entry;
}

std::string TempPath(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / "plan_store_test" /
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(dir);
  const fs::path path = dir / name;
  fs::remove(path);
  fs::remove(path.string() + "-wal");
  fs::remove(path.string() + "-shm");
  return path.string();
}

// The behaviour every store shares, run on SQLite and on a real Redis.
class PlanStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    clock_.Advance(absl::Hours(24 * 365));  // well after the epoch
    options_.clock = &clock_;
    if (GetParam() == "redis") {
      redis_ = std::make_unique<testing::RedisServer>();
      spec_ = redis_->url();
    } else {
      spec_ = TempPath("plans.sqlite");
    }
    store_ = Open();
  }

  std::unique_ptr<PlanStore> Open() {
    absl::StatusOr<std::unique_ptr<PlanStore>> store =
        OpenPlanStore(spec_, options_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  FakeClock clock_{absl::Seconds(1)};
  PlanStoreOptions options_;
  std::unique_ptr<testing::RedisServer> redis_;
  std::string spec_;
  std::unique_ptr<PlanStore> store_;
};

TEST_P(PlanStoreTest, PutThenLookupByPlanAndExactKey) {
  ASSERT_NE(store_, nullptr);
  EXPECT_TRUE(absl::IsNotFound(store_->Lookup("k1-a").status()));
  absl::StatusOr<bool> stored =
      store_->Put(MakeEntry("k1-a", 2.0), "x1-a", PutMode::kKeepBest);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(*stored);
  for (const char* key : {"k1-a", "x1-a"}) {
    absl::StatusOr<PlanStoreEntry> entry = store_->Lookup(key);
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_EQ(entry->key(), "k1-a");
    EXPECT_EQ(entry->step_time_s(), 2.0);
    EXPECT_EQ(entry->plan().device_size(), 4);
    EXPECT_GT(entry->provenance().created_unix_micros(), 0);
    EXPECT_GT(entry->value_bytes(), 0);
  }
}

TEST_P(PlanStoreTest, KeepBestKeepsTheFasterPlanAndTheLargerEffort) {
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(
      store_->Put(MakeEntry("k1-a", 2.0, /*device=*/1), "", PutMode::kKeepBest)
          .ok());
  PlanStoreEntry slower = MakeEntry("k1-a", 3.0, /*device=*/2);
  slower.mutable_provenance()->set_budget_mode(gopt::v1::Budget::FINE_TUNE);
  slower.mutable_provenance()->set_fine_tune_steps(50);
  absl::StatusOr<bool> stored = store_->Put(slower, "", PutMode::kKeepBest);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_FALSE(*stored);
  absl::StatusOr<PlanStoreEntry> entry = store_->Lookup("k1-a");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->step_time_s(), 2.0);
  EXPECT_EQ(entry->plan().device(0), 1);
  // The fine-tuning did not beat it: the entry now stands for that effort.
  EXPECT_EQ(entry->provenance().budget_mode(), gopt::v1::Budget::FINE_TUNE);
  EXPECT_EQ(entry->provenance().fine_tune_steps(), 50);
  EXPECT_EQ(entry->provenance().num_simulations(), 20);

  stored =
      store_->Put(MakeEntry("k1-a", 1.0, /*device=*/3), "", PutMode::kKeepBest);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(*stored);
  entry = store_->Lookup("k1-a");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->step_time_s(), 1.0);
  EXPECT_EQ(entry->plan().device(0), 3);
  EXPECT_EQ(entry->provenance().budget_mode(), gopt::v1::Budget::FINE_TUNE);
}

TEST_P(PlanStoreTest, ReplaceOverwritesAFasterPlan) {
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(store_->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
  absl::StatusOr<bool> stored =
      store_->Put(MakeEntry("k1-a", 5.0, /*device=*/1), "", PutMode::kReplace);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(*stored);
  EXPECT_EQ(store_->Lookup("k1-a")->step_time_s(), 5.0);
}

TEST_P(PlanStoreTest, TouchCountsHitsAndListOrdersByThem) {
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(store_->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
  ASSERT_TRUE(store_->Put(MakeEntry("k1-b", 1.0), "", PutMode::kKeepBest).ok());
  absl::StatusOr<PlanStoreTouch> first = store_->Touch("k1-b");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->hits, 1);
  absl::StatusOr<PlanStoreTouch> touched = store_->Touch("k1-b");
  ASSERT_TRUE(touched.ok()) << touched.status();
  EXPECT_EQ(touched->hits, 2);
  // The fake clock moves on with every reading.
  EXPECT_GT(touched->last_used_unix_micros, first->last_used_unix_micros);
  ASSERT_TRUE(store_->Touch("k1-a").ok());
  EXPECT_TRUE(absl::IsNotFound(store_->Touch("k1-none").status()));
  absl::StatusOr<std::vector<PlanStoreEntry>> listed =
      store_->List(PlanStoreFilter());
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].key(), "k1-b");
  EXPECT_EQ((*listed)[0].hits(), 2);
  EXPECT_FALSE((*listed)[0].has_plan());
  EXPECT_EQ((*listed)[1].hits(), 1);
  // A Put keeps the hit count.
  ASSERT_TRUE(store_->Put(MakeEntry("k1-b", 0.5), "", PutMode::kKeepBest).ok());
  EXPECT_EQ(store_->Lookup("k1-b")->hits(), 2);
}

// Touch names the stored value by its digest without reading it: the same
// value, the same digest; a new plan, another.
TEST_P(PlanStoreTest, TouchReturnsTheDigestOfTheStoredValue) {
  ASSERT_NE(store_, nullptr);
  const PlanStoreEntry slow = MakeEntry("k1-a", 2.0, /*device=*/0);
  ASSERT_TRUE(store_->Put(slow, "x1-a", PutMode::kKeepBest).ok());
  absl::StatusOr<PlanStoreTouch> first = store_->Touch("k1-a");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->value_digest.size(), kValueHeaderBytes);
  absl::StatusOr<PlanStoreEntry> stored = store_->Lookup("k1-a");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(first->value_digest, ValueDigest(EncodeEntryValue(*stored)));
  EXPECT_EQ(store_->Touch("k1-a")->value_digest, first->value_digest);
  clock_.Advance(absl::Seconds(1));
  // A faster plan replaces it.
  ASSERT_TRUE(
      store_->Put(MakeEntry("k1-a", 1.0, 1), "", PutMode::kKeepBest).ok());
  absl::StatusOr<PlanStoreTouch> replaced = store_->Touch("k1-a");
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_NE(replaced->value_digest, first->value_digest);
  EXPECT_EQ(replaced->hits, 3);
}

TEST_P(PlanStoreTest, PruneRemovesEntriesUnusedSince) {
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(
      store_->Put(MakeEntry("k1-old", 1.0), "x1-old", PutMode::kKeepBest).ok());
  const absl::Time cut = clock_.Now();
  ASSERT_TRUE(
      store_->Put(MakeEntry("k1-new", 1.0), "", PutMode::kKeepBest).ok());
  PlanStoreFilter filter;
  filter.unused_since = cut;
  absl::StatusOr<int64_t> removed = store_->Prune(filter);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 1);
  EXPECT_TRUE(absl::IsNotFound(store_->Lookup("k1-old").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Lookup("x1-old").status()));
  EXPECT_TRUE(store_->Lookup("k1-new").ok());
  absl::StatusOr<PlanStoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->entries, 1);
  EXPECT_EQ(stats->bytes, store_->Lookup("k1-new")->value_bytes());
}

// Writers with their own connections race on one key; the fastest plan
// any of them offered is what stays.
TEST_P(PlanStoreTest, ConcurrentWritersKeepTheBestPlan) {
  ASSERT_NE(store_, nullptr);
  constexpr int kWriters = 6;
  constexpr int kPutsEach = 15;
  std::vector<std::unique_ptr<PlanStore>> stores;
  for (int i = 0; i < kWriters; ++i) stores.push_back(Open());
  std::vector<double> best(kWriters, 1e9);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 random(/*seed=*/w + 1);
      std::uniform_real_distribution<double> step(1.0, 100.0);
      for (int i = 0; i < kPutsEach; ++i) {
        const double step_time_s = step(random);
        absl::StatusOr<bool> stored =
            stores[w]->Put(MakeEntry("k1-race", step_time_s, /*device=*/w),
                           "x1-race", PutMode::kKeepBest);
        ASSERT_TRUE(stored.ok()) << stored.status();
        best[w] = std::min(best[w], step_time_s);
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  const int winner = static_cast<int>(
      std::min_element(best.begin(), best.end()) - best.begin());
  absl::StatusOr<PlanStoreEntry> entry = store_->Lookup("x1-race");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->step_time_s(), best[winner]);
  EXPECT_EQ(entry->plan().device(0), winner);
  EXPECT_EQ(entry->provenance().num_simulations(), 10 * kWriters * kPutsEach);
}

TEST_P(PlanStoreTest, ExportThenImportIntoAnotherStore) {
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(store_->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
  ASSERT_TRUE(store_->Put(MakeEntry("k1-b", 2.0), "", PutMode::kKeepBest).ok());
  std::stringstream exported;
  absl::StatusOr<int64_t> written = ExportEntries(store_.get(), &exported);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, 2);
  absl::StatusOr<std::unique_ptr<PlanStore>> other =
      OpenPlanStore(TempPath("imported.sqlite"), options_);
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<int64_t> imported = ImportEntries(&exported, other->get());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(*imported, 2);
  EXPECT_EQ((*other)->Lookup("k1-b")->step_time_s(), 2.0);
}

TEST_P(PlanStoreTest, KeepsTheRequestBesideTheEntryAcrossPuts) {
  ASSERT_NE(store_, nullptr);
  EXPECT_TRUE(absl::IsNotFound(store_->PutRequest("k1-a", "request bytes")));
  ASSERT_TRUE(store_->Put(MakeEntry("k1-a", 2.0), "", PutMode::kKeepBest).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->LookupRequest("k1-a").status()));
  ASSERT_TRUE(store_->PutRequest("k1-a", "request bytes").ok());
  ASSERT_TRUE(store_->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
  absl::StatusOr<std::string> request = store_->LookupRequest("k1-a");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(*request, "request bytes");
  PlanStoreFilter all;
  ASSERT_TRUE(store_->Prune(all).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->LookupRequest("k1-a").status()));
  EXPECT_EQ(store_->Stats()->bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, PlanStoreTest,
                         ::testing::Values("sqlite", "redis"),
                         [](const auto& info) { return info.param; });

TEST(PlanStoreEncodingTest, TornValueIsDataLoss) {
  const std::string value = EncodeEntryValue(MakeEntry("k1-a", 1.0));
  EXPECT_TRUE(DecodeEntryValue(value, "k1-a").ok());
  for (size_t cut : {size_t{0}, size_t{3}, size_t{36}, value.size() - 1}) {
    absl::Status status =
        DecodeEntryValue(value.substr(0, cut), "k1-a").status();
    EXPECT_TRUE(absl::IsDataLoss(status)) << cut << ": " << status;
  }
  std::string flipped = value;
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_THAT(DecodeEntryValue(flipped, "k1-a").status().message(),
              HasSubstr("checksum mismatch"));
}

TEST(PlanStoreEncodingTest, EffortOrder) {
  gopt::v1::PlanProvenance zero_shot;
  zero_shot.set_budget_mode(gopt::v1::Budget::ZERO_SHOT);
  EXPECT_TRUE(EffortAtLeast(zero_shot, gopt::v1::Budget::BASELINES_ONLY, 0, 0));
  EXPECT_TRUE(
      EffortAtLeast(zero_shot, gopt::v1::Budget::MODE_UNSPECIFIED, 0, 0));
  EXPECT_FALSE(EffortAtLeast(zero_shot, gopt::v1::Budget::FINE_TUNE, 10, 0));
  gopt::v1::PlanProvenance fine_tuned;
  fine_tuned.set_budget_mode(gopt::v1::Budget::FINE_TUNE);
  fine_tuned.set_fine_tune_steps(50);
  EXPECT_TRUE(EffortAtLeast(fine_tuned, gopt::v1::Budget::FINE_TUNE, 50, 0));
  EXPECT_FALSE(EffortAtLeast(fine_tuned, gopt::v1::Budget::FINE_TUNE, 51, 0));
  EXPECT_FALSE(EffortAtLeast(fine_tuned, gopt::v1::Budget::FINE_TUNE, 0, 10));
}

// Runs `sql` on the SQLite file at `path` (beside the store's own
// connection, as another process would).
void RunSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(SqlitePlanStoreTest, TornValueIsNeverReadAndIsReplaced) {
  const std::string path = TempPath("plans.sqlite");
  absl::StatusOr<std::unique_ptr<PlanStore>> store = OpenPlanStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(
      (*store)->Put(MakeEntry("k1-a", 1.0), "x1-a", PutMode::kKeepBest).ok());
  RunSql(path,
         "UPDATE plan_values SET value = substr(value, 1, length(value) - 7)");
  EXPECT_TRUE(absl::IsDataLoss((*store)->Lookup("x1-a").status()));
  EXPECT_TRUE(absl::IsNotFound((*store)->Lookup("k1-a").status()));
  absl::StatusOr<bool> stored =
      (*store)->Put(MakeEntry("k1-a", 3.0), "x1-a", PutMode::kKeepBest);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(*stored);
  EXPECT_EQ((*store)->Lookup("x1-a")->step_time_s(), 3.0);
}

// A store written by the first schema (value and request in the entries
// row) is moved to the current one when opened, keeping every entry.
TEST(SqlitePlanStoreTest, Version1StoreIsMigratedWithItsEntries) {
  const std::string path = TempPath("plans.sqlite");
  const std::string value = EncodeEntryValue(MakeEntry("k1-a", 1.5));
  const std::string request = SealValue("the request");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(
            db,
            "CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES('schema_version', '1');"
            "CREATE TABLE entries(key TEXT PRIMARY KEY, value BLOB NOT NULL,"
            " value_bytes INTEGER NOT NULL, step_time_s REAL NOT NULL,"
            " hits INTEGER NOT NULL DEFAULT 0, last_used_us INTEGER NOT NULL,"
            " request BLOB, request_bytes INTEGER NOT NULL DEFAULT 0);"
            "CREATE INDEX entries_by_last_used ON entries(last_used_us);"
            "CREATE TABLE aliases(exact_key TEXT PRIMARY KEY,"
            " key TEXT NOT NULL);"
            "INSERT INTO aliases VALUES('x1-a', 'k1-a');",
            nullptr, nullptr, nullptr),
        SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_stmt* insert = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "INSERT INTO entries VALUES(?, ?, ?, 1.5, 4, "
                                 "7, ?, ?)",
                                 -1, &insert, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(insert, 1, "k1-a", -1, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert, 2, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 3, static_cast<int64_t>(value.size()));
    sqlite3_bind_blob(insert, 4, request.data(),
                      static_cast<int>(request.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 5, static_cast<int64_t>(request.size()));
    EXPECT_EQ(sqlite3_step(insert), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(insert);
    sqlite3_close(db);
  }
  absl::StatusOr<std::unique_ptr<PlanStore>> store = OpenPlanStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<PlanStoreEntry> entry = (*store)->Lookup("x1-a");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->step_time_s(), 1.5);
  EXPECT_EQ(entry->hits(), 4);
  EXPECT_EQ((*store)->LookupRequest("k1-a").value_or(""), "the request");
  absl::StatusOr<PlanStoreTouch> touched = (*store)->Touch("k1-a");
  ASSERT_TRUE(touched.ok()) << touched.status();
  EXPECT_EQ(touched->hits, 5);
  EXPECT_EQ(touched->value_digest, ValueDigest(value));
  EXPECT_EQ((*store)->Stats()->bytes,
            static_cast<int64_t>(value.size() + request.size()));
  // Opened again: already version 2.
  store->reset();
  store = OpenPlanStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->Prune(PlanStoreFilter()).value_or(0), 1);
  EXPECT_EQ((*store)->Stats()->bytes, 0);
}

TEST(SqlitePlanStoreTest, CorruptFileIsMovedAsideAndReplaced) {
  const std::string path = TempPath("plans.sqlite");
  {
    std::ofstream garbage(path, std::ios::binary);
    garbage << std::string(8192, '\x5a');
  }
  absl::StatusOr<std::unique_ptr<SqlitePlanStore>> store =
      SqlitePlanStore::Open(path, PlanStoreOptions());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT((*store)->open_warning(), HasSubstr(".corrupt-"));
  EXPECT_TRUE(
      (*store)->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
  EXPECT_TRUE((*store)->Lookup("k1-a").ok());
}

TEST(SqlitePlanStoreTest, EvictsLeastRecentlyUsedPastTheCap) {
  FakeClock clock(absl::Seconds(1));
  PlanStoreOptions options;
  options.clock = &clock;
  const int64_t one = static_cast<int64_t>(
      EncodeEntryValue(MakeEntry("k1-0", 1.0, 0, /*num_nodes=*/500)).size());
  options.max_bytes = 3 * one + one / 2;
  absl::StatusOr<std::unique_ptr<PlanStore>> store =
      OpenPlanStore(TempPath("plans.sqlite"), options);
  ASSERT_TRUE(store.ok()) << store.status();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*store)
                    ->Put(MakeEntry(absl::StrCat("k1-", i), 1.0, 0, 500), "",
                          PutMode::kKeepBest)
                    .ok());
  }
  ASSERT_TRUE((*store)->Touch("k1-0").ok());  // k1-1 is now the oldest
  ASSERT_TRUE((*store)
                  ->Put(MakeEntry("k1-3", 1.0, 0, 500), "", PutMode::kKeepBest)
                  .ok());
  EXPECT_TRUE((*store)->Lookup("k1-0").ok());
  EXPECT_TRUE(absl::IsNotFound((*store)->Lookup("k1-1").status()));
  EXPECT_TRUE((*store)->Lookup("k1-2").ok());
  EXPECT_TRUE((*store)->Lookup("k1-3").ok());
  EXPECT_LE((*store)->Stats()->bytes, options.max_bytes);
}

TEST(SqlitePlanStoreTest, NewerSchemaIsFailedPrecondition) {
  const std::string path = TempPath("plans.sqlite");
  ASSERT_TRUE(OpenPlanStore(path).ok());
  RunSql(path, "UPDATE meta SET value = '99' WHERE name = 'schema_version'");
  absl::Status status = OpenPlanStore(path).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("schema version 99"));
}

// A full disk (the file size limit of a child process, as a small tmpfs
// would do) fails Puts with a Status, never a crash, and the entries
// written before stay readable.
TEST(SqlitePlanStoreTest, DiskFullFailsPutsButKeepsEntries) {
  const std::string path = TempPath("plans.sqlite");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    absl::StatusOr<std::unique_ptr<PlanStore>> store = OpenPlanStore(path);
    if (!store.ok()) _exit(10);
    if (!(*store)->Put(MakeEntry("k1-first", 1.0), "", PutMode::kKeepBest).ok())
      _exit(11);
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = 256 * 1024;
    setrlimit(RLIMIT_FSIZE, &limit);
    bool failed = false;
    for (int i = 0; i < 200 && !failed; ++i) {
      absl::StatusOr<bool> stored =
          (*store)->Put(MakeEntry(absl::StrCat("k1-big", i), 1.0, 0, 20000), "",
                        PutMode::kKeepBest);
      failed = !stored.ok();
    }
    if (!failed) _exit(12);
    if (!(*store)->Lookup("k1-first").ok()) _exit(13);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child crashed: " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: open failed, 11: first put failed, 12: no put failed at the "
         "limit, 13: the first entry was lost";
  // A fresh process reads what was committed.
  absl::StatusOr<std::unique_ptr<PlanStore>> store = OpenPlanStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->Lookup("k1-first").ok());
}

TEST(RedisPlanStoreTest, MalformedUrlsAreInvalidArgument) {
  for (const char* url : {"redis://", "redis://host:99999", "redis://h:1/x"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(OpenPlanStore(url).status())) << url;
  }
}

// redis-server dies under a client: calls fail fast with Unavailable, and
// once the backoff has passed and a server is back the store works again.
TEST(RedisPlanStoreTest, KilledServerIsUnavailableThenReconnects) {
  testing::RedisServer redis;
  FakeClock clock;
  PlanStoreOptions options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<PlanStore>> store =
      OpenPlanStore(redis.url(), options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(
      (*store)->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
  redis.Kill();
  absl::Status status = (*store)->Lookup("k1-a").status();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  // Within the backoff: fails at once, without trying.
  status = (*store)->Lookup("k1-a").status();
  EXPECT_THAT(status.message(), HasSubstr("next reconnect in"));
  redis.Restart();
  clock.Advance(options.redis_max_backoff);
  // The restarted server has no persistence: the entry is gone, the store
  // answers again.
  status = (*store)->Lookup("k1-a").status();
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_TRUE(
      (*store)->Put(MakeEntry("k1-a", 1.0), "", PutMode::kKeepBest).ok());
}

TEST(RedisPlanStoreTest, UnreachableServerOpensAndFailsUnavailable) {
  PlanStoreOptions options;
  options.redis_timeout = absl::Milliseconds(100);
  // Port 1 on loopback: nothing listens there.
  absl::StatusOr<std::unique_ptr<PlanStore>> store =
      OpenPlanStore("redis://127.0.0.1:1/0", options);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(absl::IsUnavailable((*store)->Lookup("k1-a").status()));
}

}  // namespace
}  // namespace gopt::engine
