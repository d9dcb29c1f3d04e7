#ifndef GOPT_ENGINE_PLAN_REFINER_H_
#define GOPT_ENGINE_PLAN_REFINER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/plan_store.h"
#include "gopt/v1/optimizer.pb.h"
#include "util/clock.h"

namespace gopt::engine {

struct PlanRefinerOptions {
  // Share of one CPU the refiner takes over time, in (0, 1]: after
  // refining for T it rests T * (1 / cpu_share - 1). Default 0.25.
  double cpu_share = 0.25;
  // Entries refined per round, the most asked for first. Default 4.
  int entries_per_round = 4;
  // Fine-tuning steps each refinement asks for beyond the entry's recorded
  // effort (so the request always warm-starts from the stored plan rather
  // than being answered by it). Default 20.
  int fine_tune_steps = 20;
  // Wall-clock limit of one refinement. Default 30 s.
  absl::Duration refinement_time = absl::Seconds(30);
  // How often a refinement checks whether requests arrived. Default 10 ms.
  absl::Duration yield_poll = absl::Milliseconds(10);
  // Rest when a round found nothing to refine. Default 30 s.
  absl::Duration idle_rest = absl::Seconds(30);
};

// Anytime improvement of the plan store (gopt-server --refine_idle): in
// idle time, continues the plan search on the most asked-for entries that
// keep their request (PlanStore::LookupRequest), by running that request
// again with more fine-tuning than the entry records, warm-started from the
// stored plan; the engine writes back anything better (keep-best). It
// yields to requests: while `busy` is true no refinement starts, and one in
// progress is cancelled within `yield_poll` (the engine stops at its next
// stage or search round, and nothing is written). Errors of one entry are
// skipped, never fatal.
//
// Thread-safe; Start runs the rounds on a background thread until Stop.
class PlanRefiner {
 public:
  // Runs one request to its answer (the Engine's Optimize), stopping by
  // `deadline` or once `*cancelled` is set.
  using Optimize = std::function<absl::StatusOr<gopt::v1::OptimizeResponse>(
      const gopt::v1::OptimizeRequest& request, absl::Time deadline,
      const std::atomic<bool>* cancelled)>;
  // True while requests are in flight.
  using Busy = std::function<bool()>;

  // Borrows `store` and `clock`.
  PlanRefiner(PlanStore* store, Optimize optimize, Busy busy,
              const PlanRefinerOptions& options,
              const Clock* clock = &Clock::Real());
  ~PlanRefiner();
  PlanRefiner(const PlanRefiner&) = delete;
  PlanRefiner& operator=(const PlanRefiner&) = delete;

  void Start();
  // Stops after the refinement in progress (cancelled); idempotent.
  void Stop();

  struct RoundResult {
    int refined = 0;   // refinements that ran to an answer
    int improved = 0;  // of those, answers that stored a faster plan
    int yielded = 0;   // cancelled because requests arrived
  };
  // One round on the calling thread. The store's errors listing entries
  // are returned; an entry's own errors skip it.
  absl::StatusOr<RoundResult> RunRound();

  // The request a refinement of `entry` sends: `request` with a FINE_TUNE
  // budget of the entry's steps + options.fine_tune_steps, partial results
  // allowed, and a seed that changes with the entry's simulations.
  // nullopt when the entry records unbounded fine-tuning already.
  std::optional<gopt::v1::OptimizeRequest> RefinementRequest(
      const PlanStoreEntry& entry, gopt::v1::OptimizeRequest request) const;

 private:
  void Loop();
  // Waits `duration` or until Stop; false once stopped.
  bool Rest(absl::Duration duration);
  bool stopped() const;

  PlanStore* const store_;
  const Optimize optimize_;
  const Busy busy_;
  const PlanRefinerOptions options_;
  const Clock* const clock_;
  mutable absl::Mutex mutex_;
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_PLAN_REFINER_H_
