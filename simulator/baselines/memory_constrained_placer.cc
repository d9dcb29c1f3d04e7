#include "simulator/baselines/memory_constrained_placer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/upward_rank.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {
namespace {

using graph::Edge;
using graph::NodeId;

// A ready kernel as one device sees it.
struct Candidate {
  double data_ready_s = 0;  // when all its inputs can be on this device
  double rank = 0;
  NodeId node = 0;
  uint8_t favourite = 0;  // favourite child of a parent on this device
};

// Among candidates that can start at the same time: favourite children
// first (m-sct only sets them), then higher rank, then lower NodeId.
bool Preferred(const Candidate& a, const Candidate& b) {
  if (a.favourite != b.favourite) return a.favourite > b.favourite;
  if (a.rank != b.rank) return a.rank > b.rank;
  return a.node < b.node;
}

// Heap orders (std::priority_queue keeps the greatest on top).
struct WaitingOrder {  // earliest data-ready on top
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.data_ready_s != b.data_ready_s) {
      return a.data_ready_s > b.data_ready_s;
    }
    return Preferred(b, a);
  }
};
struct StartableOrder {  // most preferred on top
  bool operator()(const Candidate& a, const Candidate& b) const {
    return Preferred(b, a);
  }
};

// One device's memory estimate over the placement: entry k is the bytes in
// use just after the k-th commit (a commit's frees land at k + 1, so entry k
// still holds the committed node's inputs beside its output). Every change
// applies from some entry to the end, as the later entries are the present
// and what follows it: a new buffer from now on, a resident weight from
// entry 0, a received copy from the entry of its producer's commit (the
// simulator allocates the copy when the producer finishes, however much
// later the consumer runs). A segment tree over the entries, each node
// holding the max of its subtree plus the additions to all of it, keeps
// the peak at the root: O(log entries) per change.
class MemoryHistory {
 public:
  explicit MemoryHistory(int entries) {
    while (leaves_ < entries) leaves_ *= 2;
    max_.assign(2 * leaves_, 0);
    added_.assign(2 * leaves_, 0);
  }

  // Adds `bytes` to entries first..end.
  void AddFrom(int first, int64_t bytes) {
    int lo = first + leaves_;
    int hi = 2 * leaves_;
    const int lo_leaf = lo;
    for (; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) Add(lo++, bytes);
      if (hi & 1) Add(--hi, bytes);
    }
    for (int i = lo_leaf / 2; i >= 1; i /= 2) {
      max_[i] = added_[i] + std::max(max_[2 * i], max_[2 * i + 1]);
    }
  }
  // The largest entry.
  int64_t Peak() const { return max_[1]; }

 private:
  void Add(int node, int64_t bytes) {
    max_[node] += bytes;
    added_[node] += bytes;
  }

  int leaves_ = 1;
  std::vector<int64_t> max_;    // per tree node: its subtree's largest entry
  std::vector<int64_t> added_;  // per tree node: added to all its entries
};

