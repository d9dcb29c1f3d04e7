#ifndef GOPT_GRAPH_HLO_HLO_EXPORTER_H_
#define GOPT_GRAPH_HLO_HLO_EXPORTER_H_

#include <memory>

#include "graph/exporter.h"

namespace gopt::graph {

// Writes gopt's decisions into HLO text, editing only the lines of the
// instructions that became graph nodes: placement as
// `sharding={maximal device=K}` (replacing a sharding the instruction had),
// a layout decision as the `{minor_to_major}` of the instruction's array
// shape, and priority and fusion group as the frontend attributes
// `_gopt_priority` and `_gopt_kernel` (XLA carries frontend attributes
// through its passes unchanged). Everything else, metadata and stack frames
// included, stays byte for byte. Two decisions are not written yet, each
// with a warning naming how many: the schedule as `is_scheduled=true`
// instruction order, and fusion groups as `fusion` instructions calling
// fused computations. Reads the decisions back from the same attributes.
std::unique_ptr<Exporter> NewHloTextExporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_EXPORTER_H_
