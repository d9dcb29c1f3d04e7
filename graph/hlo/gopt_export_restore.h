#ifndef GOPT_GRAPH_HLO_GOPT_EXPORT_RESTORE_H_
#define GOPT_GRAPH_HLO_GOPT_EXPORT_RESTORE_H_

// Gives back the module a gopt HLO export was written from. The HLO
// exporters (text and HloModuleProto) move instructions: a fusion group
// becomes a fusion instruction calling `gopt_fused_computation.K`, and the
// text export lists each computation in schedule order. Every instruction
// they may move carries its original index as frontend attribute
// _gopt_order (HloInstruction::export_position), which this pass reads, so
// that importing an export yields the graph of the original, node for node
// in the same order, with the export's decisions as its plan.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/hlo/hlo_module.h"

namespace gopt::graph::hlo {

// The value of a _gopt_order frontend attribute ("7"): an instruction
// index, 0 to 2^31-1. InvalidArgument naming `what` (the computation and
// instruction) and the attribute when it is not a number or out of that
// range.
absl::StatusOr<int32_t> ParseExportPosition(absl::string_view value,
                                            absl::string_view what);

// A fusion instruction that a gopt export wrote and RestoreGoptExport
// unfolds: it calls a computation named `gopt_fused_computation*` that
// nothing else calls, whose parameters are its operands one to one and
// whose other instructions all carry _gopt_order (a tuple root without one
// is the exporter's, gathering several outputs). With one output the
// fused root takes the fusion's name; with several, root operand j takes
// the name of the one get-tuple-element(fusion), index=j, of the caller,
// and those get-tuple-elements are the fusion's only users.
struct GoptFusion {
  int32_t caller = -1;  // index into HloModule::computations
  int32_t fusion = -1;  // the fusion's index in the caller
  int32_t fused = -1;   // the fused computation's index
  // By instruction of the fused computation: its name in the caller once
  // unfolded; empty for a parameter and for the exporter's tuple root.
  std::vector<std::string> restored_names;
  // By instruction of the fused computation: the caller instruction it
  // replaces (the fusion or a get-tuple-element of it), or -1.
  std::vector<int32_t> replaces;
};

// Every fusion instruction of `module` that RestoreGoptExport unfolds, by
// caller and then instruction order. A fusion that cannot be unfolded
// exactly (a fused computation whose instructions do not all carry
// _gopt_order, as a batch-norm-inference expansion before
// FoldBatchNormExpansions; a get-tuple-element missing or doubled; a restored
// name that an instruction of the caller already has) is not listed: it stays a
// fusion. `module` must pass ValidateHloModule. Pure; thread-compatible.
std::vector<GoptFusion> FindGoptFusions(const HloModule& module);

// Folds back, in place, every batch-norm-inference that the HLO text
// export wrote into a gopt fused computation as XLA's BatchNormExpander
// expands it (an add of the scaled operand and the broadcast shift, ten
// instructions without _gopt_order feeding only it): the add, which
// carries the batch norm's name, metadata and _gopt_order, becomes the
// batch-norm-inference of the five operands the expansion reads, and the
// ten go. Anything else is left as it is. RestoreGoptExport starts with
// it; the text exporter's ReadPlan too, so that FindGoptFusions lists the
// fusion. `module` must pass ValidateHloModule; it still does afterwards.
void FoldBatchNormExpansions(HloModule* module);

// Restores the module a gopt export was written from, in place:
// (a) unfolds every fusion FindGoptFusions lists: the fused computation's
//     instructions (not its parameters or tuple root) go back into the
//     caller at the fusion's place with their original names, their
//     operands the fusion's operands where they read a parameter; users
//     and the root of the caller read the members instead of the fusion
//     and its get-tuple-elements; the fused computations are dropped (the
//     other computations keep their order; calls and entry re-indexed);
// (b) puts every computation whose instructions all carry _gopt_order in
//     that order (operands and root re-mapped). A computation where only
//     some carry it is left as it is (a user edited the file).
// Returns InvalidArgument naming the computation, the instruction and
// _gopt_order when two instructions of a computation carry the same
// value, a value is past the instructions the export could have had, or
// the order puts an instruction before one of its operands; the module is
// then partly restored and must not be used. A module without _gopt_order
// is left unchanged. Work and memory are linear in the module's size.
// `module` must pass ValidateHloModule; it still does afterwards.
absl::Status RestoreGoptExport(HloModule* module);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_GOPT_EXPORT_RESTORE_H_
