#include "simulator/simulator.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/huge_pages.h"
#include "graph/status_macros.h"

namespace gopt::simulator {
namespace {

using graph::Edge;
using graph::NodeId;
using graph::OpKind;

// What caused a unit or transfer to start when it did (for the critical
// path): another unit or a transfer, or nothing (a source).
struct Cause {
  enum Type : uint8_t { kNone, kUnit, kTransfer } type = kNone;
  int32_t id = -1;
};

// A kernel's end or a transfer's arrival. Events at equal times pop in
// creation order (seq). 16 bytes: seq, id and kind share one word whose
// order is seq's, since seq is unique (seq < 2^32: seq counts kernels and
// transfers, at most nodes + edges).
struct Event {
  double time;
  uint64_t tag;  // seq << 32 | id << 1 | is_transfer

  static Event Make(double time, int64_t seq, int32_t id, bool is_transfer) {
    return Event{time, static_cast<uint64_t>(seq) << 32 |
                           static_cast<uint64_t>(id) << 1 |
                           static_cast<uint64_t>(is_transfer)};
  }
  int32_t id() const { return static_cast<int32_t>((tag >> 1) & 0x7fffffff); }
  bool is_transfer() const { return tag & 1; }
  bool Before(const Event& o) const {
    return (time < o.time) | ((time == o.time) & (tag < o.tag));
  }
};

// A binary min-heap of events. The simulator keeps it small (one event per
// device and per link), so a plain array heap with the comparisons inlined
// beats std::push_heap's out-of-line calls.
class EventQueue {
 public:
  void Clear() { heap_.clear(); }
  bool empty() const { return heap_.empty(); }
  // The earliest event; the queue must not be empty.
  const Event& top() const { return heap_.front(); }
  void Push(Event event) {
    heap_.push_back(event);
    RiseFrom(heap_.size() - 1, event);
  }
  // Replaces the earliest event by `event` (one sift-down instead of a pop
  // and a push); the queue must not be empty.
  void ReplaceTop(Event event) {
    const size_t size = heap_.size();
    size_t i = 0;
    for (size_t child = 1; child < size; child = 2 * i + 1) {
      // Without a right child, compare the left one with itself (never
      // Before): no read past the end, and no branch.
      const size_t right = child + 1 < size ? child + 1 : child;
      child += heap_[right].Before(heap_[child]);
      if (!heap_[child].Before(event)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = event;
  }
  // Whether every event, apart from the earliest one when `skip_earliest`,
  // is later than `time`.
  bool AllLaterThan(double time, bool skip_earliest) const {
    if (!skip_earliest) return heap_.empty() || heap_.front().time > time;
    for (size_t child = 1; child <= 2 && child < heap_.size(); ++child) {
      if (!(heap_[child].time > time)) return false;
    }
    return true;
  }
  // Removes and returns the earliest event; the queue must not be empty.
  // The hole at the root first sinks to a leaf along the earlier children
  // (a loop of fixed length, without the unpredictable early exit of a
  // textbook sift-down), then the last event rises from there; it rarely
  // rises far, as the last event is usually a late one.
  Event Pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    const size_t size = heap_.size() - 1;  // heap_[size] is `last`
    size_t i = 0;
    for (size_t child = 1; child < size; child = 2 * i + 1) {
      // Without a right child, compare the left one with itself (never
      // Before): no read past the end, and no branch.
      const size_t right = child + 1 < size ? child + 1 : child;
      child += heap_[right].Before(heap_[child]);
      heap_[i] = heap_[child];
      i = child;
    }
    RiseFrom(i, last);
    heap_.pop_back();
    return top;
  }

 private:
  // Puts `event` at the hole `i`, moving it up past later parents.
  void RiseFrom(size_t i, const Event& event) {
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!event.Before(heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = event;
  }

  std::vector<Event> heap_;
};

struct Transfer {
  NodeId node;
  int32_t output;
  int32_t src_device;
  int32_t dst_device;
  int64_t bytes;
  double start_s;
  double end_s;
  int64_t seq;           // its arrival event's place among equal times
  int32_t remote_uses;   // consumer edges on dst still to finish
  int32_t next_on_link;  // the transfer queued behind it on its link, or -1
  // The out-edges it carries, in edge order: a list through
  // Scratch::next_carried (-1 ends it).
  int32_t first_carried;
  int32_t last_carried;
  Cause cause;
};

// What the event loop keeps per unit (a fusion group or an unfused node),
// together: a unit's fields are read and written at once when it becomes
// ready, starts and finishes, so separate arrays would cost a cache miss
// each.
struct UnitState {
  double duration = 0;
  double start = 0;
  double end = 0;
  double ready_at = 0;
  Cause ready_cause;
  Cause start_cause;
  int32_t rank = 0;  // order in the ready queues (see below)
  int32_t priority = std::numeric_limits<int32_t>::min();
};

// What a producer touches in each consumer unit when it finishes, apart
// from the rest (8 units per cache line: consumers are often neighbours).
struct UnitInputs {
  int32_t pending = 0;  // inputs from other units not yet available
  int32_t device = 0;
};

// What only the set-up reads per unit: the summed work of its members.
struct UnitWork {
  double flops = 0;
  double best_flops = -1;  // the largest member's FLOPs (it sets the dtype)
  double efficiency = 1.0;
  double copy_s = 0;  // layout copies before the kernel
  int64_t bytes = 0;
  graph::DType dtype = graph::DType::kF32;
  uint8_t free = 1;  // no member launches a kernel
};

// A set of integers in [0, size) with O(log64 size) insert and pop-min by
// bit scans: a 64-ary tree of bitmaps. Ready queues use it instead of a
// binary heap, whose data-dependent branches mispredict on every level.
class MinBitTree {
 public:
  // Empties the set and sizes it for [0, size).
  void Reset(int64_t size) {
    size_t depth = 0;
    int64_t words = std::max<int64_t>(1, (size + 63) / 64);
    while (true) {
      if (levels_.size() <= depth) levels_.emplace_back();
      levels_[depth++].assign(words, 0);
      if (words == 1) break;
      words = (words + 63) / 64;
    }
    levels_.resize(depth);
  }
  bool empty() const { return levels_.back()[0] == 0; }
  void Insert(int64_t value) {
    for (std::vector<uint64_t>& level : levels_) {
      const bool was_empty = level[value / 64] == 0;
      level[value / 64] |= uint64_t{1} << (value % 64);
      if (!was_empty) return;
      value /= 64;
    }
  }
  // Removes and returns the smallest value; the set must not be empty.
  int64_t PopMin() {
    int64_t index = 0;
    for (size_t l = levels_.size(); l-- > 0;) {
      index = index * 64 + __builtin_ctzll(levels_[l][index]);
    }
    int64_t value = index;
    for (std::vector<uint64_t>& level : levels_) {
      level[value / 64] &= ~(uint64_t{1} << (value % 64));
      if (level[value / 64] != 0) break;
      value /= 64;
    }
    return index;
  }

 private:
  std::vector<std::vector<uint64_t>> levels_;  // leaves first
};

// Per-thread working memory of Simulate, reused across calls: training
// simulates thousands of plans of one graph, and fresh multi-megabyte
// vectors per call would cost page faults on every call.
struct Scratch {
  std::vector<int32_t> unit_of, member_offsets, members, fill;
  std::vector<UnitWork> work;
  std::vector<UnitState> units;
  std::vector<UnitInputs> inputs;
  std::vector<int64_t> memory;
  std::vector<uint8_t> materialized, device_busy;
  std::vector<int32_t> local_uses;
  EventQueue events;
  std::vector<MinBitTree> ready;
  std::vector<int32_t> unit_of_rank, rank_count;
  std::vector<int32_t> device_last_unit, link_last_transfer, link_tail;
  std::vector<double> link_free;
  std::vector<Transfer> transfers;
  std::vector<int32_t> next_carried, in_transfer;
  std::vector<int32_t> free_stack, dirty_devices;
  std::vector<NodeId> release_stack;
};

// Makes room for `size` elements of a Scratch array. A new buffer gets the
// huge-page advice before anything touches it: on the first call for a
// graph of a million nodes, faulting these arrays in 4 KiB pages costs
// three times the simulation itself.
template <typename T>
void ReserveScratch(std::vector<T>& values, size_t size) {
  if (values.capacity() >= size) return;
  values.reserve(size);
  graph::AdviseHugePagesForCapacity(values);
}

// Whether two devices cost the same for every kernel: equal in all but the
// name (OpCostModel looks at nothing else).
bool SameProfile(const DeviceProfile& a, const DeviceProfile& b) {
  return a.kind == b.kind && a.peak_f32_flops == b.peak_f32_flops &&
         a.peak_f16_flops == b.peak_f16_flops &&
         a.peak_f64_flops == b.peak_f64_flops &&
         a.peak_int8_ops == b.peak_int8_ops &&
         a.memory_bandwidth_bytes_per_s == b.memory_bandwidth_bytes_per_s &&
         a.memory_bytes == b.memory_bytes &&
         a.launch_overhead_s == b.launch_overhead_s &&
         a.max_efficiency == b.max_efficiency;
}

std::vector<int32_t> NormalizedLayout(const std::vector<int32_t>& layout,
                                      int rank) {
  if (!layout.empty()) return layout;
  std::vector<int32_t> row_major(rank);
  for (int i = 0; i < rank; ++i) row_major[i] = rank - 1 - i;
  return row_major;
}

}  // namespace

Simulator::Simulator(const graph::Graph& graph, const Topology& topology,
                     const OpCostModel& cost_model)
    : graph_(graph), topology_(topology), cost_model_(cost_model) {
  const int n = graph.num_nodes();
  free_.resize(n);
  resident_.resize(n);
  compute_kind_.resize(n);
  dtype_.resize(n);
  output_bytes_.resize(n);
  flops_.resize(n);
  traffic_bytes_.resize(n);
  written_bytes_.resize(n);
  std::vector<double> best_time(n, 0);
  double total_work_s = 0;
  std::vector<double> longest(n, 0);
  double longest_path_s = 0;
  output_offsets_.reserve(n + 1);
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    free_[id] = graph::IsFreeOpKind(node.kind) ||
                (node.flops == 0 && node.bytes_read == 0 &&
                 node.bytes_written == 0 && node.bytes_communicated == 0);
    resident_[id] =
        node.kind == OpKind::kParameter || node.kind == OpKind::kConstant;
    compute_kind_[id] =
        node.kind == OpKind::kDot || node.kind == OpKind::kConvolution;
    dtype_[id] = node.outputs.empty() || node.outputs[0].is_tuple()
                     ? graph::DType::kF32
                     : node.outputs[0].dtype;
    output_bytes_[id] = node.output_bytes();
    flops_[id] = node.flops;
    traffic_bytes_[id] = node.bytes_read + node.bytes_written;
    written_bytes_[id] = node.bytes_written;
    output_offsets_.push_back(static_cast<int32_t>(output_sizes_.size()));
    for (const graph::TensorType& output : node.outputs) {
      output_sizes_.push_back(output.size_bytes());
    }
    double best = std::numeric_limits<double>::infinity();
    for (const DeviceProfile& device : topology.devices) {
      best = std::min(best, node.flops / (device.PeakFlops(dtype_[id]) *
                                          device.max_efficiency));
    }
    // Free ops run no kernel (their FLOPs, if an importer gave them any,
    // are never charged), so they add nothing to the bound.
    if (free_[id] || node.flops <= 0 || topology.devices.empty()) best = 0;
    total_work_s += best;
    double start = 0;
    for (const Edge& edge : graph.in_edges(id)) {
      start = std::max(start, longest[edge.src]);
    }
    longest[id] = start + best;
    longest_path_s = std::max(longest_path_s, longest[id]);
  }
  output_offsets_.push_back(static_cast<int32_t>(output_sizes_.size()));
  // Memory traffic no plan avoids: weights read by kernels (each weight
  // once, and no more than the kernel's own bytes_read leaves for them:
  // gathers and slices read only part of a table), and the outputs nobody
  // consumes, written once. A fused kernel still pays its external reads and
  // writes, so this holds for every plan.
  double unavoidable_bytes = 0;
  std::vector<uint8_t> weight_counted(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    if (free_[id]) continue;
    double weights_in = 0;
    double other_in = 0;
    for (const Edge& edge : graph.in_edges(id)) {
      if (edge.control) continue;
      if (resident_[edge.src]) {
        if (!weight_counted[edge.src]) {
          weight_counted[edge.src] = 1;
          weights_in += static_cast<double>(EdgeBytes(edge));
        }
      } else {
        other_in += static_cast<double>(EdgeBytes(edge));
      }
    }
    const double readable =
        static_cast<double>(traffic_bytes_[id] - written_bytes_[id]) - other_in;
    unavoidable_bytes += std::max(0.0, std::min(weights_in, readable));
    if (graph.out_edges(id).empty()) {
      unavoidable_bytes += static_cast<double>(written_bytes_[id]);
    }
  }
  double total_bandwidth = 0;
  for (const DeviceProfile& device : topology.devices) {
    total_bandwidth += device.memory_bandwidth_bytes_per_s;
  }
  const int devices = std::max(1, topology.num_devices());
  lower_bound_s_ = std::max(longest_path_s, total_work_s / devices);
  if (total_bandwidth > 0) {
    lower_bound_s_ =
        std::max(lower_bound_s_, unavoidable_bytes / total_bandwidth);
  }
  // Kernel seconds of each node run alone with default layouts, per class
  // of identical devices (presets repeat one device, so usually one class):
  // most plans use no fusion and no layouts, and need no cost-model call.
  device_class_.resize(topology.num_devices());
  std::vector<int32_t> class_device;  // a device of each class
  for (int d = 0; d < topology.num_devices(); ++d) {
    device_class_[d] = static_cast<int32_t>(class_device.size());
    for (size_t c = 0; c < class_device.size(); ++c) {
      if (SameProfile(topology.devices[class_device[c]], topology.devices[d])) {
        device_class_[d] = static_cast<int32_t>(c);
        break;
      }
    }
    if (device_class_[d] == static_cast<int32_t>(class_device.size())) {
      class_device.push_back(d);
    }
  }
  num_device_classes_ = static_cast<int>(class_device.size());
  solo_seconds_.assign(static_cast<size_t>(n) * num_device_classes_, 0);
  for (NodeId id = 0; id < n; ++id) {
    if (free_[id]) continue;
    KernelWork kernel;
    kernel.flops = flops_[id];
    kernel.bytes = std::max<int64_t>(0, traffic_bytes_[id]);
    kernel.dtype = dtype_[id];
    for (int c = 0; c < num_device_classes_; ++c) {
      solo_seconds_[static_cast<size_t>(id) * num_device_classes_ + c] =
          cost_model.KernelSeconds(kernel, topology.devices[class_device[c]]);
    }
  }
  in_src_.reserve(graph.num_edges());
  for (const Edge& edge : graph.edges()) {
    in_src_.push_back(edge.control ? ~edge.src : edge.src);
  }
  out_dst_.reserve(graph.num_edges());
  out_output_.reserve(graph.num_edges());
  for (NodeId id = 0; id < n; ++id) {
    for (const Edge& edge : graph.out_edges(id)) {
      out_dst_.push_back(edge.control ? ~edge.dst : edge.dst);
      out_output_.push_back(edge.src_output);
    }
  }
  // Pair each out-edge with the same edge in in-edge order. Destinations
  // are visited in increasing order and a producer's out-edges are sorted
  // by destination, so the first out-edge of each producer not yet paired
  // (its cursor) starts the run of edges to the current destination.
  in_index_of_out_edge_.assign(graph.num_edges(), -1);
  if (n > 0) {
    const Edge* out_base = graph.out_edges(0).data();
    const Edge* in_base = graph.edges().data();
    std::vector<int32_t> cursor(n);
    for (NodeId id = 0; id < n; ++id) {
      cursor[id] = static_cast<int32_t>(graph.out_edges(id).data() - out_base);
    }
    for (NodeId dst = 0; dst < n; ++dst) {
      for (const Edge& edge : graph.in_edges(dst)) {
        int32_t& first = cursor[edge.src];
        int32_t e = first;
        while (in_index_of_out_edge_[e] >= 0 || !(out_base[e] == edge)) ++e;
        in_index_of_out_edge_[e] = static_cast<int32_t>(&edge - in_base);
        while (first < static_cast<int32_t>(in_index_of_out_edge_.size()) &&
               in_index_of_out_edge_[first] >= 0) {
          ++first;
        }
      }
    }
  }
}

absl::StatusOr<SimulationResult> Simulator::Simulate(
    const Plan& plan, const SimulationOptions& options) const {
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  const int n = graph_.num_nodes();
  const int num_devices = topology_.num_devices();

  // Units: one per fusion group, one per unfused node, numbered in order of
  // their first member.
  thread_local Scratch scratch;
  const size_t edges = graph_.edges().size();
  ReserveScratch(scratch.unit_of, n);
  ReserveScratch(scratch.members, n);
  ReserveScratch(scratch.member_offsets, n + size_t{1});
  ReserveScratch(scratch.units, n);
  ReserveScratch(scratch.inputs, n);
  ReserveScratch(scratch.local_uses, n);
  ReserveScratch(scratch.unit_of_rank, n);
  ReserveScratch(scratch.transfers, edges);  // at most one per edge
  ReserveScratch(scratch.next_carried, edges);
  ReserveScratch(scratch.in_transfer, edges);
  auto& unit_of = scratch.unit_of;
  unit_of.resize(n);
  auto& member_offsets = scratch.member_offsets;  // members of each unit
  auto& members = scratch.members;                // (CSR)
  members.resize(n);
  int num_units = 0;
  if (plan.fusion_group.empty()) {
    // Every node its own unit.
    num_units = n;
    std::iota(unit_of.begin(), unit_of.end(), 0);
    member_offsets.resize(n + 1);
    std::iota(member_offsets.begin(), member_offsets.end(), 0);
    std::iota(members.begin(), members.end(), 0);
  } else {
    absl::flat_hash_map<int32_t, int32_t> unit_of_group;
    for (NodeId id = 0; id < n; ++id) {
      const int32_t group = plan.fusion_group[id];
      if (group < 0) {
        unit_of[id] = num_units++;
        continue;
      }
      auto [it, inserted] = unit_of_group.emplace(group, num_units);
      if (inserted) ++num_units;
      unit_of[id] = it->second;
    }
    member_offsets.assign(num_units + 1, 0);
    for (NodeId id = 0; id < n; ++id) ++member_offsets[unit_of[id] + 1];
    for (int u = 0; u < num_units; ++u) {
      member_offsets[u + 1] += member_offsets[u];
    }
    auto& fill = scratch.fill;
    fill.assign(member_offsets.begin(), member_offsets.end() - 1);
    for (NodeId id = 0; id < n; ++id) members[fill[unit_of[id]]++] = id;
  }

  // Priority, pending inputs and duration per unit. Without fusion every
  // node is its own kernel and gets its duration right away; with fusion
  // the members' work is summed per unit first.
  const bool fused = !plan.fusion_group.empty();
  auto& work = scratch.work;
  if (fused) work.assign(num_units, UnitWork{});
  // Without fusion a node's entries are initialized when the loop below
  // reaches it, before any later node (its consumers) touches them: one
  // pass over these arrays instead of two.
  auto& units = scratch.units;
  auto& inputs = scratch.inputs;
  auto& local_uses = scratch.local_uses;  // per node: local consumers + sends
  auto& materialized = scratch.materialized;
  if (fused) {
    units.assign(num_units, UnitState{});
    inputs.assign(num_units, UnitInputs{});
    local_uses.assign(n, 0);
    materialized.assign(n, 0);
  } else {
    units.resize(num_units);
    inputs.resize(num_units);
    local_uses.resize(n);
    materialized.resize(n);
  }

  SimulationResult result;
  result.device_busy_s.assign(num_devices, 0);
  result.peak_memory_bytes.assign(num_devices, 0);
  // Seconds of one kernel (0 for a free unit without layout copies).
  auto kernel_seconds = [&](const UnitWork& w, int32_t device) {
    if (w.free && w.copy_s == 0) return 0.0;
    KernelWork kernel;
    kernel.flops = w.flops;
    kernel.bytes = std::max<int64_t>(0, w.bytes);
    kernel.dtype = w.dtype;
    kernel.efficiency_factor = w.efficiency;
    result.layout_copy_s += w.copy_s;
    if (w.free) return w.copy_s;
    ++result.num_kernels;
    return cost_model_.KernelSeconds(kernel, topology_.devices[device]) +
           w.copy_s;
  };
  // Memory: resident inputs from the start (allocated in the loop below,
  // before the first kernel).
  auto& memory = scratch.memory;
  memory.assign(num_devices, 0);
  auto allocate = [&](int32_t device, int64_t amount) {
    memory[device] += amount;
    if (memory[device] > result.peak_memory_bytes[device]) {
      result.peak_memory_bytes[device] = memory[device];
    }
  };
  for (NodeId id = 0; id < n; ++id) {
    const int32_t u = unit_of[id];
    if (!fused) {
      units[u] = UnitState{};
      inputs[u] = UnitInputs{};
      local_uses[id] = 0;
      materialized[id] = 0;
    }
    UnitState& unit = units[u];
    const int32_t device = plan.device[id];
    if (resident_[id]) allocate(device, output_bytes_[id]);
    inputs[u].device = device;
    unit.priority =
        std::max(unit.priority, plan.priority.empty() ? 0 : plan.priority[id]);
    if (!fused && plan.layout.empty()) {
      // Neither fusion nor layouts: every input counts, there are no copies
      // and the kernel time is precomputed. The compact in_src_ is all this
      // needs of the edges.
      const absl::Span<const Edge> in = graph_.in_edges(id);
      const int32_t begin =
          static_cast<int32_t>(in.data() - graph_.edges().data());
      const int32_t end = begin + static_cast<int32_t>(in.size());
      inputs[u].pending = end - begin;
      for (int32_t j = begin; j < end; ++j) {
        const NodeId src = in_src_[j];  // ~src for control edges
        if (src >= 0 && plan.device[src] == device) ++local_uses[src];
      }
      materialized[id] = 1;
      unit.duration =
          solo_seconds_[static_cast<size_t>(id) * num_device_classes_ +
                        device_class_[device]];
      result.num_kernels += !free_[id];
      continue;
    }
    UnitWork node_work;
    node_work.free = free_[id];
    node_work.flops = flops_[id];
    node_work.best_flops = flops_[id];
    node_work.dtype = dtype_[id];
    node_work.bytes = traffic_bytes_[id];
    const bool explicit_layout =
        !plan.layout.empty() && !plan.layout[id].empty();
    if (explicit_layout && compute_kind_[id]) node_work.efficiency = 0.9;
    // A group's layout copies add up in one sum, in member order.
    double& copy_s = fused ? work[u].copy_s : node_work.copy_s;
    bool consumed_outside = true;
    if (fused && plan.fusion_group[id] >= 0) {
      consumed_outside = graph_.out_edges(id).empty();
      for (const Edge& edge : graph_.out_edges(id)) {
        if (unit_of[edge.dst] != u) consumed_outside = true;
      }
    }
    for (const Edge& edge : graph_.in_edges(id)) {
      const int32_t src_unit = unit_of[edge.src];
      if (src_unit == u) {
        if (!edge.control) node_work.bytes -= EdgeBytes(edge);
        continue;
      }
      ++inputs[u].pending;
      if (!edge.control && plan.device[edge.src] == device) {
        ++local_uses[edge.src];
      }
      // Layout copy when both ends chose layouts and they disagree.
      if (edge.control || free_[id] || plan.layout.empty() ||
          plan.layout[edge.src].empty() || plan.layout[id].empty()) {
        continue;
      }
      // (ValidatePlan has checked that both nodes have a ranked output 0.)
      const graph::Node& src = graph_.node(edge.src);
      const graph::Node& node = graph_.node(id);
      const int rank = src.outputs[0].rank();
      if (rank != node.outputs[0].rank()) continue;
      if (NormalizedLayout(plan.layout[edge.src], rank) !=
          NormalizedLayout(plan.layout[id], rank)) {
        const DeviceProfile& profile = topology_.devices[device];
        copy_s += 2.0 * static_cast<double>(EdgeBytes(edge)) /
                      profile.memory_bandwidth_bytes_per_s +
                  profile.launch_overhead_s;
      }
    }
    if (!consumed_outside) {
      node_work.bytes -= written_bytes_[id];  // stays inside the fused kernel
    } else {
      materialized[id] = 1;
    }
    if (!fused) {
      if (copy_s == 0 && node_work.efficiency == 1.0) {
        unit.duration =
            solo_seconds_[static_cast<size_t>(id) * num_device_classes_ +
                          device_class_[device]];
        result.num_kernels += !free_[id];
      } else {
        unit.duration = kernel_seconds(node_work, device);
      }
      continue;
    }
    UnitWork& w = work[u];
    if (!node_work.free) w.free = 0;
    w.flops += node_work.flops;
    w.bytes += node_work.bytes;
    if (node_work.flops > w.best_flops) {
      w.best_flops = node_work.flops;
      w.dtype = node_work.dtype;
    }
    if (node_work.efficiency != 1.0) w.efficiency = node_work.efficiency;
  }
  if (fused) {
    for (int u = 0; u < num_units; ++u) {
      units[u].duration = kernel_seconds(work[u], inputs[u].device);
    }
  }

  // Ready kernels per device, ordered by rank: highest priority first, then
  // lowest first NodeId (units are numbered in first-NodeId order, so
  // without priorities the rank is the unit index).
  auto& unit_of_rank = scratch.unit_of_rank;
  unit_of_rank.resize(num_units);
  {
    int32_t lowest = 0;
    int32_t highest = 0;
    if (!plan.priority.empty() && num_units > 0) {
      lowest = highest = units[0].priority;
      for (const UnitState& unit : units) {
        lowest = std::min(lowest, unit.priority);
        highest = std::max(highest, unit.priority);
      }
    }
    const int64_t span = static_cast<int64_t>(highest) - lowest + 1;
    if (span == 1) {
      for (int32_t u = 0; u < num_units; ++u) {
        units[u].rank = unit_of_rank[u] = u;
      }
    } else if (span <= std::max<int64_t>(int64_t{1} << 16, 2 * num_units)) {
      // Counting sort by descending priority, stable in unit order (O(units
      // + span): plans that rank every node, such as m-sct's, take it too).
      auto& count = scratch.rank_count;
      count.assign(span + 1, 0);
      for (int32_t u = 0; u < num_units; ++u) {
        ++count[highest - units[u].priority + 1];
      }
      for (int64_t p = 0; p < span; ++p) count[p + 1] += count[p];
      for (int32_t u = 0; u < num_units; ++u) {
        const int32_t r = count[highest - units[u].priority]++;
        units[u].rank = r;
        unit_of_rank[r] = u;
      }
    } else {
      for (int32_t u = 0; u < num_units; ++u) unit_of_rank[u] = u;
      std::stable_sort(unit_of_rank.begin(), unit_of_rank.end(),
                       [&](int32_t a, int32_t b) {
                         return units[a].priority > units[b].priority;
                       });
      for (int32_t r = 0; r < num_units; ++r) units[unit_of_rank[r]].rank = r;
    }
  }

  // Event loop. The queue holds at most one event per device (its running
  // kernel) and one per link (the transfer at the head of the link's
  // queue): a link's transfers arrive in the order they were queued, so the
  // others wait in the link's list and join the queue when their
  // predecessor arrives. Events pop in (time, seq) order all the same.
  auto& events = scratch.events;
  events.Clear();
  int64_t seq = 0;
  auto& ready = scratch.ready;
  ready.resize(num_devices);
  for (MinBitTree& queue : ready) queue.Reset(num_units);
  auto& device_busy = scratch.device_busy;
  device_busy.assign(num_devices, 0);
  auto& device_last_unit = scratch.device_last_unit;
  device_last_unit.assign(num_devices, -1);
  const size_t num_links = static_cast<size_t>(num_devices) * num_devices;
  auto& link_free = scratch.link_free;
  link_free.assign(num_links, 0);
  auto& link_last_transfer = scratch.link_last_transfer;
  link_last_transfer.assign(num_links, -1);
  auto& link_tail = scratch.link_tail;  // last queued transfer not arrived
  link_tail.assign(num_links, -1);
  auto& transfers = scratch.transfers;
  transfers.clear();
  // Per out-edge carried by a transfer: the next edge it carries; per
  // in-edge from another device: the transfer carrying it. Written when
  // the producer finishes, before any read, so they need no clearing
  // between calls.
  auto& next_carried = scratch.next_carried;
  next_carried.resize(graph_.num_edges());
  auto& in_transfer = scratch.in_transfer;
  in_transfer.resize(graph_.num_edges());
  const Edge* const out_base = n > 0 ? graph_.out_edges(0).data() : nullptr;
  const Edge* const in_base = graph_.edges().data();
  auto& free_stack = scratch.free_stack;
  free_stack.clear();
  // Devices whose queue or state changed at the current instant. They pick
  // their next kernel only once every event of that instant is processed,
  // so priorities decide among everything that became ready together.
  auto& dirty_devices = scratch.dirty_devices;
  dirty_devices.clear();
  int completed_units = 0;

  // Whether the queue's earliest event has been processed but not removed
  // yet: a kernel starting at the same instant takes its place (one heap
  // update instead of a pop and a push). It stays the earliest of all: only
  // transfers are pushed meanwhile, and they end no earlier than now, with
  // later seqs.
  bool done_on_top = false;
  auto start_unit = [&](int32_t u, double now) {
    UnitState& unit = units[u];
    const int32_t device = inputs[u].device;
    unit.start = now;
    unit.end = now + unit.duration;
    unit.start_cause = now > unit.ready_at && device_last_unit[device] >= 0
                           ? Cause{Cause::kUnit, device_last_unit[device]}
                           : unit.ready_cause;
    device_busy[device] = 1;
    device_last_unit[device] = u;
    result.device_busy_s[device] += unit.duration;
    for (int32_t m = member_offsets[u]; m < member_offsets[u + 1]; ++m) {
      const NodeId id = members[m];
      if (materialized[id] && !resident_[id] && !free_[id]) {
        allocate(device, output_bytes_[id]);
      }
    }
    const Event end = Event::Make(unit.end, seq++, u, /*is_transfer=*/false);
    if (done_on_top) {
      events.ReplaceTop(end);
      done_on_top = false;
    } else {
      events.Push(end);
    }
  };
  auto try_start = [&](int32_t device, double now) {
    if (device_busy[device] || ready[device].empty()) return;
    start_unit(unit_of_rank[ready[device].PopMin()], now);
  };
  auto make_ready = [&](int32_t u, double now, Cause cause) {
    UnitState& unit = units[u];
    unit.ready_at = now;
    unit.ready_cause = cause;
    if (unit.duration == 0) {
      free_stack.push_back(u);
      return;
    }
    const int32_t device = inputs[u].device;
    ready[device].Insert(unit.rank);
    dirty_devices.push_back(device);
  };
  // The inputs of node `id` (in unit `u`) from other units: same-device
  // producers lose a use (pushed on release_stack), received copies lose a
  // consumer.
  auto& release_stack = scratch.release_stack;
  release_stack.clear();
  auto release_inputs = [&](NodeId id, int32_t u) {
    const int32_t device = plan.device[id];
    const absl::Span<const Edge> in = graph_.in_edges(id);
    const int32_t begin = static_cast<int32_t>(in.data() - in_base);
    const int32_t end = begin + static_cast<int32_t>(in.size());
    for (int32_t j = begin; j < end; ++j) {
      const NodeId src = in_src_[j];
      if (src < 0 || unit_of[src] == u) continue;  // control, or fused
      if (plan.device[src] == device) {
        release_stack.push_back(src);
        continue;
      }
      Transfer& t = transfers[in_transfer[j]];
      if (--t.remote_uses == 0) memory[device] -= t.bytes;
    }
  };
  // Drops the uses on release_stack. A free op (reshape, tuple, ...)
  // aliases its inputs, so when its last use goes, its inputs lose one.
  auto drain_releases = [&]() {
    while (!release_stack.empty()) {
      const NodeId id = release_stack.back();
      release_stack.pop_back();
      if (--local_uses[id] != 0 || resident_[id]) continue;
      if (!free_[id]) {
        if (materialized[id]) memory[plan.device[id]] -= output_bytes_[id];
        continue;
      }
      release_inputs(id, unit_of[id]);
    }
  };

  // Finishing unit u at `now`: consumers, transfers, memory.
  // The unit that finishes last (the first in unit order among equals),
  // and the last transfer's arrival: the step time.
  int32_t last = -1;
  double last_end = 0;
  double last_arrival = -std::numeric_limits<double>::infinity();
  auto finish_unit = [&](int32_t u, double now) {
    ++completed_units;
    const double finished_at = units[u].end;
    if (last < 0 || finished_at > last_end ||
        (finished_at == last_end && u < last)) {
      last = u;
      last_end = finished_at;
    }
    const int32_t device = inputs[u].device;
    for (int32_t m = member_offsets[u]; m < member_offsets[u + 1]; ++m) {
      const NodeId id = members[m];
      // A kernel's inputs are released when it finishes; a free op's only
      // when its own output is no longer used (it aliases them).
      if (!free_[id]) {
        release_inputs(id, u);
        drain_releases();
      }
      // This node's sends are the transfers created from here on; one per
      // (output, remote device).
      const int32_t first_transfer = static_cast<int32_t>(transfers.size());
      const absl::Span<const Edge> out = graph_.out_edges(id);
      const int32_t begin = static_cast<int32_t>(out.data() - out_base);
      const int32_t end = begin + static_cast<int32_t>(out.size());
      for (int32_t e = begin; e < end; ++e) {
        const bool control = out_dst_[e] < 0;
        const int32_t v = unit_of[control ? ~out_dst_[e] : out_dst_[e]];
        if (v == u) continue;
        UnitInputs& consumer = inputs[v];
        const int32_t dst_device = consumer.device;
        if (dst_device == device || control) {
          if (--consumer.pending == 0) {
            make_ready(v, now, Cause{Cause::kUnit, u});
          }
          continue;
        }
        const int32_t output = out_output_[e];
        int32_t index = -1;
        for (int32_t t = first_transfer;
             t < static_cast<int32_t>(transfers.size()); ++t) {
          if (transfers[t].output == output &&
              transfers[t].dst_device == dst_device) {
            index = t;
            break;
          }
        }
        if (index < 0) {
          index = static_cast<int32_t>(transfers.size());
          const size_t link_index =
              static_cast<size_t>(device) * num_devices + dst_device;
          const Link& link = topology_.link(device, dst_device);
          Transfer t;
          t.node = id;
          t.output = output;
          t.src_device = device;
          t.dst_device = dst_device;
          t.bytes = OutputBytes(id, output);
          t.start_s = std::max(now, link_free[link_index]);
          t.end_s = t.start_s + link.latency_s +
                    static_cast<double>(t.bytes) / link.bandwidth_bytes_per_s;
          t.seq = seq++;
          t.remote_uses = 0;
          t.next_on_link = -1;
          t.first_carried = e;
          t.last_carried = -1;
          t.cause =
              t.start_s > now && link_last_transfer[link_index] >= 0
                  ? Cause{Cause::kTransfer, link_last_transfer[link_index]}
                  : Cause{Cause::kUnit, u};
          link_free[link_index] = t.end_s;
          last_arrival = std::max(last_arrival, t.end_s);
          link_last_transfer[link_index] = index;
          ++local_uses[id];  // the send holds the source buffer
          allocate(dst_device, t.bytes);
          result.bytes_moved += t.bytes;
          if (link_tail[link_index] < 0) {
            events.Push(
                Event::Make(t.end_s, t.seq, index, /*is_transfer=*/true));
          } else {
            transfers[link_tail[link_index]].next_on_link = index;
          }
          link_tail[link_index] = index;
          transfers.push_back(t);
        }
        Transfer& carrier = transfers[index];
        ++carrier.remote_uses;
        if (carrier.last_carried >= 0) next_carried[carrier.last_carried] = e;
        carrier.last_carried = e;
        next_carried[e] = -1;
        in_transfer[in_index_of_out_edge_[e]] = index;
      }
      // An output nobody consumes (a graph output) stays allocated.
    }
    if (units[u].duration > 0) {
      device_busy[device] = 0;
      dirty_devices.push_back(device);
    }
  };
  auto drain_free = [&](double now) {
    while (!free_stack.empty()) {
      const int32_t u = free_stack.back();
      free_stack.pop_back();
      units[u].start = units[u].end = now;
      units[u].start_cause = units[u].ready_cause;
      finish_unit(u, now);
    }
  };
  // Transfer `index` has arrived at `now`: the sender's buffer loses a use,
  // the consumers it feeds lose a pending input, and the next transfer on
  // its link becomes the link's event, in place of this one's (still at the
  // top of the queue: nothing here pushes or pops); without a next one, this
  // one is left on top, marked done_on_top.
  auto arrive = [&](int32_t index, double now) {
    const NodeId id = transfers[index].node;
    release_stack.push_back(id);  // the send no longer holds the buffer
    drain_releases();
    for (int32_t e = transfers[index].first_carried; e >= 0;
         e = next_carried[e]) {
      const int32_t v = unit_of[out_dst_[e]];  // a data edge: no complement
      if (--inputs[v].pending == 0) {
        make_ready(v, now, Cause{Cause::kTransfer, index});
      }
    }
    const Transfer& t = transfers[index];
    const size_t link_index =
        static_cast<size_t>(t.src_device) * num_devices + t.dst_device;
    if (t.next_on_link >= 0) {
      const Transfer& next = transfers[t.next_on_link];
      events.ReplaceTop(Event::Make(next.end_s, next.seq, t.next_on_link,
                                    /*is_transfer=*/true));
    } else {
      link_tail[link_index] = -1;
      done_on_top = true;
    }
  };

  auto dispatch = [&](double now) {
    for (int32_t device : dirty_devices) try_start(device, now);
    dirty_devices.clear();
  };
  for (int u = 0; u < num_units; ++u) {
    if (inputs[u].pending == 0) make_ready(u, 0, Cause{});
  }
  drain_free(0);
  dispatch(0);
  double now = 0;
  while (!events.empty()) {
    const Event event = events.top();
    now = event.time;
    if (event.is_transfer()) {
      arrive(event.id(), now);  // replaces the event by the link's next one
    } else {
      done_on_top = true;
      finish_unit(event.id(), now);
    }
    drain_free(now);
    if (events.AllLaterThan(now, done_on_top)) dispatch(now);
    if (done_on_top) {
      events.Pop();
      done_on_top = false;
    }
  }
  if (completed_units != num_units) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan fusion groups form a cycle: ", num_units - completed_units,
        " kernel(s) never became ready (a group must not both feed and "
        "consume another group)"));
  }

  // Step time and the critical path (backwards from the last finisher).
  result.step_time_s = std::max(last_end, last_arrival);
  std::vector<NodeId> path;
  Cause cursor{Cause::kUnit, last};
  while (cursor.type != Cause::kNone && cursor.id >= 0 &&
         path.size() <= static_cast<size_t>(n) + transfers.size()) {
    if (cursor.type == Cause::kUnit) {
      const int32_t u = cursor.id;
      result.critical_path_busy_s += units[u].duration;
      for (int32_t m = member_offsets[u + 1] - 1; m >= member_offsets[u]; --m) {
        path.push_back(members[m]);
      }
      cursor = units[u].start_cause;
    } else {
      const Transfer& t = transfers[cursor.id];
      result.critical_path_busy_s += t.end_s - t.start_s;
      cursor = t.cause;
    }
  }
  std::reverse(path.begin(), path.end());
  result.critical_path = std::move(path);

  for (int d = 0; d < num_devices; ++d) {
    if (result.peak_memory_bytes[d] > topology_.devices[d].memory_bytes) {
      result.oom = true;
    }
  }
  result.num_transfers = static_cast<int64_t>(transfers.size());
  if (options.record_timeline) {
    result.node_start_s.resize(n);
    result.node_end_s.resize(n);
    for (NodeId id = 0; id < n; ++id) {
      result.node_start_s[id] = units[unit_of[id]].start;
      result.node_end_s[id] = units[unit_of[id]].end;
    }
    result.transfers.reserve(transfers.size());
    for (const Transfer& t : transfers) {
      result.transfers.push_back(TransferRecord{t.node, t.output, t.src_device,
                                                t.dst_device, t.bytes,
                                                t.start_s, t.end_s});
    }
  }
  return result;
}

}  // namespace gopt::simulator
