#include "policy/go/plan_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/greedy_fusion.h"

namespace gopt::policy::go {
namespace {

using graph::NodeId;

int32_t Find(std::vector<int32_t>* parent, int32_t x) {
  while ((*parent)[x] != x) {
    (*parent)[x] = (*parent)[(*parent)[x]];
    x = (*parent)[x];
  }
  return x;
}

// A device other than `current` drawn from the row of log-probabilities
// `logp` with `current` left out; uniform over the others when the row
// leaves them no mass (or when `logp` is null).
int32_t DrawOtherDevice(const float* logp, int num_devices, int32_t current,
                        std::mt19937_64* rng) {
  double total = 0;
  if (logp != nullptr) {
    for (int d = 0; d < num_devices; ++d) {
      if (d != current) total += std::exp(static_cast<double>(logp[d]));
    }
  }
  if (total <= 0) {
    const int32_t pick = static_cast<int32_t>((*rng)() % (num_devices - 1));
    return pick >= current ? pick + 1 : pick;
  }
  const double u = UniformDouble(rng) * total;
  double cumulative = 0;
  int32_t last = -1;
  for (int d = 0; d < num_devices; ++d) {
    if (d == current) continue;
    const double p = std::exp(static_cast<double>(logp[d]));
    if (p <= 0) continue;
    last = d;
    cumulative += p;
    if (u < cumulative) return d;
  }
  return last;  // rounding left the sum just below u
}

}  // namespace

const char* MoveKindName(MoveKind kind) {
  switch (kind) {
    case MoveKind::kPriorityJump:
      return "priority-jump";
    case MoveKind::kPlaceWindow:
      return "place-window";
    case MoveKind::kPlaceNextToNeighbour:
      return "place-by-neighbour";
    case MoveKind::kGuidedFusion:
      return "guided-fusion";
    case MoveKind::kPlaceRegion:
      return "place-region";
    case MoveKind::kSwapRegions:
      return "swap-regions";
    case MoveKind::kSplitFusion:
      return "split-fusion";
    case MoveKind::kMergeFusion:
      return "merge-fusion";
  }
  return "unknown";
}

PlanSearch::PlanSearch(const TrainingInstance& instance, ScoredPlan start,
                       const PlanSearchOptions& options)
    : instance_(instance),
      options_(options),
      fusion_join_(options.fusion_join.value_or(
          simulator::baselines::FusionJoinOfMethod(start.plan.method))),
      rng_(options.seed),
      best_(std::move(start)) {}

std::vector<int32_t> PlanSearch::LevelsFromGroups(
    const std::vector<int32_t>& groups) const {
  // Fused nodes (in a fusion group of two or more) are at the top level.
  std::vector<int32_t> group_size(groups.size() + 1, 0);
  for (int32_t g : groups) {
    if (g >= 0 && static_cast<size_t>(g) < group_size.size()) ++group_size[g];
  }
  std::vector<int32_t> levels(instance_.graph().num_nodes(), 0);
  for (size_t id = 0; id < groups.size(); ++id) {
    const int32_t g = groups[id];
    if (g >= 0 && static_cast<size_t>(g) < group_size.size() &&
        group_size[g] > 1) {
      levels[id] = kPriorityLevels - 1;
    }
  }
  return levels;
}

absl::Status PlanSearch::Prepare() {
  ScoredPlan start = ScorePlan(instance_, best_.plan, &critical_path_);
  if (!start.valid) {
    // Simulated again only to say why.
    return absl::InvalidArgumentError(absl::StrCat(
        "plan search on '", instance_.label,
        "': the start plan is not a valid plan of the graph: ",
        instance_.simulator->Simulate(best_.plan).status().message()));
  }
  best_ = std::move(start);
  SetTopPriority();
  BuildMoveGroups();
  fusion_levels_ = LevelsFromGroups(best_.plan.fusion_group);
  trajectory_stale_ = true;
  prepared_ = true;
  return absl::OkStatus();
}

absl::Status PlanSearch::RecordIncumbent() {
  if (!trajectory_stale_) return absl::OkStatus();
  simulator::SimulationOptions options;
  options.record_timeline = false;
  absl::StatusOr<std::unique_ptr<simulator::Trajectory>> recorded =
      instance_.simulator->Record(best_.plan, options, std::move(trajectory_));
  if (!recorded.ok()) {
    return absl::InternalError(absl::StrCat(
        "plan search on '", instance_.label,
        "': the incumbent no longer simulates: ", recorded.status().message()));
  }
  trajectory_ = *std::move(recorded);
  trajectory_stale_ = false;
  return absl::OkStatus();
}

// The same score as ScorePlan's, from the incremental run; a candidate
// certainly slower than a valid incumbent that fits memory is only marked
// so (it cannot win or tie, and its exact time would cost the rest of the
// simulation).
void PlanSearch::Evaluate(Candidate* candidate) const {
  candidate->slower = false;
  if (!options_.incremental) {
    candidate->scored = ScorePlan(instance_, std::move(candidate->scored.plan),
                                  &candidate->critical_path);
    return;
  }
  simulator::SimulationOptions options;
  options.record_timeline = false;
  const double cutoff_s = best_.valid && !best_.oom
                              ? best_.step_time_s
                              : std::numeric_limits<double>::infinity();
  ScoredPlan& scored = candidate->scored;
  scored.valid = false;
  candidate->critical_path.clear();
  absl::StatusOr<simulator::CandidateResult> result =
      instance_.simulator->SimulateCandidate(*trajectory_, scored.plan, options,
                                             cutoff_s);
  if (!result.ok()) return;
  if (result->slower_than_cutoff) {
    candidate->slower = true;
    return;
  }
  scored.valid = true;
  scored.step_time_s = result->result.step_time_s;
  scored.oom = result->result.oom;
  scored.reward =
      PlanReward(scored.step_time_s, scored.oom, instance_.default_step_time_s);
  candidate->critical_path = std::move(result->result.critical_path);
}

void PlanSearch::SetTopPriority() {
  std::vector<int32_t>& priority = best_.plan.priority;
  if (priority.empty()) priority.assign(instance_.graph().num_nodes(), 0);
  const int64_t highest = *std::max_element(priority.begin(), priority.end());
  const int64_t lowest = *std::min_element(priority.begin(), priority.end());
  // A scheduling move writes up to top + max_window: when that could
  // overflow, the priorities are renumbered 0, 1, ... in the same order
  // (which leaves every schedule unchanged).
  if (highest + std::max(options_.max_window, 1) + 1 >
          std::numeric_limits<int32_t>::max() ||
      lowest < std::numeric_limits<int32_t>::min() / 2) {
    std::vector<int32_t> levels = priority;
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    for (int32_t& p : priority) {
      p = static_cast<int32_t>(
          std::lower_bound(levels.begin(), levels.end(), p) - levels.begin());
    }
  }
  top_priority_ = 1 + *std::max_element(priority.begin(), priority.end());
}

void PlanSearch::BuildMoveGroups() {
  const graph::Graph& graph = instance_.graph();
  const int n = graph.num_nodes();
  const simulator::Plan& plan = best_.plan;
  std::vector<int32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int32_t> first_of_fusion;
  std::vector<int32_t> first_of_colocation(graph.colocation_groups().size(),
                                           -1);
  auto join = [&](int32_t* first, NodeId id) {
    if (*first < 0) {
      *first = id;
    } else {
      parent[Find(&parent, id)] = Find(&parent, *first);
    }
  };
  for (NodeId id = 0; id < n; ++id) {
    if (!plan.fusion_group.empty() && plan.fusion_group[id] >= 0) {
      const size_t g = static_cast<size_t>(plan.fusion_group[id]);
      if (g >= first_of_fusion.size()) first_of_fusion.resize(g + 1, -1);
      join(&first_of_fusion[g], id);
    }
    const int32_t c = graph.node(id).colocation_group;
    if (c >= 0) join(&first_of_colocation[c], id);
  }
  move_group_.assign(n, -1);
  std::vector<int32_t> group_of_root(n, -1);
  int32_t groups = 0;
  for (NodeId id = 0; id < n; ++id) {
    const int32_t root = Find(&parent, id);
    if (group_of_root[root] < 0) group_of_root[root] = groups++;
    move_group_[id] = group_of_root[root];
  }
  move_offsets_.assign(groups + 1, 0);
  for (NodeId id = 0; id < n; ++id) ++move_offsets_[move_group_[id] + 1];
  std::partial_sum(move_offsets_.begin(), move_offsets_.end(),
                   move_offsets_.begin());
  move_members_.resize(n);
  std::vector<int32_t> cursor(move_offsets_.begin(), move_offsets_.end() - 1);
  for (NodeId id = 0; id < n; ++id) {
    move_members_[cursor[move_group_[id]]++] = id;
  }
}

MoveKind PlanSearch::DrawMoveKind(bool guided) {
  const int num_devices =
      static_cast<int>(instance_.simulator->topology().devices.size());
  const bool can_place = options_.tasks.placement && num_devices > 1;
  // Relative weights of the kinds allowed (see the class comment).
  std::pair<MoveKind, int> weights[kNumMoveKinds];
  int count = 0;
  int total = 0;
  auto allow = [&](MoveKind kind, int weight) {
    weights[count++] = {kind, weight};
    total += weight;
  };
  if (options_.tasks.scheduling) allow(MoveKind::kPriorityJump, 2);
  if (can_place) {
    allow(MoveKind::kPlaceWindow, 2);
    allow(MoveKind::kPlaceNextToNeighbour, 2);
    allow(MoveKind::kPlaceRegion, 3);
    allow(MoveKind::kSwapRegions, 2);
  }
  if (options_.tasks.fusion) {
    allow(MoveKind::kSplitFusion, 1);
    allow(MoveKind::kMergeFusion, 1);
    if (guided && !guide_.policy->fusion.empty()) {
      allow(MoveKind::kGuidedFusion, 1);
    }
  }
  if (total == 0) return MoveKind::kPriorityJump;
  int u = static_cast<int>(rng_() % total);
  for (int k = 0; k < count; ++k) {
    if (u < weights[k].second) return weights[k].first;
    u -= weights[k].second;
  }
  return weights[count - 1].first;
}

void PlanSearch::MoveGroupOf(NodeId id, int32_t device,
                             simulator::Plan* plan) const {
  const int32_t group = move_group_[id];
  for (int32_t m = move_offsets_[group]; m < move_offsets_[group + 1]; ++m) {
    plan->device[move_members_[m]] = device;
  }
}

void PlanSearch::GrowRegion(NodeId seed, int size, const simulator::Plan& plan,
                            std::vector<NodeId>* region) {
  const graph::Graph& graph = instance_.graph();
  const int32_t device = plan.device[seed];
  if (region_mark_.size() != static_cast<size_t>(graph.num_nodes())) {
    region_mark_.assign(graph.num_nodes(), 0);
    region_epoch_ = 0;
  }
  ++region_epoch_;
  region->clear();
  std::vector<NodeId> frontier;
  auto add_group = [&](NodeId id) {
    const int32_t group = move_group_[id];
    for (int32_t m = move_offsets_[group]; m < move_offsets_[group + 1]; ++m) {
      const NodeId member = move_members_[m];
      if (region_mark_[member] == region_epoch_) continue;
      region_mark_[member] = region_epoch_;
      region->push_back(member);
      frontier.push_back(member);
    }
  };
  add_group(seed);
  while (static_cast<int>(region->size()) < size && !frontier.empty()) {
    // A random frontier node grows the region by one neighbour group.
    const size_t pick = rng_() % frontier.size();
    const NodeId id = frontier[pick];
    bool grew = false;
    for (const auto& edges : {graph.in_edges(id), graph.out_edges(id)}) {
      for (const graph::Edge& edge : edges) {
        const NodeId other = edge.src == id ? edge.dst : edge.src;
        if (region_mark_[other] == region_epoch_ ||
            plan.device[other] != device) {
          continue;
        }
        add_group(other);
        grew = true;
        break;
      }
      if (grew) break;
    }
    if (!grew) {
      frontier[pick] = frontier.back();
      frontier.pop_back();
    }
  }
}

int32_t PlanSearch::RegionTarget(const std::vector<NodeId>& nodes,
                                 const simulator::Plan& plan,
                                 const Guide* guide) {
  const int num_devices =
      static_cast<int>(instance_.simulator->topology().devices.size());
  const int32_t current = plan.device[nodes.front()];
  const graph::Graph& graph = instance_.graph();
  if (rng_() % 2 == 0) {
    if (guide == nullptr) {
      return DrawOtherDevice(nullptr, num_devices, current, &rng_);
    }
    // The network's mean probability of each device over the nodes, plus
    // its mean co-location with the neighbours already there beyond a
    // uniform guess's (so an uninformed network draws uniformly).
    std::vector<double> weight(num_devices, 0);
    std::vector<double> co_location(num_devices, 0);
    int64_t outside = 0;
    for (const NodeId id : nodes) {
      for (int d = 0; d < num_devices; ++d) {
        weight[d] += DeviceProbability(id, d) / nodes.size();
      }
      for (const auto& edges : {graph.in_edges(id), graph.out_edges(id)}) {
        for (const graph::Edge& edge : edges) {
          const NodeId other = edge.src == id ? edge.dst : edge.src;
          if (region_mark_[other] == region_epoch_ ||
              plan.device[other] == current) {
            continue;
          }
          co_location[plan.device[other]] +=
              std::max(0.0, CoLocation(id, other) - 1.0 / num_devices);
          ++outside;
        }
      }
    }
    std::vector<float> logp(num_devices);
    for (int d = 0; d < num_devices; ++d) {
      const double w =
          0.01 + weight[d] + (outside > 0 ? co_location[d] / outside : 0.0);
      logp[d] = static_cast<float>(std::log(w));
    }
    return DrawOtherDevice(logp.data(), num_devices, current, &rng_);
  }
  // The device the nodes exchange the most bytes with.
  std::vector<int64_t> bytes(num_devices, 0);
  for (const NodeId id : nodes) {
    for (const auto& edges : {graph.in_edges(id), graph.out_edges(id)}) {
      for (const graph::Edge& edge : edges) {
        const NodeId other = edge.src == id ? edge.dst : edge.src;
        if (plan.device[other] != current) {
          bytes[plan.device[other]] += 1 + graph.EdgeBytes(edge);
        }
      }
    }
  }
  const int32_t most = static_cast<int32_t>(
      std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  return bytes[most] > 0
             ? most
             : DrawOtherDevice(nullptr, num_devices, current, &rng_);
}

bool PlanSearch::ProposeFusion(NodeId id, bool split, simulator::Plan* plan,
                               std::vector<int32_t>* fusion_levels) {
  const int32_t level = split ? 0 : kPriorityLevels - 1;
  if (fusion_levels_[id] == level) return false;
  std::vector<int32_t> new_levels = fusion_levels_;
  new_levels[id] = level;
  absl::StatusOr<std::vector<int32_t>> groups =
      simulator::baselines::GreedyFusionGroups(instance_.graph(), plan->device,
                                               &new_levels, fusion_join_);
  if (!groups.ok() || *groups == plan->fusion_group) return false;
  if (plan->fusion_group.empty() &&
      std::all_of(groups->begin(), groups->end(),
                  [](int32_t g) { return g < 0; })) {
    return false;  // still no fusion
  }
  plan->fusion_group = *std::move(groups);
  *fusion_levels = std::move(new_levels);
  return true;
}

void PlanSearch::ProposeRegionMove(MoveKind kind, NodeId first,
                                   const Guide* guide, simulator::Plan* plan) {
  // 2 to 256 nodes around the path node, in powers of two.
  const int size = 2 << (rng_() % 8);
  std::vector<NodeId> region;
  GrowRegion(first, size, *plan, &region);
  const int32_t home = plan->device[first];
  const int32_t target = RegionTarget(region, *plan, guide);
  if (kind == MoveKind::kSwapRegions) {
    // A region of the target device, seeded at a random node there (with a
    // guide: of up to 4 found, the one the network most wants on `home`),
    // moves the other way.
    NodeId seed = -1;
    double seed_weight = -1;
    int found = 0;
    for (int tries = 0; tries < 64 && found < (guide ? 4 : 1); ++tries) {
      const NodeId other =
          static_cast<NodeId>(rng_() % instance_.graph().num_nodes());
      if (plan->device[other] != target) continue;
      ++found;
      const double weight =
          guide == nullptr ? 0 : DeviceProbability(other, home);
      if (weight > seed_weight) {
        seed = other;
        seed_weight = weight;
      }
    }
    if (seed >= 0) {
      std::vector<NodeId> back;
      GrowRegion(seed, size, *plan, &back);
      for (const NodeId id : back) plan->device[id] = home;
    }
  }
  for (const NodeId id : region) plan->device[id] = target;
}

void PlanSearch::ProposeWindowMove(MoveKind kind, int begin, int end,
                                   const PolicyOutput* placement,
                                   const Guide* guide, simulator::Plan* plan) {
  const int path_length = static_cast<int>(critical_path_.size());
  const NodeId first = critical_path_[begin];
  const int num_devices =
      static_cast<int>(instance_.simulator->topology().devices.size());
  const int32_t current = plan->device[first];
  int32_t target = -1;
  if (kind == MoveKind::kPlaceWindow && guide != nullptr) {
    // The window's nodes, marked for RegionTarget.
    std::vector<NodeId> window(critical_path_.begin() + begin,
                               critical_path_.begin() + end);
    window.erase(
        std::remove_if(window.begin(), window.end(),
                       [&](NodeId id) { return plan->device[id] != current; }),
        window.end());
    if (region_mark_.size() != plan->device.size()) {
      region_mark_.assign(plan->device.size(), 0);
      region_epoch_ = 0;
    }
    ++region_epoch_;
    for (const NodeId id : window) region_mark_[id] = region_epoch_;
    target = RegionTarget(window, *plan, guide);
  } else if (kind == MoveKind::kPlaceWindow) {
    const float* row =
        placement != nullptr && !placement->placement.empty()
            ? &placement->placement[static_cast<size_t>(first) * num_devices]
            : nullptr;
    target = DrawOtherDevice(row, num_devices, current, &rng_);
  } else {
    // A neighbour on the path that runs elsewhere: moving next to it saves
    // the transfer between them (with a guide, drawn by the network's
    // co-location of it and the window node next to it).
    NodeId neighbours[2];
    NodeId near[2];
    int count = 0;
    if (begin > 0) {
      neighbours[count] = critical_path_[begin - 1];
      near[count++] = first;
    }
    if (end < path_length) {
      neighbours[count] = critical_path_[end];
      near[count++] = critical_path_[end - 1];
    }
    int32_t options[2];
    double weights[2];
    int usable = 0;
    for (int i = 0; i < count; ++i) {
      if (plan->device[neighbours[i]] == current) continue;
      weights[usable] =
          guide == nullptr ? 1 : 0.01 + CoLocation(near[i], neighbours[i]);
      options[usable++] = plan->device[neighbours[i]];
    }
    if (usable == 0) {
      target = DrawOtherDevice(nullptr, num_devices, current, &rng_);
    } else if (guide == nullptr) {
      target = options[rng_() % usable];
    } else {
      const double u =
          UniformDouble(&rng_) * (weights[0] + (usable > 1 ? weights[1] : 0));
      target = options[usable > 1 && u >= weights[0] ? 1 : 0];
    }
  }
  for (int i = begin; i < end; ++i)
    MoveGroupOf(critical_path_[i], target, plan);
}

simulator::Plan PlanSearch::Propose(MoveKind kind,
                                    const PolicyOutput* placement,
                                    const Guide* guide,
                                    std::vector<int32_t>* fusion_levels) {
  simulator::Plan plan = best_.plan;
  const int path_length = static_cast<int>(critical_path_.size());
  if (path_length == 0) return plan;
  // The window's first node: with a guide, drawn by the network's weights
  // for the kind of move (see the class comment).
  const std::vector<double>* weights = nullptr;
  if (guide != nullptr) {
    switch (kind) {
      case MoveKind::kPriorityJump:
        weights = &guide->scheduling;
        break;
      case MoveKind::kSplitFusion:
        weights = &guide->split;
        break;
      case MoveKind::kMergeFusion:
        weights = &guide->merge;
        break;
      case MoveKind::kGuidedFusion:
        weights = &guide->fusion;
        break;
      default:
        weights = &guide->placement;
        break;
    }
  }
  const int begin = DrawPathIndex(weights);
  const NodeId first = critical_path_[begin];
  if (kind == MoveKind::kPlaceRegion || kind == MoveKind::kSwapRegions) {
    ProposeRegionMove(kind, first, guide, &plan);
    return plan;
  }
  const int length =
      1 + static_cast<int>(rng_() % std::max(options_.max_window, 1));
  const int end = std::min(path_length, begin + length);
  switch (kind) {
    case MoveKind::kSplitFusion:
    case MoveKind::kMergeFusion:
      // The first node of the window whose fusion the move changes.
      for (int i = begin; i < end; ++i) {
        if (ProposeFusion(critical_path_[i], kind == MoveKind::kSplitFusion,
                          &plan, fusion_levels)) {
          break;
        }
      }
      return plan;
    case MoveKind::kGuidedFusion:
      ProposeGuidedFusion(begin, end, &plan, fusion_levels);
      return plan;
    case MoveKind::kPriorityJump:
      // Scheduling: the window runs first, earlier path nodes before later.
      for (int i = begin; i < end; ++i) {
        plan.priority[critical_path_[i]] = top_priority_ + (end - i);
      }
      return plan;
    default:
      ProposeWindowMove(kind, begin, end, placement, guide, &plan);
      return plan;
  }
}

absl::Status PlanSearch::Run(int rounds, const PolicyOutput* placement) {
  const graph::Graph& graph = instance_.graph();
  const int num_devices =
      static_cast<int>(instance_.simulator->topology().devices.size());
  if (placement != nullptr && !placement->placement.empty() &&
      (placement->num_nodes != graph.num_nodes() ||
       placement->num_devices != num_devices)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan search on '", instance_.label,
                     "': the placement distribution "
                     "is for ",
                     placement->num_nodes, " nodes and ",
                     placement->num_devices, " devices; the instance has ",
                     graph.num_nodes(), " and ", num_devices));
  }
  if (placement != nullptr) {
    const size_t per_level =
        static_cast<size_t>(graph.num_nodes()) * kPriorityLevels;
    for (const std::vector<float>* head :
         {&placement->scheduling, &placement->fusion}) {
      if (!head->empty() && head->size() != per_level) {
        return absl::InvalidArgumentError(absl::StrCat(
            "plan search on '", instance_.label, "': a distribution of ",
            head->size(), " values for ", graph.num_nodes(), " nodes x ",
            kPriorityLevels, " levels"));
      }
    }
  }
  if (!options_.tasks.scheduling && !options_.tasks.fusion &&
      (!options_.tasks.placement || num_devices < 2)) {
    return absl::OkStatus();
  }
  if (!prepared_) {
    absl::Status status = Prepare();
    if (!status.ok()) return status;
  }
  // The head's logits do not change between rounds (the labels do).
  if (options_.guided && placement != nullptr) PrepareCoLocation(*placement);
  const int count = std::max(options_.candidates_per_round, 1);
  std::vector<Candidate> candidates(count);
  for (int round = 0; round < rounds; ++round) {
    if (options_.clock->Now() >= options_.deadline ||
        (options_.cancelled != nullptr && options_.cancelled->load())) {
      break;
    }
    if (best_.valid && !best_.oom &&
        best_.step_time_s <= options_.stop_at_step_time_s) {
      break;
    }
    if (options_.incremental) {
      absl::Status recorded = RecordIncumbent();
      if (!recorded.ok()) return recorded;
    }
    const bool guided = options_.guided && placement != nullptr;
    if (guided) PrepareGuide(*placement);
    for (Candidate& candidate : candidates) {
      candidate.fusion_levels.clear();
      // A share of a guided search's candidates are uniform ones.
      const bool uniform =
          !guided || UniformDouble(&rng_) < options_.guided_uniform_share;
      candidate.kind = DrawMoveKind(!uniform);
      candidate.scored.plan =
          Propose(candidate.kind, guided && uniform ? nullptr : placement,
                  uniform ? nullptr : &guide_, &candidate.fusion_levels);
      ++move_stats_[static_cast<int>(candidate.kind)].proposed;
    }
    RunInParallel(count, options_.threads,
                  [&](int c) { Evaluate(&candidates[c]); });
    candidates_simulated_ += count;

    int winner = -1;
    for (int c = 0; c < count; ++c) {
      if (candidates[c].slower) continue;
      if (BetterPlan(candidates[c].scored,
                     winner < 0 ? best_ : candidates[winner].scored)) {
        winner = c;
      }
    }
    if (winner >= 0) {
      Candidate& won = candidates[winner];
      ++move_stats_[static_cast<int>(won.kind)].improved;
      Adopt(std::move(won.scored), std::move(won.critical_path),
            std::move(won.fusion_levels));
      ++improvements_;
      continue;
    }
    // No candidate is faster: one as fast (and as valid) becomes the
    // incumbent, so the search walks across plateaus of equal step time.
    for (int c = 0; c < count; ++c) {
      Candidate& tied = candidates[c];
      if (tied.slower || !tied.scored.valid || tied.scored.oom != best_.oom ||
          tied.scored.step_time_s != best_.step_time_s) {
        continue;
      }
      Adopt(std::move(tied.scored), std::move(tied.critical_path),
            std::move(tied.fusion_levels));
      break;
    }
  }
  return absl::OkStatus();
}

