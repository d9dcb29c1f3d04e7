// The internals of Simulator::Simulate shared by simulator_run.cc (the
// event loop) and incremental.cc (checkpoints and candidate runs): the
// per-unit and per-transfer state, the workspace, the Run class and the
// recorded Trajectory. Not part of the simulator's interface.
#ifndef GOPT_SIMULATOR_SIMULATOR_RUN_H_
#define GOPT_SIMULATOR_SIMULATOR_RUN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/event_queue.h"
#include "simulator/min_bit_tree.h"
#include "simulator/simulator.h"
#include "util/huge_pages.h"
#include "util/status_macros.h"

namespace gopt::simulator {
namespace internal {

using graph::Edge;
using graph::NodeId;

// What caused a unit or transfer to start when it did (for the critical
// path): another unit or a transfer, or nothing (a source).
struct Cause {
  enum Type : uint8_t { kNone, kUnit, kTransfer } type = kNone;
  int32_t id = -1;
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
  // Workspace::next_carried (-1 ends it).
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
  int32_t rank = 0;  // order in the ready queues (see RankUnits)
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
  // A unit priced member by member (op_by_op): its members' kernel
  // seconds, summed (flops and bytes then stay 0).
  double op_by_op_s = 0;
  int64_t bytes = 0;
  graph::DType dtype = graph::DType::kF32;
  // The cost curve of a single node's kernel (a fused kernel: kOther).
  OpCostClass op_class = OpCostClass::kOther;
  uint8_t free = 1;  // no member launches a kernel
  // Priced member by member: an unfused node of a plan with fusion, or a
  // group on a device whose groups run op after op.
  uint8_t op_by_op = 0;
};

// The working memory of Simulate: per unit, node, edge, device and link
// arrays that each call sizes and fills. Reused across calls (see
// ThreadWorkspace): training simulates thousands of plans of one graph, and
// fresh multi-megabyte vectors per call would cost page faults on every
// call.
struct Workspace {
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
  // Per device: the earliest its next kernel may start, after the device
  // time its links' transfers took (Link::device_overhead_s).
  std::vector<double> device_free_at;
  std::vector<Transfer> transfers;
  std::vector<int32_t> next_carried, in_transfer;
  std::vector<int32_t> free_stack, dirty_devices;
  std::vector<NodeId> release_stack;
  std::vector<double> remaining_work;  // per device (incremental runs)
  // Candidate runs (incremental.cc): the Trajectory whose final state these
  // arrays hold (Trajectory::Data::id, 0 for none), apart from what the last
  // candidate changed: the units it touched, the transfers it wrote from
  // `transfers_from` to `transfers_to`, and the live transfers of the
  // checkpoint it started from (`touched_checkpoint`, -1 for none).
  uint64_t base_id = 0;
  std::vector<int32_t> touched;
  int32_t transfers_from = 0;
  int32_t transfers_to = 0;
  int32_t touched_checkpoint = -1;

