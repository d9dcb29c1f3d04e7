#ifndef GOPT_POLICY_GO_PLAN_SEARCH_H_
#define GOPT_POLICY_GO_PLAN_SEARCH_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "policy/go/actions.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/simulator.h"
#include "util/clock.h"

namespace gopt::policy::go {

// The kinds of candidate move (see PlanSearch's class comment).
enum class MoveKind {
  kPriorityJump = 0,      // a critical-path window runs first on its devices
  kPlaceWindow,           // a window moves to a drawn device
  kPlaceNextToNeighbour,  // a window moves to a path neighbour's device
  kGuidedFusion,          // guided: new fusion levels for a window
  kPlaceRegion,           // a connected region moves to another device
  kSwapRegions,           // two regions exchange devices
  kSplitFusion,           // a path node leaves its fusion group
  kMergeFusion,           // a path node may fuse again (greedy rules)
};
inline constexpr int kNumMoveKinds = 8;

// A name for reports ("priority-jump", ...).
const char* MoveKindName(MoveKind kind);

// How often one kind of move was proposed and how often its candidate
// became the incumbent by being strictly faster.
struct MoveKindStats {
  int64_t proposed = 0;
  int64_t improved = 0;
};

struct PlanSearchOptions {
  // Candidate plans simulated per round (in parallel on `threads`).
  int candidates_per_round = 16;
  int threads = 2;
  // Nodes of the incumbent's critical path one candidate changes: between
  // 1 and this many consecutive ones.
  int max_window = 8;
  uint64_t seed = 0;
  // Simulate candidates incrementally against the incumbent (default), or
  // each from scratch (the same results, slower; for comparisons).
  bool incremental = true;
  // Moves only for these tasks: placement moves when `placement`,
  // scheduling moves when `scheduling`, fusion moves when `fusion` (guided:
  // when the policy output has a fusion distribution; layout has none).
  TaskSet tasks;
  // Run stops before a round that would start at or after this time, or
  // once `*cancelled` is set (may be null).
  absl::Time deadline = absl::InfiniteFuture();
  // The time source for the deadline; borrowed, never null.
  const Clock* clock = &Clock::Real();
  const std::atomic<bool>* cancelled = nullptr;
  // Policy-guided moves: the choices of every kind of move are biased by
  // Run's `policy` output (see the class comment). Default off.
  bool guided = false;
  // With `guided`, the share of candidates proposed as without a policy
  // (uniform choices), so the guided search does little worse than the
  // uniform one where the network is wrong. Default 0.25.
  double guided_uniform_share = 0.25;
  // Run also stops before a round once the best plan's step time is at or
  // below this (a lower bound times a tolerance: no candidate could gain
  // more than that). 0 (the default) = never.
  double stop_at_step_time_s = 0;
  // How fusion moves rebuild groups from fusion levels; unset (the
  // default): as the start plan's method was fused
  // (simulator::baselines::FusionJoinOfMethod), so a `greedy-join` start
  // keeps its bigger groups.
  std::optional<simulator::baselines::FusionJoin> fusion_join;
};

// Local search around the best plan so far, steered by the simulator's
// critical path and by the GO policy's placement distribution: the refiner
// that fine-tuning runs between PPO steps.
//
// Each round proposes `candidates_per_round` plans, each changing the
// incumbent around a random node of its critical path (the chain of
// kernels, transfers and queueing that set the step time), by one move of
// a kind drawn by weight among those options.tasks allows (weights in
// parentheses):
//  - scheduling (2, priority-jump): a window of 1 to max_window path nodes
//    runs before anything else ready on their devices (their priorities are
//    raised above every other, keeping their order);
//  - placement (2, place-window): the window moves to a device drawn from
//    the policy's placement distribution for the window's first node,
//    without its current device (uniform over the other devices when no
//    distribution is given); (2, place-by-neighbour) or to the device of a
//    neighbour on the path;
//  - placement (3, place-region): a connected region of 2 to 256 nodes
//    (a power of two, drawn) on the path node's device, grown from it by
//    random neighbours along edges either way, moves to a uniform other
//    device or to the device it exchanges the most bytes with; (2,
//    swap-regions) and as many nodes grown from a random node of that
//    device move the other way;
//  - fusion (1 each, split-fusion / merge-fusion): the first node of the
//    window whose change alters a group gets fusion level 0 (it leaves its
//    group and consumers no longer fuse through it) or the top level, and
//    the groups are rebuilt by GreedyFusionGroups (the `greedy` rules, so
//    every group is legal and on one device) over the incumbent's levels
//    (the top level for fused nodes and 0 for the others, initially and
//    after Offer brings other groups).
// A node moves with its fusion group and colocation group, so groups stay
// on one device. Which moves win is counted per kind (move_stats).
// The candidates are simulated incrementally against the incumbent
// (simulator::Simulator::SimulateCandidate: from the last checkpoint before
// the move can change anything, stopped once certainly slower than the
// incumbent; exactly the full simulation's result) and the fastest becomes
// the incumbent when
// it is strictly faster than the incumbent (and fits memory when the
// incumbent does); when none is, one exactly as fast does, so the search
// walks across plateaus. Fusion groups change only by fusion moves, which
// never make a fusion the `greedy` rules would not.
//
// Policy-guided moves (options.guided, with a policy output): a share
// (options.guided_uniform_share) of the candidates are the unguided moves
// above; the others are drawn by the same kind weights (plus guided-fusion,
// 1, when fusion is allowed and the output has a fusion distribution), with
// the network's output biasing their choices. Its placement columns are
// first matched to the incumbent's devices (AlignLabels: the network's
// labels of symmetric devices are a convention). Every weight below is
// flat for a network that says no more than a uniform guess, so an
// uninformed network gives the unguided moves' odds.
//  - the window's (or region's) first node along the critical path: for
//    priority jumps, exp(expected priority level / 2) (nodes the network
//    wants early jump the queue); for placement moves, PlacementDispute
//    (the network gives the node's current device less than a uniform
//    guess, or it disputes the node's sharing or not sharing a device with
//    its neighbours); for split-fusion, 0.01 + the network's probability
//    of level 0 on fused nodes; for merge-fusion, 0.01 + its probability of
//    fusing (a level above 0) on unfused nodes; for guided-fusion, 0.01 +
//    how much that probability disagrees with whether the node is fused;
//  - where a window or region goes, in the half of the draws that is
//    uniform without a guide (the other half stays the device it exchanges
//    the most bytes with): drawn by 0.01 + the network's mean probability
//    of each device over the moved nodes + their mean co-location with the
//    neighbours on that device beyond a uniform guess's;
//  - place-by-neighbour: the path neighbour drawn by 0.01 + its
//    co-location with the window node next to it;
//  - swap-regions: the region coming back is seeded at the one of up to
//    4 random nodes of the target device the network most wants on the
//    region's home device;
//  - guided-fusion: the window's nodes take fusion levels drawn from their
//    rows, and the groups are rebuilt by GreedyFusionGroups (the `greedy`
//    rules) over the incumbent's levels (initially the top level for fused
//    nodes and 0 for the others).
// A candidate with new fusion groups is simulated incrementally too:
// SimulateCandidate then starts from the beginning of the incumbent's run,
// with the same exact result.
//
// Deterministic for options.seed and the sequence of Run calls, whatever
// the thread count. Borrows `instance` (which must outlive it). Not
// thread-safe.
class PlanSearch {
 public:
  PlanSearch(const TrainingInstance& instance, ScoredPlan start,
             const PlanSearchOptions& options);

