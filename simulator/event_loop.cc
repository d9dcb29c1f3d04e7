#include "simulator/event_loop.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "simulator/trajectory.h"

namespace gopt::simulator::internal {
namespace {

std::vector<int32_t> NormalizedLayout(const std::vector<int32_t>& layout,
                                      int rank) {
  if (!layout.empty()) return layout;
  std::vector<int32_t> row_major(rank);
  for (int i = 0; i < rank; ++i) row_major[i] = rank - 1 - i;
  return row_major;
}

}  // namespace

void EventLoop::SetUp() {
  BuildUnits();
  PriceUnits();
  RankUnits();
}

// Units: one per fusion group, one per unfused node, numbered in order of
// their first member.
void EventLoop::BuildUnits() {
  const size_t edges = sim_.graph_.edges().size();
  ReserveScratch(ws_.unit_of, n_);
  ReserveScratch(ws_.members, n_);
  ReserveScratch(ws_.member_offsets, n_ + size_t{1});
  ReserveScratch(ws_.units, n_);
  ReserveScratch(ws_.inputs, n_);
  ReserveScratch(ws_.local_uses, n_);
  ReserveScratch(ws_.unit_of_rank, n_);
  ReserveScratch(ws_.transfers, edges);  // at most one per edge
  // Written by index (LoopCounters::num_transfers counts them): candidate runs
  // keep another run's transfers past their own.
  if (ws_.transfers.size() < edges) ws_.transfers.resize(edges);
  ReserveScratch(ws_.next_carried, edges);
  ReserveScratch(ws_.in_transfer, edges);
  std::vector<int32_t>& unit_of = ws_.unit_of;
  // The members of each unit (CSR).
  std::vector<int32_t>& member_offsets = ws_.member_offsets;
  std::vector<int32_t>& members = ws_.members;
  unit_of.resize(n_);
  members.resize(n_);
  if (!fused_) {
    // Every node its own unit.
    num_units_ = n_;
    std::iota(unit_of.begin(), unit_of.end(), 0);
    member_offsets.resize(n_ + 1);
    std::iota(member_offsets.begin(), member_offsets.end(), 0);
    std::iota(members.begin(), members.end(), 0);
    return;
  }
  absl::flat_hash_map<int32_t, int32_t> unit_of_group;
  for (NodeId id = 0; id < n_; ++id) {
    const int32_t group = plan_.fusion_group[id];
    if (group < 0) {
      unit_of[id] = num_units_++;
      continue;
    }
    auto [it, inserted] = unit_of_group.emplace(group, num_units_);
    if (inserted) ++num_units_;
    unit_of[id] = it->second;
  }
  member_offsets.assign(num_units_ + 1, 0);
  for (NodeId id = 0; id < n_; ++id) ++member_offsets[unit_of[id] + 1];
  for (int u = 0; u < num_units_; ++u) {
    member_offsets[u + 1] += member_offsets[u];
  }
  std::vector<int32_t>& fill = ws_.fill;
  fill.assign(member_offsets.begin(), member_offsets.end() - 1);
  for (NodeId id = 0; id < n_; ++id) members[fill[unit_of[id]]++] = id;
}

// Priority, pending inputs and duration per unit, local uses per node, and
// the resident memory (parameters and constants, allocated before the first
// kernel). Without fusion every node is its own kernel and gets its
// duration right away; with fusion the members' work is summed per unit
// first.
void EventLoop::PriceUnits() {
  if (fused_) {
    ws_.work.assign(num_units_, UnitWork{});
    ws_.units.assign(num_units_, UnitState{});
    ws_.inputs.assign(num_units_, UnitInputs{});
    ws_.local_uses.assign(n_, 0);
    ws_.materialized.assign(n_, 0);
  } else {
    // EnterNode initializes a node's entries before any later node (its
    // consumers) touches them: one pass over these arrays instead of two.
    ws_.units.resize(num_units_);
    ws_.inputs.resize(num_units_);
    ws_.local_uses.resize(n_);
    ws_.materialized.resize(n_);
  }
  result_.device_busy_s.assign(num_devices_, 0);
  result_.peak_memory_bytes.assign(num_devices_, 0);
  ws_.memory.assign(num_devices_, 0);
  if (!fused_ && plan_.layout.empty()) {
    for (NodeId id = 0; id < n_; ++id) {
      PriceSoloNode(id, id, EnterNode(id, id));
    }
    return;
  }
  for (NodeId id = 0; id < n_; ++id) {
    const int32_t u = ws_.unit_of[id];
    PriceNode(id, u, EnterNode(id, u));
  }
  if (fused_) {
    for (int u = 0; u < num_units_; ++u) {
      ws_.units[u].duration = KernelSeconds(ws_.work[u], ws_.inputs[u].device);
    }
  }
}

// What every node does first: (without fusion) initializes its unit's
// entries, allocates its output when resident, and gives its unit its
// device and priority. Returns the node's device.
inline int32_t EventLoop::EnterNode(NodeId id, int32_t u) {
  if (!fused_) {
    ws_.units[u] = UnitState{};
    ws_.inputs[u] = UnitInputs{};
    ws_.local_uses[id] = 0;
    ws_.materialized[id] = 0;
  }
  const int32_t device = plan_.device[id];
  if (sim_.resident_[id]) Allocate(device, sim_.output_bytes_[id]);
  ws_.inputs[u].device = device;
  UnitState& unit = ws_.units[u];
  unit.priority =
      std::max(unit.priority, plan_.priority.empty() ? 0 : plan_.priority[id]);
  return device;
}

// Neither fusion nor layouts: every input counts, there are no copies and
// the kernel time is precomputed. The compact in_src_ is all this needs of
// the edges.
inline void EventLoop::PriceSoloNode(NodeId id, int32_t u, int32_t device) {
  const absl::Span<const Edge> in = sim_.graph_.in_edges(id);
  const int32_t begin =
      static_cast<int32_t>(in.data() - sim_.graph_.edges().data());
  const int32_t end = begin + static_cast<int32_t>(in.size());
  ws_.inputs[u].pending = end - begin;
  for (int32_t j = begin; j < end; ++j) {
    const NodeId src = sim_.in_src_[j];  // ~src for control edges
    if (src >= 0 && plan_.device[src] == device) ++ws_.local_uses[src];
  }
  ws_.materialized[id] = 1;
  ws_.units[u].duration =
      sim_.solo_seconds_[static_cast<size_t>(id) * sim_.num_device_classes_ +
                         sim_.device_class_[device]];
  result_.num_kernels += !sim_.free_[id];
}

// A node of a plan with fusion or layouts: inputs from other units, layout
// copies, the bytes that stay inside a fused kernel; unfused, or in a group
// on a device whose groups run op by op, the node's own kernel time; in a
// fused kernel, its work added to its unit's.
inline void EventLoop::PriceNode(NodeId id, int32_t u, int32_t device) {
  const graph::Graph& graph = sim_.graph_;
  UnitWork node_work;
  node_work.free = sim_.free_[id];
  node_work.flops = sim_.flops_[id];
  node_work.best_flops = sim_.flops_[id];
  node_work.dtype = sim_.dtype_[id];
  node_work.bytes = sim_.traffic_bytes_[id];
  node_work.op_class = OpCostClassOf(graph.node(id).kind);
  node_work.kind = graph.node(id).kind;
  node_work.num_ops = node_work.free ? 0 : 1;
  const bool explicit_layout =
      !plan_.layout.empty() && !plan_.layout[id].empty();
  if (explicit_layout && sim_.compute_kind_[id]) node_work.efficiency = 0.9;
  const bool grouped = fused_ && plan_.fusion_group[id] >= 0;
  const bool op_by_op =
      grouped && sim_.topology_.devices[device].fused_groups_run_op_by_op;
  const bool one_kernel = grouped && !op_by_op;
  // A group's layout copies add up in one sum, in member order.
  double& copy_s = grouped ? ws_.work[u].copy_s : node_work.copy_s;
  bool consumed_outside = true;
  if (one_kernel) {
    consumed_outside = graph.out_edges(id).empty();
    for (const Edge& edge : graph.out_edges(id)) {
      if (ws_.unit_of[edge.dst] != u) consumed_outside = true;
    }
  }
  for (const Edge& edge : graph.in_edges(id)) {
    if (ws_.unit_of[edge.src] == u) {
      if (!edge.control && one_kernel) node_work.bytes -= sim_.EdgeBytes(edge);
      continue;
    }
    ++ws_.inputs[u].pending;
    if (!edge.control && plan_.device[edge.src] == device) {
      ++ws_.local_uses[edge.src];
    }
    if (LayoutCopyNeeded(edge, id)) {
      const DeviceProfile& profile = sim_.topology_.devices[device];
      copy_s += 2.0 * static_cast<double>(sim_.EdgeBytes(edge)) /
                    profile.memory_bandwidth_bytes_per_s +
                profile.launch_overhead_s;
    }
  }
  if (!consumed_outside) {
    node_work.bytes -= sim_.written_bytes_[id];  // stays inside the kernel
  } else {
    ws_.materialized[id] = 1;
  }
  if (!one_kernel) {
    double seconds;
    if (node_work.copy_s == 0 && node_work.efficiency == 1.0) {
      seconds = sim_.solo_seconds_[static_cast<size_t>(id) *
                                       sim_.num_device_classes_ +
                                   sim_.device_class_[device]];
      result_.num_kernels += !sim_.free_[id];
    } else {
      seconds = KernelSeconds(node_work, device) + sim_.link_seconds_[id];
    }
    if (!fused_) {
      ws_.units[u].duration = seconds;
      return;
    }
    // PriceUnits takes the unit's duration from its work.
    UnitWork& w = ws_.work[u];
    w.op_by_op = 1;
    w.op_by_op_s += seconds;
    return;
  }
  UnitWork& w = ws_.work[u];
  if (!node_work.free) w.free = 0;
  w.flops += node_work.flops;
  w.bytes += node_work.bytes;
  w.num_ops += node_work.num_ops;
  if (node_work.flops > w.best_flops) {
    w.best_flops = node_work.flops;
    w.dtype = node_work.dtype;
    w.kind = node_work.kind;
  }
  if (node_work.efficiency != 1.0) w.efficiency = node_work.efficiency;
}

// Whether the layouts `src` and `id` chose for their output 0 differ (a
// different rank is no mismatch: the consumer reshapes).
bool EventLoop::LayoutsDiffer(NodeId src, NodeId id) const {
  // (ValidatePlan has checked that both nodes have a ranked output 0.)
  const int rank = sim_.graph_.node(src).outputs[0].rank();
  if (rank != sim_.graph_.node(id).outputs[0].rank()) return false;
  return NormalizedLayout(plan_.layout[src], rank) !=
         NormalizedLayout(plan_.layout[id], rank);
}

// Seconds of one kernel, or of a unit whose kernels were priced one by one
// (0 for a free unit without layout copies); counts the kernel and its
// layout copies.
double EventLoop::KernelSeconds(const UnitWork& w, int32_t device) {
  if (w.op_by_op) {
    // The members' kernels were priced and counted one by one.
    result_.layout_copy_s += w.copy_s;
    return w.op_by_op_s + w.copy_s;
  }
  if (w.free && w.copy_s == 0) return 0.0;
  KernelWork kernel;
  kernel.flops = w.flops;
  kernel.bytes = std::max<int64_t>(0, w.bytes);
  kernel.dtype = w.dtype;
  kernel.efficiency_factor = w.efficiency;
  kernel.op_class = w.op_class;
  kernel.kind = w.kind;
  kernel.num_ops = std::max<int32_t>(1, w.num_ops);
  result_.layout_copy_s += w.copy_s;
  if (w.free) return w.copy_s;
  ++result_.num_kernels;
  return sim_.cost_model_.KernelSeconds(kernel,
                                        sim_.topology_.devices[device]) +
         w.copy_s;
}

// Ready kernels per device are ordered by rank: highest priority first, then
// lowest first NodeId (units are numbered in first-NodeId order, so without
// priorities the rank is the unit index).
void EventLoop::RankUnits() {
  std::vector<UnitState>& units = ws_.units;
  std::vector<int32_t>& unit_of_rank = ws_.unit_of_rank;
  unit_of_rank.resize(num_units_);
  int32_t lowest = 0;
  int32_t highest = 0;
  if (!plan_.priority.empty() && num_units_ > 0) {
    lowest = highest = units[0].priority;
    for (const UnitState& unit : units) {
      lowest = std::min(lowest, unit.priority);
      highest = std::max(highest, unit.priority);
    }
  }
  const int64_t span = static_cast<int64_t>(highest) - lowest + 1;
  if (span == 1) {
    for (int32_t u = 0; u < num_units_; ++u) {
      units[u].rank = unit_of_rank[u] = u;
    }
  } else if (span <= std::max<int64_t>(int64_t{1} << 16, 2 * num_units_)) {
    // Counting sort by descending priority, stable in unit order (O(units
    // + span): plans that rank every node, such as m-sct's, take it too).
    std::vector<int32_t>& count = ws_.rank_count;
    count.assign(span + 1, 0);
    for (int32_t u = 0; u < num_units_; ++u) {
      ++count[highest - units[u].priority + 1];
    }
    for (int64_t p = 0; p < span; ++p) count[p + 1] += count[p];
    for (int32_t u = 0; u < num_units_; ++u) {
      const int32_t r = count[highest - units[u].priority]++;
      units[u].rank = r;
      unit_of_rank[r] = u;
    }
  } else {
    for (int32_t u = 0; u < num_units_; ++u) unit_of_rank[u] = u;
    std::stable_sort(unit_of_rank.begin(), unit_of_rank.end(),
                     [&](int32_t a, int32_t b) {
                       return units[a].priority > units[b].priority;
                     });
    for (int32_t r = 0; r < num_units_; ++r) units[unit_of_rank[r]].rank = r;
  }
}

absl::Status EventLoop::CheckAllCompleted() const {
  if (counters_.completed_units != num_units_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan fusion groups form a cycle: ",
        num_units_ - counters_.completed_units,
        " kernel(s) never became ready (a group must not both feed and "
        "consume another group)"));
  }
  return absl::OkStatus();
}

