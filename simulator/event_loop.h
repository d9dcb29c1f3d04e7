// The event-driven core of every simulation. The run types drive it:
// FullRun (Simulator::Simulate), RecordingRun (Simulator::Record), and
// BoundedRun and CandidateRun (Simulator::SimulateCandidate). Internal to
// the simulator.
#ifndef GOPT_SIMULATOR_EVENT_LOOP_H_
#define GOPT_SIMULATOR_EVENT_LOOP_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "simulator/event_queue.h"
#include "simulator/min_bit_tree.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {

struct Checkpoint;  // trajectory.h

// The loop's counters, apart from the workspace's arrays and the result's
// running totals: what a checkpoint saves of them.
struct LoopCounters {
  int64_t seq = 0;  // events and transfers made so far
  int completed_units = 0;
  // The unit that finishes last (the first in unit order among equals),
  // and the last transfer's arrival: the step time.
  int32_t last = -1;
  double last_end = 0;
  double last_arrival = -std::numeric_limits<double>::infinity();
  int32_t num_transfers = 0;  // made so far (Workspace::transfers holds more)
  int64_t events = 0;         // loop iterations so far
};

// What a run adds to the event loop, called at fixed points of it. A run
// type derives from LoopHooks, whose hooks do nothing, declares the hooks it
// needs with the same signatures, and passes itself to EventLoop::Start and
// EventLoop::Run. The calls resolve at compile time (those are templates
// over the hooks' type), so a hook a run leaves out costs nothing and the
// full run's loop carries no bookkeeping of the others.
struct LoopHooks {
  // Unit u becomes ready now (its ready time and cause are about to be
  // written).
  void OnUnitReady(int32_t /*u*/) {}
  // Kernel unit u started on `device` at `now`: its start, end and the
  // device's busy time are written, its outputs not yet allocated.
  void OnKernelStart(int32_t /*u*/, int32_t /*device*/, double /*now*/) {}
  // Unit u of no duration starts (and finishes) now.
  void OnFreeUnitStart(int32_t /*u*/) {}
  // Unit u finishes now, before its inputs are released and its consumers
  // signalled.
  void OnUnitFinish(int32_t /*u*/) {}
  // Transfer `index` was made and written to the workspace.
  void OnTransferMade(int32_t /*index*/) {}
  // Memory was allocated on `device` during the loop (the set-up's resident
  // parameters and constants are not reported).
  void OnAllocate(int32_t /*device*/) {}
  // Start has processed and dispatched the units ready at time 0.
  void OnStarted() {}
  // After each event of Run; `instant_done`: every event at `now` is
  // processed and the devices have picked their next kernels. Returns
  // whether Run stops here.
  bool AfterEvent(double /*now*/, bool /*instant_done*/) { return false; }
};

// The event-driven execution of a plan (see Simulator's comment for the
// model). SetUp turns the plan into units (fusion groups and unfused
// nodes) with their prices and ranks; Start and Run process the events in
// (time, seq) order; CheckAllCompleted and Finish read the result off the
// final state. A run from a recorded checkpoint replaces SetUp and Start by
// Resume. Every array lives in the workspace; SaveCheckpoint, Resume,
// MatchesCheckpoint and AdoptBaseFrom are what incremental runs need of the
// rest of the state.
//
// Lives for one run on one thread; borrows the simulator, plan, options and
// workspace, which must outlive it. Not thread-safe.
class EventLoop {
 public:
  using Edge = graph::Edge;
  using NodeId = graph::NodeId;

  EventLoop(const Simulator& simulator, const Plan& plan,
            const SimulationOptions& options, Workspace& workspace)
      : sim_(simulator),
        plan_(plan),
        options_(options),
        ws_(workspace),
        n_(simulator.graph_.num_nodes()),
        num_devices_(simulator.topology_.num_devices()),
        fused_(!plan.fusion_group.empty()) {}
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // The plan's units, their kernel seconds, pending inputs, local uses and
  // ranks, and the resident memory (parameters and constants). The plan
  // must be valid (ValidatePlan).
  void SetUp();
  // The loop's state for instant 0 and that instant's events: the units
  // without inputs made ready, the free ones finished, the devices
  // dispatched. After SetUp.
  template <typename Hooks>
  void Start(Hooks& hooks);
  // Processes events until the queue is empty or hooks.AfterEvent returns
  // true.
  template <typename Hooks>
  void Run(Hooks& hooks);
  // InvalidArgument when some unit never ran (fusion groups that form a
  // cycle), after a Run that emptied the queue.
  absl::Status CheckAllCompleted() const;
  // The result: the step time, the critical path, OOM and (when the options
  // ask) the timeline. Moves the result out: call once, at the end.
  SimulationResult Finish();

