#ifndef GOPT_ENGINE_MEMORY_BUDGET_H_
#define GOPT_ENGINE_MEMORY_BUDGET_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gopt::engine {

// A server-wide budget of memory for the requests in flight: each request
// reserves its estimated peak before the expensive work and releases it
// when done, so that concurrent large requests are refused instead of
// driving the process into the container's OOM killer. Thread-safe.
//
//   MemoryBudget budget(/*budget_bytes=*/6LL << 30);
//   ASSIGN_OR_RETURN(MemoryBudget::Reservation r, budget.Reserve(n, "graph"));
class MemoryBudget {
 public:
  // Bytes held until destroyed (or moved from). Movable, not copyable.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();

    int64_t bytes() const { return bytes_; }

   private:
    friend class MemoryBudget;
    Reservation(MemoryBudget* budget, int64_t bytes)
        : budget_(budget), bytes_(bytes) {}
    void Release();

    MemoryBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  // budget_bytes >= 1.
  explicit MemoryBudget(int64_t budget_bytes);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Reserves `bytes` (>= 0) for `what` (e.g. "graph 'bert' of 85,000 nodes
  // with FINE_TUNE"). ResourceExhausted, naming `what`, the estimate and the
  // budget, when it can never fit or does not fit next to the requests in
  // flight now (the message says to retry later).
  absl::StatusOr<Reservation> Reserve(int64_t bytes, absl::string_view what);

  int64_t budget_bytes() const { return budget_bytes_; }
  int64_t in_use_bytes() const;

 private:
  void Release(int64_t bytes);

  const int64_t budget_bytes_;
  mutable absl::Mutex mutex_;
  int64_t in_use_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

// What a request is about to do, for EstimateRequestBytes.
enum class RequestWork {
  kBaselines,  // baselines only (and Evaluate)
  kZeroShot,   // + policy inference
  kFineTune,   // + PPO fine-tuning (the network's activations and grads)
};

// Estimated peak resident bytes of one request on a graph of `nodes` nodes
// (subgraph nodes included): a fixed part plus a per-node part by `work`,
// plus `trace` bytes for a Chrome trace. The per-node figures come from
// measured peak RSS (docs/reliability.md, "Memory admission").
int64_t EstimateRequestBytes(int64_t nodes, RequestWork work, bool trace);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_MEMORY_BUDGET_H_
