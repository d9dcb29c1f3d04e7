#ifndef GOPT_CLIENT_INSPECT_H_
#define GOPT_CLIENT_INSPECT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/coverage.h"
#include "graph/graph.h"
#include "nlohmann/json.hpp"

namespace gopt::client {

// A summary of one imported graph: what `gopt inspect` prints.
struct InspectReport {
  std::string name;
  std::string format;
  int64_t nodes = 0;
  int64_t edges = 0;
  int64_t control_edges = 0;
  double total_flops = 0;
  int64_t total_bytes = 0;
  // Bytes of parameters and constants (what stays resident on a device).
  int64_t parameter_bytes = 0;
  int64_t subgraphs = 0;  // attached bodies, counted recursively
  // Loops anywhere in the graph: while nodes (HLO while, ONNX Loop) and
  // cut loop back edges (TF1 frames), attached bodies included.
  int64_t loops = 0;
  int64_t layout_configurable_nodes = 0;
  int64_t cpu_only_nodes = 0;
  int64_t cost_unknown_nodes = 0;
  // The SPMD program the graph is one device's part of (partitions 1: not
  // sharded).
  graph::SpmdProgram spmd;
  std::map<std::string, int64_t> ops;         // canonical kind -> count
  std::map<std::string, int64_t> source_ops;  // original op name -> count
  std::vector<std::string> warnings;
  graph::GraphCoverage coverage;
  std::string fingerprint;  // graph/fingerprint.h: the plan store's key part
};

// Summarises `graph`. Pure function of the graph.
InspectReport Inspect(const graph::Graph& graph);

// The report as one JSON object; keys: name, format, nodes, edges,
// control_edges, total_flops, total_bytes, parameter_bytes, subgraphs, loops,
// layout_configurable_nodes, cpu_only_nodes, cost_unknown_nodes, ops,
// source_ops, warnings, coverage, spmd ({"sharded", "partitions",
// "collectives_inserted"}). `coverage` holds known_shapes, cost_rules,
// known_trip_counts and bytes_only, each {"count", "total", "share"}, and
// ops_lacking_rules (source op name -> nodes).
nlohmann::json InspectReportToJson(const InspectReport& report);

// The report as a human-readable table (units scaled: GFLOP, MiB).
std::string InspectReportToText(const InspectReport& report);

// One node as `gopt inspect --node=NAME` shows it: what a user reads in a
// trace next to the node's name. `metadata` is what the importer kept: op
// name; source file, function and line (HLO: source_file/source_line, or
// the innermost frame of stack_frame_id in the module's stack-frame
// tables); sharding.
struct NodeDetail {
  // Where the node is: "" for the top graph, else the attached bodies from
  // the top down ("region_0.12/closed_call.11"), by subgraph name.
  std::string scope;
  std::string name;
  std::string op;                    // the source format's op name
  std::string kind;                  // gopt's op kind
  std::vector<std::string> outputs;  // XLA-like types, one per output
  double flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  graph::NodeMetadata metadata;
};

// The nodes named `name` in `graph` and in every attached body (each body
// searched once, however many nodes call it), top graph first: by their
// graph name or by the name the source file gives them (an HLO instruction
// of a called computation, inlined once per call, is found at every call).
// Empty when there is none.
std::vector<NodeDetail> FindNodes(const graph::Graph& graph,
                                  absl::string_view name);

// A node as JSON: {"scope", "name", "op", "kind", "outputs", "flops",
// "bytes_read", "bytes_written", "op_name", "source_file", "function",
// "source_line", "sharding"}; the metadata keys only when set.
nlohmann::json NodeDetailToJson(const NodeDetail& node);

// A node as text rows ("source  FILE:LINE (FUNCTION)" when it has one).
std::string NodeDetailToText(const NodeDetail& node);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_INSPECT_H_
