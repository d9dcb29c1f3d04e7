#include "client/inspect.h"

#include <algorithm>
#include <functional>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/fingerprint.h"

namespace gopt::client {
namespace {

int64_t CountSubgraphs(const graph::Graph& graph) {
  int64_t count = 0;
  for (const auto& subgraph : graph.subgraphs()) {
    count += 1 + CountSubgraphs(*subgraph);
  }
  return count;
}

std::string HumanCount(double value, absl::string_view unit) {
  static constexpr std::pair<double, absl::string_view> kScales[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [scale, prefix] : kScales) {
    if (value >= scale) {
      return absl::StrFormat("%.3f %s%s", value / scale, prefix, unit);
    }
  }
  return absl::StrFormat("%.0f %s", value, unit);
}

nlohmann::json CountToJson(const graph::GraphCoverage::Count& count) {
  return {
      {"count", count.count}, {"total", count.total}, {"share", count.share()}};
}

// "98.5% (985/1000)".
std::string ShareText(const graph::GraphCoverage::Count& count) {
  return absl::StrFormat("%.1f%% (%d/%d)", 100.0 * count.share(), count.count,
                         count.total);
}

std::string HumanBytes(int64_t bytes) {
  static constexpr std::pair<double, absl::string_view> kScales[] = {
      {1024.0 * 1024 * 1024 * 1024, "TiB"},
      {1024.0 * 1024 * 1024, "GiB"},
      {1024.0 * 1024, "MiB"},
      {1024.0, "KiB"}};
  for (const auto& [scale, unit] : kScales) {
    if (static_cast<double>(bytes) >= scale) {
      return absl::StrFormat("%.2f %s", static_cast<double>(bytes) / scale,
                             unit);
    }
  }
  return absl::StrCat(bytes, " B");
}

// Appends the nodes named `name` in `graph` (scope `scope`) and then in its
// bodies not yet in `searched`.
void FindNodesIn(const graph::Graph& graph, absl::string_view name,
                 const std::string& scope,
                 std::unordered_set<const graph::Graph*>* searched,
                 std::vector<NodeDetail>* found) {
  if (!searched->insert(&graph).second) return;
  for (const graph::Node& node : graph.nodes()) {
    // An instruction of a called computation is inlined once per call,
    // under a longer name; its source element keeps the file's name.
    if (node.name != name && node.source.name != name) continue;
    NodeDetail detail;
    detail.scope = scope;
    detail.name = node.name;
    detail.op = node.op;
    detail.kind = std::string(graph::OpKindName(node.kind));
    for (const graph::TensorType& output : node.outputs) {
      detail.outputs.push_back(output.ToString());
    }
    detail.flops = node.flops;
    detail.bytes_read = node.bytes_read;
    detail.bytes_written = node.bytes_written;
    detail.metadata = node.metadata.get();
    found->push_back(std::move(detail));
  }
  for (const auto& subgraph : graph.subgraphs()) {
    FindNodesIn(*subgraph, name,
                scope.empty() ? subgraph->name()
                              : absl::StrCat(scope, "/", subgraph->name()),
                searched, found);
  }
}

}  // namespace

std::vector<NodeDetail> FindNodes(const graph::Graph& graph,
                                  absl::string_view name) {
  std::unordered_set<const graph::Graph*> searched;
  std::vector<NodeDetail> found;
  FindNodesIn(graph, name, "", &searched, &found);
  return found;
}

nlohmann::json NodeDetailToJson(const NodeDetail& node) {
  nlohmann::json json = {{"scope", node.scope},
                         {"name", node.name},
                         {"op", node.op},
                         {"kind", node.kind},
                         {"outputs", node.outputs},
                         {"flops", node.flops},
                         {"bytes_read", node.bytes_read},
                         {"bytes_written", node.bytes_written}};
  const graph::NodeMetadata& metadata = node.metadata;
  if (!metadata.op_name.empty()) json["op_name"] = metadata.op_name;
  if (!metadata.file.empty()) json["source_file"] = metadata.file;
  if (!metadata.function.empty()) json["function"] = metadata.function;
  if (metadata.line != 0) json["source_line"] = metadata.line;
  if (!metadata.sharding.empty()) json["sharding"] = metadata.sharding;
  return json;
}

std::string NodeDetailToText(const NodeDetail& node) {
  std::string out;
  auto row = [&out](absl::string_view key, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("  %-24s %s\n", key, value));
  };
  absl::StrAppend(&out, "node ", node.name,
                  node.scope.empty() ? "" : absl::StrCat(" in ", node.scope),
                  "\n");
  row("op", absl::StrCat(node.op, " (", node.kind, ")"));
  row("outputs", absl::StrJoin(node.outputs, ", "));
  row("FLOPs", absl::StrFormat("%.6g", node.flops));
  row("bytes read / written",
      absl::StrCat(node.bytes_read, " / ", node.bytes_written));
  const graph::NodeMetadata& metadata = node.metadata;
  if (!metadata.op_name.empty()) row("op_name", metadata.op_name);
  if (!metadata.file.empty() || metadata.line != 0) {
    row("source",
        absl::StrCat(metadata.file, ":", metadata.line,
                     metadata.function.empty()
                         ? ""
                         : absl::StrCat(" (", metadata.function, ")")));
  }
  if (!metadata.sharding.empty()) row("sharding", metadata.sharding);
  return out;
}

