#ifndef GOPT_POLICY_GO_CO_LOCATION_DECODE_H_
#define GOPT_POLICY_GO_CO_LOCATION_DECODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/go/ppo_trainer.h"

namespace gopt::policy::go {

// Placements decoded from the GO network's co-location head
// (PolicyOutput::co_location: per dependency of the instance's features, the
// logit that both ends share a device). The per-node placement head decides
// each node's device on its own, so it cannot state a partition whose
// devices are interchangeable; these decodes turn the head's label-free
// pair scores into partitions:
//  - MetisCoLocationPlacement: the "metis" baseline's k-way partition with
//    each dependency's bytes multiplied by exp(sharpness * logit) (logits
//    clamped to [-8, 8]): edges the network keeps together weigh more, edges
//    it cuts less. With every logit 0 (an untrained head, whose last layer
//    starts at zero) it is exactly the "metis" placement.
//  - ComponentPlacement: the connected components of the dependencies whose
//    logit is above a threshold, each on one device: components by
//    decreasing work (mean kernel time over allowed devices), each to the
//    device where it would finish first (longest-processing-time first,
//    priced per device); components without work follow the neighbour
//    (in a component with work) they exchange the most bytes with. The
//    network may so choose to use fewer devices than the machine has.
//  - ScheduledComponentPlacement: ComponentPlacement's components, each
//    placed by list scheduling instead: nodes in topological order, each on
//    its component's device, the component's first kernel choosing the
//    device where that kernel would finish first (its inputs' transfers and
//    the kernels already queued there counted; a free node before it, such
//    as a parameter, waits for that choice). The pieces of a chain the
//    network cut therefore stay on the chain's device unless another device
//    is idle sooner, and parallel branches spread: LPT placement ignores
//    dependencies and scatters a chain's pieces. With every logit at or
//    below the threshold (an untrained head) each node is its own component,
//    an earliest-finish-time list placement in topological order.
//  - BalancedMergePlacement: the dependencies by decreasing logit, each
//    joining its two ends' groups unless the joined group's work would pass
//    `slack` x (total work / devices); the groups then placed as
//    ComponentPlacement places components. Every dependency is offered, so
//    the groups stay near a device's share of the work whatever the
//    threshold: one wrong "keep" cannot join two devices' parts, and a
//    wrong "cut" is mended by the next edge that fits.
// A node whose device constraint forbids the chosen device moves to the
// nearest allowed one (CostTable::NearestAllowedDevice). Every decode is
// deterministic and thread-safe; the instance is borrowed.

// The candidates ZeroShot (fine_tuning.h) simulates besides the greedy and
// sampled plans, in this order.
inline constexpr double kCoLocationSharpness[] = {0.5, 1.0, 2.0};
inline constexpr double kComponentThresholdLogits[] = {0.0, 1.5, 3.0};
inline constexpr double kBalancedMergeSlack[] = {1.05, 1.3};
// ScheduledComponentPlacement at relative thresholds: the logit below which
// this fraction of the dependencies between two kernels (edges with a free
// end carry no training label) falls, so the network's ranking of its
// dependencies decides what is cut whatever the logits' scale. With every
// logit equal (an untrained head) every dependency is cut, a placement the
// absolute thresholds already give.
inline constexpr double kScheduledCutFractions[] = {0.02, 0.1};

// InvalidArgument when `co_location` does not have one logit per feature
// edge; the METIS placer's errors.
absl::StatusOr<std::vector<int32_t>> MetisCoLocationPlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double sharpness);

// InvalidArgument when `co_location` does not have one logit per feature
// edge.
absl::StatusOr<std::vector<int32_t>> ComponentPlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double threshold_logit);

// InvalidArgument when `co_location` does not have one logit per feature
// edge.
absl::StatusOr<std::vector<int32_t>> ScheduledComponentPlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double threshold_logit);

// InvalidArgument when `co_location` does not have one logit per feature
// edge.
absl::StatusOr<std::vector<int32_t>> BalancedMergePlacement(
    const TrainingInstance& instance, const std::vector<float>& co_location,
    double slack);

// The logit at or below which `cut_fraction` (in (0, 1]; at least one) of
// the dependencies between two kernels fall: the threshold of
// ComponentPlacement and ScheduledComponentPlacement that cuts the
// network's least-kept share of them (+infinity when there are none).
// InvalidArgument when `co_location` does not have one logit per feature
// edge or the fraction is outside (0, 1].
absl::StatusOr<double> CutFractionLogit(const TrainingInstance& instance,
                                        const std::vector<float>& co_location,
                                        double cut_fraction);

// Every MetisCoLocationPlacement (kCoLocationSharpness), every
// ComponentPlacement (kComponentThresholdLogits), every
// BalancedMergePlacement (kBalancedMergeSlack), then every
// ScheduledComponentPlacement (kComponentThresholdLogits, then the
// thresholds that cut kScheduledCutFractions of the dependencies), dropping
// placements equal to an earlier one and the METIS placements when METIS
// fails (the others still come). InvalidArgument when `co_location` does
// not have one logit per feature edge.
absl::StatusOr<std::vector<std::vector<int32_t>>> CoLocationPlacements(
    const TrainingInstance& instance, const std::vector<float>& co_location);

// Each of `placements` with `actions`' other decisions (priorities,
// fusion), scored by ScoreActions on up to `threads` threads; in the order
// given. How ZeroShot and expert iteration try the co-location placements.
// Deterministic; thread-safe.
std::vector<ScoredPlan> ScorePlacements(
    const TrainingInstance& instance, const Actions& actions,
    const std::vector<std::vector<int32_t>>& placements, int threads);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_CO_LOCATION_DECODE_H_
