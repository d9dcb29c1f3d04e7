#ifndef GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_
#define GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_

#include <cstdint>
#include <vector>

#include "simulator/baselines/placer.h"

namespace gopt::simulator::baselines {

// Baechi-style memory-constrained list scheduling (Jeon et al., "Baechi:
// Fast Device Placement of Machine Learning Graphs", SoCC 2020):
//
// "m-etf" (Earliest Task First): repeatedly take the (ready node, device)
// pair that can start earliest, where a node's start on a device is
//   max(device free, max over inputs of (input finish + transfer)),
// ties going to the higher MeanUpwardRank, then the lower NodeId, then the
// lower device index; the device is busy until the node's kernel ends.
//
// "m-sct" (Small Communication Times): the same, but every node has a
// favourite child (the consumer its largest output edge feeds), and on the
// device where a parent sits, its favourite child goes before any other
// node that could start at the same time. This approximates the SCT rule of
// Hanen and Munier (a favourite child follows its parent on the parent's
// device when communication would dominate) without its LP relaxation.
//
// Memory: a node is never placed on a device where the running estimate
//   resident parameters and constants placed there
//   + outputs of every kernel placed there
//   + one received copy of every remote tensor consumed there
// would exceed the device's memory_bytes. Nothing is ever freed in the
// estimate, so it bounds from above what the simulator allocates on that
// device at any instant (which frees activations after their last use):
// a plan from these placers is never OOM in the simulator. The price is
// conservatism: a graph whose activations, summed, exceed the machine's
// memory gets ResourceExhausted, naming a node that fits nowhere.
//
// Free nodes (reshapes, tuples, ...) take no device time and are placed
// where their inputs arrive first; parameters and constants are placed with
// their first consumer. Transfers are priced per edge without link
// contention. O((nodes + edges) * devices * log nodes). Stateless and
// thread-safe.
class MemoryConstrainedPlacer final : public Placer {
 public:
  enum class Variant { kEarliestTaskFirst, kSmallCommunicationTimes };

  explicit MemoryConstrainedPlacer(Variant variant) : variant_(variant) {}

  // "m-etf" or "m-sct".
  absl::string_view name() const override;
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;

 private:
  const Variant variant_;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_
