#include "engine/plan_refiner.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gopt::engine {

PlanRefiner::PlanRefiner(PlanStore* store, Optimize optimize, Busy busy,
                         const PlanRefinerOptions& options, const Clock* clock)
    : store_(store),
      optimize_(std::move(optimize)),
      busy_(std::move(busy)),
      options_(options),
      clock_(clock) {}

PlanRefiner::~PlanRefiner() { Stop(); }

void PlanRefiner::Start() {
  absl::MutexLock lock(&mutex_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void PlanRefiner::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool PlanRefiner::stopped() const {
  absl::MutexLock lock(&mutex_);
  return stop_;
}

bool PlanRefiner::Rest(absl::Duration duration) {
  absl::MutexLock lock(&mutex_);
  mutex_.AwaitWithTimeout(absl::Condition(&stop_), duration);
  return !stop_;
}

void PlanRefiner::Loop() {
  const double share = std::clamp(options_.cpu_share, 0.01, 1.0);
  while (!stopped()) {
    const absl::Time start = clock_->Now();
    absl::StatusOr<RoundResult> round = RunRound();
    const absl::Duration worked = clock_->Now() - start;
    const bool idle =
        !round.ok() || (round->refined == 0 && round->yielded == 0);
    const absl::Duration rest =
        idle ? options_.idle_rest : worked * (1 / share - 1);
    if (!Rest(std::max(rest, options_.yield_poll))) return;
  }
}

std::optional<gopt::v1::OptimizeRequest> PlanRefiner::RefinementRequest(
    const PlanStoreEntry& entry, gopt::v1::OptimizeRequest request) const {
  const gopt::v1::PlanProvenance& provenance = entry.provenance();
  int32_t steps = 0;
  if (provenance.budget_mode() == gopt::v1::Budget::FINE_TUNE) {
    if (provenance.fine_tune_steps() == 0 && provenance.budget_seconds() == 0) {
      return std::nullopt;
    }
    steps = provenance.fine_tune_steps();
  }
  gopt::v1::Budget* budget = request.mutable_budget();
  budget->set_mode(gopt::v1::Budget::FINE_TUNE);
  budget->set_fine_tune_steps(steps + options_.fine_tune_steps);
  budget->set_seconds(0);
  request.set_allow_partial_result(true);
  request.set_store(gopt::v1::OptimizeRequest::DEFAULT);
  request.mutable_options()->set_seed(
      static_cast<uint64_t>(provenance.num_simulations()));
  return request;
}

absl::StatusOr<PlanRefiner::RoundResult> PlanRefiner::RunRound() {
  PlanStoreFilter filter;
  filter.limit = options_.entries_per_round;
  absl::StatusOr<std::vector<PlanStoreEntry>> entries = store_->List(filter);
  if (!entries.ok()) return entries.status();
  RoundResult result;
  for (const PlanStoreEntry& entry : *entries) {
    if (stopped()) break;
    absl::StatusOr<std::string> bytes = store_->LookupRequest(entry.key());
    if (!bytes.ok()) continue;
    gopt::v1::OptimizeRequest stored;
    if (!stored.ParseFromString(*bytes)) continue;
    std::optional<gopt::v1::OptimizeRequest> request =
        RefinementRequest(entry, std::move(stored));
    if (!request.has_value()) continue;
    // Requests first: wait for a quiet moment.
    while (busy_() && !stopped()) clock_->SleepFor(options_.yield_poll);
    std::atomic<bool> cancelled{false};
    std::atomic<bool> done{false};
    std::thread watcher([&] {
      while (!done.load()) {
        if (busy_() || stopped()) {
          cancelled.store(true);
          return;
        }
        clock_->SleepFor(options_.yield_poll);
      }
    });
    absl::StatusOr<gopt::v1::OptimizeResponse> response = optimize_(
        *request, clock_->Now() + options_.refinement_time, &cancelled);
    done.store(true);
    watcher.join();
    if (absl::IsCancelled(response.status())) {
      ++result.yielded;
      continue;
    }
    if (!response.ok()) continue;
    ++result.refined;
    if (response->stored()) ++result.improved;
  }
  return result;
}

}  // namespace gopt::engine
