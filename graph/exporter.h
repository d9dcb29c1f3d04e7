#ifndef GOPT_GRAPH_EXPORTER_H_
#define GOPT_GRAPH_EXPORTER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "gopt/v1/plan.pb.h"
#include "graph/graph.h"

namespace gopt::graph {

// One device of the topology a plan was made for, as exporters name it.
struct ExportDevice {
  std::string name;  // unique in the topology, e.g. "gpu:1"
  std::string kind;  // "cpu", "gpu" or "tpu"
};

// How an exporter writes the schedule where the format has a choice.
enum class ScheduleAs {
  kPriority,     // a priority annotation per node (the default)
  kControlDeps,  // TF: control inputs between consecutive ops of a device
};

struct ExportOptions {
  // Names the device configuration (ONNX) and appears in warnings.
  std::string topology_name = "topology";
  // The topology's devices, indexed like Plan.device; at least one.
  std::vector<ExportDevice> devices;
  ScheduleAs schedule_as = ScheduleAs::kPriority;
};

// The caller's file with gopt's decisions in it.
struct ExportResult {
  std::string contents;
  // Decisions the format cannot express (named), and other notes.
  std::vector<std::string> warnings;
};

// Writes gopt's decisions into the file a graph was imported from, in the
// form that format's own compiler reads, leaving everything else in the file
// as it was; and reads them back. Implementations are stateless and safe to
// call from many threads at once.
class Exporter {
 public:
  virtual ~Exporter() = default;
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // The importer format this exporter writes ("onnx", "graphdef", ...).
  virtual absl::string_view format() const = 0;

  // Returns `original` (the bytes `graph` was imported from) with `plan`'s
  // decisions in it. `plan` must fit `graph` (CheckPlanFitsGraph) and be
  // source-consistent (MakePlanSourceConsistent). InvalidArgument when
  // `original` does not parse or does not match `graph` (naming the node).
  virtual absl::StatusOr<ExportResult> Export(
      absl::string_view original, const Graph& graph,
      const gopt::v1::Plan& plan, const ExportOptions& options) const = 0;

  // The decisions an export embedded in `contents` as a plan for `graph`
  // (imported from `contents`) on `devices`; nullopt when the file carries
  // none. InvalidArgument naming the node and field for a decision that
  // does not parse or names an unknown device.
  virtual absl::StatusOr<std::optional<gopt::v1::Plan>> ReadPlan(
      absl::string_view contents, const Graph& graph,
      absl::Span<const ExportDevice> devices) const = 0;

 protected:
  Exporter() = default;
};

// The exporters available to a program, by format. Register everything
// before use; lookups are then thread-safe.
class ExporterRegistry {
 public:
  ExporterRegistry() = default;
  ExporterRegistry(const ExporterRegistry&) = delete;
  ExporterRegistry& operator=(const ExporterRegistry&) = delete;

  void Register(std::unique_ptr<Exporter> exporter);

  // Records why `format` (one an importer reads) has no exporter; Find
  // answers with `reason`.
  void ExplainMissing(std::string format, std::string reason);

  // The exporter for `format` (a Graph::format()), or Unimplemented with the
  // reason given to ExplainMissing, else naming the formats that have one.
  absl::StatusOr<const Exporter*> Find(absl::string_view format) const;

 private:
  std::vector<std::unique_ptr<Exporter>> exporters_;
  std::vector<std::pair<std::string, std::string>> missing_;  // format, why
};

// `message` serialized with maps in key order, so that the same decisions
// written twice (optimize --write, then apply) give the same bytes.
std::string SerializeDeterministically(
    const google::protobuf::MessageLite& message);

// Parses a non-negative decimal decision value written by an exporter
// ("gopt.priority" = "12"); InvalidArgument naming `what` otherwise.
absl::StatusOr<int32_t> ParseDecisionInt(absl::string_view text,
                                         absl::string_view what);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_EXPORTER_H_
