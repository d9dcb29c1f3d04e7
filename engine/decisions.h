#ifndef GOPT_ENGINE_DECISIONS_H_
#define GOPT_ENGINE_DECISIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gopt/v1/optimizer.pb.h"
#include "graph/exporter.h"
#include "graph/importer.h"
#include "simulator/topology.h"

namespace gopt::engine {

// The topology's devices as exporters name them: "<profile name>:<index>"
// (unique even where every device has the same profile) and the kind.
std::vector<graph::ExportDevice> ExportDevicesOf(
    const simulator::Topology& topology);

// The caller's file: its bytes and the importer format that reads them.
struct SourceFile {
  std::string contents;
  std::string format;  // an importer's format ("onnx"), never "auto"
};

// The file of a request's graph: the serialized bytes with their format
// (sniffed for "auto"), or a gopt.v1.Graph message serialized ("gopt").
absl::StatusOr<SourceFile> SourceFileOf(
    const gopt::v1::GraphInput& input,
    const graph::ImporterRegistry& importers);

// "" / "priority" or "control-deps"; InvalidArgument naming the field
// otherwise.
absl::StatusOr<graph::ScheduleAs> ParseScheduleAs(absl::string_view text);

// Writes `plan` into `file` (imported as `graph`) for `topology`. The plan
// is checked first: InvalidArgument naming node and field when it does not
// fit the graph or topology or breaks the kernel rules (ValidatePlan), or
// when its fusion groups form a cycle; then made source-consistent (nodes
// of one source element share its decision; a warning says how many nodes
// changed). Unimplemented for a format without an exporter.
absl::StatusOr<graph::ExportResult> ApplyPlan(
    const SourceFile& file, const graph::Graph& graph,
    const gopt::v1::Plan& plan, const simulator::Topology& topology,
    graph::ScheduleAs schedule_as);

// The plan an export embedded in `file` (imported as `graph`); nullopt
// when it carries none or its format has no exporter.
absl::StatusOr<std::optional<gopt::v1::Plan>> ReadEmbeddedPlan(
    const SourceFile& file, const graph::Graph& graph,
    const simulator::Topology& topology);

// Fills response->decisions and response->device_summaries from
// response->plan, and with
// request.return_graph() response->optimized_graph (and its format; export
// warnings join response->warnings). ResourceExhausted naming the limit
// when the response would then be larger than `max_response_bytes`
// (0 = no limit); errors of SourceFileOf and ApplyPlan otherwise.
absl::Status AddDecisions(const gopt::v1::OptimizeRequest& request,
                          const graph::ImporterRegistry& importers,
                          const graph::Graph& graph,
                          const simulator::Topology& topology,
                          int64_t max_response_bytes,
                          gopt::v1::OptimizeResponse* response);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_DECISIONS_H_
