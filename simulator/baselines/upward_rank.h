#ifndef GOPT_SIMULATOR_BASELINES_UPWARD_RANK_H_
#define GOPT_SIMULATOR_BASELINES_UPWARD_RANK_H_

#include <cstdint>
#include <vector>

#include "simulator/baselines/cost_table.h"

namespace gopt::simulator::baselines {

// The upward rank of every node, as HEFT defines it before any placement:
//   rank(v) = mean compute seconds of v
//             + max over out-edges (v, s) of (mean transfer seconds of the
//               edge + rank(s)),
// i.e. the longest remaining path to a sink with every node at its average
// device speed and every edge paying the average link. Sinks have their own
// compute time. A predecessor's rank is never below its successor's, so
// sorting by decreasing rank (ties: lower NodeId) is a topological order.
// O(nodes + edges).
std::vector<double> MeanUpwardRank(const CostTable& costs);

// The upward rank under a fixed placement: each node's compute time on its
// own device, and transfers only on edges that cross devices (priced on
// their link). `device` must be a valid placement (CheckPlacement).
// O(nodes + edges).
std::vector<double> PlacedUpwardRank(const CostTable& costs,
                                     const std::vector<int32_t>& device);

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_UPWARD_RANK_H_
