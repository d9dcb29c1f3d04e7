#include "engine/redis_plan_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/random/distributions.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/status_macros.h"

namespace gopt::engine {
namespace {

constexpr absl::string_view kPlanPrefix = "gopt:plan:";
constexpr absl::string_view kAliasPrefix = "gopt:alias:";
constexpr absl::string_view kPlansByUse = "gopt:plans";
constexpr absl::string_view kBytes = "gopt:bytes";
// Compare-and-set attempts before a Put gives up (Unavailable).
constexpr int kMaxPutAttempts = 32;

// Touch: counts a hit on an existing entry only, and returns the hits and
// the head of the value (its ValueDigest: ARGV[3] bytes), not the value.
constexpr absl::string_view kTouchScript = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local hits = redis.call('HINCRBY', KEYS[1], 'hits', 1)
redis.call('HSET', KEYS[1], 'used', ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
local value = redis.call('HGET', KEYS[1], 'v') or ''
return {hits, string.sub(value, 1, tonumber(ARGV[3]))}
)lua";

// PutRequest: keeps the request beside an existing entry only.
constexpr absl::string_view kPutRequestScript = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('INCRBY', KEYS[2], string.len(ARGV[1]))
return 1
)lua";

std::string PlanKey(absl::string_view key) {
  return absl::StrCat(kPlanPrefix, key);
}

std::string ReplyString(const redisReply* reply) {
  if (reply == nullptr ||
      (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS &&
       reply->type != REDIS_REPLY_ERROR)) {
    return "";
  }
  return std::string(reply->str, reply->len);
}

int64_t ReplyInt(const redisReply* reply) {
  if (reply == nullptr) return 0;
  if (reply->type == REDIS_REPLY_INTEGER) return reply->integer;
  int64_t value = 0;
  if (reply->type == REDIS_REPLY_STRING &&
      absl::SimpleAtoi(absl::string_view(reply->str, reply->len), &value)) {
    return value;
  }
  return 0;
}

}  // namespace

void RedisPlanStore::ReplyDeleter::operator()(redisReply* reply) const {
  freeReplyObject(reply);
}

absl::StatusOr<std::unique_ptr<RedisPlanStore>> RedisPlanStore::Open(
    absl::string_view url, const PlanStoreOptions& options) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "redis://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan store '", url, "': expected redis://HOST:PORT[/DB]"));
  }
  int db = 0;
  const size_t slash = rest.find('/');
  if (slash != absl::string_view::npos) {
    const absl::string_view db_text = rest.substr(slash + 1);
    if (!db_text.empty() && (!absl::SimpleAtoi(db_text, &db) || db < 0)) {
      return absl::InvalidArgumentError(absl::StrCat("plan store '", url,
                                                     "': database '", db_text,
                                                     "' is not a number >= 0"));
    }
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  int port = 6379;
  std::string host(rest);
  if (colon != absl::string_view::npos) {
    host = std::string(rest.substr(0, colon));
    if (!absl::SimpleAtoi(rest.substr(colon + 1), &port) || port <= 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan store '", url, "': port '", rest.substr(colon + 1),
                       "' is not in 1..65535"));
    }
  }
  if (host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan store '", url, "': no host"));
  }
  return std::unique_ptr<RedisPlanStore>(
      new RedisPlanStore(std::string(url), host, port, db, options));
}

RedisPlanStore::RedisPlanStore(std::string url, std::string host, int port,
                               int db, const PlanStoreOptions& options)
    : url_(std::move(url)),
      host_(std::move(host)),
      port_(port),
      db_(db),
      options_(options),
      backoff_(options.redis_min_backoff) {}

RedisPlanStore::~RedisPlanStore() {
  absl::MutexLock lock(&mutex_);
  if (context_ != nullptr) redisFree(context_);
}

std::string RedisPlanStore::Describe() const { return url_; }

absl::Status RedisPlanStore::FailLocked(absl::string_view what) {
  std::string reason = what.empty() ? "connection lost" : std::string(what);
  if (context_ != nullptr) {
    if (context_->err != 0) reason = absl::StrCat(what, ": ", context_->errstr);
    redisFree(context_);
    context_ = nullptr;
  }
  next_attempt_ = options_.clock->Now() + backoff_;
  const absl::Duration wait = backoff_;
  backoff_ = std::min(backoff_ * 2, options_.redis_max_backoff);
  return absl::UnavailableError(absl::StrCat("plan store ", url_, ": ", reason,
                                             " (reconnecting in ",
                                             absl::FormatDuration(wait), ")"));
}