  // Bytes the per-node and per-edge arrays hold (their capacity), which is
  // all but a few KiB of the workspace.
  size_t HeldBytes() const {
    return Held(unit_of) + Held(member_offsets) + Held(members) + Held(fill) +
           Held(work) + Held(units) + Held(inputs) + Held(materialized) +
           Held(local_uses) + Held(unit_of_rank) + Held(rank_count) +
           Held(transfers) + Held(next_carried) + Held(in_transfer) +
           Held(touched);
  }
  template <typename T>
  static size_t Held(const std::vector<T>& values) {
    return values.capacity() * sizeof(T);
  }
};

// The calling thread's workspace for full runs (`candidate` false) or for
// candidate runs, which keep a Trajectory's final state between calls.
// `user` is the Simulator; see ReleaseThreadWorkspaces.
Workspace& AcquireThreadWorkspace(const void* user, bool candidate);
// Frees the calling thread's workspaces that `user` used last when they
// hold more than 64 MiB (see simulator_run.cc).
void ReleaseThreadWorkspaces(const void* user);

// Makes room for `size` elements of a Workspace array. A new buffer gets the
// huge-page advice before anything touches it: on the first call for a
// graph of a million nodes, faulting these arrays in 4 KiB pages costs
// three times the simulation itself.
template <typename T>
void ReserveScratch(std::vector<T>& values, size_t size) {
  if (values.capacity() >= size) return;
  values.reserve(size);
  AdviseHugePagesForCapacity(values);
}

// The event loop's state at the end of one instant of a recorded run:
// everything a candidate run needs to go on from there that the final state
// does not hold.
struct Checkpoint {
  // One transfer that was still in use (or last on its link) then: its
  // fields that change later.
  struct LiveTransfer {
    int32_t index;
    int32_t remote_uses;
    int32_t next_on_link;
  };
  double time_s = 0;  // every event up to this time is processed
  int64_t events = 0;
  std::vector<UnitInputs> inputs;
  std::vector<int32_t> local_uses;
  std::vector<Event> queue;
  std::vector<std::vector<int32_t>> ready_units;  // per device
  std::vector<uint8_t> device_busy;
  std::vector<int32_t> device_last_unit, link_last_transfer, link_tail;
  std::vector<double> link_free, device_busy_s, remaining_work;
  std::vector<int64_t> memory, peak_memory_bytes;
  int64_t bytes_moved = 0;
  int64_t seq = 0;
  int completed_units = 0;
  int32_t last = -1;
  double last_end = 0;
  double last_arrival = 0;
  int32_t num_transfers = 0;
  std::vector<LiveTransfer> live_transfers;
  // Per device the most memory the run had in use after this checkpoint.
  std::vector<int64_t> later_peak_bytes;
};

}  // namespace internal

// A recorded run (see Simulator::Record): the plan, its result, the final
// state of the event loop and checkpoints along it.
struct Trajectory::Data {
  const Simulator* simulator = nullptr;
  uint64_t id = 0;  // unique per process
  Plan plan;
  SimulationResult result;
  int32_t num_units = 0;
  int32_t rank_offset = 0;  // ranks left free for raised priorities
  int32_t highest_priority = 0;
  int32_t last_unit = -1;  // the unit that finished last, and when
  double last_end_s = 0;
  double last_arrival_s = 0;  // the last transfer's arrival
  std::vector<int32_t> unit_of, member_offsets, members;
  std::vector<uint8_t> materialized;
  std::vector<internal::UnitState> units;  // ranks + rank_offset
  std::vector<int32_t> unit_of_rank;       // over num_units + rank_offset
  std::vector<internal::Transfer> transfers;
  std::vector<int32_t> next_carried, in_transfer;
  std::vector<double> tail;  // per unit, without fusion (else empty)
  std::vector<internal::Checkpoint> checkpoints;
  // Checkpoints of an earlier recording, whose buffers new ones reuse.
  std::vector<internal::Checkpoint> spare_checkpoints;
  int64_t checkpoint_interval = 0;  // loop iterations between checkpoints
  int64_t total_events = 0;
};

using internal::Cause;
using internal::Checkpoint;
using internal::Transfer;
using internal::UnitInputs;
using internal::UnitState;
using internal::UnitWork;
using internal::Workspace;

// One Simulate call: the plan's units (fusion groups and unfused nodes),
// their prices and ranks, the event loop, then the critical path and the
// timeline, each a phase over the workspace's arrays. Lives for one call, on
// one thread; reads the Simulator's per-graph arrays.
class Simulator::Run {
 public:
  using Edge = graph::Edge;
  using NodeId = graph::NodeId;

  Run(const Simulator& simulator, const Plan& plan,
      const SimulationOptions& options, Workspace& workspace)
      : sim_(simulator),
        plan_(plan),
        options_(options),
        ws_(workspace),
        n_(simulator.graph_.num_nodes()),
        num_devices_(simulator.topology_.num_devices()),
        fused_(!plan.fusion_group.empty()) {}

