#ifndef GOPT_SIMULATOR_LOWER_BOUND_H_
#define GOPT_SIMULATOR_LOWER_BOUND_H_

#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::simulator {

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
  // Only for plans that fit in memory (not OOM): when a connected part of
  // the graph holds more parameter and constant bytes than any device, some
  // edge of it crosses devices: the least path-to-source + transfer over
  // its edges. 0 when no part is that large.
  double memory_split_s = 0;

  // The bound for every accepted plan: max(path_s, work_s, memory_s).
  double seconds() const;
  // The bound for every accepted plan that fits in memory: also
  // memory_split_s.
  double fits_in_memory_seconds() const;
};

// A lower bound on the step time of every plan of `graph` on `topology`
// that Simulate accepts, OOM plans included. Accepted plans obey the kernel
// rules (ValidatePlan, fusion_rules.h): at most one dot or convolution per
// kernel; parameters, gathers, sorts, collectives, control flow, ... never
// share one. The bound does not use the rule that a normalization or softmax
// computing statistics never shares a dot's or convolution's kernel (it
// stays valid, only less tight). Kernel times follow RooflineCostModel's law
// (launch + max(flops / (peak * efficiency), bytes / bandwidth), efficiency
// falling for small kernels), which every OpCostModel gopt ships obeys;
// `cost_model` prices the kernels that run alone. O(nodes + edges).
// Thread-safe; borrows its arguments for the call.
LowerBoundTerms ComputeLowerBound(const graph::Graph& graph,
                                  const Topology& topology,
                                  const OpCostModel& cost_model);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_LOWER_BOUND_H_