// The working state of one placement. Per device, kernels whose inputs
// arrive after the device frees up wait in `waiting_` (by arrival); once
// the device's free time passes their arrival they move to `startable_`
// (by preference), where all could start the moment the device frees up.
// Device free times only grow, so a candidate moves at most once per
// unblocking, and each step looks at one top per device. A candidate that
// does not fit a device's memory waits in `blocked_` until enough memory is
// freed there.
class Run {
 public:
  Run(const CostTable& costs, bool small_communication_times,
      absl::string_view name, std::vector<int64_t> budget_bytes,
      double reserve_fraction)
      : costs_(costs),
        graph_(costs.graph()),
        name_(name),
        n_(graph_.num_nodes()),
        num_devices_(costs.num_devices()),
        rank_(MeanUpwardRank(costs)),
        favourite_child_(n_, -1),
        deferred_(n_, 0),
        device_(n_, -1),
        finish_s_(n_, 0),
        pending_(n_, 0),
        remaining_uses_(n_, 0),
        seen_(n_, -1),
        position_(n_, 0),
        copy_devices_(n_),
        device_free_s_(num_devices_, 0),
        memory_used_(num_devices_, 0),
        history_(num_devices_, MemoryHistory(n_ + 2)),
        freed_since_block_(num_devices_, 0),
        min_shortfall_(num_devices_, kNoShortfall),
        budget_bytes_(std::move(budget_bytes)),
        fill_bytes_(num_devices_),
        waiting_(num_devices_),
        startable_(num_devices_),
        blocked_(num_devices_) {
    order_.reserve(n_);
    for (int32_t d = 0; d < num_devices_; ++d) {
      fill_bytes_[d] =
          budget_bytes_[d] -
          static_cast<int64_t>(reserve_fraction *
                               static_cast<double>(budget_bytes_[d]));
    }
    for (NodeId id = 0; id < n_; ++id) {
      // Only parameters that may go anywhere wait for their consumer; a
      // constrained one is placed like any free node.
      deferred_[id] =
          costs.IsFreeSource(id) &&
          costs.AllowedDevices(id).size() == static_cast<size_t>(num_devices_);
      int64_t best_bytes = 0;
      for (const Edge& edge : graph_.out_edges(id)) {
        if (edge.control) continue;
        ++remaining_uses_[id];
        const int64_t bytes = graph_.EdgeBytes(edge);
        if (small_communication_times && bytes > best_bytes) {
          best_bytes = bytes;
          favourite_child_[id] = edge.dst;
        }
      }
    }
  }

  // The estimate's peak on device `d` (valid after Place).
  int64_t PeakBytes(int32_t d) const { return history_[d].Peak(); }

  // The devices, and the order nodes were committed in as priorities (the
  // first committed highest; parameters placed with their consumer, 0).
  absl::StatusOr<Placement> Place() {
    for (NodeId id = 0; id < n_; ++id) {
      for (const Edge& edge : graph_.in_edges(id)) {
        if (!deferred_[edge.src]) ++pending_[id];
      }
    }
    for (NodeId id = 0; id < n_; ++id) {
      if (!deferred_[id] && pending_[id] == 0) OnReady(id);
    }
    PlaceFreeNodes();
    while (true) {
      int32_t best_device = -1;
      double best_start = 0;
      Candidate best;
      for (int32_t d = 0; d < num_devices_; ++d) {
        auto& waiting = waiting_[d];
        auto& startable = startable_[d];
        while (!waiting.empty() &&
               waiting.top().data_ready_s <= device_free_s_[d]) {
          if (device_[waiting.top().node] < 0) startable.push(waiting.top());
          waiting.pop();
        }
        double start = 0;
        const Candidate* candidate = nullptr;
        DropUnusable(d, &startable);
        if (!startable.empty()) {
          candidate = &startable.top();
          start = device_free_s_[d];
        } else {
          DropUnusable(d, &waiting);
          if (!waiting.empty()) {
            candidate = &waiting.top();
            start = candidate->data_ready_s;
          }
        }
        if (candidate == nullptr) continue;
        if (best_device < 0 || start < best_start ||
            (start == best_start && Preferred(*candidate, best))) {
          best_device = d;
          best_start = start;
          best = *candidate;
        }
      }
      if (best_device < 0 && !Overcommit()) break;
      if (best_device >= 0) Commit(best.node, best_device, best_start);
      PlaceFreeNodes();
    }
    // Nothing can start: either everything is placed, or every remaining
    // ready node is blocked on memory.
    for (const Candidate& candidate : blocked_free_) {
      if (device_[candidate.node] < 0) return NoRoom(candidate.node);
    }
    for (const std::vector<Candidate>& blocked : blocked_) {
      for (const Candidate& candidate : blocked) {
        if (device_[candidate.node] < 0) return NoRoom(candidate.node);
      }
    }
    for (NodeId id = 0; id < n_; ++id) {
      if (device_[id] >= 0) continue;
      if (!deferred_[id]) {
        return absl::InternalError(absl::StrCat(
            name_, ": node '", graph_.node(id).name, "' was never placed"));
      }
      RETURN_IF_ERROR(PlaceUnconsumedParameter(id));
    }
    Placement placement;
    placement.priority.assign(n_, 0);
    for (size_t i = 0; i < order_.size(); ++i) {
      placement.priority[order_[i]] = static_cast<int32_t>(n_ - i);
    }
    placement.device = std::move(device_);
    return placement;
  }