SimulationResult EventLoop::Finish() {
  TraceCriticalPath();
  for (int d = 0; d < num_devices_; ++d) {
    if (result_.peak_memory_bytes[d] > sim_.topology_.devices[d].memory_bytes) {
      result_.oom = true;
    }
  }
  result_.num_transfers = counters_.num_transfers;
  if (options_.record_timeline) RecordTimeline();
  return std::move(result_);
}

// Step time, and the critical path backwards from the last finisher.
void EventLoop::TraceCriticalPath() {
  result_.step_time_s = std::max(counters_.last_end, counters_.last_arrival);
  std::vector<NodeId> path;
  Cause cursor{Cause::kUnit, counters_.last};
  while (cursor.type != Cause::kNone && cursor.id >= 0 &&
         path.size() <= static_cast<size_t>(n_) + counters_.num_transfers) {
    if (cursor.type == Cause::kUnit) {
      const int32_t u = cursor.id;
      result_.critical_path_busy_s += ws_.units[u].duration;
      for (int32_t m = ws_.member_offsets[u + 1] - 1;
           m >= ws_.member_offsets[u]; --m) {
        path.push_back(ws_.members[m]);
      }
      cursor = ws_.units[u].start_cause;
    } else {
      const Transfer& t = ws_.transfers[cursor.id];
      result_.critical_path_busy_s += t.end_s - t.start_s;
      cursor = t.cause;
    }
  }
  std::reverse(path.begin(), path.end());
  result_.critical_path = std::move(path);
}

