#include "simulator/simulator.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
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

struct Event {
  double time;
  int64_t seq;
  bool is_transfer;
  int32_t id;
  bool operator>(const Event& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

struct Transfer {
  NodeId node;
  int32_t output;
  int32_t src_device;
  int32_t dst_device;
  int64_t bytes;
  double start_s;
  double end_s;
  int32_t remote_uses;  // consumer edges on dst still to finish
  Cause cause;
};

// A set of integers in [0, size) with O(log64 size) insert and pop-min by
// bit scans: a 64-ary tree of bitmaps. Ready queues use it instead of a
// binary heap, whose data-dependent branches mispredict on every level.
class MinBitTree {
 public:
  // Empties the set and sizes it for [0, size).
  void Reset(int64_t size) {
    levels_.clear();
    int64_t words = std::max<int64_t>(1, (size + 63) / 64);
    while (true) {
      levels_.emplace_back(words, 0);
      if (words == 1) break;
      words = (words + 63) / 64;
    }
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
  std::vector<int32_t> unit_of, unit_first, member_offsets, members, fill;
  std::vector<double> flops, best_flops, efficiency, copy_s, duration;
  std::vector<int64_t> bytes, memory;
  std::vector<graph::DType> dtype;
  std::vector<uint8_t> unit_free, materialized, device_busy;
  std::vector<int32_t> priority, pending, local_uses;
  std::vector<Event> events;
  std::vector<MinBitTree> ready;
  std::vector<int32_t> rank, unit_of_rank, rank_count;
  std::vector<int32_t> device_last_unit, link_last_transfer;
  std::vector<double> link_free, start, end, ready_at;
  std::vector<Cause> ready_cause, start_cause;
  std::vector<Transfer> transfers;
  std::vector<int32_t> transfer_begin, transfer_end, free_stack, dirty_devices;
  std::vector<NodeId> release_stack;
};

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
    if (node.flops <= 0 || topology.devices.empty()) best = 0;
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
}

absl::StatusOr<SimulationResult> Simulator::Simulate(
    const Plan& plan, const SimulationOptions& options) const {
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  const int n = graph_.num_nodes();
  const int num_devices = topology_.num_devices();

  // Units: one per fusion group, one per unfused node, numbered in order of
  // their first member.
  thread_local Scratch scratch;
  auto& unit_of = scratch.unit_of;
  unit_of.assign(n, 0);
  auto& unit_first = scratch.unit_first;
  unit_first.clear();
  {
    absl::flat_hash_map<int32_t, int32_t> unit_of_group;
    for (NodeId id = 0; id < n; ++id) {
      const int32_t group =
          plan.fusion_group.empty() ? -1 : plan.fusion_group[id];
      if (group < 0) {
        unit_of[id] = static_cast<int32_t>(unit_first.size());
        unit_first.push_back(id);
        continue;
      }
      auto [it, inserted] =
          unit_of_group.emplace(group, static_cast<int32_t>(unit_first.size()));
      if (inserted) unit_first.push_back(id);
      unit_of[id] = it->second;
    }
  }
  const int num_units = static_cast<int>(unit_first.size());
  // Members of each unit (CSR).
  auto& member_offsets = scratch.member_offsets;
  member_offsets.assign(num_units + 1, 0);
  for (NodeId id = 0; id < n; ++id) ++member_offsets[unit_of[id] + 1];
  for (int u = 0; u < num_units; ++u)
    member_offsets[u + 1] += member_offsets[u];
  auto& members = scratch.members;
  members.assign(n, 0);
  {
    auto& fill = scratch.fill;
    fill.assign(member_offsets.begin(), member_offsets.end() - 1);
    for (NodeId id = 0; id < n; ++id) members[fill[unit_of[id]]++] = id;
  }

  // Work, duration, priority and pending inputs per unit.
  auto& flops = scratch.flops;
  flops.assign(num_units, 0);
  auto& bytes = scratch.bytes;
  bytes.assign(num_units, 0);
  auto& best_flops = scratch.best_flops;
  best_flops.assign(num_units, -1);
  auto& dtype = scratch.dtype;
  dtype.assign(num_units, graph::DType::kF32);
  auto& efficiency = scratch.efficiency;
  efficiency.assign(num_units, 1.0);
  auto& copy_s = scratch.copy_s;
  copy_s.assign(num_units, 0);
  auto& unit_free = scratch.unit_free;
  unit_free.assign(num_units, 1);
  auto& priority = scratch.priority;
  priority.assign(num_units, std::numeric_limits<int32_t>::min());
  auto& pending = scratch.pending;
  pending.assign(num_units, 0);
  auto& local_uses = scratch.local_uses;  // per node: local consumers + sends
  local_uses.assign(n, 0);
  auto& materialized = scratch.materialized;
  materialized.assign(n, 0);

  for (NodeId id = 0; id < n; ++id) {
    const int32_t u = unit_of[id];
    const int32_t device = plan.device[id];
    priority[u] =
        std::max(priority[u], plan.priority.empty() ? 0 : plan.priority[id]);
    if (!free_[id]) unit_free[u] = 0;
    flops[u] += flops_[id];
    bytes[u] += traffic_bytes_[id];
    if (flops_[id] > best_flops[u]) {
      best_flops[u] = flops_[id];
      dtype[u] = dtype_[id];
    }
    const bool explicit_layout =
        !plan.layout.empty() && !plan.layout[id].empty();
    if (explicit_layout && compute_kind_[id]) efficiency[u] = 0.9;
    bool consumed_outside = true;
    if (!plan.fusion_group.empty() && plan.fusion_group[id] >= 0) {
      consumed_outside = graph_.out_edges(id).empty();
      for (const Edge& edge : graph_.out_edges(id)) {
        if (unit_of[edge.dst] != u) consumed_outside = true;
      }
    }
    for (const Edge& edge : graph_.in_edges(id)) {
      const int32_t src_unit = unit_of[edge.src];
      if (src_unit == u) {
        if (!edge.control) bytes[u] -= EdgeBytes(edge);
        continue;
      }
      ++pending[u];
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
        copy_s[u] += 2.0 * static_cast<double>(EdgeBytes(edge)) /
                         profile.memory_bandwidth_bytes_per_s +
                     profile.launch_overhead_s;
      }
    }
    if (!consumed_outside) {
      bytes[u] -= written_bytes_[id];  // stays inside the fused kernel
    } else {
      materialized[id] = 1;
    }
  }

  auto& duration = scratch.duration;
  duration.assign(num_units, 0);
  SimulationResult result;
  result.device_busy_s.assign(num_devices, 0);
  result.peak_memory_bytes.assign(num_devices, 0);
  for (int u = 0; u < num_units; ++u) {
    if (unit_free[u] && copy_s[u] == 0) continue;
    const int32_t device = plan.device[unit_first[u]];
    KernelWork work;
    work.flops = flops[u];
    work.bytes = std::max<int64_t>(0, bytes[u]);
    work.dtype = dtype[u];
    work.efficiency_factor = efficiency[u];
    duration[u] = (unit_free[u] ? 0
                                : cost_model_.KernelSeconds(
                                      work, topology_.devices[device])) +
                  copy_s[u];
    result.layout_copy_s += copy_s[u];
    if (!unit_free[u]) ++result.num_kernels;
  }

  // Memory: resident inputs from the start.
  auto& memory = scratch.memory;
  memory.assign(num_devices, 0);
  auto allocate = [&](int32_t device, int64_t amount) {
    memory[device] += amount;
    if (memory[device] > result.peak_memory_bytes[device]) {
      result.peak_memory_bytes[device] = memory[device];
    }
  };
  for (NodeId id = 0; id < n; ++id) {
    if (resident_[id]) allocate(plan.device[id], output_bytes_[id]);
  }

  // Event loop.
  // Min-heap of events (std::push_heap / pop_heap with greater).
  auto& events = scratch.events;
  events.clear();
  int64_t seq = 0;
  // Ready kernels per device, ordered by rank: highest priority first, then
  // lowest first NodeId (units are numbered in first-NodeId order, so
  // without priorities the rank is the unit index).
  auto& rank = scratch.rank;
  auto& unit_of_rank = scratch.unit_of_rank;
  rank.resize(num_units);
  unit_of_rank.resize(num_units);
  {
    int32_t lowest = 0;
    int32_t highest = 0;
    if (!plan.priority.empty()) {
      lowest = *std::min_element(priority.begin(), priority.end());
      highest = *std::max_element(priority.begin(), priority.end());
    }
    const int64_t span = static_cast<int64_t>(highest) - lowest + 1;
    if (span == 1) {
      for (int32_t u = 0; u < num_units; ++u) rank[u] = unit_of_rank[u] = u;
    } else if (span <= (int64_t{1} << 16)) {
      // Counting sort by descending priority, stable in unit order.
      auto& count = scratch.rank_count;
      count.assign(span + 1, 0);
      for (int32_t u = 0; u < num_units; ++u)
        ++count[highest - priority[u] + 1];
      for (int64_t p = 0; p < span; ++p) count[p + 1] += count[p];
      for (int32_t u = 0; u < num_units; ++u) {
        const int32_t r = count[highest - priority[u]]++;
        rank[u] = r;
        unit_of_rank[r] = u;
      }
    } else {
      for (int32_t u = 0; u < num_units; ++u) unit_of_rank[u] = u;
      std::stable_sort(
          unit_of_rank.begin(), unit_of_rank.end(),
          [&](int32_t a, int32_t b) { return priority[a] > priority[b]; });
      for (int32_t r = 0; r < num_units; ++r) rank[unit_of_rank[r]] = r;
    }
  }
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
  auto& start = scratch.start;
  start.assign(num_units, 0);
  auto& end = scratch.end;
  end.assign(num_units, 0);
  auto& ready_at = scratch.ready_at;
  ready_at.assign(num_units, 0);
  auto& ready_cause = scratch.ready_cause;
  ready_cause.assign(num_units, Cause{});
  auto& start_cause = scratch.start_cause;
  start_cause.assign(num_units, Cause{});
  auto& transfers = scratch.transfers;
  transfers.clear();
  auto& transfer_begin = scratch.transfer_begin;
  transfer_begin.assign(n, 0);
  auto& transfer_end = scratch.transfer_end;
  transfer_end.assign(n, 0);
  auto& free_stack = scratch.free_stack;
  free_stack.clear();
  // Devices whose queue or state changed at the current instant. They pick
  // their next kernel only once every event of that instant is processed,
  // so priorities decide among everything that became ready together.
  auto& dirty_devices = scratch.dirty_devices;
  dirty_devices.clear();
  int completed_units = 0;

  auto push_event = [&](Event event) {
    events.push_back(event);
    std::push_heap(events.begin(), events.end(), std::greater<Event>());
  };
  auto start_unit = [&](int32_t u, double now) {
    const int32_t device = plan.device[unit_first[u]];
    start[u] = now;
    end[u] = now + duration[u];
    start_cause[u] = now > ready_at[u] && device_last_unit[device] >= 0
                         ? Cause{Cause::kUnit, device_last_unit[device]}
                         : ready_cause[u];
    device_busy[device] = 1;
    device_last_unit[device] = u;
    result.device_busy_s[device] += duration[u];
    for (int32_t m = member_offsets[u]; m < member_offsets[u + 1]; ++m) {
      const NodeId id = members[m];
      if (materialized[id] && !resident_[id] && !free_[id]) {
        allocate(device, output_bytes_[id]);
      }
    }
    push_event(Event{end[u], seq++, false, u});
  };
  auto try_start = [&](int32_t device, double now) {
    if (device_busy[device] || ready[device].empty()) return;
    start_unit(unit_of_rank[ready[device].PopMin()], now);
  };
  auto make_ready = [&](int32_t u, double now, Cause cause) {
    ready_at[u] = now;
    ready_cause[u] = cause;
    if (duration[u] == 0) {
      free_stack.push_back(u);
      return;
    }
    const int32_t device = plan.device[unit_first[u]];
    ready[device].Insert(rank[u]);
    dirty_devices.push_back(device);
  };
  // All transfers of one producer are created together when it finishes,
  // so they form a contiguous range of `transfers`; a short scan finds one.
  auto find_transfer = [&](NodeId id, int32_t output, int32_t device) {
    for (int32_t t = transfer_begin[id]; t < transfer_end[id]; ++t) {
      if (transfers[t].output == output && transfers[t].dst_device == device) {
        return t;
      }
    }
    return int32_t{-1};
  };
  // The inputs of node `id` (in unit `u`) from other units: same-device
  // producers lose a use (pushed on release_stack), received copies lose a
  // consumer.
  auto& release_stack = scratch.release_stack;
  release_stack.clear();
  auto release_inputs = [&](NodeId id, int32_t u) {
    const int32_t device = plan.device[id];
    for (const Edge& edge : graph_.in_edges(id)) {
      if (edge.control || unit_of[edge.src] == u) continue;
      if (plan.device[edge.src] == device) {
        release_stack.push_back(edge.src);
        continue;
      }
      const int32_t t = find_transfer(edge.src, edge.src_output, device);
      if (t >= 0 && --transfers[t].remote_uses == 0) {
        memory[device] -= transfers[t].bytes;
      }
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
  auto finish_unit = [&](int32_t u, double now) {
    ++completed_units;
    const int32_t device = plan.device[unit_first[u]];
    for (int32_t m = member_offsets[u]; m < member_offsets[u + 1]; ++m) {
      const NodeId id = members[m];
      // A kernel's inputs are released when it finishes; a free op's only
      // when its own output is no longer used (it aliases them).
      if (!free_[id]) {
        release_inputs(id, u);
        drain_releases();
      }
      transfer_begin[id] = transfer_end[id] =
          static_cast<int32_t>(transfers.size());
      for (const Edge& edge : graph_.out_edges(id)) {
        const int32_t v = unit_of[edge.dst];
        if (v == u) continue;
        const int32_t dst_device = plan.device[edge.dst];
        if (dst_device == device || edge.control) {
          if (--pending[v] == 0) make_ready(v, now, Cause{Cause::kUnit, u});
          continue;
        }
        int32_t index = find_transfer(id, edge.src_output, dst_device);
        if (index < 0) {
          index = static_cast<int32_t>(transfers.size());
          const size_t link_index =
              static_cast<size_t>(device) * num_devices + dst_device;
          const Link& link = topology_.link(device, dst_device);
          Transfer t;
          t.node = id;
          t.output = edge.src_output;
          t.src_device = device;
          t.dst_device = dst_device;
          t.bytes = EdgeBytes(edge);
          t.start_s = std::max(now, link_free[link_index]);
          t.end_s = t.start_s + link.latency_s +
                    static_cast<double>(t.bytes) / link.bandwidth_bytes_per_s;
          t.remote_uses = 0;
          t.cause =
              t.start_s > now && link_last_transfer[link_index] >= 0
                  ? Cause{Cause::kTransfer, link_last_transfer[link_index]}
                  : Cause{Cause::kUnit, u};
          link_free[link_index] = t.end_s;
          link_last_transfer[link_index] = index;
          ++local_uses[id];  // the send holds the source buffer
          allocate(dst_device, t.bytes);
          result.bytes_moved += t.bytes;
          push_event(Event{t.end_s, seq++, true, index});
          transfers.push_back(t);
          transfer_end[id] = index + 1;
        }
        ++transfers[index].remote_uses;
      }
      // An output nobody consumes (a graph output) stays allocated.
    }
    if (duration[u] > 0) {
      device_busy[device] = 0;
      dirty_devices.push_back(device);
    }
  };
  auto drain_free = [&](double now) {
    while (!free_stack.empty()) {
      const int32_t u = free_stack.back();
      free_stack.pop_back();
      start[u] = end[u] = now;
      start_cause[u] = ready_cause[u];
      finish_unit(u, now);
    }
  };

  auto dispatch = [&](double now) {
    for (int32_t device : dirty_devices) try_start(device, now);
    dirty_devices.clear();
  };
  for (int u = 0; u < num_units; ++u) {
    if (pending[u] == 0) make_ready(u, 0, Cause{});
  }
  drain_free(0);
  dispatch(0);
  double now = 0;
  while (!events.empty()) {
    std::pop_heap(events.begin(), events.end(), std::greater<Event>());
    const Event event = events.back();
    events.pop_back();
    now = event.time;
    if (event.is_transfer) {
      const Transfer& t = transfers[event.id];
      const NodeId id = t.node;
      release_stack.push_back(id);  // the send no longer holds the buffer
      drain_releases();
      for (const Edge& edge : graph_.out_edges(id)) {
        const int32_t v = unit_of[edge.dst];
        if (edge.control || v == unit_of[id] ||
            plan.device[edge.dst] != t.dst_device ||
            edge.src_output != t.output) {
          continue;
        }
        if (--pending[v] == 0) {
          make_ready(v, now, Cause{Cause::kTransfer, event.id});
        }
      }
    } else {
      finish_unit(event.id, now);
    }
    drain_free(now);
    if (events.empty() || events.front().time > now) dispatch(now);
  }
  if (completed_units != num_units) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan fusion groups form a cycle: ", num_units - completed_units,
        " kernel(s) never became ready (a group must not both feed and "
        "consume another group)"));
  }

  // Step time and the critical path (backwards from the last finisher).
  int32_t last = -1;
  for (int u = 0; u < num_units; ++u) {
    if (last < 0 || end[u] > end[last]) last = u;
  }
  result.step_time_s = last >= 0 ? end[last] : 0;
  for (const Transfer& t : transfers) {
    result.step_time_s = std::max(result.step_time_s, t.end_s);
  }
  std::vector<NodeId> path;
  Cause cursor{Cause::kUnit, last};
  while (cursor.type != Cause::kNone && cursor.id >= 0 &&
         path.size() <= static_cast<size_t>(n) + transfers.size()) {
    if (cursor.type == Cause::kUnit) {
      const int32_t u = cursor.id;
      result.critical_path_busy_s += duration[u];
      for (int32_t m = member_offsets[u + 1] - 1; m >= member_offsets[u]; --m) {
        path.push_back(members[m]);
      }
      cursor = start_cause[u];
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
      result.node_start_s[id] = start[unit_of[id]];
      result.node_end_s[id] = end[unit_of[id]];
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
