#ifndef GOPT_SIMULATOR_BASELINES_METIS_PLACER_H_
#define GOPT_SIMULATOR_BASELINES_METIS_PLACER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/placer.h"

namespace gopt::simulator::baselines {

// "metis": a k-way partition of the graph by libmetis (METIS 5,
// METIS_PartGraphKway, edge-cut objective), one part per device.
//  - The graph is taken as undirected; parallel edges between two nodes
//    merge.
//  - Vertex weight: the node's mean kernel time over the devices it may use,
//    scaled to integers (total about 2^26; every vertex weighs at least 1,
//    so free nodes count for almost nothing).
//  - Edge weight: the bytes the edges carry, scaled down only when the total
//    would overflow METIS's 32-bit weights (at least 1, so control edges
//    still pull their ends together a little).
//  - Target part sizes are proportional to each device's peak f32 FLOP/s
//    (equal on a homogeneous machine); METIS's default 3% imbalance
//    tolerance applies.
//  - context.seed seeds METIS, so a seed gives the same partition.
// A node whose constraint forbids its part's device moves to the next
// allowed device. With one device every node stays on it; a graph with no
// more nodes than devices puts node i on device i. Errors: Internal naming
// METIS's return code when METIS fails. Stateless and thread-safe (METIS 5
// keeps its working memory per call).
class MetisPlacer final : public Placer {
 public:
  MetisPlacer() = default;
  absl::string_view name() const override { return "metis"; }
  absl::StatusOr<std::vector<int32_t>> Place(
      const BaselineContext& context) const override;
};

// Multiplies a dependency's METIS edge weight (its bytes): edge_factor(src,
// dst) for the edge src -> dst, finite and >= 0.
using MetisEdgeFactor = std::function<double(graph::NodeId, graph::NodeId)>;

// The "metis" placement (MetisPlacer, every rule above) with each
// dependency's bytes multiplied by `edge_factor` before parallel edges merge
// and weights scale to integers (a weight still stays at least 1). A null
// `edge_factor` gives MetisPlacer::Place's placement. Used by the GO
// network's co-location decode (policy/go/co_location_decode.h), whose learned
// factors say which edges to keep inside a part. `costs` (borrowed) must
// price context's graph on context's topology (so callers that partition
// one graph several times build it once). Errors: Place's, and
// InvalidArgument naming the edge when a factor is negative or not finite.
// Thread-safe when `edge_factor` is.
absl::StatusOr<std::vector<int32_t>> MetisPlaceWeighted(
    const BaselineContext& context, const CostTable& costs,
    const MetisEdgeFactor& edge_factor);

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_METIS_PLACER_H_
