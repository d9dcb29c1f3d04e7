#ifndef GOPT_ENGINE_PLAN_CACHE_H_
#define GOPT_ENGINE_PLAN_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/plan_key.h"
#include "engine/plan_store.h"
#include "gopt/v1/optimizer.pb.h"
#include "graph/graph.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"
#include "util/clock.h"

namespace gopt::engine {

// Largest request kept beside its entry for idle refinement (bigger ones
// are not refined).
inline constexpr int64_t kMaxKeptRequestBytes = int64_t{64} << 20;

// Default byte cap of PlanCache's kept answers.
inline constexpr int64_t kDefaultKeptAnswerBytes = int64_t{256} << 20;

// An Optimize response in wire form: the bytes of `body` followed by
// `tail` parse as one OptimizeResponse (protobuf concatenation: `tail`
// only holds fields `body` lacks). `summary` is that response without its
// per-node fields (plan, decisions, kernel tiles, device summaries,
// verified candidates, optimized graph): what metrics and logs read.
struct SerializedResponse {
  std::shared_ptr<const std::string> body;
  std::string tail;
  gopt::v1::OptimizeResponse summary;
};

// `response` in wire form (body only); moves it into the summary.
SerializedResponse Serialize(gopt::v1::OptimizeResponse response);
// The message a SerializedResponse holds. Internal if it does not parse.
absl::StatusOr<gopt::v1::OptimizeResponse> Parse(
    const SerializedResponse& serialized);

// The Engine's use of a PlanStore (the "store" stage of DESIGN.md's data
// flow), shared by all its requests. Holds the store and a memo of the
// answers it recently gave from it, so that an identical request is
// answered without importing, simulating or serializing anything.
//
// The memo is keyed by the request's exact identity (plan_key.h: its graph
// bytes and everything else the exact key covers, compared byte for byte,
// found by a fast hash) and remembers the store entry each answer came
// from by the digest of its stored value. Every memo hit is validated
// against the store: Touch (which counts the hit anyway) returns the
// entry's current digest without reading its value, and only the same
// digest serves the memo. So an entry improved by another process or
// replica (a new value, a new digest) is read and simulated afresh, and an
// evicted or pruned one misses. This is not trusting the store's numbers
// blindly: re-simulation is deterministic for a given plan, graph and
// simulator, the digest pins the plan, the exact identity pins the graph
// bytes and topology, and the simulator and cost model are the Engine's
// own (a memo lives and dies with its Engine), so simulating again would
// give the very numbers kept. At most `max_answers` answers and
// `max_bytes` bytes (request graphs and responses) are kept, least
// recently used dropped first.
//
// Thread-safe.
class PlanCache {
 public:
  // `store` may be null: then every request is "skip". `max_answers` 0:
  // no memo.
  explicit PlanCache(std::shared_ptr<PlanStore> store, int max_answers = 64,
                     int64_t max_bytes = kDefaultKeptAnswerBytes);
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  PlanStore* store() const { return store_.get(); }

 private:
  friend class PlanCacheRequest;

  struct Answer {
    explicit Answer(ExactRequestIdentity owned_identity)
        : identity(std::move(owned_identity)) {}
    const ExactRequestIdentity identity;  // owns its graph bytes
    std::string exact_key;
    std::string value_digest;  // of the entry it came from
    PlanStoreEntry entry;      // that entry, without its plan
    // The response without store_entry and timings (they change with
    // every hit), serialized once; and its summary.
    std::shared_ptr<const std::string> body;
    gopt::v1::OptimizeResponse summary;
    int64_t bytes = 0;
  };
  using AnswerList = std::list<std::shared_ptr<const Answer>>;

  std::shared_ptr<const Answer> FindAnswer(
      const ExactRequestIdentity& identity);
  void KeepAnswer(std::shared_ptr<const Answer> answer);

  const std::shared_ptr<PlanStore> store_;
  const int max_answers_;
  const int64_t max_bytes_;
  absl::Mutex mutex_;
  AnswerList answers_ ABSL_GUARDED_BY(mutex_);  // most recently used first
  absl::flat_hash_map<size_t, AnswerList::iterator> by_hash_
      ABSL_GUARDED_BY(mutex_);
  int64_t bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

// A stored plan the request can use, re-simulated on its graph.
struct StoredPlan {
  simulator::Plan plan;
  std::string method;  // the method that made it (its provenance)
  double step_time_s = 0;
  // The entry was made with at least the requested effort: it is the
  // answer, and the baselines and policies are skipped.
  bool answers = false;
};

// One Optimize request's use of the store: OptimizeRequest.store says
// whether it reads (DEFAULT, READ_ONLY) and writes (DEFAULT, REFRESH). A
// store error never fails the request: it becomes a warning in the
// response and store_result "error".
//
// The Engine calls, in order: AnswerBeforeImport; after the import and the
// default plan's simulation, AfterImport; with the chosen plan, AfterAnswer.
// Not thread-safe; one per request.
class PlanCacheRequest {
 public:
  // `cache` may be null (no store). Borrows all three.
  PlanCacheRequest(PlanCache* cache, const gopt::v1::OptimizeRequest& request,
                   const Clock& clock);

  // The answer kept for this exact request when the store's entry is still
  // the one it came from (its hit counted) and was made with at least this
  // request's effort, with store_entry and timings of this hit; nullopt
  // otherwise.
  std::optional<SerializedResponse> AnswerBeforeImport();

  // Computes the plan key and looks it up. Returns the stored plan
  // simulated on `simulator` when it fits the graph and topology and
  // memory (else nullopt, a warning, and the entry is replaced later).
  // Sets response->fingerprint, store_result and a "store" timing.
  std::optional<StoredPlan> AfterImport(const graph::Graph& graph,
                                        const simulator::Topology& topology,
                                        const gopt::v1::Tasks& tasks,
                                        const simulator::Simulator& simulator,
                                        gopt::v1::OptimizeResponse* response);

  // With the response complete (plan, step time, method, partial): counts
  // a hit, or writes the plan back (keep-best; replace for REFRESH or a
  // stored plan that no longer fits), and fills from_store, store_entry and
  // stored. A new entry keeps the request (without its budget) beside it,
  // for idle refinement (plan_refiner.h).
  void AfterAnswer(gopt::v1::OptimizeResponse* response);

 private:
  bool reads() const;
  bool writes() const;
  const std::string& exact_key();
  // Counts a hit on `key` once per request (AnswerBeforeImport may have).
  absl::StatusOr<PlanStoreTouch> TouchOnce(const std::string& key);
  void KeepAnswer(const PlanStoreTouch& touched,
                  const gopt::v1::OptimizeResponse& response);
  void Warn(const absl::Status& status, absl::string_view what,
            gopt::v1::OptimizeResponse* response);
  void KeepRequest(gopt::v1::OptimizeResponse* response);

  PlanCache* const cache_;
  const gopt::v1::OptimizeRequest& request_;
  const Clock& clock_;
  std::string exact_key_;  // computed when first needed
  std::string plan_key_;
  std::string fingerprint_;
  std::optional<PlanStoreEntry> entry_;        // what the store held
  std::optional<gopt::v1::Plan> stored_plan_;  // that could be used
  bool answered_ = false;                      // the stored plan is the answer
  bool replace_ = false;  // the stored plan did not fit: replace it
  int64_t num_simulations_before_ = 0;
  std::string touched_key_;  // the entry whose hit was counted, if any
  absl::StatusOr<PlanStoreTouch> touched_;
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_PLAN_CACHE_H_
