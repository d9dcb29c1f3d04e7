#ifndef GOPT_GRAPH_HLO_HLO_PROTO_EXPORTER_H_
#define GOPT_GRAPH_HLO_HLO_PROTO_EXPORTER_H_

#include <memory>

#include "graph/exporter.h"

namespace gopt::graph {

// Writes gopt's decisions into a serialized xla.HloModuleProto (format
// "hlo-proto"), on the instructions that became graph nodes:
// - placement as HloInstructionProto.sharding, OpSharding MAXIMAL on the
//   node's device (replacing a sharding the instruction had);
// - a layout decision as the minor_to_major of the instruction's array
//   shape (its tiles and memory space are kept), marked by the frontend
//   attribute `_gopt_layout`; ReadPlan takes the shape's layout of a
//   marked instruction as its decision (other layouts are the caller's);
// - the schedule as HloModuleProto.schedule: for every computation not
//   called by a fusion, its instructions in an order that respects operands
//   and control predecessors and runs the highest priority first among the
//   ready ones (ties keep the module's order); a module with a schedule is
//   a scheduled module to XLA;
// - fusion groups as fusion instructions calling fused computations
//   (WriteProtoFusions; a group XLA cannot fuse stays attributes, with a
//   warning naming it);
// - priority and fusion group also as the frontend attributes
//   `_gopt_priority` and `_gopt_kernel`, which is where ReadPlan reads them
//   (a fusion instruction's decision is its group's; the members inside
//   keep their own);
// - the original position as frontend attribute `_gopt_order` on every
//   instruction with a decision and every instruction of a computation
//   the fusions reordered, so that the importer gives back the original
//   module (hlo::RestoreGoptExport) and ReadPlan keys an unfolded member's
//   decision by its restored name, with the fusion's device.
// Every other field, known to gopt's copy of the proto or not, is kept
// (unknown fields go through the protobuf runtime untouched).
std::unique_ptr<Exporter> NewHloProtoExporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_PROTO_EXPORTER_H_