void PlanSearch::Offer(const ScoredPlan& plan) {
  if (!BetterPlan(plan, best_)) return;
  if (!prepared_) {
    best_ = plan;  // the first Run starts from it (and checks it)
    return;
  }
  std::vector<graph::NodeId> critical_path;
  ScoredPlan offered = ScorePlan(instance_, plan.plan, &critical_path);
  if (!offered.valid) return;
  const bool same_groups = offered.plan.fusion_group == best_.plan.fusion_group;
  // Fusion moves start from the offered plan's groups.
  std::vector<int32_t> levels;
  if (!same_groups) levels = LevelsFromGroups(offered.plan.fusion_group);
  Adopt(std::move(offered), std::move(critical_path), std::move(levels));
}

void PlanSearch::Adopt(ScoredPlan plan,
                       std::vector<graph::NodeId> critical_path,
                       std::vector<int32_t> fusion_levels) {
  best_ = std::move(plan);
  best_.plan.method = "go";
  critical_path_ = std::move(critical_path);
  SetTopPriority();
  trajectory_stale_ = true;
  if (!fusion_levels.empty()) {
    fusion_levels_ = std::move(fusion_levels);
    BuildMoveGroups();
  }
}

int PlanSearch::DrawPathIndex(const std::vector<double>* cumulative) {
  const int path_length = static_cast<int>(critical_path_.size());
  if (cumulative == nullptr || cumulative->empty() ||
      !(cumulative->back() > 0)) {
    return static_cast<int>(rng_() % path_length);
  }
  const double u = UniformDouble(&rng_) * cumulative->back();
  const int index = static_cast<int>(
      std::upper_bound(cumulative->begin(), cumulative->end(), u) -
      cumulative->begin());
  return std::min(index, path_length - 1);
}

