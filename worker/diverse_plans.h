#ifndef GOPT_WORKER_DIVERSE_PLANS_H_
#define GOPT_WORKER_DIVERSE_PLANS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/plan.h"
#include "simulator/topology.h"

namespace gopt::worker {

// A plan with a name that says how it was made ("split-50+fused").
struct NamedPlan {
  std::string name;
  simulator::Plan plan;
};

// The plans `gopt calibrate --learn` measures for one graph, and the ones a
// fidelity evaluation ranks: placements (everything on one device, every
// device, alternating, contiguous splits at 25/50/75% of the topological
// order, by depth, seeded random ones biased towards device 0), scheduling
// priorities (seeded random, reverse topological) and fusion (the greedy
// producer->consumer groups the fusion baseline makes, on several
// placements): the decisions a plan search chooses between, so a model
// trained on them learns what ranks plans of one graph. Device constraints
// and colocation groups are kept (KeepDeviceConstraints). On a one-device
// topology the placements coincide and only priorities and fusion differ.
// Returns at most `max_plans` plans (0 = all, 20 on two or more devices),
// in a fixed order; the same graph, topology and seed give the same plans.
// Errors: the fusion baseline's (InvalidArgument for a graph it rejects).
// Pure and thread-safe.
absl::StatusOr<std::vector<NamedPlan>> DiversePlans(
    const graph::Graph& graph, const simulator::Topology& topology,
    uint64_t seed, int max_plans = 0);

}  // namespace gopt::worker

#endif  // GOPT_WORKER_DIVERSE_PLANS_H_
