#ifndef GOPT_ENGINE_PLAN_STORE_H_
#define GOPT_ENGINE_PLAN_STORE_H_

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gopt/v1/plan_store.pb.h"
#include "util/clock.h"

namespace gopt::engine {

using gopt::v1::PlanStoreEntry;

// How Put treats an entry already stored under the same key.
enum class PutMode {
  // Compare-and-set: the incoming plan replaces the stored one only when it
  // is predicted strictly faster; otherwise the stored plan stays and only
  // its effort grows to the incoming one's (that work did not beat it).
  kKeepBest,
  // The incoming entry replaces the stored one (OptimizeRequest REFRESH, or
  // a stored plan that no longer fits its graph).
  kReplace,
};

struct PlanStoreStats {
  int64_t entries = 0;
  int64_t bytes = 0;  // of the stored values
};

// Bytes of a value's format tag and checksum (its first bytes; see
// SealValue).
inline constexpr size_t kValueHeaderBytes = 36;

// What Touch leaves of an entry.
struct PlanStoreTouch {
  // ValueDigest of the stored value: it changes whenever the entry does
  // (a new plan, a larger effort, an update time), so an unchanged digest
  // means the very entry read before.
  std::string value_digest;
  int64_t hits = 0;  // counting this one
  int64_t last_used_unix_micros = 0;
};

// Which entries List and Prune select.
struct PlanStoreFilter {
  // Entries not used since this time (InfinitePast = no such limit).
  absl::Time unused_since = absl::InfinitePast();
  // List: at most this many, most-asked-for first (0 = all).
  int64_t limit = 0;
};

// A persistent map from plan key (gopt/v1/plan_store.proto) to the best
// plan found for it, shared by every gopt process that opens the same
// store. Values are checksummed: a torn or corrupted value reads as
// DataLoss, never as a valid entry.
//
// Errors: NotFound (no such key), DataLoss (a corrupt value or file),
// Unavailable (the store cannot be reached now; retry later),
// ResourceExhausted (the disk is full), Internal (anything else). Callers in
// the request path turn every error into a warning: a store never fails a
// request.
//
// Implementations are safe to use from many threads at once.
class PlanStore {
 public:
  virtual ~PlanStore() = default;
  PlanStore(const PlanStore&) = delete;
  PlanStore& operator=(const PlanStore&) = delete;

  // The entry stored under `key` (a plan key) or, when `key` is an exact
  // request key ("x1-..."), under the plan key it points to. NotFound when
  // there is none.
  virtual absl::StatusOr<PlanStoreEntry> Lookup(absl::string_view key) = 0;

  // Stores `entry` under entry.key() as `mode` says, atomically against
  // concurrent writers (in this or other processes); `exact_key`, when not
  // empty, then points at entry.key(). Returns whether the incoming plan
  // was stored (false: the stored plan was at least as fast).
  // InvalidArgument for an entry without key or plan.
  virtual absl::StatusOr<bool> Put(const PlanStoreEntry& entry,
                                   absl::string_view exact_key,
                                   PutMode mode) = 0;

  // Counts one request for `key` (hits + 1) and marks it used now (the LRU
  // order), without reading the entry's value. NotFound when there is no
  // such entry.
  virtual absl::StatusOr<PlanStoreTouch> Touch(absl::string_view key) = 0;

  // Entries selected by `filter`, most-asked-for first, without their
  // plans (Lookup each for those).
  virtual absl::StatusOr<std::vector<PlanStoreEntry>> List(
      const PlanStoreFilter& filter) = 0;

  // Removes the entries `filter` selects (limit ignored) and the exact keys
  // pointing at them. Returns how many were removed.
  virtual absl::StatusOr<int64_t> Prune(const PlanStoreFilter& filter) = 0;

  virtual absl::StatusOr<PlanStoreStats> Stats() = 0;

  // Keeps `request` (a serialized OptimizeRequest) beside the entry `key`,
  // so an idle refinement (plan_refiner.h) can continue its search; it goes
  // when the entry goes. NotFound when there is no such entry.
  virtual absl::Status PutRequest(absl::string_view key,
                                  absl::string_view request) = 0;
  // The request kept beside `key`. NotFound when there is none, DataLoss
  // when it fails its checksum.
  virtual absl::StatusOr<std::string> LookupRequest(absl::string_view key) = 0;

