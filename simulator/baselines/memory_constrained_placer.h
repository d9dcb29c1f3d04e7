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
// would exceed the device's budget (at first its memory_bytes). The
// estimate follows the list
// schedule being built, as the simulator's accounting follows execution:
//   + parameters and constants placed there, for the whole step: from its
//     start, so placing one also raises the estimate's earlier peak;
//   + the output of every kernel placed there, from its placement until
//     every consumer of it is placed (views such as reshapes alias their
//     input and keep it alive until their own consumers are placed);
//   + one received copy of every remote tensor consumed there, until every
//     consumer of that tensor is placed;
// checked with the new node's inputs still held, its output added and the
// parameters that come along with it. A ready node that does not fit a
// device waits until enough memory is freed there; when every remaining
// ready node waits, the placer gives up with ResourceExhausted naming one
// of them (e.g. weights larger than any device).
//
// The estimate assumes ops run in the order they were placed, so the
// placer also returns that order as priorities (PlaceInOrder; the first
// placed highest), and a method that names no scheduling runs in it
// ("m-sct" = "m-sct+placement-order"). The simulator still strays from the
// list schedule: transfers contend for links, a received copy is held from
// its arrival rather than from its consumer's placement, and a ready op
// overtakes an earlier-placed one whose inputs are late. So the placer
// simulates its plan (placement, its order, no fusion, default layouts)
// and, while some device overflows, places again with that device's budget
// lowered by the overflow, up to kMaxAttempts times; then it gives up with
// ResourceExhausted. A plan it returns is free of OOM in the simulator under
// its own order; another scheduler, fusion or layout (e.g.
// "m-sct+critical-path+greedy") changes the order and the buffers, and
// carries no such guarantee.
//
// Free nodes (reshapes, tuples, ...) take no device time and are placed
// where their inputs arrive first; parameters and constants are placed with
// their first consumer. Transfers are priced per edge without link
// contention. O((nodes + edges) * devices * log nodes) per attempt, plus
// one simulation. Stateless and thread-safe.
class MemoryConstrainedPlacer final : public Placer {
 public:
  enum class Variant { kEarliestTaskFirst, kSmallCommunicationTimes };

  explicit MemoryConstrainedPlacer(Variant variant) : variant_(variant) {}

  // Retries of the placement with tightened budgets (see the class comment).
  static constexpr int kMaxAttempts = 8;

  // "m-etf" or "m-sct".
  absl::string_view name() const override;
  // PlaceInOrder's devices.
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
  bool AssumesOrder() const override { return true; }
  // The devices and the list-schedule order, checked in the simulator.
  // ResourceExhausted when a node fits no device, or when kMaxAttempts
  // placements all overflow in simulation.
  absl::StatusOr<Placement> PlaceInOrder(
      const BaselineContext& context) const override;

 private:
  const Variant variant_;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_