  // Runs `rounds` rounds (none when options.tasks allows no move, or the
  // topology has one device and only placement is allowed; fewer when the
  // deadline passes or the search is cancelled). `placement`
  // (may be null) proposes devices: the
  // policy's current output for this instance; with options.guided it
  // guides every move. InvalidArgument when the
  // start plan is not a valid plan of the instance's graph, or when
  // `placement` is for another graph or topology.
  absl::Status Run(int rounds, const PolicyOutput* placement);

  // Makes `plan` the incumbent when it is better (BetterPlan), e.g. a plan
  // PPO sampled. After the first Run a plan the simulator rejects is
  // ignored; before it, the plan replaces the start plan and the first Run
  // checks it.
  void Offer(const ScoredPlan& plan);

  // The best plan so far (the start plan until a candidate beats it).
  const ScoredPlan& best() const { return best_; }
  // Candidates that became the incumbent, and all candidates simulated.
  int improvements() const { return improvements_; }
  int64_t candidates_simulated() const { return candidates_simulated_; }
  // Per MoveKind (indexed by its value): proposals and improvements.
  const std::vector<MoveKindStats>& move_stats() const { return move_stats_; }

 private:
  struct Candidate {
    ScoredPlan scored;  // its plan, once simulated its score
    std::vector<graph::NodeId> critical_path;
    std::vector<int32_t> fusion_levels;  // after a fusion move, else empty
    MoveKind kind = MoveKind::kPriorityJump;
    // Certainly slower than the incumbent (simulation stopped early): it
    // can neither win nor tie, and `scored` has no score.
    bool slower = false;
  };