  // Saves the state at the end of instant `now` into `checkpoint`, reusing
  // its buffers: all but later_peak_bytes, which the recording fills.
  void SaveCheckpoint(double now, Checkpoint& checkpoint) const;
  // Sets the state to `base`'s at `checkpoint`, on a workspace that holds
  // `base`'s final state (CandidateRun::PrepareWorkspace): the units and
  // their kernels are `base`'s. Replaces SetUp and Start; Run goes on from
  // there.
  void Resume(const Trajectory::Data& base, const Checkpoint& checkpoint);
  // Whether the state at the end of an instant equals `base`'s at
  // `checkpoint` in every array and counter that can differ after the same
  // units finished and transfers were made (the caller checks those): the
  // queue, the ready units with their ready times and causes, devices,
  // links, memory and totals.
  bool MatchesCheckpoint(const Trajectory::Data& base,
                         const Checkpoint& checkpoint) const;
  // Completes the run with the rest of `base`'s, at `checkpoint` where the
  // state matches it (MatchesCheckpoint): the units, sends and transfers to
  // come are `base`'s final ones, already in the workspace; the totals are
  // `base`'s, but for the memory peaks and the last unit, which may have
  // changed before.
  void AdoptBaseFrom(const Trajectory::Data& base,
                     const Checkpoint& checkpoint);

  int32_t num_units() const { return num_units_; }
  int num_devices() const { return num_devices_; }
  bool fused() const { return fused_; }
  const LoopCounters& counters() const { return counters_; }
  // The running totals (busy time, memory peaks, bytes moved, kernels).
  const SimulationResult& result() const { return result_; }

 private:
  // SetUp's phases, in order.
  void BuildUnits();
  void PriceUnits();
  void RankUnits();
  // PriceUnits' steps, per node in NodeId order.
  // (Both inlined into PriceUnits' loops, as PriceNode is.)
  ABSL_ATTRIBUTE_ALWAYS_INLINE int32_t EnterNode(NodeId id, int32_t u);
  ABSL_ATTRIBUTE_ALWAYS_INLINE void PriceSoloNode(NodeId id, int32_t u,
                                                  int32_t device);
  // (Inlined into PriceUnits' loop: GCC keeps it out of line, as a member
  // of a class with external linkage, and a call per node costs fused and
  // layout plans 1-2% of their instructions.)
  ABSL_ATTRIBUTE_ALWAYS_INLINE void PriceNode(NodeId id, int32_t u,
                                              int32_t device);
  // Whether data edge `edge` into kernel `id` needs a layout copy: both
  // ends chose layouts, of equal rank, and they disagree.
  bool LayoutCopyNeeded(const Edge& edge, NodeId id) const {
    // Most edges leave here, without a call.
    if (edge.control || sim_.free_[id] || plan_.layout.empty() ||
        plan_.layout[edge.src].empty() || plan_.layout[id].empty()) {
      return false;
    }
    return LayoutsDiffer(edge.src, id);
  }
  bool LayoutsDiffer(NodeId src, NodeId id) const;
  double KernelSeconds(const UnitWork& w, int32_t device);

  // Finish's parts.
  void TraceCriticalPath();
  void RecordTimeline();

  // The loop's steps. Those that can reach a hook take the hooks.
  void Allocate(int32_t device, int64_t amount) {
    int64_t& memory = ws_.memory[device];
    memory += amount;
    if (memory > result_.peak_memory_bytes[device]) {
      result_.peak_memory_bytes[device] = memory;
    }
  }
  // Allocate during the loop, reported to the hooks.
  template <typename Hooks>
  void Allocate(Hooks& hooks, int32_t device, int64_t amount) {
    Allocate(device, amount);
    hooks.OnAllocate(device);
  }
  template <typename Hooks>
  void MakeReady(Hooks& hooks, int32_t u, double now, Cause cause);
  template <typename Hooks>
  void Dispatch(Hooks& hooks, double now);
  template <typename Hooks>
  void StartUnit(Hooks& hooks, int32_t u, double now);
  template <typename Hooks>
  void FinishUnit(Hooks& hooks, int32_t u, double now);
  template <typename Hooks>
  void FinishFreeUnits(Hooks& hooks, double now);
  template <typename Hooks>
  void SignalConsumers(Hooks& hooks, NodeId id, int32_t u, int32_t device,
                       double now);
  template <typename Hooks>
  int32_t CarrierFor(Hooks& hooks, NodeId id, int32_t u, int32_t device,
                     int32_t dst_device, int32_t e, int32_t first_transfer,
                     double now);
  template <typename Hooks>
  void Arrive(Hooks& hooks, int32_t index, double now);
  void ChargeDevice(int32_t device, double now, double overhead_s);
  void ReleaseInputs(NodeId id, int32_t u);
  void DrainReleases();