absl::Status RedisPlanStore::EnsureConnectedLocked() {
  if (context_ != nullptr) return absl::OkStatus();
  const absl::Time now = options_.clock->Now();
  if (now < next_attempt_) {
    return absl::UnavailableError(
        absl::StrCat("plan store ", url_, " unreachable; next reconnect in ",
                     absl::FormatDuration(next_attempt_ - now)));
  }
  context_ = redisConnectWithTimeout(host_.c_str(), port_,
                                     absl::ToTimeval(options_.redis_timeout));
  if (context_ == nullptr || context_->err != 0) {
    return FailLocked("connecting");
  }
  redisSetTimeout(context_, absl::ToTimeval(options_.redis_timeout));
  if (db_ != 0) {
    Reply reply(
        static_cast<redisReply*>(redisCommand(context_, "SELECT %d", db_)));
    if (reply == nullptr) return FailLocked("selecting the database");
    if (reply->type == REDIS_REPLY_ERROR) {
      const std::string error = ReplyString(reply.get());
      redisFree(context_);
      context_ = nullptr;
      next_attempt_ = now + options_.redis_max_backoff;
      return absl::FailedPreconditionError(absl::StrCat(
          "plan store ", url_, ": SELECT ", db_, " failed: ", error));
    }
  }
  backoff_ = options_.redis_min_backoff;
  return absl::OkStatus();
}

absl::StatusOr<RedisPlanStore::Reply> RedisPlanStore::CommandLocked(
    const std::vector<std::string>& args) {
  RETURN_IF_ERROR(EnsureConnectedLocked());
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const std::string& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  Reply reply(static_cast<redisReply*>(redisCommandArgv(
      context_, static_cast<int>(args.size()), argv.data(), lengths.data())));
  if (reply == nullptr) return FailLocked(args.front());
  if (reply->type == REDIS_REPLY_ERROR) {
    return absl::InternalError(
        absl::StrCat("plan store ", url_, ": ", args.front(),
                     " failed: ", ReplyString(reply.get())));
  }
  return reply;
}

absl::StatusOr<std::optional<PlanStoreEntry>> RedisPlanStore::ReadLocked(
    absl::string_view key) {
  std::string plan_key(key);
  if (absl::StartsWith(key, "x")) {
    ASSIGN_OR_RETURN(Reply alias,
                     CommandLocked({"GET", absl::StrCat(kAliasPrefix, key)}));
    if (alias->type != REDIS_REPLY_STRING) return std::nullopt;
    plan_key = ReplyString(alias.get());
  }
  ASSIGN_OR_RETURN(Reply fields, CommandLocked({"HMGET", PlanKey(plan_key), "v",
                                                "hits", "used"}));
  if (fields->type != REDIS_REPLY_ARRAY || fields->elements != 3 ||
      fields->element[0]->type != REDIS_REPLY_STRING) {
    return std::nullopt;
  }
  absl::StatusOr<PlanStoreEntry> entry =
      DecodeEntryValue(ReplyString(fields->element[0]), plan_key);
  if (!entry.ok()) {
    // Never read again as an entry; the next Put writes a good one.
    CommandLocked({"DEL", PlanKey(plan_key)}).status().IgnoreError();
    return entry.status();
  }
  entry->set_hits(ReplyInt(fields->element[1]));
  entry->set_last_used_unix_micros(ReplyInt(fields->element[2]));
  return std::optional<PlanStoreEntry>(*std::move(entry));
}

absl::StatusOr<PlanStoreEntry> RedisPlanStore::Lookup(absl::string_view key) {
  absl::MutexLock lock(&mutex_);
  ASSIGN_OR_RETURN(std::optional<PlanStoreEntry> entry, ReadLocked(key));
  if (!entry.has_value()) {
    return NoEntryError(url_, key);
  }
  return *std::move(entry);
}

