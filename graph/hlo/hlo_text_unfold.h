#ifndef GOPT_GRAPH_HLO_HLO_TEXT_UNFOLD_H_
#define GOPT_GRAPH_HLO_HLO_TEXT_UNFOLD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gopt::graph {

// The lines of HLO text `contents` with every fusion that an earlier gopt
// export wrote (hlo::FindGoptFusions) put back as the instructions it was
// made of, so that the text exporter can write a new plan into a file it
// exported before: each member line returns to its caller at the fusion's
// place, under its original name, reading the fusion's operands where it
// read a parameter (`ROOT` where the fusion or the get-tuple-element it
// replaces was the root); the get-tuple-elements of a multi-output fusion
// and the fused computations go. Every other line, and every attribute of
// the members (metadata, _gopt_order, gopt's old decisions, which the new
// export replaces), is kept as written. Text without gopt fusions comes back
// split into lines, unchanged.
//
// FailedPrecondition naming the computation when a gopt fused computation
// does not unfold exactly (a fused computation edited by hand, or one that
// holds a batch-norm-inference expansion): export into the original file
// instead. InvalidArgument when `contents` does not parse as HLO text.
absl::StatusOr<std::vector<std::string>> UnfoldGoptFusionText(
    absl::string_view contents);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_HLO_HLO_TEXT_UNFOLD_H_
