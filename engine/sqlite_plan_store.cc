#include "engine/sqlite_plan_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace gopt::engine {
namespace {

constexpr int kBusyTimeoutMs = 5000;

// One sqlite3 result code as a Status with `what` and SQLite's message.
absl::Status SqliteError(sqlite3* db, int code, absl::string_view what) {
  const std::string message =
      absl::StrCat("plan store: ", what, ": ", sqlite3_errstr(code),
                   db != nullptr ? absl::StrCat(" (", sqlite3_errmsg(db), ")")
                                 : std::string());
  switch (code & 0xff) {
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

// A prepared statement, finalized when it goes out of scope.
class Statement {
 public:
  Statement(sqlite3* db, absl::string_view sql) : db_(db) {
    code_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()),
                               &statement_, nullptr);
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  absl::Status status(absl::string_view what) const {
    if (code_ == SQLITE_OK) return absl::OkStatus();
    return SqliteError(db_, code_, what);
  }
  void Bind(int index, absl::string_view text) {
    sqlite3_bind_text(statement_, index, text.data(),
                      static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int index, absl::string_view bytes) {
    sqlite3_bind_blob(statement_, index, bytes.data(),
                      static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  void Bind(int index, int64_t value) {
    sqlite3_bind_int64(statement_, index, value);
  }
  void Bind(int index, double value) {
    sqlite3_bind_double(statement_, index, value);
  }
  // True with a row, false when done; an error otherwise.
  absl::StatusOr<bool> Step(absl::string_view what) {
    const int code = sqlite3_step(statement_);
    if (code == SQLITE_ROW) return true;
    if (code == SQLITE_DONE) return false;
    return SqliteError(db_, code, what);
  }
  absl::Status Run(absl::string_view what) {
    RETURN_IF_ERROR(status(what));
    ASSIGN_OR_RETURN(bool row, Step(what));
    (void)row;
    return absl::OkStatus();
  }
  int64_t Int(int column) const {
    return sqlite3_column_int64(statement_, column);
  }
  absl::string_view Text(int column) const {
    const void* data = sqlite3_column_blob(statement_, column);
    const int size = sqlite3_column_bytes(statement_, column);
    return data == nullptr ? absl::string_view()
                           : absl::string_view(static_cast<const char*>(data),
                                               static_cast<size_t>(size));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
  int code_ = SQLITE_OK;
};

absl::Status Exec(sqlite3* db, const char* sql, absl::string_view what) {
  const int code = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (code != SQLITE_OK) return SqliteError(db, code, what);
  return absl::OkStatus();
}

// Rolls back an open transaction unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {}
  ~Transaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  absl::Status Begin() {
    RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", "beginning a write"));
    open_ = true;
    return absl::OkStatus();
  }
  absl::Status Commit() {
    RETURN_IF_ERROR(Exec(db_, "COMMIT", "committing a write"));
    open_ = false;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  bool open_ = false;
};

// Version 2. The values and kept requests live in tables of their own, so
// that counting a hit (Touch: hits and last use) rewrites a row of a few
// dozen bytes, not a row with the plan and a megabytes-large request in it.
// entries.value_digest is the value's format tag and checksum (SealValue's
// first bytes): it changes whenever the value does.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
  key TEXT PRIMARY KEY,
  value_bytes INTEGER NOT NULL,
  step_time_s REAL NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  last_used_us INTEGER NOT NULL,
  request_bytes INTEGER NOT NULL DEFAULT 0,
  value_digest BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS entries_by_last_used ON entries(last_used_us);
CREATE TABLE IF NOT EXISTS plan_values(key TEXT PRIMARY KEY,
                                       value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS requests(key TEXT PRIMARY KEY,
                                    request BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS entries_gone AFTER DELETE ON entries BEGIN
  DELETE FROM plan_values WHERE key = OLD.key;
  DELETE FROM requests WHERE key = OLD.key;
END;
CREATE TABLE IF NOT EXISTS aliases(exact_key TEXT PRIMARY KEY,
                                   key TEXT NOT NULL);
)sql";

// A version 1 store (one entries table with the value and request in each
// row) becomes version 2 in the same write transaction that has just read
// version 1, keeping every entry: its table is set aside, kSchema creates
// the version 2 tables, and the entries are copied over.
constexpr const char* kSetAsideVersion1 = R"sql(
ALTER TABLE entries RENAME TO entries_v1;
DROP INDEX IF EXISTS entries_by_last_used;
)sql";
constexpr const char* kCopyFromVersion1 = R"sql(
INSERT INTO entries SELECT key, value_bytes, step_time_s, hits, last_used_us,
  request_bytes, substr(value, 1, 36) FROM entries_v1;
INSERT INTO plan_values SELECT key, value FROM entries_v1;
INSERT INTO requests SELECT key, request FROM entries_v1
  WHERE request IS NOT NULL;
DROP TABLE entries_v1;
UPDATE meta SET value = '2' WHERE name = 'schema_version';
)sql";
static_assert(kValueHeaderBytes == 36, "kCopyFromVersion1's substr");

// The store's schema version; nullopt for a new file.
absl::StatusOr<std::optional<std::string>> ReadSchemaVersion(sqlite3* db) {
  Statement version(db, "SELECT value FROM meta WHERE name='schema_version'");
  RETURN_IF_ERROR(version.status("reading the schema version"));
  ASSIGN_OR_RETURN(bool found, version.Step("reading the schema version"));
  if (!found) return std::nullopt;
  return std::optional<std::string>(std::string(version.Text(0)));
}

// Opens `path` and makes sure it holds a store of this schema.
absl::StatusOr<sqlite3*> OpenDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  int code = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (code != SQLITE_OK) {
    absl::Status status =
        SqliteError(db, code, absl::StrCat("opening '", path, "'"));
    sqlite3_close(db);
    return status;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(Exec(db, "PRAGMA journal_mode=WAL", "enabling WAL"));
    RETURN_IF_ERROR(
        Exec(db, "PRAGMA synchronous=NORMAL", "setting synchronous"));
    RETURN_IF_ERROR(Exec(db,
                         "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY "
                         "KEY, value TEXT NOT NULL)",
                         "creating the schema"));
    // Read again inside the transaction: another process may have migrated
    // the file in between.
    Transaction transaction(db);
    RETURN_IF_ERROR(transaction.Begin());
    ASSIGN_OR_RETURN(std::optional<std::string> version, ReadSchemaVersion(db));
    const bool migrate = version == "1";
    if (migrate) {
      RETURN_IF_ERROR(
          Exec(db, kSetAsideVersion1, "moving the store to schema version 2"));
    }
    RETURN_IF_ERROR(Exec(db, kSchema, "creating the schema"));
    if (migrate) {
      RETURN_IF_ERROR(
          Exec(db, kCopyFromVersion1, "moving the store to schema version 2"));
      version = "2";
    }
    if (!version.has_value()) {
      Statement set(db,
                    "INSERT OR IGNORE INTO meta(name, value) "
                    "VALUES('schema_version', ?)");
      set.Bind(1, absl::StrCat(kSqlitePlanStoreSchemaVersion));
      RETURN_IF_ERROR(set.Run("writing the schema version"));
    } else if (*version != absl::StrCat(kSqlitePlanStoreSchemaVersion)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "plan store '", path, "' has schema version ", *version,
          "; this gopt reads version ", kSqlitePlanStoreSchemaVersion,
          " (use another --plan_store path)"));
    }
    return transaction.Commit();
  }();
  if (!status.ok()) {
    sqlite3_close(db);
    return status;
  }
  return db;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqlitePlanStore>> SqlitePlanStore::Open(
    const std::string& path, const PlanStoreOptions& options) {
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code error;
    std::filesystem::create_directories(parent, error);
    if (error) {
      return absl::FailedPreconditionError(
          absl::StrCat("plan store: cannot create directory '", parent.string(),
                       "': ", error.message()));
    }
  }
  std::string warning;
  absl::StatusOr<sqlite3*> db = OpenDatabase(path);
  if (absl::IsDataLoss(db.status())) {
    // Not a database (or torn beyond repair): keep it for a post-mortem and
    // start afresh; a store is a cache, never the only copy of anything.
    const std::string aside =
        absl::StrCat(path, ".corrupt-", absl::ToUnixMicros(absl::Now()));
    std::error_code error;
    std::filesystem::rename(path, aside, error);
    if (error) {
      return absl::DataLossError(
          absl::StrCat(db.status().message(),
                       "; moving it aside failed: ", error.message()));
    }
    std::filesystem::remove(path + "-wal", error);
    std::filesystem::remove(path + "-shm", error);
    warning = absl::StrCat(db.status().message(), ": moved it to '", aside,
                           "' and started an empty store");
    db = OpenDatabase(path);
  }
  if (!db.ok()) return db.status();
  return std::unique_ptr<SqlitePlanStore>(
      new SqlitePlanStore(path, options, *db, std::move(warning)));
}

SqlitePlanStore::SqlitePlanStore(std::string path,
                                 const PlanStoreOptions& options, sqlite3* db,
                                 std::string open_warning)
    : path_(std::move(path)),
      options_(options),
      open_warning_(std::move(open_warning)),
      db_(db) {}

SqlitePlanStore::~SqlitePlanStore() {
  absl::MutexLock lock(&mutex_);
  sqlite3_close(db_);
}

std::string SqlitePlanStore::Describe() const {
  return absl::StrCat("sqlite:", path_);
}

absl::StatusOr<std::optional<PlanStoreEntry>> SqlitePlanStore::ReadLocked(
    absl::string_view key) {
  const bool exact = absl::StartsWith(key, "x");
  Statement select(db_,
                   exact ? "SELECT e.key, v.value, e.hits, e.last_used_us FROM "
                           "aliases a JOIN entries e ON e.key = a.key "
                           "JOIN plan_values v ON v.key = e.key "
                           "WHERE a.exact_key = ?"
                         : "SELECT e.key, v.value, e.hits, e.last_used_us "
                           "FROM entries e JOIN plan_values v ON v.key = e.key "
                           "WHERE e.key = ?");
  RETURN_IF_ERROR(select.status("looking up a plan"));
  select.Bind(1, key);
  ASSIGN_OR_RETURN(bool found, select.Step("looking up a plan"));
  if (!found) return std::nullopt;
  const std::string entry_key(select.Text(0));
  absl::StatusOr<PlanStoreEntry> entry =
      DecodeEntryValue(select.Text(1), entry_key);
  if (!entry.ok()) {
    // Never read again as an entry; the next Put writes a good one.
    Statement remove(db_, "DELETE FROM entries WHERE key = ?");
    remove.Bind(1, entry_key);
    remove.Run("deleting a corrupt entry").IgnoreError();
    return entry.status();
  }
  entry->set_hits(select.Int(2));
  entry->set_last_used_unix_micros(select.Int(3));
  return std::optional<PlanStoreEntry>(*std::move(entry));
}

absl::StatusOr<PlanStoreEntry> SqlitePlanStore::Lookup(absl::string_view key) {
  absl::MutexLock lock(&mutex_);
  ASSIGN_OR_RETURN(std::optional<PlanStoreEntry> entry, ReadLocked(key));
  if (!entry.has_value()) {
    return NoEntryError(Describe(), key);
  }
  return *std::move(entry);
}

absl::StatusOr<bool> SqlitePlanStore::Put(const PlanStoreEntry& entry,
                                          absl::string_view exact_key,
                                          PutMode mode) {
  RETURN_IF_ERROR(CheckEntryToPut(entry));
  absl::MutexLock lock(&mutex_);
  ASSIGN_OR_RETURN(bool replaced, PutLocked(entry, exact_key, mode));
  RETURN_IF_ERROR(EvictLocked(entry.key()));
  return replaced;
}

absl::StatusOr<bool> SqlitePlanStore::PutLocked(const PlanStoreEntry& entry,
                                                absl::string_view exact_key,
                                                PutMode mode) {
  Transaction transaction(db_);
  RETURN_IF_ERROR(transaction.Begin());
  absl::StatusOr<std::optional<PlanStoreEntry>> stored =
      ReadLocked(entry.key());
  // A corrupt stored value was deleted by ReadLocked: write over it.
  if (!stored.ok() && !absl::IsDataLoss(stored.status())) {
    return stored.status();
  }
  const int64_t now_us = absl::ToUnixMicros(options_.clock->Now());
  const PlanStoreEntry incoming = StampIncoming(entry, now_us);
  bool replaced = false;
  const PlanStoreEntry merged = MergeForPut(
      stored.ok() ? *stored : std::nullopt, incoming, mode, &replaced);
  const std::string value = EncodeEntryValue(merged);
  Statement write(db_,
                  "INSERT INTO entries(key, value_digest, value_bytes, "
                  "step_time_s, hits, last_used_us) VALUES(?, ?, ?, ?, ?, ?) "
                  "ON CONFLICT(key) DO UPDATE SET "
                  "value_digest = excluded.value_digest, "
                  "value_bytes = excluded.value_bytes, "
                  "step_time_s = excluded.step_time_s, hits = excluded.hits, "
                  "last_used_us = excluded.last_used_us");
  RETURN_IF_ERROR(write.status("storing a plan"));
  write.Bind(1, merged.key());
  write.BindBlob(2, ValueDigest(value));
  write.Bind(3, static_cast<int64_t>(value.size()));
  write.Bind(4, merged.step_time_s());
  write.Bind(5, merged.hits());
  write.Bind(6, merged.last_used_unix_micros());
  RETURN_IF_ERROR(write.Run("storing a plan"));
  Statement write_value(
      db_,
      "INSERT INTO plan_values(key, value) VALUES(?, ?) "
      "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  RETURN_IF_ERROR(write_value.status("storing a plan"));
  write_value.Bind(1, merged.key());
  write_value.BindBlob(2, value);
  RETURN_IF_ERROR(write_value.Run("storing a plan"));
  if (!exact_key.empty()) {
    Statement alias(db_,
                    "INSERT OR REPLACE INTO aliases(exact_key, key) "
                    "VALUES(?, ?)");
    RETURN_IF_ERROR(alias.status("storing an exact key"));
    alias.Bind(1, exact_key);
    alias.Bind(2, merged.key());
    RETURN_IF_ERROR(alias.Run("storing an exact key"));
  }
  RETURN_IF_ERROR(transaction.Commit());
  return replaced;
}

absl::Status SqlitePlanStore::EvictLocked(absl::string_view keep) {
  Statement total(db_,
                  "SELECT COALESCE(SUM(value_bytes + request_bytes), 0) "
                  "FROM entries");
  RETURN_IF_ERROR(total.status("summing the store's size"));
  ASSIGN_OR_RETURN(bool row, total.Step("summing the store's size"));
  int64_t bytes = row ? total.Int(0) : 0;
  if (bytes <= options_.max_bytes) return absl::OkStatus();
  Transaction transaction(db_);
  RETURN_IF_ERROR(transaction.Begin());
  std::vector<std::string> evict;
  {
    // Finalized before the deletes and the commit.
    Statement oldest(db_,
                     "SELECT key, value_bytes + request_bytes FROM entries "
                     "ORDER BY last_used_us ASC");
    RETURN_IF_ERROR(oldest.status("finding the least recently used plans"));
    while (bytes > options_.max_bytes) {
      ASSIGN_OR_RETURN(bool more,
                       oldest.Step("finding the least recently used plans"));
      if (!more) break;
      if (oldest.Text(0) == keep) continue;
      evict.emplace_back(oldest.Text(0));
      bytes -= oldest.Int(1);
    }
  }
  for (const std::string& key : evict) {
    Statement remove(db_, "DELETE FROM entries WHERE key = ?");
    remove.Bind(1, key);
    RETURN_IF_ERROR(remove.Run("evicting a plan"));
  }
  RETURN_IF_ERROR(Exec(db_,
                       "DELETE FROM aliases WHERE key NOT IN "
                       "(SELECT key FROM entries)",
                       "dropping exact keys of evicted plans"));
  return transaction.Commit();
}

absl::StatusOr<PlanStoreTouch> SqlitePlanStore::Touch(absl::string_view key) {
  absl::MutexLock lock(&mutex_);
  // One small row, never the value: a hit costs one short write.
  Statement touch(db_,
                  "UPDATE entries SET hits = hits + 1, last_used_us = ? "
                  "WHERE key = ? RETURNING value_digest, hits, last_used_us");
  RETURN_IF_ERROR(touch.status("counting a hit"));
  touch.Bind(1, absl::ToUnixMicros(options_.clock->Now()));
  touch.Bind(2, key);
  ASSIGN_OR_RETURN(bool row, touch.Step("counting a hit"));
  if (!row) return NoEntryError(Describe(), key);
  PlanStoreTouch touched;
  touched.value_digest = std::string(touch.Text(0));
  touched.hits = touch.Int(1);
  touched.last_used_unix_micros = touch.Int(2);
  // The write is done at the first step; this finishes the statement.
  ASSIGN_OR_RETURN(row, touch.Step("counting a hit"));
  return touched;
}

absl::StatusOr<std::vector<PlanStoreEntry>> SqlitePlanStore::List(
    const PlanStoreFilter& filter) {
  absl::MutexLock lock(&mutex_);
  Statement select(db_,
                   "SELECT e.key, v.value, e.hits, e.last_used_us "
                   "FROM entries e JOIN plan_values v ON v.key = e.key "
                   "WHERE e.last_used_us < ? ORDER BY e.hits DESC, e.key ASC "
                   "LIMIT ?");
  RETURN_IF_ERROR(select.status("listing plans"));
  select.Bind(1, filter.unused_since == absl::InfinitePast()
                     ? std::numeric_limits<int64_t>::max()
                     : absl::ToUnixMicros(filter.unused_since));
  select.Bind(2, filter.limit > 0 ? filter.limit : int64_t{-1});
  std::vector<PlanStoreEntry> entries;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select.Step("listing plans"));
    if (!row) break;
    const std::string key(select.Text(0));
    absl::StatusOr<PlanStoreEntry> entry =
        DecodeEntryValue(select.Text(1), key);
    // A corrupt entry is left out of listings (Lookup deletes it).
    if (!entry.ok()) continue;
    entry->clear_plan();
    entry->set_hits(select.Int(2));
    entry->set_last_used_unix_micros(select.Int(3));
    entries.push_back(*std::move(entry));
  }
  return entries;
}

absl::StatusOr<int64_t> SqlitePlanStore::Prune(const PlanStoreFilter& filter) {
  absl::MutexLock lock(&mutex_);
  Transaction transaction(db_);
  RETURN_IF_ERROR(transaction.Begin());
  Statement remove(db_, "DELETE FROM entries WHERE last_used_us < ?");
  RETURN_IF_ERROR(remove.status("pruning plans"));
  remove.Bind(1, filter.unused_since == absl::InfinitePast()
                     ? std::numeric_limits<int64_t>::max()
                     : absl::ToUnixMicros(filter.unused_since));
  RETURN_IF_ERROR(remove.Run("pruning plans"));
  const int64_t removed = sqlite3_changes(db_);
  RETURN_IF_ERROR(Exec(db_,
                       "DELETE FROM aliases WHERE key NOT IN "
                       "(SELECT key FROM entries)",
                       "dropping exact keys of pruned plans"));
  RETURN_IF_ERROR(transaction.Commit());
  return removed;
}

absl::StatusOr<PlanStoreStats> SqlitePlanStore::Stats() {
  absl::MutexLock lock(&mutex_);
  Statement select(
      db_,
      "SELECT COUNT(*), COALESCE(SUM(value_bytes + request_bytes), 0) "
      "FROM entries");
  RETURN_IF_ERROR(select.status("counting plans"));
  ASSIGN_OR_RETURN(bool row, select.Step("counting plans"));
  PlanStoreStats stats;
  if (row) {
    stats.entries = select.Int(0);
    stats.bytes = select.Int(1);
  }
  return stats;
}

absl::Status SqlitePlanStore::PutRequest(absl::string_view key,
                                         absl::string_view request) {
  const std::string value = SealValue(request);
  absl::MutexLock lock(&mutex_);
  Transaction transaction(db_);
  RETURN_IF_ERROR(transaction.Begin());
  Statement size(db_, "UPDATE entries SET request_bytes = ? WHERE key = ?");
  RETURN_IF_ERROR(size.status("storing a request"));
  size.Bind(1, static_cast<int64_t>(value.size()));
  size.Bind(2, key);
  RETURN_IF_ERROR(size.Run("storing a request"));
  if (sqlite3_changes(db_) == 0) {
    return NoEntryError(Describe(), key);
  }
  Statement write(db_,
                  "INSERT INTO requests(key, request) VALUES(?, ?) "
                  "ON CONFLICT(key) DO UPDATE SET request = excluded.request");
  RETURN_IF_ERROR(write.status("storing a request"));
  write.Bind(1, key);
  write.BindBlob(2, value);
  RETURN_IF_ERROR(write.Run("storing a request"));
  RETURN_IF_ERROR(transaction.Commit());
  return EvictLocked(key);
}

absl::StatusOr<std::string> SqlitePlanStore::LookupRequest(
    absl::string_view key) {
  absl::MutexLock lock(&mutex_);
  Statement select(db_, "SELECT request FROM requests WHERE key = ?");
  RETURN_IF_ERROR(select.status("looking up a request"));
  select.Bind(1, key);
  ASSIGN_OR_RETURN(bool found, select.Step("looking up a request"));
  if (!found || select.Text(0).empty()) {
    return absl::NotFoundError(absl::StrCat("plan store ", Describe(),
                                            ": no request beside '", key, "'"));
  }
  ASSIGN_OR_RETURN(
      absl::string_view request,
      OpenValue(select.Text(0), absl::StrCat("request '", key, "'")));
  return std::string(request);
}

}  // namespace gopt::engine
