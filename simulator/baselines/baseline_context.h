#ifndef GOPT_SIMULATOR_BASELINES_BASELINE_CONTEXT_H_
#define GOPT_SIMULATOR_BASELINES_BASELINE_CONTEXT_H_

#include <cstdint>

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::simulator::baselines {

// What every baseline heuristic decides from: the graph, the machine, the
// cost model that prices a kernel on a device, and a seed for the heuristics
// that draw random numbers. All three references are borrowed; they must
// outlive every call that receives the context.
//
//   RooflineCostModel cost_model;
//   BaselineContext context{graph, topology, cost_model, /*seed=*/7};
//   absl::StatusOr<std::vector<int32_t>> device = placer.Place(context);
struct BaselineContext {
  const graph::Graph& graph;
  const Topology& topology;
  const OpCostModel& cost_model;
  uint64_t seed = 0;
};

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_BASELINE_CONTEXT_H_