// Per node its kernel's start and end, and every transfer.
void EventLoop::RecordTimeline() {
  result_.node_start_s.resize(n_);
  result_.node_end_s.resize(n_);
  for (NodeId id = 0; id < n_; ++id) {
    const UnitState& unit = ws_.units[ws_.unit_of[id]];
    result_.node_start_s[id] = unit.start;
    result_.node_end_s[id] = unit.end;
  }
  result_.transfers.reserve(counters_.num_transfers);
  for (int32_t i = 0; i < counters_.num_transfers; ++i) {
    const Transfer& t = ws_.transfers[i];
    result_.transfers.push_back(TransferRecord{t.node, t.output, t.src_device,
                                               t.dst_device, t.bytes, t.start_s,
                                               t.end_s});
  }
}

void EventLoop::SaveCheckpoint(double now, Checkpoint& checkpoint) const {
  Checkpoint& c = checkpoint;
  c.time_s = now;
  c.counters = counters_;
  c.inputs.assign(ws_.inputs.begin(), ws_.inputs.begin() + num_units_);
  c.local_uses.assign(ws_.local_uses.begin(), ws_.local_uses.begin() + n_);
  c.queue = ws_.events.heap();
  c.ready_units.resize(num_devices_);
  c.live_transfers.clear();
  for (int d = 0; d < num_devices_; ++d) {
    c.ready_units[d].clear();
    ws_.ready[d].ForEach([&](int64_t rank) {
      c.ready_units[d].push_back(ws_.unit_of_rank[rank]);
    });
  }
  c.device_busy = ws_.device_busy;
  c.device_last_unit = ws_.device_last_unit;
  c.link_last_transfer = ws_.link_last_transfer;
  c.link_tail = ws_.link_tail;
  c.link_free = ws_.link_free;
  c.device_busy_s = result_.device_busy_s;
  c.remaining_work = ws_.remaining_work;
  c.memory = ws_.memory;
  c.peak_memory_bytes = result_.peak_memory_bytes;
  c.bytes_moved = result_.bytes_moved;
  // Transfers whose fields change later: those still feeding consumers
  // (remote_uses) and the last queued on each link (next_on_link).
  for (int32_t t = 0; t < counters_.num_transfers; ++t) {
    const Transfer& transfer = ws_.transfers[t];
    if (transfer.remote_uses > 0) {
      c.live_transfers.push_back(
          {t, transfer.remote_uses, transfer.next_on_link});
    }
  }
  for (const int32_t tail : ws_.link_tail) {
    if (tail >= 0 && ws_.transfers[tail].remote_uses == 0) {
      c.live_transfers.push_back({tail, 0, ws_.transfers[tail].next_on_link});
    }
  }
}

