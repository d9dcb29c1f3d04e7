// Simulator::Simulate: one call is a run object whose phases fill the
// working memory it reuses (Simulator's per-graph data is built in
// simulator.cc).
#include "simulator/simulator_run.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace gopt::simulator {
namespace internal {
namespace {

// Which workspace a call uses, and how long it lives. One per thread, shared
// by every Simulator: the steady state of a training loop allocates nothing,
// and a thread holds one workspace however many graphs it simulates (a
// pre-training corpus keeps hundreds of Simulators alive; a workspace each
// would multiply the corpus's memory several times). A workspace grows to
// the largest graph simulated on its thread, so a server thread that once
// simulated a million nodes with two inputs each would keep ~250 MiB for
// good. Instead the Simulator that used it last frees it on destruction when
// it holds more than kKeptWorkspaceBytes; the engine destroys a request's
// Simulator on the thread that ran the request. (Measured on that graph: the
// process stays 287 MiB above the graph's own memory after the Simulator is
// gone when the workspace is kept, 35 MiB when it is freed.)
// Smaller workspaces (graphs up to ~250k such nodes; training graphs have at
// most 80k) stay for the next call, so Simulators made and dropped per call,
// as the baselines and Evaluate do, still find them warm.
constexpr size_t kKeptWorkspaceBytes = size_t{64} << 20;

// The calling thread's workspaces (full runs, candidate runs). Trivially
// destructible, so ~Simulator can read them even while the thread's other
// thread-locals are being destroyed (a Simulator can outlive
// WorkspaceOwner).
struct ThreadWorkspace {
  Workspace* workspace = nullptr;   // owned; freed by WorkspaceOwner
  const void* last_user = nullptr;  // the Simulator that used it last
};
thread_local ThreadWorkspace thread_workspaces[2];

// Frees the thread's workspaces when the thread exits.
struct WorkspaceOwner {
  ~WorkspaceOwner() {
    for (ThreadWorkspace& owned : thread_workspaces) {
      delete owned.workspace;
      owned.workspace = nullptr;
    }
  }
};

}  // namespace

Workspace& AcquireThreadWorkspace(const void* user, bool candidate) {
  thread_local WorkspaceOwner owner;
  ThreadWorkspace& thread_workspace = thread_workspaces[candidate ? 1 : 0];
  if (thread_workspace.workspace == nullptr) {
    thread_workspace.workspace = new Workspace;
  }
  thread_workspace.last_user = user;
  return *thread_workspace.workspace;
}

void ReleaseThreadWorkspaces(const void* user) {
  for (ThreadWorkspace& thread_workspace : thread_workspaces) {
    if (thread_workspace.last_user != user) continue;
    thread_workspace.last_user = nullptr;
    if (thread_workspace.workspace != nullptr &&
        thread_workspace.workspace->HeldBytes() > kKeptWorkspaceBytes) {
      delete thread_workspace.workspace;
      thread_workspace.workspace = nullptr;
    }
  }
}

namespace {

std::vector<int32_t> NormalizedLayout(const std::vector<int32_t>& layout,
                                      int rank) {
  if (!layout.empty()) return layout;
  std::vector<int32_t> row_major(rank);
  for (int i = 0; i < rank; ++i) row_major[i] = rank - 1 - i;
  return row_major;
}

}  // namespace
}  // namespace internal

using internal::ReserveScratch;

// The workspaces are this file's: see ReleaseThreadWorkspaces.
Simulator::~Simulator() { internal::ReleaseThreadWorkspaces(this); }

