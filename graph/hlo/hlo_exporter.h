#ifndef GOPT_GRAPH_HLO_HLO_EXPORTER_H_
#define GOPT_GRAPH_HLO_HLO_EXPORTER_H_

#include <memory>

#include "graph/exporter.h"

namespace gopt::graph {

// Writes gopt's decisions into HLO text, editing only the instructions that
// became graph nodes: placement as `sharding={maximal device=K}` (replacing a
// sharding the instruction had), a layout decision as the `{minor_to_major}`
// of the instruction's array shape (marked by the frontend attribute
// `_gopt_layout`: ReadPlan takes a marked shape's layout as the decision;
// other layouts are the caller's), and priority and fusion group as the
// frontend attributes `_gopt_priority` and `_gopt_kernel` (XLA carries
// frontend attributes through its passes unchanged). A fusion group of two
// or more instructions becomes a fusion instruction calling a fused
// computation (WriteFusionInstructions; a group XLA cannot fuse stays as
// attributes, with a warning naming it). Everything else, metadata and
// stack frames included, stays as it was. The schedule is written as XLA
// reads a scheduled module (WriteTextSchedule): `is_scheduled=true` and
// each computation no fusion calls in execution order, the order the
// HloModuleProto export writes as its schedule. Every instruction whose
// place the export may change (with a decision, moved into a fused
// computation, or in a computation the schedule reorders) carries its
// original index as frontend attribute `_gopt_order`, from which the
// importer restores the original module (hlo::RestoreGoptExport). Reads
// the decisions back from the same attributes: a fusion's members carry
// their own (without placement: the fusion's sharding is theirs), keyed by
// the names they get back when the import unfolds the fusion.
std::unique_ptr<Exporter> NewHloTextExporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_EXPORTER_H_
