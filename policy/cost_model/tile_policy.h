#ifndef GOPT_POLICY_COST_MODEL_TILE_POLICY_H_
#define GOPT_POLICY_COST_MODEL_TILE_POLICY_H_

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "policy/cost_model/features.h"
#include "policy/policy.h"

namespace gopt::policy {

// The factory for card kind "cost-model-tile": loads
// <directory>/<card.checkpoint> (a cost_model::CostModel of task tile) and
// card.decision.default_margin (log-runtime units, default 0), and returns a
// Policy that decides no plan task (Propose is InvalidArgument) but answers
// ProposeKernelTiles. The checkpoint is verified against the card's
// checkpoint_sha256 first (VerifiedCheckpointPath, policy/
// checkpoint_integrity.h). Errors: NotFound when the checkpoint is missing,
// FailedPrecondition when the card records no hash for it, DataLoss when
// its hash differs from the card's, InvalidArgument when the card's kind or
// the checkpoint's task is not tile or the checkpoint is unreadable.
//
// ProposeKernelTiles: for every fusion group of the plan, the kernel graph
// (KernelGraph) is scored under TileCandidates of its root's output shape;
// the choice is the lowest score after lowering the default's by the
// margin (cost_model::WithDefaultMargin), with the predicted gain
// exp(score(default) - score(choice)) - 1. At most 256 kernels; the rest
// are left out. Const and thread-safe.
PolicyFactory TileCostModelFactory();

// The fused kernel made of `nodes` (a fusion group, in graph order) as the
// cost model sees a TpuGraphs tile sample: one "parameter" node per value
// the group reads from outside it (that value's type), then the group's
// nodes, with the data edges among them. InvalidArgument for an empty or
// out-of-range node list.
absl::StatusOr<cost_model::FeaturizedGraph> KernelGraph(
    const graph::Graph& graph, const std::vector<graph::NodeId>& nodes);

// Candidate output tiles of a kernel whose root output has `dims` (the
// first 6 dims, major to minor): the extent of each dimension is a power of
// two below it or the dimension itself, at most 128. Entry 0 is gopt's
// default tile, TPU-style (8, 128): min(dim, 128) of the minor dimension,
// min(dim, 8) of the second-minor one and 1 of the others. Then up to
// max_candidates - 1 distinct others, all of them when there are few,
// otherwise drawn with `seed`. A scalar has the one empty tile.
std::vector<std::vector<int64_t>> TileCandidates(
    const std::vector<int64_t>& dims, int32_t max_candidates, uint64_t seed);

// The kTileConfigFeatures values of an output tile (no kernel or input
// bounds): as TpuGraphs config_feat, 6 values + sum + product per list, an
// absent list all 0.
std::vector<float> OutputTileFeatures(const std::vector<int64_t>& tile);

}  // namespace gopt::policy

#endif  // GOPT_POLICY_COST_MODEL_TILE_POLICY_H_
