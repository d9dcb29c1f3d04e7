// A recorded run (Simulator::Record): what Trajectory holds, for the
// candidate runs that resume from it (CandidateRun) and the studies that
// read it (benchmarks/incremental_benchmark.cc). Internal to the simulator.
#ifndef GOPT_SIMULATOR_TRAJECTORY_H_
#define GOPT_SIMULATOR_TRAJECTORY_H_

#include <cstdint>
#include <vector>

#include "simulator/event_loop.h"
#include "simulator/event_queue.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/workspace.h"

namespace gopt::simulator {
namespace internal {

// Ranks a recording leaves free below its own for raised priorities: the
// most units a candidate may change and still resume from a checkpoint.
inline constexpr int32_t kRaisedRanks = 1024;

// The event loop's state at the end of one instant of a recorded run
// (EventLoop::SaveCheckpoint): everything a candidate run needs to go on
// from there that the final state does not hold.
struct Checkpoint {
  // One transfer that was still in use (or last on its link) then: its
  // fields that change later.
  struct LiveTransfer {
    int32_t index;
    int32_t remote_uses;
    int32_t next_on_link;
  };
  double time_s = 0;  // every event up to this time is processed
  LoopCounters counters;
  std::vector<UnitInputs> inputs;
  std::vector<int32_t> local_uses;
  std::vector<Event> queue;
  std::vector<std::vector<int32_t>> ready_units;  // per device
  std::vector<uint8_t> device_busy;
  std::vector<int32_t> device_last_unit, link_last_transfer, link_tail;
  std::vector<double> link_free, device_busy_s, remaining_work;
  std::vector<int64_t> memory, peak_memory_bytes;
  int64_t bytes_moved = 0;
  std::vector<LiveTransfer> live_transfers;
  // Per device the most memory the run had in use after this checkpoint
  // (RecordingRun).
  std::vector<int64_t> later_peak_bytes;
};

// A new Trajectory::Data::id, unique in the process. Thread-safe.
uint64_t NewTrajectoryId();

}  // namespace internal

// A recorded run (see Simulator::Record): the plan, its result, the final
// state of the event loop and checkpoints along it. Written by RecordingRun;
// immutable afterwards.
struct Trajectory::Data {
  const Simulator* simulator = nullptr;
  uint64_t id = 0;  // unique per process (internal::NewTrajectoryId)
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

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_TRAJECTORY_H_