absl::StatusOr<bool> RedisPlanStore::Put(const PlanStoreEntry& entry,
                                         absl::string_view exact_key,
                                         PutMode mode) {
  RETURN_IF_ERROR(CheckEntryToPut(entry));
  absl::MutexLock lock(&mutex_);
  const std::string plan_key = PlanKey(entry.key());
  for (int attempt = 0; attempt < kMaxPutAttempts; ++attempt) {
    ASSIGN_OR_RETURN(Reply watch, CommandLocked({"WATCH", plan_key}));
    absl::StatusOr<std::optional<PlanStoreEntry>> stored =
        ReadLocked(entry.key());
    if (!stored.ok() && !absl::IsDataLoss(stored.status())) {
      CommandLocked({"UNWATCH"}).status().IgnoreError();
      return stored.status();
    }
    const int64_t now_us = absl::ToUnixMicros(options_.clock->Now());
    const PlanStoreEntry incoming = StampIncoming(entry, now_us);
    bool replaced = false;
    const std::optional<PlanStoreEntry> current =
        stored.ok() ? *stored : std::nullopt;
    const PlanStoreEntry merged =
        MergeForPut(current, incoming, mode, &replaced);
    const std::string value = EncodeEntryValue(merged);
    const int64_t old_bytes =
        current.has_value() ? current->value_bytes() : int64_t{0};
    ASSIGN_OR_RETURN(Reply multi, CommandLocked({"MULTI"}));
    const std::string used = absl::StrCat(merged.last_used_unix_micros());
    std::vector<std::vector<std::string>> commands = {
        {"HSET", plan_key, "v", value, "step",
         absl::StrCat(merged.step_time_s()), "hits",
         absl::StrCat(merged.hits()), "used", used},
        {"ZADD", std::string(kPlansByUse), used, merged.key()},
        {"INCRBY", std::string(kBytes),
         absl::StrCat(static_cast<int64_t>(value.size()) - old_bytes)}};
    if (!exact_key.empty()) {
      commands.push_back(
          {"SET", absl::StrCat(kAliasPrefix, exact_key), merged.key()});
    }
    for (const std::vector<std::string>& command : commands) {
      absl::StatusOr<Reply> queued = CommandLocked(command);
      if (!queued.ok()) {
        CommandLocked({"DISCARD"}).status().IgnoreError();
        return queued.status();
      }
    }
    ASSIGN_OR_RETURN(Reply exec, CommandLocked({"EXEC"}));
    // A nil EXEC: another writer changed the entry after WATCH; again,
    // after a random pause that doubles with each lost attempt (up to
    // 10 ms), so that writers racing on one key spread out instead of
    // losing to each other in lockstep.
    if (exec->type == REDIS_REPLY_ARRAY) return replaced;
    const int64_t max_pause_us =
        std::min<int64_t>(int64_t{100} << attempt, 10000);
    absl::SleepFor(absl::Microseconds(
        absl::Uniform<int64_t>(backoff_random_, 0, max_pause_us + 1)));
  }
  return absl::UnavailableError(
      absl::StrCat("plan store ", url_, ": ", kMaxPutAttempts,
                   " compare-and-set attempts on '", entry.key(),
                   "' lost to other writers"));
}

absl::StatusOr<PlanStoreTouch> RedisPlanStore::Touch(absl::string_view key) {
  absl::MutexLock lock(&mutex_);
  const int64_t now_us = absl::ToUnixMicros(options_.clock->Now());
  ASSIGN_OR_RETURN(
      Reply touched,
      CommandLocked({"EVAL", std::string(kTouchScript), "2", PlanKey(key),
                     std::string(kPlansByUse), absl::StrCat(now_us),
                     std::string(key), absl::StrCat(kValueHeaderBytes)}));
  if (touched->type != REDIS_REPLY_ARRAY || touched->elements != 2) {
    return NoEntryError(url_, key);
  }
  PlanStoreTouch result;
  result.hits = ReplyInt(touched->element[0]);
  result.value_digest = ReplyString(touched->element[1]);
  result.last_used_unix_micros = now_us;
  return result;
}