void PlanSearch::AlignLabels(const PolicyOutput& policy) {
  const simulator::Topology& topology = instance_.simulator->topology();
  const int num_devices = topology.num_devices();
  guide_.label.resize(num_devices);
  std::iota(guide_.label.begin(), guide_.label.end(), 0);
  if (policy.placement.empty()) return;
  auto same_profile = [&](int a, int b) {
    const simulator::DeviceProfile& x = topology.devices[a];
    const simulator::DeviceProfile& y = topology.devices[b];
    return x.name == y.name && x.kind == y.kind &&
           x.peak_f32_flops == y.peak_f32_flops &&
           x.memory_bytes == y.memory_bytes;
  };
  // Nodes per (argmax label, incumbent device).
  std::vector<int64_t> shared(static_cast<size_t>(num_devices) * num_devices);
  const std::vector<int32_t>& device = best_.plan.device;
  for (size_t id = 0; id < device.size(); ++id) {
    const float* row = &policy.placement[id * num_devices];
    const int label =
        static_cast<int>(std::max_element(row, row + num_devices) - row);
    ++shared[static_cast<size_t>(label) * num_devices + device[id]];
  }
  std::vector<int32_t> order(shared.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return shared[a] > shared[b]; });
  std::vector<bool> label_used(num_devices, false);
  std::vector<bool> device_done(num_devices, false);
  for (const int32_t pair : order) {
    const int label = pair / num_devices;
    const int d = pair % num_devices;
    if (label_used[label] || device_done[d] || !same_profile(label, d)) {
      continue;
    }
    guide_.label[d] = label;
    label_used[label] = device_done[d] = true;
  }
  // Every device is matched: the pairs of the same profile include the
  // identity, so each profile has as many free labels as devices.
}