 private:
  static constexpr int64_t kNoShortfall = std::numeric_limits<int64_t>::max();

  // Pops candidates of device `d` that are placed already, and moves those
  // that do not fit its memory now to `blocked_[d]`.
  template <typename Heap>
  void DropUnusable(int32_t d, Heap* heap) {
    while (!heap->empty()) {
      const Candidate candidate = heap->top();
      if (device_[candidate.node] >= 0) {
        heap->pop();
        continue;
      }
      const int64_t shortfall = Shortfall(candidate.node, d);
      if (shortfall <= 0) break;
      heap->pop();
      if (blocked_[d].empty()) freed_since_block_[d] = 0;
      blocked_[d].push_back(candidate);
      min_shortfall_[d] = std::min(min_shortfall_[d], shortfall);
    }
  }

  // What placing `id` on `d` adds to d's estimate, as (first entry,
  // bytes) pairs in `need_`: its own output from now on, the unplaced
  // parameters that come along from the start (the simulator holds
  // parameters and constants for the whole step), and one copy of each
  // remote input not yet received on d from its producer's commit.
  void NeedBytes(NodeId id, int32_t d) {
    need_.clear();
    const int now = static_cast<int>(order_.size());
    need_.push_back(
        {costs_.IsResident(id) ? 0 : now, costs_.OutputMemoryBytes(id)});
    for (const Edge& edge : graph_.in_edges(id)) {
      const NodeId src = edge.src;
      const bool unplaced = device_[src] < 0;
      if (!unplaced && (edge.control || device_[src] == d)) continue;
      if (seen_[src] == id) continue;
      seen_[src] = id;
      if (unplaced) {
        need_.push_back(
            {costs_.IsResident(src) ? 0 : now, costs_.OutputMemoryBytes(src)});
      } else if (!HasCopy(src, d)) {
        need_.push_back({position_[src], graph_.node(src).output_bytes()});
      }
    }
    // Later evaluations of the same node must see every input again.
    for (const Edge& edge : graph_.in_edges(id)) seen_[edge.src] = -1;
  }

  // How many bytes d lacks to hold `id` now (<= 0: it fits): the peak of
  // d's history with NeedBytes added, less the budget (the history's
  // entries so far are within the budget, and a copy or a parameter raises
  // earlier entries too), or the memory in use now with NeedBytes added,
  // less the fill limit, whichever is more.
  int64_t Shortfall(NodeId id, int32_t d) {
    NeedBytes(id, d);
    MemoryHistory& history = history_[d];
    const int now = static_cast<int>(order_.size());
    // Additions from the first entry raise the peak by as much, and those
    // from now on raise the entries from now on, which all hold what is in
    // use now; only copies dated back need the tree.
    int64_t from_start = 0;
    int64_t from_now = 0;
    int64_t dated_back = 0;
    for (const auto& [first, bytes] : need_) {
      (first == now ? from_now : first == 0 ? from_start : dated_back) += bytes;
    }
    const int64_t in_use = memory_used_[d] + from_start + from_now + dated_back;
    int64_t peak = std::max(history.Peak() + from_start, in_use);
    if (dated_back > 0) {
      for (const auto& [first, bytes] : need_) history.AddFrom(first, bytes);
      peak = history.Peak();
      for (const auto& [first, bytes] : need_) history.AddFrom(first, -bytes);
    }
    return std::max(peak - budget_bytes_[d], in_use - fill_bytes_[d]);
  }

