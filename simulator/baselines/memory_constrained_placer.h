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
// would exceed the device's memory_bytes. The estimate follows the list
// schedule being built, as the simulator's accounting follows execution:
//   + parameters and constants placed there, for the whole step;
//   + the output of every kernel placed there, from its placement until
//     every consumer of it is placed (views such as reshapes alias their
//     input and keep it alive until their own consumers are placed);
//   + one received copy of every remote tensor consumed there, until every
//     consumer of that tensor is placed;
// checked with the new node's inputs still held, its output added and the
// parameters that come along with it. A ready node that does not fit a
// device waits until enough memory is freed there; when every remaining
// ready node waits, the placer gives up with ResourceExhausted naming one
// of them (e.g. weights larger than any device). The estimate assumes ops
// run in the order they were placed; the simulator runs each device's
// ready ops in priority order (FIFO by default), so its peak may differ and
// a plan is not guaranteed to be free of OOM there.
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