  const Simulator& sim_;
  const Plan& plan_;
  const SimulationOptions& options_;
  Workspace& ws_;
  const int n_;
  const int num_devices_;
  const bool fused_;  // the plan has fusion groups
  int32_t num_units_ = 0;
  SimulationResult result_;

  const Edge* out_base_ = nullptr;  // Graph::out_edges(0)
  const Edge* in_base_ = nullptr;   // Graph::edges()
  LoopCounters counters_;
  // Whether the queue's earliest event has been processed but not removed
  // yet: a kernel starting at the same instant takes its place (one heap
  // update instead of a pop and a push). It stays the earliest of all: only
  // transfers are pushed meanwhile, and they end no earlier than now, with
  // later seqs.
  bool done_on_top_ = false;
};

// The queue holds at most one event per device (its running kernel) and one
// per link (the transfer at the head of the link's queue): a link's
// transfers arrive in the order they were queued, so the others wait in the
// link's list and join the queue when their predecessor arrives. Events pop
// in (time, seq) order all the same.
template <typename Hooks>
void EventLoop::Start(Hooks& hooks) {
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
  counters_.num_transfers = 0;
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
    if (ws_.inputs[u].pending == 0) MakeReady(hooks, u, 0, Cause{});
  }
  FinishFreeUnits(hooks, 0);
  Dispatch(hooks, 0);
  hooks.OnStarted();
}

template <typename Hooks>
void EventLoop::Run(Hooks& hooks) {
  EventQueue& events = ws_.events;
  while (!events.empty()) {
    const Event event = events.top();
    const double now = event.time;
    if (event.is_transfer()) {
      // Replaces the event by the link's next one.
      Arrive(hooks, event.id(), now);
    } else {
      done_on_top_ = true;
      FinishUnit(hooks, event.id(), now);
    }
    FinishFreeUnits(hooks, now);
    const bool instant_done = events.AllLaterThan(now, done_on_top_);
    if (instant_done) Dispatch(hooks, now);
    if (done_on_top_) {
      events.Pop();
      done_on_top_ = false;
    }
    ++counters_.events;
    if (hooks.AfterEvent(now, instant_done)) return;
  }
}