  // Adds NeedBytes(id, d) to d's estimate.
  void Allocate(NodeId id, int32_t d) {
    NeedBytes(id, d);
    for (const auto& [first, bytes] : need_) {
      history_[d].AddFrom(first, bytes);
      memory_used_[d] += bytes;
    }
  }

  bool HasCopy(NodeId id, int32_t d) const {
    const std::vector<int32_t>& devices = copy_devices_[id];
    return std::find(devices.begin(), devices.end(), d) != devices.end();
  }

  double DataReady(NodeId id, int32_t d) const {
    double time = 0;
    for (const Edge& edge : graph_.in_edges(id)) {
      if (device_[edge.src] < 0) continue;  // comes along, local
      time =
          std::max(time, finish_s_[edge.src] + costs_.EdgeTransferSeconds(
                                                   edge, device_[edge.src], d));
    }
    return time;
  }

  void OnReady(NodeId id) {
    if (costs_.IsFree(id)) {
      free_ready_.push_back(id);
      return;
    }
    for (int32_t d : costs_.AllowedDevices(id)) {
      Candidate candidate;
      candidate.data_ready_s = DataReady(id, d);
      candidate.rank = rank_[id];
      candidate.node = id;
      for (const Edge& edge : graph_.in_edges(id)) {
        if (favourite_child_[edge.src] == id && device_[edge.src] == d) {
          candidate.favourite = 1;
        }
      }
      waiting_[d].push(candidate);
    }
  }

  // Frees `bytes` on d after the current commit.
  void Free(int32_t d, int64_t bytes) {
    history_[d].AddFrom(static_cast<int>(order_.size()), -bytes);
    memory_used_[d] -= bytes;
    freed_since_block_[d] += bytes;
    freed_any_ = true;
  }

  // One use of `src`'s output is done. When its last use is, its copies on
  // other devices are freed, and its own buffer unless it is resident; a
  // free node (a view) instead passes the release on to its inputs.
  void ReleaseUse(NodeId src) {
    release_stack_.push_back(src);
    while (!release_stack_.empty()) {
      const NodeId id = release_stack_.back();
      release_stack_.pop_back();
      if (--remaining_uses_[id] > 0) continue;
      for (int32_t d : copy_devices_[id]) {
        Free(d, graph_.node(id).output_bytes());
      }
      copy_devices_[id].clear();
      if (costs_.IsResident(id)) continue;
      if (!costs_.IsFree(id)) {
        Free(device_[id], costs_.OutputMemoryBytes(id));
        continue;
      }
      for (const Edge& edge : graph_.in_edges(id)) {
        if (!edge.control) release_stack_.push_back(edge.src);
      }
    }
  }

  void Commit(NodeId id, int32_t d, double start_s) {
    freed_any_ = false;
    Allocate(id, d);
    for (const Edge& edge : graph_.in_edges(id)) {
      if (device_[edge.src] < 0) {
        device_[edge.src] = d;  // a parameter, ready from the start
        finish_s_[edge.src] = 0;
        position_[edge.src] = 0;
      } else if (!edge.control && device_[edge.src] != d &&
                 !HasCopy(edge.src, d)) {
        copy_devices_[edge.src].push_back(d);
      }
    }
    device_[id] = d;
    position_[id] = static_cast<int>(order_.size());
    order_.push_back(id);  // frees from here on land after this commit
    finish_s_[id] = start_s + costs_.ComputeSeconds(id, d);
    if (!costs_.IsFree(id)) {
      device_free_s_[d] = finish_s_[id];
      // A kernel is done with its inputs; a view keeps them alive until
      // its own uses are done.
      for (const Edge& edge : graph_.in_edges(id)) {
        if (!edge.control) ReleaseUse(edge.src);
      }
    }
    for (const Edge& edge : graph_.out_edges(id)) {
      if (--pending_[edge.dst] == 0) OnReady(edge.dst);
    }
    if (!freed_any_) return;
    for (int32_t device = 0; device < num_devices_; ++device) {
      if (blocked_[device].empty() ||
          freed_since_block_[device] < min_shortfall_[device]) {
        continue;
      }
      for (const Candidate& candidate : blocked_[device]) {
        if (device_[candidate.node] < 0) waiting_[device].push(candidate);
      }
      blocked_[device].clear();
      min_shortfall_[device] = kNoShortfall;
    }
    for (const Candidate& candidate : blocked_free_) {
      free_ready_.push_back(candidate.node);
    }
    blocked_free_.clear();
  }

