#ifndef GOPT_SIMULATOR_COLLECTIVE_TIME_H_
#define GOPT_SIMULATOR_COLLECTIVE_TIME_H_

#include <cstdint>

#include "graph/graph.h"
#include "simulator/topology.h"

namespace gopt::simulator {

// Seconds a collective node spends on the topology's links, beyond its
// kernel (the roofline prices its memory traffic): the ring algorithm over
// a group of n devices, n = the node's OpAttributes::collective_group_size,
// else `default_group_size` (the SPMD program's partitions, or the
// topology's device count). The ring is devices 0, 1, ..., m-1 (m =
// min(n, devices)): the representative device's mesh neighbours; its
// slowest link's bandwidth carries Node::bytes_communicated (the bytes each
// device sends, ring factor included), and every step pays the largest
// latency on the ring:
//   all-reduce 2(n-1) steps; all-gather, reduce-scatter, all-to-all n-1;
//   collective-permute, send-recv 1.
//   seconds = bytes_communicated / bandwidth + steps * latency.
// 0 for a node that is no collective, sends nothing, has a group of one, or
// on a topology of one device (no links to price). Pure; thread-safe.
double CollectiveLinkSeconds(const graph::Node& node,
                             int64_t default_group_size,
                             const Topology& topology);

// The group size collectives without one take in `graph` on `topology`:
// the graph's SPMD partitions when it is an SPMD program, else the
// topology's device count.
int64_t DefaultCollectiveGroupSize(const graph::Graph& graph,
                                   const Topology& topology);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_COLLECTIVE_TIME_H_
