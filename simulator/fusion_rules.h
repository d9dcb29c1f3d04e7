#ifndef GOPT_SIMULATOR_FUSION_RULES_H_
#define GOPT_SIMULATOR_FUSION_RULES_H_

#include "graph/op_kind.h"

namespace gopt::simulator {

// What an op kind may do in an XLA-style fusion (the rules the `greedy`
// fuser, and with it the GO policy and the plan search, build groups by):
//  - kHeavy: dot, convolution; a kernel holds at most one, as its first
//    member (a library GEMM / convolution call with a fused epilogue);
//  - kCheap: elementwise (convert included), reduce, reduce-window,
//    broadcast, transpose, copy, slice, dynamic-slice, pad, concatenate,
//    reverse, and the views reshape and bitcast; these join a kernel;
//  - kAlone: everything else (parameters, constants, gathers, scatters,
//    sorts, collectives, control flow, custom calls, pre-fused kernels,
//    tuples, ...) never shares a kernel.
// Simulate itself accepts any acyclic group on one device; these rules are
// what the planners obey, and what LowerBoundOptions::kernel_rules assumes.
enum class FusionRole { kAlone, kCheap, kHeavy };

// The role of `kind`. Thread-safe.
FusionRole FusionRoleOf(graph::OpKind kind);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_FUSION_RULES_H_
