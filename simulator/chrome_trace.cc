#include "simulator/chrome_trace.h"

#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace gopt::simulator {

nlohmann::json ChromeTrace(const graph::Graph& graph, const Topology& topology,
                           const Plan& plan, const SimulationResult& result) {
  nlohmann::json events = nlohmann::json::array();
  for (int d = 0; d < topology.num_devices(); ++d) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", d},
                      {"args",
                       {{"name", absl::StrCat("device ", d, " ",
                                              topology.devices[d].name)}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", d},
                      {"tid", 0},
                      {"args", {{"name", "kernels"}}}});
  }
  if (result.node_start_s.size() != static_cast<size_t>(graph.num_nodes())) {
    return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  }
  // One event per kernel: fused nodes share one.
  absl::flat_hash_map<int32_t, size_t> event_of_group;
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const double start = result.node_start_s[id];
    const double end = result.node_end_s[id];
    if (end <= start) continue;  // free op: no kernel
    const graph::Node& node = graph.node(id);
    const int32_t group =
        plan.fusion_group.empty() ? -1 : plan.fusion_group[id];
    if (group >= 0) {
      auto it = event_of_group.find(group);
      if (it != event_of_group.end()) {
        events[it->second]["args"]["nodes"].push_back(node.name);
        continue;
      }
      event_of_group[group] = events.size();
    }
    nlohmann::json event = {
        {"ph", "X"},
        {"name", group >= 0 ? absl::StrCat("fusion ", group) : node.name},
        {"cat",
         group >= 0 ? "fusion" : std::string(graph::OpKindName(node.kind))},
        {"pid", plan.device[id]},
        {"tid", 0},
        {"ts", start * 1e6},
        {"dur", (end - start) * 1e6},
        {"args", {{"op", node.op}, {"flops", node.flops}}}};
    event["args"]["nodes"] = nlohmann::json::array({node.name});
    events.push_back(std::move(event));
  }
  for (const TransferRecord& t : result.transfers) {
    events.push_back({{"ph", "X"},
                      {"name", absl::StrCat(graph.node(t.node).name,
                                            " -> device ", t.dst_device)},
                      {"cat", "transfer"},
                      {"pid", t.src_device},
                      {"tid", 1 + t.dst_device},
                      {"ts", t.start_s * 1e6},
                      {"dur", (t.end_s - t.start_s) * 1e6},
                      {"args", {{"bytes", t.bytes}}}});
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"graph", graph.name()},
            {"topology", topology.name},
            {"method", plan.method},
            {"step_time_s", result.step_time_s}}}};
}

absl::Status WriteChromeTrace(const std::string& path,
                              const graph::Graph& graph,
                              const Topology& topology, const Plan& plan,
                              const SimulationResult& result) {
  if (result.node_start_s.size() != static_cast<size_t>(graph.num_nodes())) {
    return absl::FailedPreconditionError(
        "simulation was run without record_timeline; no trace to write");
  }
  std::ofstream file(path);
  file << ChromeTrace(graph, topology, plan, result).dump() << "\n";
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace gopt::simulator
