#ifndef GOPT_SIMULATOR_BASELINES_SCHEDULERS_H_
#define GOPT_SIMULATOR_BASELINES_SCHEDULERS_H_

#include <cstdint>
#include <vector>

#include "simulator/baselines/scheduler.h"

namespace gopt::simulator::baselines {

// "fifo": the framework default. Returns no priorities, so every ready op
// runs in topological order. Stateless and thread-safe.
class FifoScheduler final : public Scheduler {
 public:
  FifoScheduler() = default;
  absl::string_view name() const override { return "fifo"; }
  absl::StatusOr<std::vector<int32_t>> Schedule(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

// "critical-path": priority by upward rank under the given placement
// (PlacedUpwardRank: the longest remaining path of kernel and transfer
// times to a sink), so among ready ops the one heading the longest chain
// runs first. Ranks become dense integer priorities preserving their order
// (equal ranks, equal priorities; the largest rank gets the largest
// priority). O((nodes + edges) + nodes log nodes). Stateless and
// thread-safe.
class CriticalPathScheduler final : public Scheduler {
 public:
  CriticalPathScheduler() = default;
  absl::string_view name() const override { return "critical-path"; }
  absl::StatusOr<std::vector<int32_t>> Schedule(
      const BaselineContext& context,
      const std::vector<int32_t>& device) const override;
};

// Maps `values` to dense integer ranks 0..k-1 in increasing order of value
// (equal values share a rank). Exposed for the policy, which turns its
// scores into priorities the same way.
//
//   DenseRanks({0.5, 2.0, 0.5}) == {0, 1, 0}
std::vector<int32_t> DenseRanks(const std::vector<double>& values);

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_SCHEDULERS_H_
