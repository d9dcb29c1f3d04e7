#ifndef GOPT_POLICY_COST_MODEL_LAYOUT_POLICY_H_
#define GOPT_POLICY_COST_MODEL_LAYOUT_POLICY_H_

#include <cstdint>
#include <vector>

#include "policy/policy.h"

namespace gopt::policy {

// The factory for card kind "cost-model-layout": loads
// <directory>/<card.checkpoint> (a cost_model::CostModel of task layout)
// and returns a Policy that decides the layout task. The checkpoint is
// verified against the card's checkpoint_sha256 first
// (VerifiedCheckpointPath, policy/checkpoint_integrity.h). Errors: NotFound
// when the checkpoint is missing, FailedPrecondition when the card records
// no hash for it, DataLoss when its hash differs from the card's,
// InvalidArgument when the card's kind or the checkpoint's task is not
// layout or the checkpoint is unreadable.
//
// Propose: for every layout-configurable top-level node with an output of
// rank >= 2, the candidate minor_to_major orders are all permutations for
// rank <= 4 and, above, the default, its reverse, and rotations and random
// permutations up to 24 (seeded by options.seed). One greedy sweep over the
// nodes in topological order scores all candidates of a node in one batch
// with the cost model (the rest of the assignment fixed) and keeps the best;
// the sweep stops early at options.deadline or cancellation. Decisions
// other than layout come from options.base_plan (or the framework
// defaults). The result is simulated; the warnings report the model's
// predicted gain over the starting layouts and the simulator's layout-copy
// time. Propose is const and thread-safe.
PolicyFactory LayoutCostModelFactory();

// Candidate dimension orders (minor_to_major) for an output of `rank`;
// the first entry is the default order {rank-1, ..., 0}. See above.
std::vector<std::vector<int32_t>> LayoutCandidates(int rank, uint64_t seed);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_COST_MODEL_LAYOUT_POLICY_H_
