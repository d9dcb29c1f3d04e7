#include "simulator/baselines/memory_constrained_placer.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/status_macros.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/upward_rank.h"

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

// The working state of one placement. Per device, kernels whose inputs
// arrive after the device frees up wait in `waiting_` (by arrival); once
// the device's free time passes their arrival they move to `startable_`
// (by preference), where all could start the moment the device frees up.
// Device free times only grow, so a candidate moves at most once, and each
// step looks at one top per device.
class Run {
 public:
  Run(const CostTable& costs, bool small_communication_times,
      absl::string_view name)
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
        alive_(n_, 0),
        seen_(n_, -1),
        copied_(static_cast<size_t>(n_) * num_devices_, false),
        device_free_s_(num_devices_, 0),
        memory_used_(num_devices_, 0),
        waiting_(num_devices_),
        startable_(num_devices_) {
    for (NodeId id = 0; id < n_; ++id) {
      // Only parameters that may go anywhere wait for their consumer; a
      // constrained one is placed like any free node.
      deferred_[id] =
          costs.IsFreeSource(id) &&
          costs.AllowedDevices(id).size() == static_cast<size_t>(num_devices_);
      if (!small_communication_times) continue;
      int64_t best_bytes = 0;
      for (const Edge& edge : graph_.out_edges(id)) {
        const int64_t bytes = graph_.EdgeBytes(edge);
        if (!edge.control && bytes > best_bytes) {
          best_bytes = bytes;
          favourite_child_[id] = edge.dst;
        }
      }
    }
  }

  absl::StatusOr<std::vector<int32_t>> Place() {
    for (NodeId id = 0; id < n_; ++id) {
      for (const Edge& edge : graph_.in_edges(id)) {
        if (!deferred_[edge.src]) ++pending_[id];
      }
    }
    for (NodeId id = 0; id < n_; ++id) {
      if (!deferred_[id] && pending_[id] == 0) OnReady(id);
    }
    RETURN_IF_ERROR(PlaceFreeNodes());
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
        RETURN_IF_ERROR(DropUnusable(d, &startable));
        if (!startable.empty()) {
          candidate = &startable.top();
          start = device_free_s_[d];
        } else {
          RETURN_IF_ERROR(DropUnusable(d, &waiting));
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
      if (best_device < 0) break;
      Commit(best.node, best_device, best_start);
      RETURN_IF_ERROR(PlaceFreeNodes());
    }
    for (NodeId id = 0; id < n_; ++id) {
      if (device_[id] >= 0) continue;
      if (!deferred_[id]) {
        return absl::InternalError(absl::StrCat(
            name_, ": node '", graph_.node(id).name, "' was never placed"));
      }
      RETURN_IF_ERROR(PlaceUnconsumedParameter(id));
    }
    return std::move(device_);
  }

 private:
  // Pops candidates of device `d` that are placed already or that no
  // longer fit there. used + need on a device never decreases (a copy that
  // lowers a node's need raised the device's use by as much), so a node
  // that does not fit now never will.
  template <typename Heap>
  absl::Status DropUnusable(int32_t d, Heap* heap) {
    while (!heap->empty()) {
      const NodeId node = heap->top().node;
      if (device_[node] >= 0) {
        heap->pop();
        continue;
      }
      if (Fits(node, d)) break;
      heap->pop();
      if (--alive_[node] == 0) return NoRoom(node);
    }
    return absl::OkStatus();
  }

  // Bytes that placing `id` on `d` adds to d's estimate: its own output,
  // the unplaced parameters that come along, and one copy of each remote
  // input not yet received on d.
  int64_t NeedBytes(NodeId id, int32_t d) {
    int64_t need = costs_.OutputMemoryBytes(id);
    for (const Edge& edge : graph_.in_edges(id)) {
      const NodeId src = edge.src;
      const bool unplaced = device_[src] < 0;
      if (!unplaced && (edge.control || device_[src] == d)) continue;
      if (seen_[src] == id) continue;
      seen_[src] = id;
      if (unplaced) {
        need += costs_.OutputMemoryBytes(src);
      } else if (!copied_[Slot(src, d)]) {
        need += graph_.node(src).output_bytes();
      }
    }
    // Later evaluations of the same node must see every input again.
    for (const Edge& edge : graph_.in_edges(id)) seen_[edge.src] = -1;
    return need;
  }