  absl::Status Prepare();
  // Sets top_priority_ above best_'s priorities (all 0 when it has none;
  // renumbered first when the moves could overflow int32).
  void SetTopPriority();
  // Records best_ for incremental candidate simulations (when stale).
  absl::Status RecordIncumbent();
  // Simulates one candidate against the incumbent's recording.
  void Evaluate(Candidate* candidate) const;
  // Fusion levels that rebuild `groups` with GreedyFusionGroups (fused
  // nodes at the top level, the others at 0).
  std::vector<int32_t> LevelsFromGroups(
      const std::vector<int32_t>& groups) const;
  // Fills the move groups from best_'s fusion groups and the graph's
  // colocation groups.
  void BuildMoveGroups();
  // What a policy output says about the incumbent, prepared once a round
  // for guided moves (see the class comment).
  struct Guide {
    const PolicyOutput* policy = nullptr;  // borrowed
    // Per device of the machine: the network's label for it (its placement
    // columns matched to the incumbent's devices).
    std::vector<int32_t> label;
    // The co-location head's logit per dependency (src, dst), shifted by
    // the log-odds of 1 / devices (so that an untrained head's 0 reads as a
    // uniform guess); empty without the head.
    absl::flat_hash_map<std::pair<graph::NodeId, graph::NodeId>, float>
        co_location;
    // Cumulative weights over critical_path_ for the first node of a
    // window: scheduling, placement, split-fusion, merge-fusion and
    // guided-fusion moves.
    std::vector<double> scheduling, placement, split, merge, fusion;
  };
  // Fills guide_.co_location from `policy` (once per Run: it does not
  // depend on the incumbent).
  void PrepareCoLocation(const PolicyOutput& policy);
  // Fills the rest of guide_ for `policy` and the incumbent.
  void PrepareGuide(const PolicyOutput& policy);
  // Fills guide_.label: the network's labels matched to best_'s devices,
  // pairs sharing the most nodes (argmax label, incumbent device) first,
  // only between devices of the same profile.
  void AlignLabels(const PolicyOutput& policy);
  // guide_'s probability that `id` runs on `device` (1 / devices without a
  // placement distribution).
  double DeviceProbability(graph::NodeId id, int32_t device) const;
  // guide_'s probability that `u` and `v` share a device: for a dependency
  // the co-location head scores, the sigmoid of its shifted logit
  // (Guide::co_location); otherwise the sum over labels of the product of
  // their placement rows. Both are label-free, so they mean the same for any
  // labelling of symmetric devices.
  double CoLocation(graph::NodeId u, graph::NodeId v) const;
  // How much the network disputes where `id` runs in `plan`: half the
  // probability it gives the other devices, half the mean over `id`'s
  // neighbours of |shares a device now - CoLocation|, plus 0.01.
  double PlacementDispute(graph::NodeId id, const simulator::Plan& plan) const;
  // A critical-path index drawn from cumulative weights (uniform when
  // `cumulative` is null, empty or all 0).
  int DrawPathIndex(const std::vector<double>* cumulative);
  // The kind of move, drawn by weight among those options.tasks allows;
  // `guided` adds guided-fusion when the guide has a fusion distribution.
  MoveKind DrawMoveKind(bool guided);
  // One candidate move of `kind` around the incumbent's critical path, its
  // choices biased by `guide` (uniform when null; `placement`, may be null,
  // then draws the devices of place-window moves). Sets `fusion_levels`
  // after a fusion move.
  simulator::Plan Propose(MoveKind kind, const PolicyOutput* placement,
                          const Guide* guide,
                          std::vector<int32_t>* fusion_levels);
  // Propose's place-region and swap-regions moves.
  void ProposeRegionMove(MoveKind kind, graph::NodeId first, const Guide* guide,
                         simulator::Plan* plan);
  // Propose's place-window and place-by-neighbour moves of the window
  // [begin, end) of the critical path.
  void ProposeWindowMove(MoveKind kind, int begin, int end,
                         const PolicyOutput* placement, const Guide* guide,
                         simulator::Plan* plan);
  // The guided-fusion move: the window's nodes take fusion levels drawn
  // from their rows of the fusion distribution.
  void ProposeGuidedFusion(int begin, int end, simulator::Plan* plan,
                           std::vector<int32_t>* fusion_levels);
  // Puts `id`'s move group on `device` in `plan`.
  void MoveGroupOf(graph::NodeId id, int32_t device,
                   simulator::Plan* plan) const;
  // Grows `region` from `seed`'s move group by random neighbour move
  // groups on the same device (edges either way) to at least `size` nodes
  // (fewer when the connected part on that device is smaller). Marks the
  // region's nodes with region_epoch_.
  void GrowRegion(graph::NodeId seed, int size, const simulator::Plan& plan,
                  std::vector<graph::NodeId>* region);
  // The device `nodes` (marked with region_epoch_) move to: without a
  // guide, uniform over the others or the one the nodes exchange the most
  // bytes with; with one, drawn by weight (see the class comment).
  int32_t RegionTarget(const std::vector<graph::NodeId>& nodes,
                       const simulator::Plan& plan, const Guide* guide);
  // Sets `id`'s fusion level to 0 (`split`) or the top and rebuilds the
  // groups of `plan` with GreedyFusionGroups; false (and `plan`
  // unchanged) when that changes no group.
  bool ProposeFusion(graph::NodeId id, bool split, simulator::Plan* plan,
                     std::vector<int32_t>* fusion_levels);
  void Adopt(ScoredPlan plan, std::vector<graph::NodeId> critical_path,
             std::vector<int32_t> fusion_levels = {});