// Units: one per fusion group, one per unfused node, numbered in order of
// their first member.
void Simulator::Run::BuildUnits() {
  const size_t edges = sim_.graph_.edges().size();
  ReserveScratch(ws_.unit_of, n_);
  ReserveScratch(ws_.members, n_);
  ReserveScratch(ws_.member_offsets, n_ + size_t{1});
  ReserveScratch(ws_.units, n_);
  ReserveScratch(ws_.inputs, n_);
  ReserveScratch(ws_.local_uses, n_);
  ReserveScratch(ws_.unit_of_rank, n_);
  ReserveScratch(ws_.transfers, edges);  // at most one per edge
  // Written by index (num_transfers_ counts them): candidate runs keep
  // another run's transfers past their own.
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
void Simulator::Run::PriceUnits() {
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
inline int32_t Simulator::Run::EnterNode(NodeId id, int32_t u) {
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
inline void Simulator::Run::PriceSoloNode(NodeId id, int32_t u,
                                          int32_t device) {
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
inline void Simulator::Run::PriceNode(NodeId id, int32_t u, int32_t device) {
  const graph::Graph& graph = sim_.graph_;
  UnitWork node_work;
  node_work.free = sim_.free_[id];
  node_work.flops = sim_.flops_[id];
  node_work.best_flops = sim_.flops_[id];
  node_work.dtype = sim_.dtype_[id];
  node_work.bytes = sim_.traffic_bytes_[id];
  node_work.op_class = OpCostClassOf(graph.node(id).kind);
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
      seconds = KernelSeconds(node_work, device);
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
  if (node_work.flops > w.best_flops) {
    w.best_flops = node_work.flops;
    w.dtype = node_work.dtype;
  }
  if (node_work.efficiency != 1.0) w.efficiency = node_work.efficiency;
}

// Whether the layouts `src` and `id` chose for their output 0 differ (a
// different rank is no mismatch: the consumer reshapes).
bool Simulator::Run::LayoutsDiffer(NodeId src, NodeId id) const {
  // (ValidatePlan has checked that both nodes have a ranked output 0.)
  const int rank = sim_.graph_.node(src).outputs[0].rank();
  if (rank != sim_.graph_.node(id).outputs[0].rank()) return false;
  return internal::NormalizedLayout(plan_.layout[src], rank) !=
         internal::NormalizedLayout(plan_.layout[id], rank);
}

// Seconds of one kernel, or of a unit whose kernels were priced one by one
// (0 for a free unit without layout copies); counts the kernel and its
// layout copies.
double Simulator::Run::KernelSeconds(const UnitWork& w, int32_t device) {
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
void Simulator::Run::RankUnits() {
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

// The queue holds at most one event per device (its running kernel) and one
// per link (the transfer at the head of the link's queue): a link's
// transfers arrive in the order they were queued, so the others wait in the
// link's list and join the queue when their predecessor arrives. Events pop
// in (time, seq) order all the same.
absl::Status Simulator::Run::RunEventLoop() {
  StartEventLoop();
  LoopEvents();
  return CheckAllCompleted();
}

void Simulator::Run::StartEventLoop() {
  const size_t num_links = static_cast<size_t>(num_devices_) * num_devices_;
  ws_.events.Clear();
  ws_.ready.resize(num_devices_);
  for (MinBitTree& queue : ws_.ready) queue.Reset(num_units_);
  ws_.device_busy.assign(num_devices_, 0);
  ws_.device_last_unit.assign(num_devices_, -1);
  ws_.link_free.assign(num_links, 0);
  if (sim_.link_device_overheads_) ws_.device_free_at.assign(num_devices_, 0);
  ws_.link_last_transfer.assign(num_links, -1);
  ws_.link_tail.assign(num_links, -1);  // last queued transfer not arrived
  num_transfers_ = 0;
  // Per out-edge carried by a transfer: the next edge it carries; per
  // in-edge from another device: the transfer carrying it. Written when the
  // producer finishes, before any read, so they need no clearing between
  // calls.
  ws_.next_carried.resize(sim_.graph_.num_edges());
  ws_.in_transfer.resize(sim_.graph_.num_edges());
  out_base_ = n_ > 0 ? sim_.graph_.out_edges(0).data() : nullptr;
  in_base_ = sim_.graph_.edges().data();
  ws_.free_stack.clear();
  ws_.dirty_devices.clear();
  ws_.release_stack.clear();

  for (int u = 0; u < num_units_; ++u) {
    if (ws_.inputs[u].pending == 0) MakeReady(u, 0, Cause{});
  }
  FinishFreeUnits(0);
  Dispatch(0);
  if (recorder_ != nullptr &&
      (ws_.events.empty() || ws_.events.top().time > 0)) {
    MaybeCheckpoint(0);
  }
}

void Simulator::Run::LoopEvents() {
  EventQueue& events = ws_.events;
  while (!events.empty()) {
    const Event event = events.top();
    const double now = event.time;
    if (event.is_transfer()) {
      Arrive(event.id(), now);  // replaces the event by the link's next one
    } else {
      done_on_top_ = true;
      FinishUnit(event.id(), now);
    }
    FinishFreeUnits(now);
    const bool instant_done = events.AllLaterThan(now, done_on_top_);
    if (instant_done) Dispatch(now);
    if (done_on_top_) {
      events.Pop();
      done_on_top_ = false;
    }
    if (ABSL_PREDICT_FALSE(bounded_) && AfterEvent(now, instant_done)) {
      return;
    }
  }
}

absl::Status Simulator::Run::CheckAllCompleted() const {
  if (completed_units_ != num_units_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan fusion groups form a cycle: ", num_units_ - completed_units_,
        " kernel(s) never became ready (a group must not both feed and "
        "consume another group)"));
  }
  return absl::OkStatus();
}

SimulationResult Simulator::Run::Finish() {
  TraceCriticalPath();
  for (int d = 0; d < num_devices_; ++d) {
    if (result_.peak_memory_bytes[d] > sim_.topology_.devices[d].memory_bytes) {
      result_.oom = true;
    }
  }
  result_.num_transfers = num_transfers_;
  if (options_.record_timeline) RecordTimeline();
  return std::move(result_);
}

// Unit u's inputs are all available at `now`, the last one by `cause`. A
// kernel joins its device's ready queue; a unit of no duration (free ops)
// waits on free_stack to finish at once.
inline void Simulator::Run::MakeReady(int32_t u, double now, Cause cause) {
  Touch(u);
  UnitState& unit = ws_.units[u];
  unit.ready_at = now;
  unit.ready_cause = cause;
  if (unit.duration == 0) {
    ws_.free_stack.push_back(u);
    return;
  }
  const int32_t device = ws_.inputs[u].device;
  ws_.ready[device].Insert(unit.rank);
  ws_.dirty_devices.push_back(device);
}

// Devices whose queue or state changed at the current instant pick their
// next kernel only once every event of that instant is processed, so
// priorities decide among everything that became ready together.
inline void Simulator::Run::Dispatch(double now) {
  for (int32_t device : ws_.dirty_devices) {
    if (ws_.device_busy[device] || ws_.ready[device].empty()) continue;
    StartUnit(ws_.unit_of_rank[ws_.ready[device].PopMin()], now);
  }
  ws_.dirty_devices.clear();
}

inline void Simulator::Run::StartUnit(int32_t u, double now) {
  UnitState& unit = ws_.units[u];
  const int32_t device = ws_.inputs[u].device;
  int32_t& device_last_unit = ws_.device_last_unit[device];
  const double start = ABSL_PREDICT_FALSE(sim_.link_device_overheads_)
                           ? std::max(now, ws_.device_free_at[device])
                           : now;
  unit.start = start;
  unit.end = start + unit.duration;
  unit.start_cause = start > unit.ready_at && device_last_unit >= 0
                         ? Cause{Cause::kUnit, device_last_unit}
                         : unit.ready_cause;
  ws_.device_busy[device] = 1;
  device_last_unit = u;
  result_.device_busy_s[device] += unit.duration;
  if (ABSL_PREDICT_FALSE(bounded_)) TrackStart(u, device, now);
  for (int32_t m = ws_.member_offsets[u]; m < ws_.member_offsets[u + 1]; ++m) {
    const NodeId id = ws_.members[m];
    if (ws_.materialized[id] && !sim_.resident_[id] && !sim_.free_[id]) {
      Allocate(device, sim_.output_bytes_[id]);
    }
  }
  const Event end = Event::Make(unit.end, seq_++, u, /*is_transfer=*/false);
  if (done_on_top_) {
    ws_.events.ReplaceTop(end);
    done_on_top_ = false;
  } else {
    ws_.events.Push(end);
  }
}

// Finishing unit u at `now`: its inputs released, its consumers signalled,
// its outputs sent, its device free.
void Simulator::Run::FinishUnit(int32_t u, double now) {
  if (ABSL_PREDICT_FALSE(candidate_)) TrackFinish(u);
  ++completed_units_;
  const double finished_at = ws_.units[u].end;
  if (last_ < 0 || finished_at > last_end_ ||
      (finished_at == last_end_ && u < last_)) {
    last_ = u;
    last_end_ = finished_at;
  }
  const int32_t device = ws_.inputs[u].device;
  for (int32_t m = ws_.member_offsets[u]; m < ws_.member_offsets[u + 1]; ++m) {
    const NodeId id = ws_.members[m];
    // A kernel's inputs are released when it finishes; a free op's only
    // when its own output is no longer used (it aliases them).
    if (!sim_.free_[id]) {
      ReleaseInputs(id, u);
      DrainReleases();
    }
    SignalConsumers(id, u, device, now);
    // An output nobody consumes (a graph output) stays allocated.
  }
  if (ws_.units[u].duration > 0) {
    ws_.device_busy[device] = 0;
    ws_.dirty_devices.push_back(device);
  }
}

// The units of no duration made ready at `now` start and finish at once.
inline void Simulator::Run::FinishFreeUnits(double now) {
  std::vector<int32_t>& free_stack = ws_.free_stack;
  while (!free_stack.empty()) {
    const int32_t u = free_stack.back();
    free_stack.pop_back();
    UnitState& unit = ws_.units[u];
    unit.start = unit.end = now;
    unit.start_cause = unit.ready_cause;
    if (ABSL_PREDICT_FALSE(candidate_)) TrackFreeStart(u);
    FinishUnit(u, now);
  }
}

// Node `id` of unit u (on `device`) has finished: each consumer in another
// unit on the same device (or behind a control edge) loses a pending input;
// each on another device gets the node's output by a transfer, one per
// (output, remote device), which its arrival signals.
inline void Simulator::Run::SignalConsumers(NodeId id, int32_t u,
                                            int32_t device, double now) {
  // This node's sends are the transfers created from here on.
  const int32_t first_transfer = num_transfers_;
  const absl::Span<const Edge> out = sim_.graph_.out_edges(id);
  const int32_t begin = static_cast<int32_t>(out.data() - out_base_);
  const int32_t end = begin + static_cast<int32_t>(out.size());
  for (int32_t e = begin; e < end; ++e) {
    const NodeId dst = sim_.out_dst_[e];
    const bool control = dst < 0;
    const int32_t v = ws_.unit_of[control ? ~dst : dst];
    if (v == u) continue;
    UnitInputs& consumer = ws_.inputs[v];
    const int32_t dst_device = consumer.device;
    if (dst_device == device || control) {
      if (--consumer.pending == 0) MakeReady(v, now, Cause{Cause::kUnit, u});
      continue;
    }
    const int32_t index =
        CarrierFor(id, u, device, dst_device, e, first_transfer, now);
    Transfer& carrier = ws_.transfers[index];
    ++carrier.remote_uses;
    if (carrier.last_carried >= 0) ws_.next_carried[carrier.last_carried] = e;
    carrier.last_carried = e;
    ws_.next_carried[e] = -1;
    ws_.in_transfer[sim_.in_index_of_out_edge_[e]] = index;
  }
}

// The transfer that carries out-edge `e` of node `id` to `dst_device`: one
// made since `first_transfer` for the same output, or a new one queued on
// the link at `now`.
inline int32_t Simulator::Run::CarrierFor(NodeId id, int32_t u, int32_t device,
                                          int32_t dst_device, int32_t e,
                                          int32_t first_transfer, double now) {
  std::vector<Transfer>& transfers = ws_.transfers;
  const int32_t output = sim_.out_output_[e];
  for (int32_t t = first_transfer; t < num_transfers_; ++t) {
    if (transfers[t].output == output &&
        transfers[t].dst_device == dst_device) {
      return t;
    }
  }
  const int32_t index = num_transfers_++;
  const size_t link_index =
      static_cast<size_t>(device) * num_devices_ + dst_device;
  const Link& link = sim_.topology_.link(device, dst_device);
  int32_t& link_last_transfer = ws_.link_last_transfer[link_index];
  int32_t& link_tail = ws_.link_tail[link_index];
  double& link_free = ws_.link_free[link_index];
  Transfer t;
  t.node = id;
  t.output = output;
  t.src_device = device;
  t.dst_device = dst_device;
  t.bytes = sim_.OutputBytes(id, output);
  t.start_s = std::max(now, link_free);
  // The link is busy for the bytes; the latency of transfers queued behind
  // this one overlaps it (a CPU host's copy thread copies back to back, a
  // copy engine pipelines its DMAs). Arrivals stay in link order.
  link_free =
      t.start_s + static_cast<double>(t.bytes) / link.bandwidth_bytes_per_s;
  t.end_s = link_free + link.latency_s;
  t.seq = seq_++;
  t.remote_uses = 0;
  t.next_on_link = -1;
  t.first_carried = e;
  t.last_carried = -1;
  t.cause = t.start_s > now && link_last_transfer >= 0
                ? Cause{Cause::kTransfer, link_last_transfer}
                : Cause{Cause::kUnit, u};
  last_arrival_ = std::max(last_arrival_, t.end_s);
  if (ABSL_PREDICT_FALSE(link.device_overhead_s > 0)) {
    ChargeDevice(device, now, link.device_overhead_s);
  }
  link_last_transfer = index;
  ++ws_.local_uses[id];  // the send holds the source buffer
  Allocate(dst_device, t.bytes);
  result_.bytes_moved += t.bytes;
  if (link_tail < 0) {
    ws_.events.Push(Event::Make(t.end_s, t.seq, index, /*is_transfer=*/true));
  } else {
    transfers[link_tail].next_on_link = index;
  }
  link_tail = index;
  transfers[index] = t;
  if (ABSL_PREDICT_FALSE(candidate_)) CompareWithBase(index);
  return index;
}

// A transfer takes `overhead_s` of `device`'s time at `now`: after the
// kernel it runs, if any, and after the time earlier transfers took. The
// device's next kernel starts no earlier (StartUnit).
void Simulator::Run::ChargeDevice(int32_t device, double now,
                                  double overhead_s) {
  double from = std::max(now, ws_.device_free_at[device]);
  if (ws_.device_busy[device]) {
    from = std::max(from, ws_.units[ws_.device_last_unit[device]].end);
  }
  ws_.device_free_at[device] = from + overhead_s;
  last_arrival_ = std::max(last_arrival_, ws_.device_free_at[device]);
}

// Transfer `index` has arrived at `now`: the sender's buffer loses a use,
// the consumers it feeds lose a pending input, and the next transfer on its
// link becomes the link's event, in place of this one's (still at the top
// of the queue: nothing here pushes or pops); without a next one, this one
// is left on top, marked done_on_top_.
inline void Simulator::Run::Arrive(int32_t index, double now) {
  const NodeId id = ws_.transfers[index].node;
  if (ABSL_PREDICT_FALSE(sim_.link_device_overheads_)) {
    const Transfer& t = ws_.transfers[index];
    const double overhead_s =
        sim_.topology_.link(t.src_device, t.dst_device).device_overhead_s;
    if (overhead_s > 0) ChargeDevice(t.dst_device, now, overhead_s);
  }
  ws_.release_stack.push_back(id);  // the send no longer holds the buffer
  DrainReleases();
  for (int32_t e = ws_.transfers[index].first_carried; e >= 0;
       e = ws_.next_carried[e]) {
    const int32_t v = ws_.unit_of[sim_.out_dst_[e]];  // a data edge
    if (--ws_.inputs[v].pending == 0) {
      MakeReady(v, now, Cause{Cause::kTransfer, index});
    }
  }
  const Transfer& t = ws_.transfers[index];
  if (t.next_on_link >= 0) {
    const Transfer& next = ws_.transfers[t.next_on_link];
    ws_.events.ReplaceTop(Event::Make(next.end_s, next.seq, t.next_on_link,
                                      /*is_transfer=*/true));
  } else {
    const size_t link_index =
        static_cast<size_t>(t.src_device) * num_devices_ + t.dst_device;
    ws_.link_tail[link_index] = -1;
    done_on_top_ = true;
  }
}

// The inputs of node `id` (in unit `u`) from other units: same-device
// producers lose a use (pushed on release_stack), received copies lose a
// consumer.
inline void Simulator::Run::ReleaseInputs(NodeId id, int32_t u) {
  const int32_t device = plan_.device[id];
  const absl::Span<const Edge> in = sim_.graph_.in_edges(id);
  const int32_t begin = static_cast<int32_t>(in.data() - in_base_);
  const int32_t end = begin + static_cast<int32_t>(in.size());
  for (int32_t j = begin; j < end; ++j) {
    const NodeId src = sim_.in_src_[j];
    if (src < 0 || ws_.unit_of[src] == u) continue;  // control, or fused
    if (plan_.device[src] == device) {
      ws_.release_stack.push_back(src);
      continue;
    }
    Transfer& t = ws_.transfers[ws_.in_transfer[j]];
    if (--t.remote_uses == 0) ws_.memory[device] -= t.bytes;
  }
}

// Drops the uses on release_stack. A free op (reshape, tuple, ...) aliases
// its inputs, so when its last use goes, its inputs lose one.
inline void Simulator::Run::DrainReleases() {
  std::vector<NodeId>& release_stack = ws_.release_stack;
  while (!release_stack.empty()) {
    const NodeId id = release_stack.back();
    release_stack.pop_back();
    if (--ws_.local_uses[id] != 0 || sim_.resident_[id]) continue;
    if (!sim_.free_[id]) {
      if (ws_.materialized[id]) {
        ws_.memory[plan_.device[id]] -= sim_.output_bytes_[id];
      }
      continue;
    }
    ReleaseInputs(id, ws_.unit_of[id]);
  }
}

// Step time, and the critical path backwards from the last finisher.
void Simulator::Run::TraceCriticalPath() {
  result_.step_time_s = std::max(last_end_, last_arrival_);
  std::vector<NodeId> path;
  Cause cursor{Cause::kUnit, last_};
  while (cursor.type != Cause::kNone && cursor.id >= 0 &&
         path.size() <= static_cast<size_t>(n_) + num_transfers_) {
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
void Simulator::Run::RecordTimeline() {
  result_.node_start_s.resize(n_);
  result_.node_end_s.resize(n_);
  for (NodeId id = 0; id < n_; ++id) {
    const UnitState& unit = ws_.units[ws_.unit_of[id]];
    result_.node_start_s[id] = unit.start;
    result_.node_end_s[id] = unit.end;
  }
  result_.transfers.reserve(num_transfers_);
  for (int32_t i = 0; i < num_transfers_; ++i) {
    const Transfer& t = ws_.transfers[i];
    result_.transfers.push_back(TransferRecord{t.node, t.output, t.src_device,
                                               t.dst_device, t.bytes, t.start_s,
                                               t.end_s});
  }
}

absl::StatusOr<SimulationResult> Simulator::Simulate(
    const Plan& plan, const SimulationOptions& options) const {
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  return Run(*this, plan, options,
             internal::AcquireThreadWorkspace(this, /*candidate=*/false))
      .Simulate();
}

}  // namespace gopt::simulator