  // When every ready node waits for memory: commits the one that would
  // start first among those that fit a device's budget now and overflow
  // only the history (copies dated back to their producers) or the fill
  // limit. The history is an upper bound built from the list schedule's
  // order, not the simulator's timing, so such a plan may well fit; the
  // simulation that checks every plan decides. False when none fits now.
  bool Overcommit() {
    NodeId best_node = -1;
    int32_t best_device = -1;
    double best_start = 0;
    auto consider = [&](NodeId id, int32_t d) {
      if (device_[id] >= 0) return;
      NeedBytes(id, d);
      int64_t in_use = memory_used_[d];
      for (const auto& [first, bytes] : need_) in_use += bytes;
      if (in_use > budget_bytes_[d]) return;
      const double start = costs_.IsFree(id)
                               ? DataReady(id, d)
                               : std::max(device_free_s_[d], DataReady(id, d));
      if (best_node < 0 || start < best_start) {
        best_node = id;
        best_device = d;
        best_start = start;
      }
    };
    for (int32_t d = 0; d < num_devices_; ++d) {
      for (const Candidate& candidate : blocked_[d])
        consider(candidate.node, d);
    }
    for (const Candidate& candidate : blocked_free_) {
      for (int32_t d : costs_.AllowedDevices(candidate.node)) {
        consider(candidate.node, d);
      }
    }
    if (best_node < 0) return false;
    Commit(best_node, best_device, best_start);
    return true;
  }

  // Free nodes take no device time: each goes where its inputs arrive
  // first among the devices with room (ties: lower index), or waits for
  // memory to be freed.
  void PlaceFreeNodes() {
    while (!free_ready_.empty()) {
      const NodeId id = free_ready_.back();
      free_ready_.pop_back();
      if (device_[id] >= 0) continue;  // overcommitted while blocked
      int32_t best_device = -1;
      double best_ready = std::numeric_limits<double>::infinity();
      for (int32_t d : costs_.AllowedDevices(id)) {
        const double ready = DataReady(id, d);
        if ((best_device < 0 || ready < best_ready) && Shortfall(id, d) <= 0) {
          best_ready = ready;
          best_device = d;
        }
      }
      if (best_device < 0) {
        Candidate candidate;
        candidate.node = id;
        blocked_free_.push_back(candidate);
        continue;
      }
      Commit(id, best_device, best_ready);
    }
  }

  // A parameter without consumers: on the allowed device with the most
  // room left.
  absl::Status PlaceUnconsumedParameter(NodeId id) {
    int32_t best_device = -1;
    int64_t best_room = -1;
    for (int32_t d : costs_.AllowedDevices(id)) {
      const int64_t room = budget_bytes_[d] - memory_used_[d];
      if (room > best_room && Shortfall(id, d) <= 0) {
        best_room = room;
        best_device = d;
      }
    }
    if (best_device < 0) return NoRoom(id);
    Allocate(id, best_device);
    device_[id] = best_device;
    return absl::OkStatus();
  }