// Unit u's inputs are all available at `now`, the last one by `cause`. A
// kernel joins its device's ready queue; a unit of no duration (free ops)
// waits on free_stack to finish at once.
template <typename Hooks>
inline void EventLoop::MakeReady(Hooks& hooks, int32_t u, double now,
                                 Cause cause) {
  hooks.OnUnitReady(u);
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
template <typename Hooks>
inline void EventLoop::Dispatch(Hooks& hooks, double now) {
  for (int32_t device : ws_.dirty_devices) {
    if (ws_.device_busy[device] || ws_.ready[device].empty()) continue;
    StartUnit(hooks, ws_.unit_of_rank[ws_.ready[device].PopMin()], now);
  }
  ws_.dirty_devices.clear();
}

template <typename Hooks>
inline void EventLoop::StartUnit(Hooks& hooks, int32_t u, double now) {
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
  hooks.OnKernelStart(u, device, now);
  for (int32_t m = ws_.member_offsets[u]; m < ws_.member_offsets[u + 1]; ++m) {
    const NodeId id = ws_.members[m];
    if (ws_.materialized[id] && !sim_.resident_[id] && !sim_.free_[id]) {
      Allocate(hooks, device, sim_.output_bytes_[id]);
    }
  }
  const Event end =
      Event::Make(unit.end, counters_.seq++, u, /*is_transfer=*/false);
  if (done_on_top_) {
    ws_.events.ReplaceTop(end);
    done_on_top_ = false;
  } else {
    ws_.events.Push(end);
  }
}

// Finishing unit u at `now`: its inputs released, its consumers signalled,
// its outputs sent, its device free.
template <typename Hooks>
void EventLoop::FinishUnit(Hooks& hooks, int32_t u, double now) {
  hooks.OnUnitFinish(u);
  ++counters_.completed_units;
  const double finished_at = ws_.units[u].end;
  if (counters_.last < 0 || finished_at > counters_.last_end ||
      (finished_at == counters_.last_end && u < counters_.last)) {
    counters_.last = u;
    counters_.last_end = finished_at;
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
    SignalConsumers(hooks, id, u, device, now);
    // An output nobody consumes (a graph output) stays allocated.
  }
  if (ws_.units[u].duration > 0) {
    ws_.device_busy[device] = 0;
    ws_.dirty_devices.push_back(device);
  }
}

// The units of no duration made ready at `now` start and finish at once.
template <typename Hooks>
inline void EventLoop::FinishFreeUnits(Hooks& hooks, double now) {
  std::vector<int32_t>& free_stack = ws_.free_stack;
  while (!free_stack.empty()) {
    const int32_t u = free_stack.back();
    free_stack.pop_back();
    UnitState& unit = ws_.units[u];
    unit.start = unit.end = now;
    unit.start_cause = unit.ready_cause;
    hooks.OnFreeUnitStart(u);
    FinishUnit(hooks, u, now);
  }
}

// Node `id` of unit u (on `device`) has finished: each consumer in another
// unit on the same device (or behind a control edge) loses a pending input;
// each on another device gets the node's output by a transfer, one per
// (output, remote device), which its arrival signals.
template <typename Hooks>
inline void EventLoop::SignalConsumers(Hooks& hooks, NodeId id, int32_t u,
                                       int32_t device, double now) {
  // This node's sends are the transfers created from here on.
  const int32_t first_transfer = counters_.num_transfers;
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
      if (--consumer.pending == 0) {
        MakeReady(hooks, v, now, Cause{Cause::kUnit, u});
      }
      continue;
    }
    const int32_t index =
        CarrierFor(hooks, id, u, device, dst_device, e, first_transfer, now);
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
template <typename Hooks>
inline int32_t EventLoop::CarrierFor(Hooks& hooks, NodeId id, int32_t u,
                                     int32_t device, int32_t dst_device,
                                     int32_t e, int32_t first_transfer,
                                     double now) {
  std::vector<Transfer>& transfers = ws_.transfers;
  const int32_t output = sim_.out_output_[e];
  for (int32_t t = first_transfer; t < counters_.num_transfers; ++t) {
    if (transfers[t].output == output &&
        transfers[t].dst_device == dst_device) {
      return t;
    }
  }
  const int32_t index = counters_.num_transfers++;
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
  t.seq = counters_.seq++;
  t.remote_uses = 0;
  t.next_on_link = -1;
  t.first_carried = e;
  t.last_carried = -1;
  t.cause = t.start_s > now && link_last_transfer >= 0
                ? Cause{Cause::kTransfer, link_last_transfer}
                : Cause{Cause::kUnit, u};
  counters_.last_arrival = std::max(counters_.last_arrival, t.end_s);
  if (ABSL_PREDICT_FALSE(link.device_overhead_s > 0)) {
    ChargeDevice(device, now, link.device_overhead_s);
  }
  link_last_transfer = index;
  ++ws_.local_uses[id];  // the send holds the source buffer
  Allocate(hooks, dst_device, t.bytes);
  result_.bytes_moved += t.bytes;
  if (link_tail < 0) {
    ws_.events.Push(Event::Make(t.end_s, t.seq, index, /*is_transfer=*/true));
  } else {
    transfers[link_tail].next_on_link = index;
  }
  link_tail = index;
  transfers[index] = t;
  hooks.OnTransferMade(index);
  return index;
}

// Transfer `index` has arrived at `now`: the sender's buffer loses a use,
// the consumers it feeds lose a pending input, and the next transfer on its
// link becomes the link's event, in place of this one's (still at the top
// of the queue: nothing here pushes or pops); without a next one, this one
// is left on top, marked done_on_top_.
template <typename Hooks>
inline void EventLoop::Arrive(Hooks& hooks, int32_t index, double now) {
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
      MakeReady(hooks, v, now, Cause{Cause::kTransfer, index});
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

// A transfer takes `overhead_s` of `device`'s time at `now`: after the
// kernel it runs, if any, and after the time earlier transfers took. The
// device's next kernel starts no earlier (StartUnit).
inline void EventLoop::ChargeDevice(int32_t device, double now,
                                    double overhead_s) {
  double from = std::max(now, ws_.device_free_at[device]);
  if (ws_.device_busy[device]) {
    from = std::max(from, ws_.units[ws_.device_last_unit[device]].end);
  }
  ws_.device_free_at[device] = from + overhead_s;
  counters_.last_arrival =
      std::max(counters_.last_arrival, ws_.device_free_at[device]);
}

// The inputs of node `id` (in unit `u`) from other units: same-device
// producers lose a use (pushed on release_stack), received copies lose a
// consumer.
inline void EventLoop::ReleaseInputs(NodeId id, int32_t u) {
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
inline void EventLoop::DrainReleases() {
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

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_EVENT_LOOP_H_
