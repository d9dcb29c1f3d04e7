#include "engine/plan_cache.h"

#include <algorithm>
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

PlanCache::PlanCache(std::shared_ptr<PlanStore> store, int max_answers)
    : store_(std::move(store)), max_answers_(max_answers) {}

std::optional<PlanCache::Answer> PlanCache::FindAnswer(
    const std::string& exact_key) const {
  absl::MutexLock lock(&mutex_);
  const auto found = answers_.find(exact_key);
  if (found == answers_.end()) return std::nullopt;
  return found->second;
}

void PlanCache::KeepAnswer(const std::string& exact_key, Answer answer) {
  if (max_answers_ <= 0) return;
  absl::MutexLock lock(&mutex_);
  if (answers_.insert_or_assign(exact_key, std::move(answer)).second) {
    answer_order_.push_back(exact_key);
  }
  while (static_cast<int>(answer_order_.size()) > max_answers_) {
    answers_.erase(answer_order_.front());
    answer_order_.pop_front();
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

std::optional<OptimizeResponse> PlanCacheRequest::AnswerBeforeImport() {
  if (!reads() && !writes()) return std::nullopt;
  exact_key_ = ExactRequestKey(request_);
  if (!reads() || request_.verify() > 0) return std::nullopt;
  std::optional<PlanCache::Answer> answer = cache_->FindAnswer(exact_key_);
  if (!answer.has_value()) return std::nullopt;
  const absl::Time start = clock_.Now();
  absl::StatusOr<PlanStoreEntry> entry = cache_->store()->Lookup(exact_key_);
  // Any doubt (a store error, a changed entry) takes the full path, which
  // reports it.
  if (!entry.ok() || entry->key() != answer->entry_key ||
      entry->provenance().updated_unix_micros() !=
          answer->entry_updated_unix_micros ||
      entry->step_time_s() != answer->entry_step_time_s ||
      !EffortAtLeast(entry->provenance(), request_.budget().mode(),
                     request_.budget().fine_tune_steps(),
                     request_.budget().seconds())) {
    return std::nullopt;
  }
  OptimizeResponse response = std::move(answer->response);
  response.clear_timings();
  absl::Status touched = cache_->store()->Touch(entry->key());
  if (!touched.ok()) Warn(touched, "counting the hit", &response);
  entry->set_hits(entry->hits() + 1);
  *response.mutable_store_entry() = WithoutPlan(*entry);
  const double seconds = absl::ToDoubleSeconds(clock_.Now() - start);
  AddTiming("store", seconds, &response);
  AddTiming("total", seconds, &response);
  return response;
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

void PlanCacheRequest::AfterAnswer(OptimizeResponse* response) {
  if (!reads() && !writes()) return;
  const bool from_store =
      stored_plan_.has_value() && SamePlan(*stored_plan_, response->plan());
  response->set_from_store(from_store);
  if (answered_ && from_store) {
    absl::Status touched = cache_->store()->Touch(entry_->key());
    if (!touched.ok()) Warn(touched, "counting the hit", response);
    entry_->set_hits(entry_->hits() + 1);
    *response->mutable_store_entry() = WithoutPlan(*entry_);
    if (!response->partial()) {
      PlanCache::Answer answer;
      answer.entry_key = entry_->key();
      answer.entry_updated_unix_micros =
          entry_->provenance().updated_unix_micros();
      answer.entry_step_time_s = entry_->step_time_s();
      answer.response = *response;
      cache_->KeepAnswer(exact_key_, std::move(answer));
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
      cache_->store()->Put(incoming, exact_key_, mode);
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
