#ifndef GOPT_CLIENT_SIMULATE_REPORT_H_
#define GOPT_CLIENT_SIMULATE_REPORT_H_

#include <string>

#include "graph/graph.h"
#include "nlohmann/json.hpp"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::client {

// What `gopt simulate` prints about one simulation.
struct SimulateReport {
  std::string graph;
  std::string topology;
  std::string method;
  int64_t nodes = 0;
  simulator::SimulationResult result;
  double lower_bound_s = 0;
  // Median wall time of the simulation alone over the repeats.
  double simulation_seconds = 0;
  int repeats = 1;
};

// One JSON object: graph, topology, method, nodes, step_time_s,
// lower_bound_s, oom, peak_memory_bytes (per device), device_busy_s (per
// device), bytes_moved, transfers, kernels, layout_copy_s,
// critical_path_nodes, critical_path_busy_s, simulation_seconds, repeats.
nlohmann::json SimulateReportToJson(const SimulateReport& report);

// A human-readable summary with a per-device table.
std::string SimulateReportToText(const SimulateReport& report);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_SIMULATE_REPORT_H_