  absl::Status NoRoom(NodeId id) {
    std::string devices;
    for (int32_t d = 0; d < num_devices_; ++d) {
      absl::StrAppend(&devices, d == 0 ? "" : ", ", "device ", d, ": ",
                      memory_used_[d], " of ", budget_bytes_[d],
                      " bytes in use");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        name_, ": node '", graph_.node(id).name, "' (output ",
        graph_.node(id).output_bytes(),
        " bytes) fits on no device it may use, and nothing placed can free "
        "memory first (",
        devices, ")"));
  }

  const CostTable& costs_;
  const graph::Graph& graph_;
  const absl::string_view name_;
  const int n_;
  const int num_devices_;
  const std::vector<double> rank_;
  std::vector<NodeId> favourite_child_;
  std::vector<uint8_t> deferred_;
  std::vector<int32_t> device_;
  std::vector<double> finish_s_;
  std::vector<int32_t> pending_;
  std::vector<int32_t> remaining_uses_;  // data uses not yet placed
  std::vector<NodeId> seen_;             // NeedBytes: inputs already counted
  // Per node: the history entry of its commit (0 for parameters placed
  // with their consumer: the simulator sends them from the start).
  std::vector<int> position_;
  std::vector<std::pair<int, int64_t>> need_;  // NeedBytes' result
  // Devices holding a received copy of the node's output.
  std::vector<std::vector<int32_t>> copy_devices_;
  std::vector<double> device_free_s_;
  std::vector<int64_t> memory_used_;  // per device: the history's last entry
  std::vector<MemoryHistory> history_;
  const std::vector<int64_t> budget_bytes_;  // per device: the most to use
  // Per device: the most in use at the moment of a commit, below the
  // budget by the reserve (room for copies of tensors produced earlier that
  // later consumers will need: those raise the history's past entries).
  std::vector<int64_t> fill_bytes_;
  std::vector<NodeId> order_;  // nodes as committed
  std::vector<int64_t> freed_since_block_;
  std::vector<int64_t> min_shortfall_;
  bool freed_any_ = false;
  std::vector<NodeId> free_ready_;
  std::vector<NodeId> release_stack_;
  std::vector<
      std::priority_queue<Candidate, std::vector<Candidate>, WaitingOrder>>
      waiting_;
  std::vector<
      std::priority_queue<Candidate, std::vector<Candidate>, StartableOrder>>
      startable_;
  std::vector<std::vector<Candidate>> blocked_;
  std::vector<Candidate> blocked_free_;
};

// Joins colocation groups in `placement` and simulates it the way
// MakeBaselinePlan builds the plan: the placement's order, no fusion,
// default layouts.
absl::StatusOr<SimulationResult> SimulateInItsOrder(
    const BaselineContext& context, const Simulator& simulator,
    Placement* placement) {
  ColocateGroups(context.graph, context.topology, &placement->device);
  Plan plan;
  plan.device = placement->device;
  plan.priority = placement->priority;
  SimulationOptions quick;
  quick.record_timeline = false;
  return simulator.Simulate(plan, quick);
}

}  // namespace

absl::string_view MemoryConstrainedPlacer::name() const {
  return variant_ == Variant::kEarliestTaskFirst ? "m-etf" : "m-sct";
}

absl::StatusOr<std::vector<int32_t>> MemoryConstrainedPlacer::Place(
    const BaselineContext& context) const {
  ASSIGN_OR_RETURN(Placement placement, PlaceInOrder(context));
  return std::move(placement.device);
}