InspectReport Inspect(const graph::Graph& graph) {
  InspectReport report;
  report.name = graph.name();
  report.format = graph.format();
  report.nodes = graph.num_nodes();
  for (const graph::Edge& edge : graph.edges()) {
    if (edge.control) {
      ++report.control_edges;
    } else {
      ++report.edges;
    }
  }
  report.total_flops = graph.total_flops();
  report.total_bytes = graph.total_bytes();
  report.subgraphs = CountSubgraphs(graph);
  report.coverage = graph::ComputeCoverage(graph);
  report.loops = report.coverage.known_trip_counts.total;
  for (const graph::Node& node : graph.nodes()) {
    ++report.ops[std::string(graph::OpKindName(node.kind))];
    ++report.source_ops[node.op];
    if (node.kind == graph::OpKind::kParameter ||
        node.kind == graph::OpKind::kConstant) {
      report.parameter_bytes += node.output_bytes();
    }
    if (node.layout_configurable) ++report.layout_configurable_nodes;
    if (node.device_constraint == graph::DeviceConstraint::kCpuOnly) {
      ++report.cpu_only_nodes;
    }
    if (node.cost_unknown) ++report.cost_unknown_nodes;
  }
  report.warnings = graph.warnings();
  report.spmd = graph.spmd();
  report.fingerprint = graph::GraphFingerprint(graph);
  return report;
}

nlohmann::json InspectReportToJson(const InspectReport& report) {
  nlohmann::json json;
  json["name"] = report.name;
  json["format"] = report.format;
  json["nodes"] = report.nodes;
  json["edges"] = report.edges;
  json["control_edges"] = report.control_edges;
  json["total_flops"] = report.total_flops;
  json["total_bytes"] = report.total_bytes;
  json["parameter_bytes"] = report.parameter_bytes;
  json["subgraphs"] = report.subgraphs;
  json["loops"] = report.loops;
  json["layout_configurable_nodes"] = report.layout_configurable_nodes;
  json["cpu_only_nodes"] = report.cpu_only_nodes;
  json["cost_unknown_nodes"] = report.cost_unknown_nodes;
  json["ops"] = report.ops;
  json["source_ops"] = report.source_ops;
  json["warnings"] = report.warnings;
  const graph::GraphCoverage& coverage = report.coverage;
  json["coverage"] = {
      {"known_shapes", CountToJson(coverage.known_shapes)},
      {"cost_rules", CountToJson(coverage.cost_rules)},
      {"known_trip_counts", CountToJson(coverage.known_trip_counts)},
      {"bytes_only", CountToJson(coverage.bytes_only)},
      {"ops_lacking_rules", coverage.ops_lacking_rules}};
  json["spmd"] = {{"sharded", report.spmd.num_partitions > 1},
                  {"partitions", report.spmd.num_partitions},
                  {"collectives_inserted", report.spmd.collectives_inserted}};
  json["fingerprint"] = report.fingerprint;
  return json;
}

std::string InspectReportToText(const InspectReport& report) {
  std::string out;
  auto row = [&out](absl::string_view key, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("%-26s %s\n", key, value));
  };
  row("name", report.name);
  row("format", report.format);
  row("nodes", absl::StrCat(report.nodes));
  row("edges",
      absl::StrCat(report.edges, " data, ", report.control_edges, " control"));
  row("total FLOPs",
      absl::StrFormat("%s (%.6g)", HumanCount(report.total_flops, "FLOP"),
                      report.total_flops));
  row("total bytes (read+write)", HumanBytes(report.total_bytes));
  row("parameters + constants", HumanBytes(report.parameter_bytes));
  row("subgraphs", absl::StrCat(report.subgraphs));
  row("loops", absl::StrCat(report.loops));
  row("sharded",
      report.spmd.num_partitions > 1
          ? absl::StrCat("yes, partitions ", report.spmd.num_partitions,
                         ", collectives inserted ",
                         report.spmd.collectives_inserted)
          : "no");
  row("layout-configurable nodes",
      absl::StrCat(report.layout_configurable_nodes));
  row("cpu-only nodes", absl::StrCat(report.cpu_only_nodes));
  row("bytes-only (unknown) nodes", absl::StrCat(report.cost_unknown_nodes));
  const graph::GraphCoverage& coverage = report.coverage;
  std::string lacking;
  for (const auto& [op, count] : coverage.ops_lacking_rules) {
    absl::StrAppend(&lacking, lacking.empty() ? "; lacking rules: " : ", ", op,
                    " x", count);
  }
  row("coverage",
      absl::StrCat("shapes ", ShareText(coverage.known_shapes), ", cost rules ",
                   ShareText(coverage.cost_rules), ", trip counts ",
                   ShareText(coverage.known_trip_counts), lacking));

  std::vector<std::pair<std::string, int64_t>> ops(report.ops.begin(),
                                                   report.ops.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;
  });
  absl::StrAppend(&out, "\nop kinds:\n");
  for (const auto& [kind, count] : ops) {
    absl::StrAppend(&out, absl::StrFormat("  %-24s %8d\n", kind, count));
  }
  if (!report.warnings.empty()) {
    absl::StrAppend(&out, "\nwarnings:\n");
    for (const std::string& warning : report.warnings) {
      absl::StrAppend(&out, "  - ", warning, "\n");
    }
  }
  return out;
}

}  // namespace gopt::client
