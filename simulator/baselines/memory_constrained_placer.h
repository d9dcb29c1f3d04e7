#ifndef GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_
#define GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_

#include <cstdint>
#include <vector>

#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/placer.h"
#include "simulator/simulator.h"

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
// Memory: a node is never placed on a device where the estimate would
// exceed the device's budget (at first its memory_bytes). The estimate is a
// history: one entry per committed node (the list schedule's time order),
// the bytes in use on each device just after that commit, as the
// simulator's accounting follows execution:
//   + parameters and constants placed there, for the whole step: from the
//     first entry, so placing one also raises the history's earlier peak;
//   + the output of every kernel placed there, from its commit until every
//     consumer of it is placed (views such as reshapes alias their input
//     and keep it alive until their own consumers are placed);
//   + one received copy of every remote tensor consumed there, from its
//     producer's commit (the simulator sends a tensor as soon as it is
//     produced, so a forward activation read by a backward op on another
//     device occupies that device for most of the step) until every
//     consumer of that tensor is placed;
// checked against the history's peak with the new node's inputs still
// held, its output added and the parameters that come along with it; and
// the bytes in use at the commit must stay below the fill limit (the
// budget less a reserve, 0 at first). A ready node that does not fit a
// device waits until enough memory is freed there. When every remaining
// ready node waits, the one that would start first among those that fit a
// device's budget at the moment of the commit (overflowing only the
// history, an upper bound, or the reserve) is placed anyway, and the
// simulation below decides; when none does, the placement runs out of
// room.
//
// The estimate assumes ops run in the order they were placed, so the
// placer also returns that order as priorities (PlaceInOrder; the first
// placed highest), and a method that names no scheduling runs in it
// ("m-sct" = "m-sct+placement-order"). The simulator still strays from the
// list schedule: transfers contend for links, and a ready op overtakes an
// earlier-placed one whose inputs are late. So the placer simulates its
// plan (placement, its order, no fusion, default layouts) and, while some
// device overflows, places again with that device's budget lowered by the
// overflow; a placement that runs out of room is tried again with a larger
// reserve (kFirstReserveFraction of each budget, doubling up to
// kMaxReserveFraction), which leaves room for copies of early tensors. After
// kMaxAttempts placements, or out of room with the largest reserve, it tries
// the whole graph on one device (largest memory first, topological order):
// spreading holds copies of tensors where they are read, so a graph can fit
// one device and no spread the list schedule finds. When that overflows
// too it gives up with FailedPrecondition naming a node that fits nowhere
// (e.g. weights larger than any device) or the overflow. A plan it returns is
// free of OOM in the simulator under its own order; another scheduler, fusion
// or layout (e.g. "m-sct+critical-path+greedy") changes the order and the
// buffers, and carries no such guarantee.
//
// Free nodes (reshapes, tuples, ...) take no device time and are placed
// where their inputs arrive first; parameters and constants are placed with
// their first consumer. Transfers are priced per edge without link
// contention. O((nodes + edges) * devices * log nodes) time and
// O(nodes * devices) memory per attempt, plus one simulation. Stateless and
// thread-safe.
class MemoryConstrainedPlacer final : public Placer {
 public:
  enum class Variant { kEarliestTaskFirst, kSmallCommunicationTimes };

  explicit MemoryConstrainedPlacer(Variant variant) : variant_(variant) {}

  // Placements tried at most (see the class comment).
  static constexpr int kMaxAttempts = 8;
  // The reserve kept free of each budget when the placer runs out of room:
  // at first, and at most (it doubles in between).
  static constexpr double kFirstReserveFraction = 1.0 / 16;
  static constexpr double kMaxReserveFraction = 1.0 / 4;

  // "m-etf" or "m-sct".
  absl::string_view name() const override;
  // PlaceInOrder's devices.
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
  bool AssumesOrder() const override { return true; }
  // The devices and the list-schedule order, checked in the simulator.
  // FailedPrecondition when a node fits no device, or when kMaxAttempts
  // placements all overflow in simulation, and the graph fits no single
  // device either.
  absl::StatusOr<Placement> PlaceInOrder(
      const BaselineContext& context) const override;

 private:
  // The list-schedule placements with retries (the class comment), without
  // the one-device fallback.
  absl::StatusOr<Placement> PlaceSpread(const BaselineContext& context,
                                        const CostTable& costs,
                                        const Simulator& simulator) const;

  const Variant variant_;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_MEMORY_CONSTRAINED_PLACER_H_