double PlanSearch::DeviceProbability(NodeId id, int32_t device) const {
  const PolicyOutput& policy = *guide_.policy;
  const int num_devices = static_cast<int>(guide_.label.size());
  if (policy.placement.empty()) return 1.0 / num_devices;
  return std::exp(static_cast<double>(
      policy.placement[static_cast<size_t>(id) * num_devices +
                       guide_.label[device]]));
}

double PlanSearch::CoLocation(NodeId u, NodeId v) const {
  if (!guide_.co_location.empty()) {
    auto it = guide_.co_location.find({u, v});
    if (it == guide_.co_location.end()) it = guide_.co_location.find({v, u});
    if (it != guide_.co_location.end()) {
      return 1.0 / (1.0 + std::exp(-static_cast<double>(it->second)));
    }
  }
  const PolicyOutput& policy = *guide_.policy;
  const int num_devices = static_cast<int>(guide_.label.size());
  if (policy.placement.empty()) return 1.0 / num_devices;
  const float* a = &policy.placement[static_cast<size_t>(u) * num_devices];
  const float* b = &policy.placement[static_cast<size_t>(v) * num_devices];
  double shared = 0;
  for (int d = 0; d < num_devices; ++d) {
    shared += std::exp(static_cast<double>(a[d]) + b[d]);
  }
  return shared;
}

