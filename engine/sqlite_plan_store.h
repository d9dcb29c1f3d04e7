#ifndef GOPT_ENGINE_SQLITE_PLAN_STORE_H_
#define GOPT_ENGINE_SQLITE_PLAN_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "engine/plan_store.h"

struct sqlite3;

namespace gopt::engine {

// The schema SqlitePlanStore writes. A version 1 file is moved to it when
// opened (keeping its entries); a file with another version is
// FailedPrecondition (it was made by another gopt).
inline constexpr int kSqlitePlanStoreSchemaVersion = 2;

// A PlanStore in one SQLite file, in WAL mode so that gopt-server and the
// `gopt` CLI (several processes) can use the same file at once; writers wait
// up to 5 s for each other. Puts run in one IMMEDIATE transaction each
// (read, merge, write), so concurrent keep-best writers never lose the best
// plan. Past PlanStoreOptions::max_bytes of values, the least recently used
// entries are evicted.
//
// A file that is not a SQLite database (or is corrupt at open) is moved
// aside to PATH.corrupt-MICROS and a new store is created; open_warning()
// says so. An entry whose value fails its checksum reads as DataLoss and is
// deleted, so the next Put replaces it.
//
// Thread-safe (one connection, behind a mutex).
class SqlitePlanStore final : public PlanStore {
 public:
  // Opens or creates the store at `path` (and its directory).
  static absl::StatusOr<std::unique_ptr<SqlitePlanStore>> Open(
      const std::string& path, const PlanStoreOptions& options);
  ~SqlitePlanStore() override;

  absl::StatusOr<PlanStoreEntry> Lookup(absl::string_view key) override;
  absl::StatusOr<bool> Put(const PlanStoreEntry& entry,
                           absl::string_view exact_key, PutMode mode) override;
  absl::StatusOr<PlanStoreTouch> Touch(absl::string_view key) override;
  absl::StatusOr<std::vector<PlanStoreEntry>> List(
      const PlanStoreFilter& filter) override;
  absl::StatusOr<int64_t> Prune(const PlanStoreFilter& filter) override;
  absl::StatusOr<PlanStoreStats> Stats() override;
  absl::Status PutRequest(absl::string_view key,
                          absl::string_view request) override;
  absl::StatusOr<std::string> LookupRequest(absl::string_view key) override;
  std::string Describe() const override;

  // Set when Open had to move a corrupt file aside; empty otherwise.
  const std::string& open_warning() const { return open_warning_; }

 private:
  SqlitePlanStore(std::string path, const PlanStoreOptions& options,
                  sqlite3* db, std::string open_warning);

  absl::StatusOr<std::optional<PlanStoreEntry>> ReadLocked(
      absl::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  absl::StatusOr<bool> PutLocked(const PlanStoreEntry& entry,
                                 absl::string_view exact_key, PutMode mode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Deletes least recently used entries (never `keep`) until the values
  // fit in max_bytes.
  absl::Status EvictLocked(absl::string_view keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string path_;
  const PlanStoreOptions options_;
  const std::string open_warning_;
  absl::Mutex mutex_;
  sqlite3* const db_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_SQLITE_PLAN_STORE_H_
