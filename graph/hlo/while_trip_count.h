#ifndef GOPT_GRAPH_HLO_WHILE_TRIP_COUNT_H_
#define GOPT_GRAPH_HLO_WHILE_TRIP_COUNT_H_

#include <cstdint>
#include <optional>

#include "graph/hlo/hlo_module.h"

namespace gopt::graph::hlo {

// The trip count of a `while` whose loop is a counted loop, derived from its
// condition and body the way XLA's while-loop analysis does:
//  - the condition's root compares an induction variable, element k of the
//    loop tuple (get-tuple-element k of the condition's parameter), with a
//    bound (directly, or through a fusion whose fused root is the compare);
//  - the body's root is a tuple whose element k adds (or subtracts) a
//    constant to element k of the body's parameter;
//  - the bound is a constant, or an element j of the loop tuple that the
//    body passes through unchanged (a bound hoisted into the tuple);
//  - the initial values of k (and j) come from the while's operand: a
//    tuple whose elements are constants, reached through get-tuple-element
//    chains, copies and converts.
// Directions LT, LE, GT, GE and NE are understood; a loop whose condition is
// false at entry runs 0 times. `computation` is the one holding
// `while_instruction`; both belong to `module` (which must be valid).
// Returns nullopt when any part does not match (the loop is data-dependent
// or written in a form the analysis does not follow).
std::optional<int64_t> DeriveWhileTripCount(
    const HloModule& module, const HloComputation& computation,
    const HloInstruction& while_instruction);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_WHILE_TRIP_COUNT_H_
