#include "engine/plan_cache.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/plan_key.h"
#include "graph/fingerprint.h"
#include "simulator/plan_proto.h"

namespace gopt::engine {
namespace {

using gopt::v1::OptimizeRequest;
using gopt::v1::OptimizeResponse;

bool SameInts(const google::protobuf::RepeatedField<int32_t>& a,
              const google::protobuf::RepeatedField<int32_t>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

bool SamePlan(const gopt::v1::Plan& a, const gopt::v1::Plan& b) {
  if (a.layout_size() != b.layout_size()) return false;
  for (int i = 0; i < a.layout_size(); ++i) {
    if (!SameInts(a.layout(i).minor_to_major(), b.layout(i).minor_to_major())) {
      return false;
    }
  }
  return SameInts(a.device(), b.device()) &&
         SameInts(a.priority(), b.priority()) &&
         SameInts(a.fusion_group(), b.fusion_group());
}

void AddTiming(absl::string_view stage, double seconds,
               OptimizeResponse* response) {
  gopt::v1::StageTiming* timing = response->add_timings();
  timing->set_stage(std::string(stage));
  timing->set_seconds(seconds);
}

PlanStoreEntry WithoutPlan(const PlanStoreEntry& entry) {
  PlanStoreEntry summary = entry;
  summary.clear_plan();
  return summary;
}

// "name@version" of the policy row that produced `method`, if any.
std::string PolicyOf(const OptimizeResponse& response) {
  for (const gopt::v1::MethodResult& row : response.policy_results()) {
    if (row.method() == response.method()) {
      return absl::StrCat(row.method(), "@", row.version());
    }
  }
  return "";
}

}  // namespace

SerializedResponse Serialize(OptimizeResponse response) {
  SerializedResponse serialized;
  serialized.body =
      std::make_shared<const std::string>(response.SerializeAsString());
  response.clear_plan();
  response.clear_decisions();
  response.clear_kernel_tiles();
  response.clear_device_summaries();
  response.clear_verified();
  response.clear_optimized_graph();
  serialized.summary = std::move(response);
  return serialized;
}

absl::StatusOr<OptimizeResponse> Parse(const SerializedResponse& serialized) {
  OptimizeResponse response;
  if (!response.ParseFromString(*serialized.body) ||
      !response.MergeFromString(serialized.tail)) {
    return absl::InternalError("a kept plan store answer does not parse");
  }
  return response;
}

PlanCache::PlanCache(std::shared_ptr<PlanStore> store, int max_answers,
                     int64_t max_bytes)
    : store_(std::move(store)),
      max_answers_(max_answers),
      max_bytes_(max_bytes) {}

std::shared_ptr<const PlanCache::Answer> PlanCache::FindAnswer(
    const ExactRequestIdentity& identity) {
  if (max_answers_ <= 0) return nullptr;
  const size_t hash = identity.Hash();
  absl::MutexLock lock(&mutex_);
  const auto found = by_hash_.find(hash);
  // Another request with the same hash (a collision) is no answer.
  if (found == by_hash_.end() || !((*found->second)->identity == identity)) {
    return nullptr;
  }
  answers_.splice(answers_.begin(), answers_, found->second);
  return answers_.front();
}

void PlanCache::KeepAnswer(std::shared_ptr<const Answer> answer) {
  if (max_answers_ <= 0 || answer->bytes > max_bytes_) return;
  const size_t hash = answer->identity.Hash();
  absl::MutexLock lock(&mutex_);
  if (const auto found = by_hash_.find(hash); found != by_hash_.end()) {
    bytes_ -= (*found->second)->bytes;
    answers_.erase(found->second);
    by_hash_.erase(found);
  }
  bytes_ += answer->bytes;
  answers_.push_front(std::move(answer));
  by_hash_[hash] = answers_.begin();
  while (static_cast<int>(answers_.size()) > max_answers_ ||
         bytes_ > max_bytes_) {
    bytes_ -= answers_.back()->bytes;
    by_hash_.erase(answers_.back()->identity.Hash());
    answers_.pop_back();
  }
}

PlanCacheRequest::PlanCacheRequest(PlanCache* cache,
                                   const OptimizeRequest& request,
                                   const Clock& clock)
    : cache_(cache != nullptr && cache->store() != nullptr ? cache : nullptr),
      request_(request),
      clock_(clock) {}

bool PlanCacheRequest::reads() const {
  return cache_ != nullptr && (request_.store() == OptimizeRequest::DEFAULT ||
                               request_.store() == OptimizeRequest::READ_ONLY);
}

bool PlanCacheRequest::writes() const {
  return cache_ != nullptr && (request_.store() == OptimizeRequest::DEFAULT ||
                               request_.store() == OptimizeRequest::REFRESH);
}

void PlanCacheRequest::Warn(const absl::Status& status, absl::string_view what,
                            OptimizeResponse* response) {
  response->add_warnings(absl::StrCat(
      "plan store ", cache_->store()->Describe(), ": ", what, " failed (",
      status.message(), "); answering without the store"));
  response->set_store_result("error");
}

const std::string& PlanCacheRequest::exact_key() {
  if (exact_key_.empty()) exact_key_ = ExactRequestKey(request_);
  return exact_key_;
}

absl::StatusOr<PlanStoreTouch> PlanCacheRequest::TouchOnce(
    const std::string& key) {
  if (touched_key_ != key) {
    touched_key_ = key;
    touched_ = cache_->store()->Touch(key);
  }
  return touched_;
}

std::optional<SerializedResponse> PlanCacheRequest::AnswerBeforeImport() {
  if (!reads() || request_.verify() > 0 ||
      request_.options().reward() !=
          gopt::v1::OptimizeOptions::REWARD_SIMULATED) {
    return std::nullopt;
  }
  const std::shared_ptr<const PlanCache::Answer> answer =
      cache_->FindAnswer(ExactRequestIdentity(request_));
  if (answer == nullptr ||
      !EffortAtLeast(answer->entry.provenance(), request_.budget().mode(),
                     request_.budget().fine_tune_steps(),
                     request_.budget().seconds())) {
    return std::nullopt;
  }
  const absl::Time start = clock_.Now();
  absl::StatusOr<PlanStoreTouch> touched = TouchOnce(answer->entry.key());
  // Any doubt (a store error, a changed or gone entry) takes the full
  // path, which reports it.
  if (!touched.ok() || touched->value_digest != answer->value_digest) {
    return std::nullopt;
  }
  exact_key_ = answer->exact_key;
  OptimizeResponse tail;
  PlanStoreEntry* entry = tail.mutable_store_entry();
  *entry = answer->entry;
  entry->set_hits(touched->hits);
  entry->set_last_used_unix_micros(touched->last_used_unix_micros);
  const double seconds = absl::ToDoubleSeconds(clock_.Now() - start);
  AddTiming("store", seconds, &tail);
  AddTiming("total", seconds, &tail);
  SerializedResponse serialized;
  serialized.body = answer->body;
  serialized.tail = tail.SerializeAsString();
  serialized.summary = answer->summary;
  serialized.summary.MergeFrom(tail);
  return serialized;
}

std::optional<StoredPlan> PlanCacheRequest::AfterImport(
    const graph::Graph& graph, const simulator::Topology& topology,
    const gopt::v1::Tasks& tasks, const simulator::Simulator& simulator,
    OptimizeResponse* response) {
  if (cache_ == nullptr) return std::nullopt;
  fingerprint_ = graph::GraphFingerprint(graph);
  response->set_fingerprint(fingerprint_);
  if (!reads() && !writes()) {
    response->set_store_result("skip");
    return std::nullopt;
  }
  plan_key_ = PlanKey(fingerprint_, topology, tasks, request_);
  if (!reads()) {
    response->set_store_result("refresh");
    return std::nullopt;
  }
  const absl::Time start = clock_.Now();
  absl::StatusOr<PlanStoreEntry> entry = cache_->store()->Lookup(plan_key_);
  AddTiming("store", absl::ToDoubleSeconds(clock_.Now() - start), response);
  num_simulations_before_ = response->num_simulations();
  if (absl::IsNotFound(entry.status())) {
    response->set_store_result("miss");
    return std::nullopt;
  }
  if (!entry.ok()) {
    Warn(entry.status(), "the lookup", response);
    return std::nullopt;
  }
  entry_ = *std::move(entry);
  simulator::Plan plan = simulator::PlanFromProto(entry_->plan());
  simulator::SimulationOptions quick;
  quick.record_timeline = false;
  absl::StatusOr<simulator::SimulationResult> result =
      simulator.Simulate(plan, quick);
  response->set_num_simulations(response->num_simulations() + 1);
  if (!result.ok() || result->oom || !(result->step_time_s > 0)) {
    response->add_warnings(absl::StrCat(
        "plan store ", cache_->store()->Describe(), ": the stored plan of '",
        plan_key_, "' no longer fits this graph and topology (",
        result.ok() ? "out of memory or no step time"
                    : std::string(result.status().message()),
        "); it is ignored and will be replaced"));
    replace_ = true;
    response->set_store_result("miss");
    return std::nullopt;
  }
  stored_plan_ = entry_->plan();
  answered_ = request_.verify() == 0 &&
              request_.options().reward() ==
                  gopt::v1::OptimizeOptions::REWARD_SIMULATED &&
              EffortAtLeast(entry_->provenance(), request_.budget().mode(),
                            request_.budget().fine_tune_steps(),
                            request_.budget().seconds());
  response->set_store_result(answered_ ? "hit" : "warm_start");
  StoredPlan stored;
  stored.plan = std::move(plan);
  stored.method = entry_->provenance().method();
  stored.step_time_s = result->step_time_s;
  stored.answers = answered_;
  return stored;
}

void PlanCacheRequest::KeepRequest(OptimizeResponse* response) {
  OptimizeRequest kept = request_;
  kept.clear_budget();
  kept.clear_verify();
  kept.clear_store();
  kept.clear_allow_partial_result();
  const std::string bytes = kept.SerializeAsString();
  if (static_cast<int64_t>(bytes.size()) > kMaxKeptRequestBytes) return;
  absl::Status status = cache_->store()->PutRequest(plan_key_, bytes);
  // Evicted or pruned in between: nothing to refine.
  if (!status.ok() && !absl::IsNotFound(status)) {
    Warn(status, "keeping the request for refinement", response);
  }
}

void PlanCacheRequest::KeepAnswer(const PlanStoreTouch& touched,
                                  const OptimizeResponse& response) {
  // The entry this answer was simulated from must be the one stored now:
  // its digest, recomputed, against the store's (another writer may have
  // replaced it since the lookup; then nothing is kept).
  const std::string digest(ValueDigest(EncodeEntryValue(*entry_)));
  if (digest != touched.value_digest) return;
  auto answer = std::make_shared<PlanCache::Answer>(
      ExactRequestIdentity(request_).Owned());
  answer->exact_key = exact_key();
  answer->value_digest = digest;
  answer->entry = WithoutPlan(*entry_);
  OptimizeResponse kept = response;
  kept.clear_store_entry();
  kept.clear_timings();
  SerializedResponse serialized = Serialize(std::move(kept));
  answer->body = std::move(serialized.body);
  answer->summary = std::move(serialized.summary);
  answer->bytes =
      static_cast<int64_t>(answer->identity.bytes() + answer->body->size() +
                           answer->summary.SpaceUsedLong());
  cache_->KeepAnswer(std::move(answer));
}

void PlanCacheRequest::AfterAnswer(OptimizeResponse* response) {
  if (!reads() && !writes()) return;
  const bool from_store =
      stored_plan_.has_value() && SamePlan(*stored_plan_, response->plan());
  response->set_from_store(from_store);
  if (answered_ && from_store) {
    absl::StatusOr<PlanStoreTouch> touched = TouchOnce(entry_->key());
    if (!touched.ok()) {
      Warn(touched.status(), "counting the hit", response);
      entry_->set_hits(entry_->hits() + 1);
    } else {
      entry_->set_hits(touched->hits);
      entry_->set_last_used_unix_micros(touched->last_used_unix_micros);
    }
    *response->mutable_store_entry() = WithoutPlan(*entry_);
    // Without a memo (max_answers 0) there is nothing to keep: skip the
    // digest and the response copy.
    if (touched.ok() && !response->partial() && cache_->max_answers_ > 0) {
      KeepAnswer(*touched, *response);
    }
    return;
  }
  if (!writes() || plan_key_.empty()) {
    if (entry_.has_value()) {
      *response->mutable_store_entry() = WithoutPlan(*entry_);
    }
    return;
  }
  PlanStoreEntry incoming;
  incoming.set_key(plan_key_);
  incoming.set_fingerprint(fingerprint_);
  *incoming.mutable_plan() = response->plan();
  incoming.set_step_time_s(response->step_time_s());
  gopt::v1::PlanProvenance* provenance = incoming.mutable_provenance();
  provenance->set_method(from_store ? entry_->provenance().method()
                                    : response->method());
  provenance->set_policy(from_store ? entry_->provenance().policy()
                                    : PolicyOf(*response));
  provenance->set_num_simulations(response->num_simulations() -
                                  num_simulations_before_);
  // A partial answer did not spend the requested effort.
  provenance->set_budget_mode(response->partial()
                                  ? gopt::v1::Budget::BASELINES_ONLY
                                  : request_.budget().mode());
  if (!response->partial()) {
    provenance->set_fine_tune_steps(request_.budget().fine_tune_steps());
    provenance->set_budget_seconds(request_.budget().seconds());
  }
  provenance->set_measured_step_time_s(response->measured_step_time_s());
  incoming.set_graph_name(response->graph_name());
  incoming.set_num_nodes(response->num_nodes());
  incoming.set_topology_name(response->topology_name());
  const PutMode mode = replace_ || request_.store() == OptimizeRequest::REFRESH
                           ? PutMode::kReplace
                           : PutMode::kKeepBest;
  absl::StatusOr<bool> stored =
      cache_->store()->Put(incoming, exact_key(), mode);
  if (!stored.ok()) {
    Warn(stored.status(), "writing the plan back", response);
    return;
  }
  response->set_stored(*stored);
  if (!entry_.has_value()) KeepRequest(response);
  absl::StatusOr<PlanStoreEntry> current = cache_->store()->Lookup(plan_key_);
  if (current.ok()) *response->mutable_store_entry() = WithoutPlan(*current);
}

}  // namespace gopt::engine