// What a checkpoint need not hold: a unit's times and causes are written
// when it becomes ready, starts or finishes, so those of units not yet
// ready are overwritten before any read; the same holds for a producer's
// sends (next_carried, in_transfer) and for transfers made later. Those
// come from the base's final state, already in the workspace.
void EventLoop::Resume(const Trajectory::Data& base,
                       const Checkpoint& checkpoint) {
  const Checkpoint& c = checkpoint;
  num_units_ = base.num_units;
  result_.num_kernels = base.result.num_kernels;
  result_.layout_copy_s = base.result.layout_copy_s;
  std::copy(c.inputs.begin(), c.inputs.end(), ws_.inputs.begin());
  std::copy(c.local_uses.begin(), c.local_uses.end(), ws_.local_uses.begin());
  ws_.events.Assign(c.queue);
  ws_.ready.resize(num_devices_);
  for (int d = 0; d < num_devices_; ++d) {
    ws_.ready[d].Reset(num_units_ + base.rank_offset);
    for (const int32_t u : c.ready_units[d]) {
      ws_.ready[d].Insert(ws_.units[u].rank);
    }
  }
  ws_.device_busy = c.device_busy;
  ws_.device_last_unit = c.device_last_unit;
  ws_.link_last_transfer = c.link_last_transfer;
  ws_.link_tail = c.link_tail;
  ws_.link_free = c.link_free;
  ws_.remaining_work = c.remaining_work;
  ws_.memory = c.memory;
  result_.device_busy_s = c.device_busy_s;
  result_.peak_memory_bytes = c.peak_memory_bytes;
  result_.bytes_moved = c.bytes_moved;
  counters_ = c.counters;
  for (const Checkpoint::LiveTransfer& live : c.live_transfers) {
    ws_.transfers[live.index].remote_uses = live.remote_uses;
    ws_.transfers[live.index].next_on_link = live.next_on_link;
  }
  out_base_ = n_ > 0 ? sim_.graph_.out_edges(0).data() : nullptr;
  in_base_ = sim_.graph_.edges().data();
  ws_.free_stack.clear();
  ws_.dirty_devices.clear();
  ws_.release_stack.clear();
}

