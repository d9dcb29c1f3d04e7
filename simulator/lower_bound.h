#ifndef GOPT_SIMULATOR_LOWER_BOUND_H_
#define GOPT_SIMULATOR_LOWER_BOUND_H_

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::simulator {

struct LowerBoundOptions {
  // Which fusion groups a plan may form. false (the default): any group of
  // nodes on one device whose groups form no cycle, which is everything
  // Simulate accepts, so the bound holds for every plan it simulates. true:
  // only groups that obey FusionRoleOf (at most one dot or convolution per
  // kernel; gathers, sorts, collectives, control flow, parameters, ... never
  // share a kernel), as every plan gopt's planners make does (`greedy`
  // fusion, the GO policy, the plan search); a much tighter bound, which a
  // hand-written plan that fuses two dots may beat.
  bool kernel_rules = false;
};

// The terms of the lower bound; the bound is the largest.
struct LowerBoundTerms {
  // The longest path, each node at its smallest possible cost: the kernels
  // the path must launch, their roofline compute time with all the path's
  // FLOPs at the fastest device, kernels that cannot fuse at their full
  // solo time, and the transfers device constraints force.
  double path_s = 0;
  // Kernel time no plan avoids (as above, over all nodes) / devices.
  double work_s = 0;
  // Memory traffic no fusion removes / the devices' total bandwidth.
  double memory_s = 0;

  double seconds() const;
};

// A lower bound on the step time of every plan of `graph` on `topology`
// that Simulate accepts (with options.kernel_rules: every such plan whose
// fusion groups obey FusionRoleOf), OOM plans included. Kernel times follow
// RooflineCostModel's law (launch + max(flops / (peak * efficiency),
// bytes / bandwidth), efficiency falling for small kernels), which every
// OpCostModel gopt ships obeys; `cost_model` prices the kernels that run
// alone. O(nodes + edges). Thread-safe; borrows its arguments for the call.
LowerBoundTerms ComputeLowerBound(const graph::Graph& graph,
                                  const Topology& topology,
                                  const OpCostModel& cost_model,
                                  const LowerBoundOptions& options = {});

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_LOWER_BOUND_H_
