#ifndef GOPT_SIMULATOR_FUSION_RULES_H_
#define GOPT_SIMULATOR_FUSION_RULES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "graph/graph.h"
#include "graph/op_kind.h"

namespace gopt::simulator {

// What an op kind may do in an XLA-style fusion. The kernel rules every
// plan obeys (ValidatePlan rejects a fusion group that breaks them, and the
// lower bound charges what they force):
//  - kHeavy: dot, convolution; a kernel holds at most one (a library GEMM /
//    convolution call with the cheap ops around it fused in);
//  - kCheap: elementwise (convert included), reduce, reduce-window,
//    broadcast, transpose, copy, slice, dynamic-slice, pad, concatenate,
//    reverse, and the views reshape and bitcast; these join a kernel;
//  - kAlone: everything else (parameters, constants, gathers, scatters,
//    sorts, collectives, control flow, custom calls, pre-fused kernels,
//    tuples, ...) never shares a kernel.
// The `greedy` fuser, and with it the GO policy and the plan search, build
// groups within these rules.
enum class FusionRole { kAlone, kCheap, kHeavy };

// The role of `kind`. Thread-safe.
FusionRole FusionRoleOf(graph::OpKind kind);

// Checks the fusion groups of a plan (`fusion_group`, one entry per node of
// `graph`, equal ids >= 0 form one kernel; empty = no fusion) against the
// kernel rules. InvalidArgument naming the group, the two offending nodes
// (id, name, op kind) and the rule when a group holds two dots or
// convolutions, or a node that never shares a kernel together with another
// node. The caller checks the length. Thread-safe; O(fused nodes).
absl::Status CheckFusionRules(const graph::Graph& graph,
                              const std::vector<int32_t>& fusion_group);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_FUSION_RULES_H_