  // Where the store lives, for messages ("sqlite:/path", "redis://h:p/0").
  virtual std::string Describe() const = 0;

 protected:
  PlanStore() = default;
};

// Opens the store `spec` names: "redis://HOST:PORT[/DB]" for Redis, a file
// path for SQLite (created with its directory when missing). InvalidArgument
// for a malformed redis URL; the store's own errors otherwise (a Redis
// store opens even when the server is down, and reconnects later).
struct PlanStoreOptions {
  // SQLite: the size cap of the stored values; the least recently used
  // entries are evicted past it. Default 256 MiB.
  int64_t max_bytes = int64_t{256} << 20;
  // Redis: the connect/command timeout, and the first and longest wait
  // before reconnecting after a failure (doubling in between).
  absl::Duration redis_timeout = absl::Milliseconds(500);
  absl::Duration redis_min_backoff = absl::Milliseconds(100);
  absl::Duration redis_max_backoff = absl::Seconds(10);
  // Time of last use and of creation; borrowed, never null. Tests pass a
  // FakeClock.
  const Clock* clock = &Clock::Real();
};
absl::StatusOr<std::unique_ptr<PlanStore>> OpenPlanStore(
    absl::string_view spec, const PlanStoreOptions& options = {});

// `payload` behind a format tag and its SHA-256; OpenValue checks both and
// returns the payload, DataLoss naming `what` otherwise (a torn write, a
// corrupt store). Stores keep every value so.
std::string SealValue(absl::string_view payload);
// The format tag and checksum at the head of a sealed value (at most
// kValueHeaderBytes): equal for equal payloads, different otherwise.
absl::string_view ValueDigest(absl::string_view value);
absl::StatusOr<absl::string_view> OpenValue(absl::string_view value,
                                            absl::string_view what);

// The value a store keeps for `entry`: a format tag, the SHA-256 of the
// serialized entry, then the entry (its hits and last-use fields cleared:
// stores keep those beside the value).
std::string EncodeEntryValue(const PlanStoreEntry& entry);
// Inverse of EncodeEntryValue; DataLoss naming `key` when the tag, checksum
// or proto does not check out (a torn write, a corrupt file).
absl::StatusOr<PlanStoreEntry> DecodeEntryValue(absl::string_view value,
                                                absl::string_view key);

// The entry a kKeepBest/kReplace Put leaves, given what is stored
// (`stored`, nullopt when nothing) and the incoming entry; `replaced` says
// whether the incoming plan won. Effort only ever grows; the creation time
// and simulation count carry over.
PlanStoreEntry MergeForPut(const std::optional<PlanStoreEntry>& stored,
                           const PlanStoreEntry& incoming, PutMode mode,
                           bool* replaced);

// InvalidArgument unless `entry` has a key and a plan (what Put needs).
absl::Status CheckEntryToPut(const PlanStoreEntry& entry);
// NotFound: "plan store STORE: no entry 'KEY'".
absl::Status NoEntryError(absl::string_view store, absl::string_view key);
// `entry` as written at `now_unix_micros`: created then (unless it was
// before), updated and used then.
PlanStoreEntry StampIncoming(const PlanStoreEntry& entry,
                             int64_t now_unix_micros);

// True when the effort recorded in `provenance` is at least what `mode`
// (a Budget.Mode), `fine_tune_steps` and `seconds` ask for: modes rank
// BASELINES_ONLY < ZERO_SHOT (= unspecified) < FINE_TUNE; within
// FINE_TUNE, steps and seconds compare (0 = unbounded, the most).
bool EffortAtLeast(const gopt::v1::PlanProvenance& provenance, int32_t mode,
                   int32_t fine_tune_steps, double seconds);

// Writes every entry of `store` (with plans) to `out` as length-delimited
// PlanStoreEntry records; returns how many. Reads such records from `in`
// into `store` with kKeepBest; returns how many improved it.
absl::StatusOr<int64_t> ExportEntries(PlanStore* store, std::ostream* out);
absl::StatusOr<int64_t> ImportEntries(std::istream* in, PlanStore* store);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_PLAN_STORE_H_