absl::StatusOr<Placement> MemoryConstrainedPlacer::PlaceInOrder(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  const Simulator simulator(context.graph, context.topology,
                            context.cost_model);
  absl::StatusOr<Placement> spread = PlaceSpread(context, costs, simulator);
  if (spread.ok() ||
      spread.status().code() != absl::StatusCode::kFailedPrecondition) {
    return spread;
  }
  // Spreading holds copies of tensors on the devices that read them, so a
  // graph can fit one device and yet overflow every spread the list
  // schedule finds (EfficientNet-B0 at batch 256 on v100x4-nvlink: 9.3 GB
  // on one V100). Before giving up, try the whole graph on one device,
  // largest memory first, in topological order.
  std::vector<int> by_memory(context.topology.num_devices());
  std::iota(by_memory.begin(), by_memory.end(), 0);
  std::stable_sort(by_memory.begin(), by_memory.end(), [&](int a, int b) {
    return context.topology.devices[a].memory_bytes >
           context.topology.devices[b].memory_bytes;
  });
  const int n = context.graph.num_nodes();
  for (int d : by_memory) {
    Placement one;
    one.device.resize(n);
    one.priority.resize(n);
    for (NodeId id = 0; id < n; ++id) {
      one.device[id] = costs.NearestAllowedDevice(id, d);
      one.priority[id] = n - id;
    }
    ASSIGN_OR_RETURN(const SimulationResult result,
                     SimulateInItsOrder(context, simulator, &one));
    if (!result.oom) return one;
  }
  return spread;
}

absl::StatusOr<Placement> MemoryConstrainedPlacer::PlaceSpread(
    const BaselineContext& context, const CostTable& costs,
    const Simulator& simulator) const {
  const int num_devices = context.topology.num_devices();
  std::vector<int64_t> budget(num_devices);
  for (int d = 0; d < num_devices; ++d) {
    budget[d] = context.topology.devices[d].memory_bytes;
  }
  std::string tightened;        // what the retries changed, for error messages
  double reserve_fraction = 0;  // of each budget, kept free when filling
  for (int attempt = 1;; ++attempt) {
    Run run(costs, variant_ == Variant::kSmallCommunicationTimes, name(),
            budget, reserve_fraction);
    absl::StatusOr<Placement> placement = run.Place();
    if (!placement.ok()) {
      // Out of room: the list schedule filled the devices to the brim, and
      // copies of early tensors that later consumers need fit nowhere. Keep
      // more of each budget in reserve and place again.
      if (placement.status().code() == absl::StatusCode::kFailedPrecondition &&
          reserve_fraction < kMaxReserveFraction && attempt < kMaxAttempts) {
        reserve_fraction =
            std::min(kMaxReserveFraction,
                     std::max(kFirstReserveFraction, 2 * reserve_fraction));
        continue;
      }
      if (tightened.empty()) return placement.status();
      return absl::Status(
          placement.status().code(),
          absl::StrCat(placement.status().message(), "; ", tightened));
    }
    ASSIGN_OR_RETURN(const SimulationResult result,
                     SimulateInItsOrder(context, simulator, &*placement));
    if (!result.oom) return placement;
    // The simulator's execution strays from the list schedule (transfers
    // queue on links while their copies are already held, ready ops
    // overtake late ones): cap each device that overflowed at its estimated
    // peak less the overflow (the budget alone may lie far above the
    // estimate, so lowering it would change nothing) and place again.
    std::string overflows;
    for (int d = 0; d < num_devices; ++d) {
      const int64_t over = result.peak_memory_bytes[d] -
                           context.topology.devices[d].memory_bytes;
      if (over <= 0) continue;
      budget[d] = std::min(budget[d], run.PeakBytes(d)) - over;
      absl::StrAppend(&overflows, overflows.empty() ? "" : ", ", "device ", d,
                      " by ", over, " bytes");
    }
    tightened =
        absl::StrCat("after ", attempt,
                     " simulated plan(s) overflowed memory (last: ", overflows,
                     "), device budgets were tightened");
    if (attempt == kMaxAttempts) {
      return absl::FailedPreconditionError(absl::StrCat(
          name(),
          ": no placement whose simulation fits in memory: ", tightened));
    }
  }
}

}  // namespace gopt::simulator::baselines
