#ifndef GOPT_SIMULATOR_BASELINES_PLACER_H_
#define GOPT_SIMULATOR_BASELINES_PLACER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/baseline_context.h"

namespace gopt::simulator::baselines {

// A device placement heuristic: chooses the device of every node.
//
// Implementations are stateless: Place is const, thread-safe, and returns
// the same placement for the same context (seed included). Every placement
// respects the nodes' device constraints the way ValidatePlan checks them
// (CPU-only nodes on a CPU device when the topology has one,
// accelerator-only nodes off the CPU when an accelerator exists).
class Placer {
 public:
  virtual ~Placer() = default;
  Placer(const Placer&) = delete;
  Placer& operator=(const Placer&) = delete;

  // The registry name ("metis", "heft", ...).
  virtual absl::string_view name() const = 0;

  // Returns one device index per node (NodeId order). Errors: the
  // heuristic cannot produce a placement (ResourceExhausted when a
  // memory-constrained heuristic finds no device with room, Internal when
  // an underlying library fails); the message names the heuristic.
  virtual absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const = 0;

 protected:
  Placer() = default;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_PLACER_H_
