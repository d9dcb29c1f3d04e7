#ifndef GOPT_CLIENT_INSPECT_H_
#define GOPT_CLIENT_INSPECT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

}  // namespace gopt::client

#endif  // GOPT_CLIENT_INSPECT_H_