absl::StatusOr<std::vector<PlanStoreEntry>> RedisPlanStore::List(
    const PlanStoreFilter& filter) {
  absl::MutexLock lock(&mutex_);
  const std::string max_score =
      filter.unused_since == absl::InfinitePast()
          ? "+inf"
          : absl::StrCat("(", absl::ToUnixMicros(filter.unused_since));
  ASSIGN_OR_RETURN(Reply keys,
                   CommandLocked({"ZRANGEBYSCORE", std::string(kPlansByUse),
                                  "-inf", max_score}));
  std::vector<PlanStoreEntry> entries;
  for (size_t i = 0; keys->type == REDIS_REPLY_ARRAY && i < keys->elements;
       ++i) {
    absl::StatusOr<std::optional<PlanStoreEntry>> entry =
        ReadLocked(ReplyString(keys->element[i]));
    // Corrupt or gone since the range was read: left out.
    if (!entry.ok() && !absl::IsDataLoss(entry.status())) {
      return entry.status();
    }
    if (!entry.ok() || !entry->has_value()) continue;
    PlanStoreEntry summary = **std::move(entry);
    summary.clear_plan();
    entries.push_back(std::move(summary));
  }
  std::sort(entries.begin(), entries.end(),
            [](const PlanStoreEntry& a, const PlanStoreEntry& b) {
              if (a.hits() != b.hits()) return a.hits() > b.hits();
              return a.key() < b.key();
            });
  if (filter.limit > 0 && static_cast<int64_t>(entries.size()) > filter.limit) {
    entries.resize(filter.limit);
  }
  return entries;
}

absl::StatusOr<int64_t> RedisPlanStore::Prune(const PlanStoreFilter& filter) {
  PlanStoreFilter all = filter;
  all.limit = 0;
  ASSIGN_OR_RETURN(std::vector<PlanStoreEntry> entries, List(all));
  absl::MutexLock lock(&mutex_);
  int64_t removed = 0;
  for (const PlanStoreEntry& entry : entries) {
    ASSIGN_OR_RETURN(Reply request_bytes,
                     CommandLocked({"HSTRLEN", PlanKey(entry.key()), "r"}));
    ASSIGN_OR_RETURN(Reply deleted,
                     CommandLocked({"DEL", PlanKey(entry.key())}));
    ASSIGN_OR_RETURN(
        Reply unlisted,
        CommandLocked({"ZREM", std::string(kPlansByUse), entry.key()}));
    if (ReplyInt(deleted.get()) == 0) continue;
    ASSIGN_OR_RETURN(
        Reply bytes,
        CommandLocked({"DECRBY", std::string(kBytes),
                       absl::StrCat(entry.value_bytes() +
                                    ReplyInt(request_bytes.get()))}));
    ++removed;
  }
  return removed;
}

absl::StatusOr<PlanStoreStats> RedisPlanStore::Stats() {
  absl::MutexLock lock(&mutex_);
  ASSIGN_OR_RETURN(Reply count,
                   CommandLocked({"ZCARD", std::string(kPlansByUse)}));
  ASSIGN_OR_RETURN(Reply bytes, CommandLocked({"GET", std::string(kBytes)}));
  PlanStoreStats stats;
  stats.entries = ReplyInt(count.get());
  stats.bytes = ReplyInt(bytes.get());
  return stats;
}

absl::Status RedisPlanStore::PutRequest(absl::string_view key,
                                        absl::string_view request) {
  const std::string value = SealValue(request);
  absl::MutexLock lock(&mutex_);
  ASSIGN_OR_RETURN(Reply stored,
                   CommandLocked({"EVAL", std::string(kPutRequestScript), "2",
                                  PlanKey(key), std::string(kBytes), value}));
  if (ReplyInt(stored.get()) == 0) {
    return NoEntryError(url_, key);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RedisPlanStore::LookupRequest(
    absl::string_view key) {
  absl::MutexLock lock(&mutex_);
  ASSIGN_OR_RETURN(Reply request, CommandLocked({"HGET", PlanKey(key), "r"}));
  if (request->type != REDIS_REPLY_STRING) {
    return absl::NotFoundError(
        absl::StrCat("plan store ", url_, ": no request beside '", key, "'"));
  }
  const std::string value = ReplyString(request.get());
  ASSIGN_OR_RETURN(absl::string_view payload,
                   OpenValue(value, absl::StrCat("request '", key, "'")));
  return std::string(payload);
}

}  // namespace gopt::engine
