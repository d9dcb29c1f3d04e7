#ifndef GOPT_SIMULATOR_BASELINES_PLACER_H_
#define GOPT_SIMULATOR_BASELINES_PLACER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/baseline_context.h"

namespace gopt::simulator::baselines {

// What a placement heuristic decides: a device per node and, for a
// heuristic that places nodes by building a schedule (m-etf, m-sct), the
// order it assumed, as per-node priorities for the simulator (higher runs
// first among a device's ready ops). Both vectors are indexed by NodeId;
// `priority` is empty when the heuristic assumes no order.
struct Placement {
  std::vector<int32_t> device;
  std::vector<int32_t> priority;
};

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
  // heuristic cannot produce a placement (FailedPrecondition when a
  // memory-constrained heuristic finds no device with room, Internal when
  // an underlying library fails); the message names the heuristic.
  virtual absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const = 0;

  // Whether the heuristic decides an execution order along with the
  // devices (and PlaceInOrder returns it). Method names that leave the
  // scheduling out then run in that order ("placement-order"; see
  // ParseBaselineMethod). Default: false.
  virtual bool AssumesOrder() const { return false; }

  // Place, plus the assumed order when AssumesOrder(). The default returns
  // Place's devices and no priorities. Same errors as Place.
  virtual absl::StatusOr<Placement> PlaceInOrder(
      const BaselineContext& context) const {
    absl::StatusOr<std::vector<int32_t>> device = Place(context);
    if (!device.ok()) return device.status();
    return Placement{*std::move(device), {}};
  }

 protected:
  Placer() = default;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_PLACER_H_
