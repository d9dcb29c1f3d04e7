#ifndef GOPT_CLIENT_APPLY_H_
#define GOPT_CLIENT_APPLY_H_

// `gopt apply`: a saved plan written into the caller's own graph file in
// the form its compiler reads (graph/exporter.h), and the way back for
// `gopt evaluate FILE` without --plan. Thread-safe as long as `out` is not
// shared.

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/local_commands.h"
#include "gopt/v1/plan.pb.h"

namespace gopt::client {

// gopt apply FILE --plan=plan.json --write=OUT.
struct ApplyOptions {
  std::string path;  // the graph file (the one operand)
  GraphReadOptions read;
  std::string topology = "v100x4-nvlink";  // the plan's topology
  std::string plan_path;                   // required: gopt.v1.Plan JSON
  std::string write_path;                  // required: the file to write
  // "priority" (default) or "control-deps" (TF GraphDef / TF.js).
  std::string schedule_as;
  bool json = false;
};

// Writes options.plan_path's plan into options.path as options.write_path
// and reports the format and warnings (what the format cannot express).
// Errors: InvalidArgument naming node and field for a plan that does not fit
// the graph or topology, breaks the kernel rules or makes a cycle;
// Unimplemented for a format without an exporter; file errors naming the
// path.
absl::Status RunApply(const ApplyOptions& options, std::ostream& out);

// The plan an export embedded in the graph file `path` (for `gopt evaluate
// FILE` without --plan). NotFound when the file carries none; import and
// read errors otherwise.
absl::StatusOr<gopt::v1::Plan> EmbeddedPlanOf(const std::string& path,
                                              const GraphReadOptions& read,
                                              const std::string& topology);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_APPLY_H_
