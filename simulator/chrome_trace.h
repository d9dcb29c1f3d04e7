#ifndef GOPT_SIMULATOR_CHROME_TRACE_H_
#define GOPT_SIMULATOR_CHROME_TRACE_H_

#include <string>

#include "absl/status/status.h"
#include "graph/graph.h"
#include "nlohmann/json.hpp"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::simulator {

// A Chrome trace (the JSON "traceEvents" format that Perfetto and
// chrome://tracing open) of a simulation recorded with record_timeline:
// one process per device; thread 0 holds its kernels (one complete event
// per kernel; a fused group is one event listing its nodes), thread 1+d the
// transfers it sends to device d. Times in microseconds.
nlohmann::json ChromeTrace(const graph::Graph& graph, const Topology& topology,
                           const Plan& plan, const SimulationResult& result);

// Writes ChromeTrace(...) to `path`. Internal on write failure,
// FailedPrecondition if the result has no timeline.
absl::Status WriteChromeTrace(const std::string& path,
                              const graph::Graph& graph,
                              const Topology& topology, const Plan& plan,
                              const SimulationResult& result);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_CHROME_TRACE_H_