  // Runs the phases in order. InvalidArgument when fusion groups form a
  // cycle (the plan is otherwise valid: Simulate has checked).
  absl::StatusOr<SimulationResult> Simulate() {
    BuildUnits();
    PriceUnits();
    RankUnits();
    RETURN_IF_ERROR(RunEventLoop());
    return Finish();
  }

  // Simulate, keeping checkpoints of the event loop and the final state in
  // `trajectory` (incremental.cc).
  absl::StatusOr<SimulationResult> Record(Trajectory::Data& trajectory);

  // Simulates the candidate plan this Run was made with from the checkpoint
  // `checkpoint` of `base` (which ends before the first event the
  // candidate's differences can change), on a workspace that
  // PrepareCandidateWorkspace made hold `base`'s final state, into
  // `*candidate`: stops (slower_than_cutoff) once the step time is
  // certainly above `stop_above_s` (incremental.cc).
  //
  // PickCheckpoint: the checkpoint of `base` to start this Run's plan from,
  // with the units whose device or priority differ in `*changed_units`; -1
  // when the plan must be simulated from the start (other fusion or
  // layouts, devices that cost differently, a moved parameter, lowered
  // priorities, too many changes, or a change at time 0).
  // PrepareCandidateWorkspace: the workspace set to `base`'s final state.
  // `*same_kernels`: whether the plan's kernels and their times are the
  // base's (same fusion, layouts and device costs), so that the base's
  // tails bound its step time (SimulateBounded).
  int PickCheckpoint(const Trajectory::Data& base,
                     std::vector<int32_t>* changed_units,
                     bool* same_kernels) const;
  void PrepareCandidateWorkspace(const Trajectory::Data& base);
  // Simulates this Run's plan from the start, stopping as SimulateFrom does
  // (the kernels must be the base's: see PickCheckpoint).
  absl::Status SimulateBounded(const Trajectory::Data& base,
                               double stop_above_s, CandidateResult* candidate);
  absl::Status SimulateFrom(const Trajectory::Data& base, int checkpoint,
                            const std::vector<int32_t>& changed_units,
                            double stop_above_s, CandidateResult* candidate);

 private:
  // Phases, in order.
  void BuildUnits();
  void PriceUnits();
  void RankUnits();
  absl::Status RunEventLoop();
  // The end of every run: the critical path, OOM, the timeline.
  SimulationResult Finish();
  void TraceCriticalPath();
  void RecordTimeline();

  // RunEventLoop's parts: the set-up and instant 0, then the events until
  // the queue is empty (or, for a candidate, until its step time is
  // certainly above stop_above_s_).
  void StartEventLoop();
  void LoopEvents();
  absl::Status CheckAllCompleted() const;

  // Incremental runs (incremental.cc): a checkpoint of the loop at the end
  // of instant `now` when one is due, the workspace set to a checkpoint, and
  // the recorded final state.
  void MaybeCheckpoint(double now);
  void Restore(const Trajectory::Data& base, int checkpoint);
  void ApplyChanges(const Trajectory::Data& base,
                    const std::vector<int32_t>& changed_units);
  void KeepFinalState(Trajectory::Data& trajectory) const;
  // A candidate's checks against its base: whether a transfer it made is
  // the base's at the same index, whether at the end of instant `now` its
  // state is the base's at a checkpoint (so the rest of the run is the
  // base's), and then the result completed from the base's.
  ABSL_ATTRIBUTE_NOINLINE void CompareWithBase(int32_t index);
  bool InSyncWithBase(double now);
  bool SameQueueAndReadyUnits(const Checkpoint& checkpoint);
  void FinishAsBase();

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

