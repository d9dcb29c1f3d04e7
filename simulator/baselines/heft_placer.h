#ifndef GOPT_SIMULATOR_BASELINES_HEFT_PLACER_H_
#define GOPT_SIMULATOR_BASELINES_HEFT_PLACER_H_

#include <cstdint>
#include <vector>

#include "simulator/baselines/placer.h"

namespace gopt::simulator::baselines {

// "heft": Heterogeneous Earliest Finish Time (Topcuoglu, Hariri and Wu,
// 2002), without insertion.
//  1. Rank: MeanUpwardRank (mean kernel time over the allowed devices, mean
//     link cost per edge).
//  2. Take the ready node of highest rank (ties: lower NodeId); for every
//     device its constraint allows, its finish time would be
//       max(device free, max over inputs of (input finish + transfer to
//           that device)) + its kernel time there;
//     place it on the device of earliest finish (ties: lower index). The
//     device is then busy until that finish: a node is never inserted into
//     an earlier idle gap.
// Free nodes (reshapes, tuples, ...) occupy no device: they go where their
// inputs arrive first. Parameters and constants are placed with their first
// placed consumer (their data is then local). Transfers are priced per edge
// without link contention, and memory is not considered (see m-etf/m-sct).
// O((nodes + edges) * devices + nodes log nodes). Stateless and
// thread-safe.
class HeftPlacer final : public Placer {
 public:
  HeftPlacer() = default;
  absl::string_view name() const override { return "heft"; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_HEFT_PLACER_H_
