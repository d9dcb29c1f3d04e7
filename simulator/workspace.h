// The event loop's records (per unit, per transfer) and the working memory
// that holds them, reused by every run on a thread. Internal to the
// simulator: the run types (event_loop.h) and the recorded Trajectory
// (trajectory.h) build on it.
#ifndef GOPT_SIMULATOR_WORKSPACE_H_
#define GOPT_SIMULATOR_WORKSPACE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "graph/graph.h"
#include "simulator/event_queue.h"
#include "simulator/min_bit_tree.h"
#include "simulator/op_cost_model.h"
#include "util/huge_pages.h"

namespace gopt::simulator::internal {

// What caused a unit or transfer to start when it did (for the critical
// path): another unit or a transfer, or nothing (a source).
struct Cause {
  enum Type : uint8_t { kNone, kUnit, kTransfer } type = kNone;
  int32_t id = -1;
};

struct Transfer {
  graph::NodeId node;
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
  int32_t rank = 0;  // order in the ready queues (see EventLoop::RankUnits)
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
  // The op of the member with the most FLOPs, and the members that launch
  // a kernel (the learned runtime model's inputs).
  graph::OpKind kind = graph::OpKind::kOther;
  int32_t num_ops = 0;
  uint8_t free = 1;  // no member launches a kernel
  // Priced member by member: an unfused node of a plan with fusion, or a
  // group on a device whose groups run op after op.
  uint8_t op_by_op = 0;
};

// The working memory of a run: per unit, node, edge, device and link arrays
// that each run sizes and fills. Reused across runs (see
// AcquireThreadWorkspace): training simulates thousands of plans of one
// graph, and fresh multi-megabyte vectors per run would cost page faults on
// every run. A plain aggregate: the run using it owns its contents for the
// run's duration; not thread-safe.
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
  std::vector<graph::NodeId> release_stack;
  // Per device the kernel seconds not yet started (runs that bound their
  // step time or record checkpoints: StepTimeBound, RecordingRun).
  std::vector<double> remaining_work;
  // Candidate runs (CandidateRun): the Trajectory whose final state these
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

// The two workspaces of a thread: one for runs from the start (Simulate,
// Record, and candidates simulated in full), one for candidate runs, which
// keeps a Trajectory's final state between calls.
enum class WorkspaceKind { kFullRuns, kCandidateRuns };

// The calling thread's workspace of `kind`, made on first use; `user` (the
// Simulator) becomes its last user (see ReleaseThreadWorkspaces). The
// thread owns it; the reference stays valid until the thread exits or
// ReleaseThreadWorkspaces frees it.
Workspace& AcquireThreadWorkspace(const void* user, WorkspaceKind kind);
// Frees the calling thread's workspaces that `user` used last when they
// hold more than 64 MiB (Workspace::HeldBytes); smaller ones stay for the
// next run. Either way `user` is no longer their last user. Only the
// calling thread's workspaces are affected.
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

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_WORKSPACE_H_
