#ifndef GOPT_ENGINE_REDIS_PLAN_STORE_H_
#define GOPT_ENGINE_REDIS_PLAN_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/synchronization/mutex.h"
#include "engine/plan_store.h"

struct redisContext;
struct redisReply;

namespace gopt::engine {

// A PlanStore in a Redis server, shared by many gopt-server replicas.
//
// Layout (every key under "gopt:"): "gopt:plan:KEY" is a hash with the
// checksummed value (v), its step time (step), hits and last use (used)
// and the request kept for refinement (r);
// "gopt:alias:EXACT" names the plan key of an exact request key;
// "gopt:plans" is a sorted set of plan keys by last use, and "gopt:bytes"
// counts the bytes of the values. Put is a compare-and-set: WATCH the
// entry, read it, merge (MergeForPut), MULTI/EXEC, again when another writer
// got in between, so concurrent writers keep the best plan.
//
// A lost connection makes the calls fail fast with Unavailable, and the
// store reconnects on a later call once a backoff has passed (doubling
// from PlanStoreOptions::redis_min_backoff up to redis_max_backoff). The
// size of a Redis store is bounded by the server's own maxmemory policy
// (deploy/ sets allkeys-lru) and by Prune.
//
// Thread-safe (one connection, behind a mutex).
class RedisPlanStore final : public PlanStore {
 public:
  // `url`: redis://HOST:PORT[/DB]. InvalidArgument when malformed. Opens
  // even when the server is down (the first call then fails Unavailable and
  // the store reconnects later).
  static absl::StatusOr<std::unique_ptr<RedisPlanStore>> Open(
      absl::string_view url, const PlanStoreOptions& options);
  ~RedisPlanStore() override;

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

 private:
  struct ReplyDeleter {
    void operator()(redisReply* reply) const;
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

  RedisPlanStore(std::string url, std::string host, int port, int db,
                 const PlanStoreOptions& options);

  // Connects when there is no connection and the backoff has passed.
  absl::Status EnsureConnectedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Drops the connection after a failure and schedules the next attempt.
  absl::Status FailLocked(absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Runs one command; Unavailable (and a reconnect later) when the
  // connection fails, Internal for a Redis error reply.
  absl::StatusOr<Reply> CommandLocked(const std::vector<std::string>& args)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  absl::StatusOr<std::optional<PlanStoreEntry>> ReadLocked(
      absl::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string url_;
  const std::string host_;
  const int port_;
  const int db_;
  const PlanStoreOptions options_;
  absl::Mutex mutex_;
  redisContext* context_ ABSL_GUARDED_BY(mutex_) = nullptr;
  absl::Time next_attempt_ ABSL_GUARDED_BY(mutex_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mutex_);
  // Jitter of the pause after a lost compare-and-set: it only spreads
  // racing writers in time, never changes what is stored.
  absl::BitGen backoff_random_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_REDIS_PLAN_STORE_H_