  // The event loop's steps.
  void Allocate(int32_t device, int64_t amount) {
    int64_t& memory = ws_.memory[device];
    memory += amount;
    if (memory > result_.peak_memory_bytes[device]) {
      result_.peak_memory_bytes[device] = memory;
    }
    if (ABSL_PREDICT_FALSE(recorder_ != nullptr)) TrackMemory(device);
  }
  // A unit the candidate changed (undone before the next candidate).
  void Touch(int32_t u) {
    if (ABSL_PREDICT_FALSE(candidate_)) TrackTouch(u);
  }
  // The incremental runs' bookkeeping, out of the event loop's way
  // (incremental.cc): a kernel started on `device` (remaining work, the
  // bound, raised units started), a free unit started, a unit finished, a
  // unit touched, memory in use while recording.
  ABSL_ATTRIBUTE_NOINLINE void TrackStart(int32_t u, int32_t device,
                                          double now);
  ABSL_ATTRIBUTE_NOINLINE void TrackFreeStart(int32_t u);
  ABSL_ATTRIBUTE_NOINLINE void TrackFinish(int32_t u);
  ABSL_ATTRIBUTE_NOINLINE void TrackTouch(int32_t u);
  ABSL_ATTRIBUTE_NOINLINE void TrackMemory(int32_t device);
  // After each event of a bounded run: counts it, and at the end of an
  // instant checkpoints (recording), stops above the cutoff or rejoins the
  // base (candidates). Whether the loop is done.
  ABSL_ATTRIBUTE_NOINLINE bool AfterEvent(double now, bool instant_done);
  void MakeReady(int32_t u, double now, Cause cause);
  void Dispatch(double now);
  void StartUnit(int32_t u, double now);
  void FinishUnit(int32_t u, double now);
  void FinishFreeUnits(double now);
  void SignalConsumers(NodeId id, int32_t u, int32_t device, double now);
  int32_t CarrierFor(NodeId id, int32_t u, int32_t device, int32_t dst_device,
                     int32_t e, int32_t first_transfer, double now);
  void Arrive(int32_t index, double now);
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

  // Event loop state.
  const Edge* out_base_ = nullptr;  // Graph::out_edges(0)
  const Edge* in_base_ = nullptr;   // Graph::edges()
  int64_t seq_ = 0;                 // events and transfers made so far
  int completed_units_ = 0;
  // Whether the queue's earliest event has been processed but not removed
  // yet: a kernel starting at the same instant takes its place (one heap
  // update instead of a pop and a push). It stays the earliest of all: only
  // transfers are pushed meanwhile, and they end no earlier than now, with
  // later seqs.
  bool done_on_top_ = false;
  // The unit that finishes last (the first in unit order among equals),
  // and the last transfer's arrival: the step time.
  int32_t last_ = -1;
  double last_end_ = 0;
  double last_arrival_ = -std::numeric_limits<double>::infinity();
  int32_t num_transfers_ = 0;  // made so far (ws_.transfers holds more)
  int64_t events_ = 0;         // loop iterations so far

  // Incremental runs. When recording, checkpoints go to recorder_; a
  // candidate records the units it touches and keeps bound_s_, a lower
  // bound on its step time: a started kernel's end plus the work its
  // device has left, and (without fusion) a kernel's start plus its tail,
  // the longest chain of kernel times from it to a sink.
  Trajectory::Data* recorder_ = nullptr;
  bool candidate_ = false;
  bool bounded_ = false;  // keeps ws_.remaining_work (either of the above)
  const double* tail_ = nullptr;
  double stop_above_s_ = std::numeric_limits<double>::infinity();
  double bound_s_ = 0;
  bool stopped_ = false;     // the candidate passed stop_above_s_
  int32_t rank_offset_ = 0;  // a candidate's ranks: unchanged units' + this
  // Recording: per device the most memory in use since the last checkpoint.
  std::vector<int64_t> interval_peak_bytes_;
  // A candidate's state against its base: the base; whether it can still
  // rejoin it (no device changed, no transfer differed so far); the raised
  // units, and how many of them have started; the latest base end time of
  // the units it finished; the next base checkpoint to compare with, and
  // the one it rejoined at.
  const Trajectory::Data* base_ = nullptr;
  bool may_rejoin_ = false;
  int32_t raised_units_ = 0;
  int32_t raised_started_ = 0;
  double base_end_finished_ = -std::numeric_limits<double>::infinity();
  int next_checkpoint_ = 0;
  int rejoined_at_ = -1;
};

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_SIMULATOR_RUN_H_