  const TrainingInstance& instance_;
  PlanSearchOptions options_;
  // How fusion moves rebuild groups (options_.fusion_join, or the start's).
  simulator::baselines::FusionJoin fusion_join_;
  std::mt19937_64 rng_;
  ScoredPlan best_;
  std::vector<graph::NodeId> critical_path_;  // of best_
  // best_'s simulation, kept for candidate runs; stale after an Adopt.
  std::unique_ptr<simulator::Trajectory> trajectory_;
  bool trajectory_stale_ = true;
  bool prepared_ = false;
  // Nodes that must share a device with each node (fusion group and
  // colocation group, merged): CSR over move groups.
  std::vector<int32_t> move_group_;
  std::vector<int32_t> move_offsets_;
  std::vector<graph::NodeId> move_members_;
  int32_t top_priority_ = 0;  // above every priority of best_
  // Fusion level per node behind best_'s groups (guided fusion moves).
  std::vector<int32_t> fusion_levels_;
  int improvements_ = 0;
  int64_t candidates_simulated_ = 0;
  // GrowRegion's visited marks (epoch-stamped, so never cleared).
  std::vector<uint32_t> region_mark_;
  uint32_t region_epoch_ = 0;
  // The guide of the current round (guided rounds only).
  Guide guide_;
  std::vector<MoveKindStats> move_stats_ =
      std::vector<MoveKindStats>(kNumMoveKinds);
};

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_PLAN_SEARCH_H_
