#ifndef GOPT_SIMULATOR_BASELINES_SIMPLE_PLACERS_H_
#define GOPT_SIMULATOR_BASELINES_SIMPLE_PLACERS_H_

#include <cstdint>
#include <vector>

#include "simulator/baselines/placer.h"

namespace gopt::simulator::baselines {

// "single": every node on device 0, the framework default. A node whose
// device constraint forbids device 0 goes to the first device it allows.
// Stateless and thread-safe.
class SinglePlacer final : public Placer {
 public:
  SinglePlacer() = default;
  absl::string_view name() const override { return "single"; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
};

// "round-robin": node i (topological order) on device i mod num_devices,
// or the next device its constraint allows. Ignores costs entirely; it is
// the naive spread every other heuristic should beat. Stateless and
// thread-safe.
class RoundRobinPlacer final : public Placer {
 public:
  RoundRobinPlacer() = default;
  absl::string_view name() const override { return "round-robin"; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
};

// "random": each node on a device drawn uniformly from the devices its
// constraint allows, from a generator seeded by context.seed (the same
// seed gives the same placement). Stateless and thread-safe.
class RandomPlacer final : public Placer {
 public:
  RandomPlacer() = default;
  absl::string_view name() const override { return "random"; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
};

// "expert": what a human expert does to pipeline a large model (GNMT-style
// layer-per-device splits): cut the topological order into contiguous
// chunks, one per accelerator (every device when there is none), with
// chunk sizes proportional to each device's peak FLOP/s so that compute
// time is balanced. A node's weight is its mean kernel time over those
// devices; a node falls in the chunk that holds the midpoint of its
// weight on the cumulative axis. Parameters and constants then join their
// first consumer's device, and a node whose constraint forbids its chunk's
// device takes the next allowed device. O(nodes + edges). Stateless and
// thread-safe.
class ExpertPlacer final : public Placer {
 public:
  ExpertPlacer() = default;
  absl::string_view name() const override { return "expert"; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_SIMPLE_PLACERS_H_