bool EventLoop::MatchesCheckpoint(const Trajectory::Data& base,
                                  const Checkpoint& checkpoint) const {
  const Checkpoint& k = checkpoint;
  if (k.counters.completed_units != counters_.completed_units ||
      k.counters.num_transfers != counters_.num_transfers ||
      k.counters.seq != counters_.seq || k.bytes_moved != result_.bytes_moved ||
      k.memory != ws_.memory || k.device_busy_s != result_.device_busy_s ||
      k.device_busy != ws_.device_busy ||
      k.device_last_unit != ws_.device_last_unit ||
      k.link_free != ws_.link_free || k.link_tail != ws_.link_tail ||
      k.link_last_transfer != ws_.link_last_transfer ||
      k.counters.last_arrival != counters_.last_arrival) {
    return false;
  }
  auto earlier = [](const Event& a, const Event& b) { return a.Before(b); };
  std::vector<Event> queue = ws_.events.heap();
  std::vector<Event> expected = k.queue;
  if (queue.size() != expected.size()) return false;
  std::sort(queue.begin(), queue.end(), earlier);
  std::sort(expected.begin(), expected.end(), earlier);
  for (size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].time != expected[i].time || queue[i].tag != expected[i].tag) {
      return false;
    }
  }
  for (int d = 0; d < num_devices_; ++d) {
    const std::vector<int32_t>& ready = k.ready_units[d];
    size_t i = 0;
    bool same = true;
    ws_.ready[d].ForEach([&](int64_t rank) {
      const int32_t u = ws_.unit_of_rank[rank];
      const UnitState& unit = ws_.units[u];
      const UnitState& planned = base.units[u];
      same = same && i < ready.size() && ready[i] == u &&
             unit.ready_at == planned.ready_at &&
             unit.ready_cause.type == planned.ready_cause.type &&
             unit.ready_cause.id == planned.ready_cause.id;
      ++i;
    });
    if (!same || i != ready.size()) return false;
  }
  return true;
}

void EventLoop::AdoptBaseFrom(const Trajectory::Data& base,
                              const Checkpoint& checkpoint) {
  for (int d = 0; d < num_devices_; ++d) {
    result_.peak_memory_bytes[d] =
        std::max(result_.peak_memory_bytes[d], checkpoint.later_peak_bytes[d]);
  }
  const double base_end = base.last_end_s;
  if (base.last_unit >= 0 &&
      (counters_.last < 0 || base_end > counters_.last_end ||
       (base_end == counters_.last_end && base.last_unit < counters_.last))) {
    counters_.last = base.last_unit;
    counters_.last_end = base_end;
  }
  // The same transfers until now, and the base's from here on.
  counters_.last_arrival = base.last_arrival_s;
  result_.device_busy_s = base.result.device_busy_s;
  result_.bytes_moved = base.result.bytes_moved;
  counters_.num_transfers = static_cast<int32_t>(base.transfers.size());
  counters_.completed_units = num_units_;
}

}  // namespace gopt::simulator::internal