double PlanSearch::PlacementDispute(NodeId id,
                                    const simulator::Plan& plan) const {
  // Each term is 0 where the network says no more than a uniform guess
  // would (probability 1 / devices), so an uninformed network weighs every
  // node alike.
  const graph::Graph& graph = instance_.graph();
  const double uniform = 1.0 / guide_.label.size();
  double disagreement = 0;
  int neighbours = 0;
  for (const auto& edges : {graph.in_edges(id), graph.out_edges(id)}) {
    for (const graph::Edge& edge : edges) {
      const NodeId other = edge.src == id ? edge.dst : edge.src;
      const double together = CoLocation(id, other);
      disagreement += plan.device[other] == plan.device[id]
                          ? std::max(0.0, (uniform - together) / uniform)
                          : std::max(0.0, (together - uniform) / (1 - uniform));
      ++neighbours;
    }
  }
  const double elsewhere = std::max(
      0.0, (uniform - DeviceProbability(id, plan.device[id])) / uniform);
  return 0.2 + elsewhere + (neighbours > 0 ? disagreement / neighbours : 0.0);
}

void PlanSearch::PrepareCoLocation(const PolicyOutput& policy) {
  guide_.co_location.clear();
  const GraphFeatures& features = instance_.features;
  const int num_devices =
      static_cast<int>(instance_.simulator->topology().devices.size());
  if (policy.co_location.size() == features.edge_src.size() &&
      num_devices > 1) {
    const double devices = static_cast<double>(num_devices);
    const float shift = static_cast<float>(std::log(1.0 / (devices - 1.0)));
    guide_.co_location.reserve(policy.co_location.size());
    for (size_t e = 0; e < policy.co_location.size(); ++e) {
      guide_.co_location[{static_cast<NodeId>(features.edge_src[e]),
                          static_cast<NodeId>(features.edge_dst[e])}] =
          policy.co_location[e] + shift;
    }
  }
}

