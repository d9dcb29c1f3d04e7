#ifndef GOPT_ENGINE_PLAN_CACHE_H_
#define GOPT_ENGINE_PLAN_CACHE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
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

// The Engine's use of a PlanStore (the "store" stage of DESIGN.md's data
// flow), shared by all its requests. Holds the store and the answers it
// recently gave from it, so that an identical request (same exact key, same
// stored entry) is answered without importing the graph: the simulator is
// deterministic, so re-simulating the same plan on the same graph bytes and
// topology gives the numbers kept with that answer. A changed entry (another
// writer improved it) is simulated afresh.
//
// Thread-safe.
class PlanCache {
 public:
  // `store` may be null: then every request is "skip". At most
  // `max_answers` answers are kept (oldest dropped first).
  explicit PlanCache(std::shared_ptr<PlanStore> store, int max_answers = 64);
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  PlanStore* store() const { return store_.get(); }

 private:
  friend class PlanCacheRequest;

  struct Answer {
    std::string entry_key;
    int64_t entry_updated_unix_micros = 0;
    double entry_step_time_s = 0;
    gopt::v1::OptimizeResponse response;
  };
  std::optional<Answer> FindAnswer(const std::string& exact_key) const;
  void KeepAnswer(const std::string& exact_key, Answer answer);

  const std::shared_ptr<PlanStore> store_;
  const int max_answers_;
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<std::string, Answer> answers_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::string> answer_order_ ABSL_GUARDED_BY(mutex_);
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
  // the one it came from and was made with at least this request's effort
  // (timings and store_entry refreshed); nullopt otherwise.
  std::optional<gopt::v1::OptimizeResponse> AnswerBeforeImport();

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
  void Warn(const absl::Status& status, absl::string_view what,
            gopt::v1::OptimizeResponse* response);
  void KeepRequest(gopt::v1::OptimizeResponse* response);

  PlanCache* const cache_;
  const gopt::v1::OptimizeRequest& request_;
  const Clock& clock_;
  std::string exact_key_;
  std::string plan_key_;
  std::string fingerprint_;
  std::optional<PlanStoreEntry> entry_;        // what the store held
  std::optional<gopt::v1::Plan> stored_plan_;  // that could be used
  bool answered_ = false;                      // the stored plan is the answer
  bool replace_ = false;  // the stored plan did not fit: replace it
  int64_t num_simulations_before_ = 0;
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_PLAN_CACHE_H_
