#ifndef GOPT_SIMULATOR_PLAN_H_
#define GOPT_SIMULATOR_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/topology.h"

namespace gopt::simulator {

// The decisions for one graph on one topology; every vector is indexed by
// NodeId. Empty `priority`, `fusion_group` and `layout` mean the framework
// defaults (FIFO/topological order, no fusion, default layouts).
struct Plan {
  std::vector<int32_t> device;
  // Among ready ops on a device, the highest priority runs first; ties go
  // to the lower NodeId (topological order).
  std::vector<int32_t> priority;
  // Nodes with the same id >= 0 run as one kernel on one device; -1 = alone.
  std::vector<int32_t> fusion_group;
  // minor_to_major of each node's output 0; an empty entry = default.
  std::vector<std::vector<int32_t>> layout;
  std::string method;
};

// The framework default: everything on device 0, FIFO, no fusion, default
// layouts.
Plan DefaultPlan(const graph::Graph& graph);

// The framework default on `topology`, as TensorFlow places ops: device 0
// for every node, except that a CPU-only node goes to the first CPU device
// when device 0 is not a CPU, an accelerator-only node to the first
// accelerator when device 0 is a CPU, and colocation groups follow
// (ColocateGroups). Passes ValidatePlan whenever any plan can. What
// Optimize and Evaluate report as the default.
Plan DefaultPlan(const graph::Graph& graph, const Topology& topology);

// Moves each CPU-only node placed on a non-CPU device to the first CPU
// device, and each accelerator-only node placed on a CPU to the first
// accelerator (either stays where it is when the topology has no such
// device), then keeps colocation groups together (ColocateGroups). For
// placements made without regard to constraints (candidate plans of tests
// and evaluations). `device` has one entry per node of `graph`.
void KeepDeviceConstraints(const graph::Graph& graph, const Topology& topology,
                           std::vector<int32_t>* device);

// Device constraints of `graph` that `topology` cannot honour, one warning
// per constraint kind: CPU-only nodes on a machine without a CPU device,
// accelerator-only nodes on a machine without an accelerator (each warning
// gives the count and the first node), and an SPMD program (Graph::spmd)
// whose mesh has more devices than the topology (its collectives' rings
// then span only the topology's devices, or no links at all). Empty when
// every constraint can be kept. Such nodes run wherever the plan puts them.
std::vector<std::string> UnmetDeviceConstraints(const graph::Graph& graph,
                                                const Topology& topology);

// Checks `plan` against `graph` and `topology`. InvalidArgument naming the
// node and field when: a vector has the wrong length; a device is outside
// 0..num_devices-1; a CPU-only node sits on a non-CPU device (only when the
// topology has a CPU device; otherwise the host is implicit); an
// accelerator-only node sits on a CPU while an accelerator exists; a fusion
// group spans devices; a fusion group breaks the kernel rules (two dots or
// convolutions, a dot or convolution with a normalization or softmax that
// computes statistics, or an op that never shares a kernel with another
// member; CheckFusionRules in fusion_rules.h); two nodes of one colocation
// group (TF's `_class` "loc:@...") sit on different devices; a layout is
// not a permutation of the output's rank. (Fusion groups that would form a
// cycle are reported by the simulator.)
absl::Status ValidatePlan(const Plan& plan, const graph::Graph& graph,
                          const Topology& topology);

// Moves every colocation group of `graph` onto one device: the device of
// the group's anchor (the node the group is named after, else its first
// member), unless that device breaks a member's device constraint, in which
// case the constrained member's device. Placement heuristics and policies
// call it on their device vector (one entry per node) so that their plans
// pass ValidatePlan. Graphs without colocation groups are left untouched.
void ColocateGroups(const graph::Graph& graph, const Topology& topology,
                    std::vector<int32_t>* device);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_PLAN_H_