void PlanSearch::PrepareGuide(const PolicyOutput& policy) {
  guide_.policy = &policy;
  AlignLabels(policy);
  const int levels = kPriorityLevels;
  auto row = [&](const std::vector<float>& logp, NodeId id) {
    return logp.empty() ? nullptr : &logp[static_cast<size_t>(id) * levels];
  };
  for (std::vector<double>* weights :
       {&guide_.scheduling, &guide_.placement, &guide_.split, &guide_.merge,
        &guide_.fusion}) {
    weights->clear();
  }
  double scheduling = 0, placement = 0, split = 0, merge = 0, fusion = 0;
  for (const NodeId id : critical_path_) {
    // Nodes the network wants early jump the queue.
    const float* priority = row(policy.scheduling, id);
    double expected = 0;
    for (int l = 0; priority != nullptr && l < levels; ++l) {
      expected += l * std::exp(priority[l]);
    }
    scheduling += priority == nullptr ? 1.0 : std::exp(expected / 2);
    placement += PlacementDispute(id, best_.plan);
    // The network's probability of fusing (a level above 0) against
    // whether the node is fused now.
    const float* fuse_row = row(policy.fusion, id);
    const double fuse = fuse_row == nullptr
                            ? 0.5
                            : 1 - std::exp(static_cast<double>(fuse_row[0]));
    const bool fused = fusion_levels_[id] > 0;
    split += 0.01 + (fused ? 1 - fuse : 0.0);
    merge += 0.01 + (fused ? 0.0 : fuse);
    fusion += 0.01 + std::abs(fuse - (fused ? 1.0 : 0.0));
    guide_.scheduling.push_back(scheduling);
    guide_.placement.push_back(placement);
    guide_.split.push_back(split);
    guide_.merge.push_back(merge);
    guide_.fusion.push_back(fusion);
  }
}

void PlanSearch::ProposeGuidedFusion(int begin, int end, simulator::Plan* plan,
                                     std::vector<int32_t>* fusion_levels) {
  const int levels = kPriorityLevels;
  const std::vector<float>& fusion = guide_.policy->fusion;
  std::vector<int32_t> new_levels = fusion_levels_;
  for (int i = begin; i < end; ++i) {
    const NodeId id = critical_path_[i];
    const float* r = &fusion[static_cast<size_t>(id) * levels];
    double u = UniformDouble(&rng_);
    int32_t level = levels - 1;
    for (int l = 0; l < levels; ++l) {
      u -= std::exp(static_cast<double>(r[l]));
      if (u < 0) {
        level = l;
        break;
      }
    }
    new_levels[id] = level;
  }
  absl::StatusOr<std::vector<int32_t>> groups =
      simulator::baselines::GreedyFusionGroups(instance_.graph(), plan->device,
                                               &new_levels, fusion_join_);
  if (!groups.ok()) return;
  plan->fusion_group = *std::move(groups);
  *fusion_levels = std::move(new_levels);
}

}  // namespace gopt::policy::go
