#ifndef GOPT_GRAPH_IMPORTER_H_
#define GOPT_GRAPH_IMPORTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/parse_cost.h"

namespace gopt::graph {

// Options every importer honours.
struct ImportOptions {
  // Name used in error messages and as the graph name when the file has none
  // (usually the file path). Default: "<input>".
  std::string source_name = "<input>";
  // Values for symbolic dimensions by name (ONNX dim_param, e.g. "batch").
  absl::flat_hash_map<std::string, int64_t> symbolic_dims;
  // Value for symbolic or unknown dimensions not in `symbolic_dims`.
  // Default 1 (one example per step); each use is reported as a warning.
  int64_t default_symbolic_dim = 1;
  GraphLimits limits;
};

// Deepest nesting an imported file may have (messages, JSON values, text
// blocks); real graphs nest a few levels.
inline constexpr int kMaxImportNesting = 64;
// Node elements a file may hold on the wire per graph node allowed
// (GraphLimits::max_nodes counts top-level nodes; subgraph, loop-body and
// fused-computation elements count on the wire too).
inline constexpr int64_t kWireNodesPerGraphNode = 4;

// Turns the bytes of one file format into a Graph. Implementations are
// stateless and safe to call from many threads at once.
class Importer {
 public:
  virtual ~Importer() = default;
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  // The --format name ("hlo", "onnx", ...).
  virtual absl::string_view format() const = 0;

  // True when `contents` look like this format. Cheap (looks at a prefix
  // and/or a light parse); used for --format=auto.
  virtual bool Sniff(absl::string_view contents) const = 0;

  // What importing `contents` will cost, from a scan of its bytes before
  // anything is parsed: an upper bound of its nodes and the heap bytes its
  // parse will take (see ParseCost). InvalidArgument for nesting deeper
  // than limits.max_depth, ResourceExhausted past limits.max_nodes; never
  // allocates in proportion to the nodes it counts.
  virtual absl::StatusOr<ParseCost> EstimateCost(
      absl::string_view contents, const ParseCostLimits& limits) const = 0;

  // Imports `contents`. Errors are InvalidArgument (ResourceExhausted for
  // limits) and name the node and field at fault; never crashes on any input.
  virtual absl::StatusOr<Graph> Import(absl::string_view contents,
                                       const ImportOptions& options) const = 0;

 protected:
  Importer() = default;
};

// The set of importers available to a program, looked up by format name or
// by sniffing. Register everything before use; lookups are then thread-safe.
class ImporterRegistry {
 public:
  ImporterRegistry() = default;
  ImporterRegistry(const ImporterRegistry&) = delete;
  ImporterRegistry& operator=(const ImporterRegistry&) = delete;

  // Takes ownership. Sniffing tries importers in registration order, so
  // register specific formats before permissive ones.
  void Register(std::unique_ptr<Importer> importer);

  // The importer for `format`, or NotFound listing the known formats.
  absl::StatusOr<const Importer*> Find(absl::string_view format) const;

  // The first importer whose Sniff accepts `contents`, or InvalidArgument
  // ("not a recognised graph format") listing the formats tried.
  absl::StatusOr<const Importer*> Detect(absl::string_view contents) const;

  // What importing `contents` with the importer for `format` ("auto"
  // sniffs) will cost (Importer::EstimateCost), with the limits that
  // `options` implies: nesting of kMaxImportNesting levels, and at most
  // kWireNodesPerGraphNode x options.limits.max_nodes node elements on the
  // wire (ResourceExhausted naming both). Errors are prefixed like
  // Import's.
  absl::StatusOr<ParseCost> EstimateCost(absl::string_view contents,
                                         absl::string_view format,
                                         const ImportOptions& options) const;

  // Imports `contents` with the importer for `format` ("auto" sniffs),
  // after EstimateCost's checks. Empty contents and graphs without nodes
  // are InvalidArgument. Errors are prefixed with options.source_name and
  // the format.
  absl::StatusOr<Graph> Import(absl::string_view contents,
                               absl::string_view format,
                               const ImportOptions& options) const;

  // Import with a say between the estimate and the parse: `admit` gets
  // EstimateCost's result and may refuse (its error is returned as is,
  // before anything is parsed). One scan of the bytes serves both, as the
  // engine's memory budget needs the estimate before it lets a parse
  // allocate.
  absl::StatusOr<Graph> Import(
      absl::string_view contents, absl::string_view format,
      const ImportOptions& options,
      absl::FunctionRef<absl::Status(const ParseCost&)> admit) const;

  // Reads `path` and imports it; the graph is named after the file when the
  // format carries no name. NotFound / PermissionDenied for unreadable files.
  absl::StatusOr<Graph> ImportFile(const std::string& path,
                                   absl::string_view format,
                                   ImportOptions options) const;

  // Registered format names, in registration order.
  std::vector<std::string> formats() const;

 private:
  // The importer for `format` ("auto" sniffs) and the error context
  // "SOURCE (FORMAT)"; InvalidArgument for empty contents.
  absl::StatusOr<const Importer*> Resolve(absl::string_view contents,
                                          absl::string_view format,
                                          const ImportOptions& options,
                                          std::string* context) const;

  std::vector<std::unique_ptr<Importer>> importers_;
};

// Reads a whole file. NotFound, PermissionDenied, InvalidArgument (a
// directory) or Internal (I/O error), each naming the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_IMPORTER_H_