  bool Fits(NodeId id, int32_t d) {
    return memory_used_[d] + NeedBytes(id, d) <=
           costs_.topology().devices[d].memory_bytes;
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
      ++alive_[id];
    }
  }

  void Commit(NodeId id, int32_t d, double start_s) {
    memory_used_[d] += NeedBytes(id, d);
    for (const Edge& edge : graph_.in_edges(id)) {
      if (device_[edge.src] < 0) {
        device_[edge.src] = d;
        finish_s_[edge.src] = 0;
      } else if (!edge.control && device_[edge.src] != d) {
        copied_[Slot(edge.src, d)] = true;
      }
    }
    device_[id] = d;
    finish_s_[id] = start_s + costs_.ComputeSeconds(id, d);
    if (!costs_.IsFree(id)) device_free_s_[d] = finish_s_[id];
    for (const Edge& edge : graph_.out_edges(id)) {
      if (--pending_[edge.dst] == 0) OnReady(edge.dst);
    }
  }

  // Free nodes take no device time: each goes where its inputs arrive
  // first among the devices with room (ties: lower index).
  absl::Status PlaceFreeNodes() {
    while (!free_ready_.empty()) {
      const NodeId id = free_ready_.back();
      free_ready_.pop_back();
      int32_t best_device = -1;
      double best_ready = std::numeric_limits<double>::infinity();
      for (int32_t d : costs_.AllowedDevices(id)) {
        const double ready = DataReady(id, d);
        if (ready < best_ready && Fits(id, d)) {
          best_ready = ready;
          best_device = d;
        }
      }
      if (best_device < 0) return NoRoom(id);
      Commit(id, best_device, best_ready);
    }
    return absl::OkStatus();
  }

  // A parameter without consumers: on the allowed device with the most
  // room left.
  absl::Status PlaceUnconsumedParameter(NodeId id) {
    int32_t best_device = -1;
    int64_t best_room = -1;
    for (int32_t d : costs_.AllowedDevices(id)) {
      const int64_t room =
          costs_.topology().devices[d].memory_bytes - memory_used_[d];
      if (room > best_room && Fits(id, d)) {
        best_room = room;
        best_device = d;
      }
    }
    if (best_device < 0) return NoRoom(id);
    memory_used_[best_device] += costs_.OutputMemoryBytes(id);
    device_[id] = best_device;
    return absl::OkStatus();
  }

  absl::Status NoRoom(NodeId id) {
    std::string devices;
    for (int32_t d = 0; d < num_devices_; ++d) {
      absl::StrAppend(&devices, d == 0 ? "" : ", ", "device ", d, ": ",
                      memory_used_[d], " of ",
                      costs_.topology().devices[d].memory_bytes, " bytes used");
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        name_, ": node '", graph_.node(id).name, "' (output ",
        graph_.node(id).output_bytes(),
        " bytes) fits on no device it may use under the conservative memory "
        "estimate (",
        devices, ")"));
  }

  size_t Slot(NodeId id, int32_t d) const {
    return static_cast<size_t>(id) * num_devices_ + d;
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
  std::vector<int32_t> alive_;  // devices still considering the node
  std::vector<NodeId> seen_;    // NeedBytes: inputs already counted
  std::vector<bool> copied_;    // (node, device): a copy is received there
  std::vector<double> device_free_s_;
  std::vector<int64_t> memory_used_;
  std::vector<NodeId> free_ready_;
  std::vector<
      std::priority_queue<Candidate, std::vector<Candidate>, WaitingOrder>>
      waiting_;
  std::vector<
      std::priority_queue<Candidate, std::vector<Candidate>, StartableOrder>>
      startable_;
};

}  // namespace

absl::string_view MemoryConstrainedPlacer::name() const {
  return variant_ == Variant::kEarliestTaskFirst ? "m-etf" : "m-sct";
}

absl::StatusOr<std::vector<int32_t>> MemoryConstrainedPlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  Run run(costs, variant_ == Variant::kSmallCommunicationTimes, name());
  return run.Place();
}

}  // namespace gopt::simulator::baselines
