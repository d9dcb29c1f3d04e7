#include "engine/plan_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/redis_plan_store.h"
#include "engine/sqlite_plan_store.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "gopt/v1/optimizer.pb.h"
#include "util/sha256.h"

namespace gopt::engine {
namespace {

// Format tag of EncodeEntryValue; a new value format takes a new tag.
constexpr absl::string_view kValueTag = "GPS1";
constexpr size_t kDigestBytes = 32;
static_assert(kValueTag.size() + kDigestBytes == kValueHeaderBytes);

int EffortRank(int32_t mode) {
  switch (mode) {
    case gopt::v1::Budget::BASELINES_ONLY:
      return 0;
    case gopt::v1::Budget::FINE_TUNE:
      return 2;
    default:
      return 1;
  }
}

// a >= b where 0 means unbounded (the most).
template <typename T>
bool AtLeastUnbounded(T a, T b) {
  if (a == 0) return true;
  if (b == 0) return false;
  return a >= b;
}

template <typename T>
T MaxUnbounded(T a, T b) {
  if (a == 0 || b == 0) return 0;
  return std::max(a, b);
}

// `into` gets the larger of its effort and `other`'s.
void MergeEffort(const gopt::v1::PlanProvenance& other,
                 gopt::v1::PlanProvenance* into) {
  const int rank = EffortRank(into->budget_mode());
  const int other_rank = EffortRank(other.budget_mode());
  if (other_rank > rank) {
    into->set_budget_mode(other.budget_mode());
    into->set_fine_tune_steps(other.fine_tune_steps());
    into->set_budget_seconds(other.budget_seconds());
  } else if (other_rank == rank && rank == 2) {
    into->set_fine_tune_steps(
        MaxUnbounded(into->fine_tune_steps(), other.fine_tune_steps()));
    into->set_budget_seconds(
        MaxUnbounded(into->budget_seconds(), other.budget_seconds()));
  }
}

}  // namespace

std::string SealValue(absl::string_view payload) {
  Sha256 hash;
  hash.Update(payload);
  return absl::StrCat(kValueTag, hash.Digest(), payload);
}

absl::string_view ValueDigest(absl::string_view value) {
  return value.substr(0, kValueHeaderBytes);
}

absl::StatusOr<absl::string_view> OpenValue(absl::string_view value,
                                            absl::string_view what) {
  if (value.size() < kValueTag.size() + kDigestBytes ||
      !absl::StartsWith(value, kValueTag)) {
    return absl::DataLossError(
        absl::StrCat("plan store ", what, ": ", value.size(),
                     "-byte value without the ", kValueTag, " format tag"));
  }
  const absl::string_view digest = value.substr(kValueTag.size(), kDigestBytes);
  const absl::string_view payload =
      value.substr(kValueTag.size() + kDigestBytes);
  Sha256 hash;
  hash.Update(payload);
  if (hash.Digest() != digest) {
    return absl::DataLossError(absl::StrCat(
        "plan store ", what, ": checksum mismatch over its ", payload.size(),
        "-byte value (a torn write or a corrupt store)"));
  }
  return payload;
}

std::string EncodeEntryValue(const PlanStoreEntry& entry) {
  PlanStoreEntry stored = entry;
  stored.clear_hits();
  stored.clear_last_used_unix_micros();
  stored.clear_value_bytes();
  return SealValue(stored.SerializeAsString());
}

absl::StatusOr<PlanStoreEntry> DecodeEntryValue(absl::string_view value,
                                                absl::string_view key) {
  const std::string what = absl::StrCat("entry '", key, "'");
  absl::StatusOr<absl::string_view> payload = OpenValue(value, what);
  if (!payload.ok()) return payload.status();
  PlanStoreEntry entry;
  if (!entry.ParseFromArray(payload->data(),
                            static_cast<int>(payload->size()))) {
    return absl::DataLossError(
        absl::StrCat("plan store ", what, ": value is not a PlanStoreEntry"));
  }
  entry.set_value_bytes(static_cast<int64_t>(value.size()));
  return entry;
}

PlanStoreEntry MergeForPut(const std::optional<PlanStoreEntry>& stored,
                           const PlanStoreEntry& incoming, PutMode mode,
                           bool* replaced) {
  if (!stored.has_value()) {
    *replaced = true;
    return incoming;
  }
  const bool wins = mode == PutMode::kReplace ||
                    incoming.step_time_s() < stored->step_time_s();
  *replaced = wins;
  PlanStoreEntry merged = wins ? incoming : *stored;
  gopt::v1::PlanProvenance* provenance = merged.mutable_provenance();
  if (mode == PutMode::kKeepBest) {
    MergeEffort(wins ? stored->provenance() : incoming.provenance(),
                provenance);
  }
  provenance->set_num_simulations(stored->provenance().num_simulations() +
                                  incoming.provenance().num_simulations());
  if (stored->provenance().created_unix_micros() != 0) {
    provenance->set_created_unix_micros(
        stored->provenance().created_unix_micros());
  }
  merged.set_hits(stored->hits());
  merged.set_last_used_unix_micros(std::max(stored->last_used_unix_micros(),
                                            incoming.last_used_unix_micros()));
  return merged;
}

absl::Status CheckEntryToPut(const PlanStoreEntry& entry) {
  if (entry.key().empty() || !entry.has_plan()) {
    return absl::InvalidArgumentError(
        "plan store: an entry needs a key and a plan");
  }
  return absl::OkStatus();
}

absl::Status NoEntryError(absl::string_view store, absl::string_view key) {
  return absl::NotFoundError(
      absl::StrCat("plan store ", store, ": no entry '", key, "'"));
}

PlanStoreEntry StampIncoming(const PlanStoreEntry& entry,
                             int64_t now_unix_micros) {
  PlanStoreEntry incoming = entry;
  gopt::v1::PlanProvenance* provenance = incoming.mutable_provenance();
  if (provenance->created_unix_micros() == 0) {
    provenance->set_created_unix_micros(now_unix_micros);
  }
  provenance->set_updated_unix_micros(now_unix_micros);
  incoming.set_last_used_unix_micros(now_unix_micros);
  return incoming;
}

bool EffortAtLeast(const gopt::v1::PlanProvenance& provenance, int32_t mode,
                   int32_t fine_tune_steps, double seconds) {
  const int have = EffortRank(provenance.budget_mode());
  const int want = EffortRank(mode);
  if (have != want) return have > want;
  if (have != 2) return true;
  return AtLeastUnbounded(provenance.fine_tune_steps(), fine_tune_steps) &&
         AtLeastUnbounded(provenance.budget_seconds(), seconds);
}

absl::StatusOr<std::unique_ptr<PlanStore>> OpenPlanStore(
    absl::string_view spec, const PlanStoreOptions& options) {
  if (spec.empty()) {
    return absl::InvalidArgumentError(
        "plan store: empty spec (a file path or redis://host:port/db)");
  }
  if (absl::StartsWith(spec, "redis://")) {
    absl::StatusOr<std::unique_ptr<RedisPlanStore>> store =
        RedisPlanStore::Open(spec, options);
    if (!store.ok()) return store.status();
    return std::unique_ptr<PlanStore>(std::move(*store));
  }
  absl::StatusOr<std::unique_ptr<SqlitePlanStore>> store =
      SqlitePlanStore::Open(std::string(spec), options);
  if (!store.ok()) return store.status();
  return std::unique_ptr<PlanStore>(std::move(*store));
}

absl::StatusOr<int64_t> ExportEntries(PlanStore* store, std::ostream* out) {
  absl::StatusOr<std::vector<PlanStoreEntry>> listed =
      store->List(PlanStoreFilter());
  if (!listed.ok()) return listed.status();
  google::protobuf::io::OstreamOutputStream stream(out);
  int64_t written = 0;
  for (const PlanStoreEntry& summary : *listed) {
    absl::StatusOr<PlanStoreEntry> entry = store->Lookup(summary.key());
    // Evicted or pruned since the listing: nothing to export.
    if (absl::IsNotFound(entry.status())) continue;
    if (!entry.ok()) return entry.status();
    if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(*entry,
                                                                    &stream)) {
      return absl::InternalError("plan export: writing the output failed");
    }
    ++written;
  }
  return written;
}

absl::StatusOr<int64_t> ImportEntries(std::istream* in, PlanStore* store) {
  google::protobuf::io::IstreamInputStream stream(in);
  int64_t improved = 0;
  for (int64_t record = 0;; ++record) {
    PlanStoreEntry entry;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(
            &entry, &stream, &clean_eof)) {
      // A malformed length can read as a clean end: only an empty rest is.
      const void* rest = nullptr;
      int rest_size = 0;
      if (clean_eof && !stream.Next(&rest, &rest_size)) break;
      return absl::InvalidArgumentError(
          absl::StrCat("plan import: record ", record,
                       " is not a length-delimited PlanStoreEntry"));
    }
    absl::StatusOr<bool> stored =
        store->Put(entry, /*exact_key=*/"", PutMode::kKeepBest);
    if (!stored.ok()) {
      return absl::Status(
          stored.status().code(),
          absl::StrCat("plan import: record ", record, " ('", entry.key(),
                       "'): ", stored.status().message()));
    }
    if (*stored) ++improved;
  }
  return improved;
}

}  // namespace gopt::engine
