#include "simulator/recording_run.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "simulator/step_time_bound.h"
#include "util/status_macros.h"

namespace gopt::simulator::internal {
namespace {

// Checkpoints per run, and the memory they may take (about 12 bytes per
// node each).
constexpr int64_t kMaxCheckpoints = 32;
constexpr int64_t kCheckpointBudgetBytes = int64_t{256} << 20;

}  // namespace

absl::StatusOr<SimulationResult> RecordingRun::Run() {
  // The old checkpoints become spares whose buffers new ones take over.
  for (Checkpoint& old : trajectory_.checkpoints) {
    trajectory_.spare_checkpoints.push_back(std::move(old));
  }
  trajectory_.checkpoints.clear();
  trajectory_.simulator = &sim_;
  trajectory_.id = NewTrajectoryId();
  loop_.SetUp();
  const int32_t num_units = loop_.num_units();
  const int n = sim_.graph().num_nodes();
  StepTimeBound::CountWork(ws_, num_units, loop_.num_devices());
  // Events: one per unit, one per transfer (at most one per edge between
  // devices).
  int64_t events = num_units;
  for (const graph::Edge& edge : sim_.graph().edges()) {
    events += plan_.device[edge.src] != plan_.device[edge.dst];
  }
  const int64_t bytes_per_checkpoint =
      12 * static_cast<int64_t>(n) + 8 * num_units + 1;
  const int64_t checkpoints = std::clamp<int64_t>(
      kCheckpointBudgetBytes / bytes_per_checkpoint, 2, kMaxCheckpoints);
  trajectory_.checkpoint_interval = std::max<int64_t>(64, events / checkpoints);
  interval_peak_bytes_ = ws_.memory;
  loop_.Start(*this);
  loop_.Run(*this);
  RETURN_IF_ERROR(loop_.CheckAllCompleted());
  trajectory_.total_events = loop_.counters().events;
  KeepLaterPeaks();
  KeepFinalState();
  return loop_.Finish();
}

void RecordingRun::OnKernelStart(int32_t u, int32_t device, double /*now*/) {
  ws_.remaining_work[device] -= ws_.units[u].duration;
}

void RecordingRun::OnAllocate(int32_t device) {
  interval_peak_bytes_[device] =
      std::max(interval_peak_bytes_[device], ws_.memory[device]);
}

void RecordingRun::OnStarted() {
  // Unless events at time 0 are still to come (AfterEvent then takes the
  // checkpoint at the end of instant 0).
  if (ws_.events.empty() || ws_.events.top().time > 0) MaybeCheckpoint(0);
}

bool RecordingRun::AfterEvent(double now, bool instant_done) {
  if (instant_done) MaybeCheckpoint(now);
  return false;
}

void RecordingRun::MaybeCheckpoint(double now) {
  std::vector<Checkpoint>& kept = trajectory_.checkpoints;
  if (!kept.empty() && loop_.counters().events - kept.back().counters.events <
                           trajectory_.checkpoint_interval) {
    return;
  }
  if (!kept.empty()) kept.back().later_peak_bytes = interval_peak_bytes_;
  interval_peak_bytes_ = ws_.memory;
  std::vector<Checkpoint>& spares = trajectory_.spare_checkpoints;
  if (spares.empty()) {
    kept.emplace_back();
  } else {
    kept.push_back(std::move(spares.back()));
    spares.pop_back();
  }
  loop_.SaveCheckpoint(now, kept.back());
}

void RecordingRun::KeepLaterPeaks() {
  std::vector<Checkpoint>& kept = trajectory_.checkpoints;
  if (!kept.empty()) kept.back().later_peak_bytes = interval_peak_bytes_;
  const int num_devices = loop_.num_devices();
  for (int k = static_cast<int>(kept.size()) - 2; k >= 0; --k) {
    for (int d = 0; d < num_devices; ++d) {
      kept[k].later_peak_bytes[d] = std::max(kept[k].later_peak_bytes[d],
                                             kept[k + 1].later_peak_bytes[d]);
    }
  }
}

void RecordingRun::KeepFinalState() {
  Trajectory::Data& trajectory = trajectory_;
  const int n = sim_.graph().num_nodes();
  const int32_t num_units = loop_.num_units();
  const LoopCounters& counters = loop_.counters();
  trajectory.plan = plan_;
  trajectory.num_units = num_units;
  trajectory.last_unit = counters.last;
  trajectory.last_end_s = counters.last_end;
  trajectory.last_arrival_s = counters.last_arrival;
  trajectory.rank_offset = kRaisedRanks;
  trajectory.unit_of.assign(ws_.unit_of.begin(), ws_.unit_of.begin() + n);
  trajectory.member_offsets.assign(ws_.member_offsets.begin(),
                                   ws_.member_offsets.begin() + num_units + 1);
  trajectory.members.assign(ws_.members.begin(), ws_.members.begin() + n);
  trajectory.materialized.assign(ws_.materialized.begin(),
                                 ws_.materialized.begin() + n);
  trajectory.units.assign(ws_.units.begin(), ws_.units.begin() + num_units);
  trajectory.unit_of_rank.assign(num_units + kRaisedRanks, -1);
  trajectory.highest_priority = std::numeric_limits<int32_t>::min();
  for (int32_t u = 0; u < num_units; ++u) {
    UnitState& unit = trajectory.units[u];
    unit.rank += kRaisedRanks;
    trajectory.unit_of_rank[unit.rank] = u;
    trajectory.highest_priority =
        std::max(trajectory.highest_priority, unit.priority);
  }
  trajectory.transfers.assign(ws_.transfers.begin(),
                              ws_.transfers.begin() + counters.num_transfers);
  trajectory.next_carried = ws_.next_carried;
  trajectory.in_transfer = ws_.in_transfer;
  trajectory.tail.clear();
  if (loop_.fused()) return;
  // Without fusion units are nodes, in topological order: the tail of a
  // node is its kernel time plus the longest tail among its consumers.
  trajectory.tail.assign(n, 0);
  if (n == 0) return;
  const graph::Edge* out_base = sim_.graph().out_edges(0).data();
  for (graph::NodeId id = n - 1; id >= 0; --id) {
    double longest = 0;
    const absl::Span<const graph::Edge> out = sim_.graph().out_edges(id);
    const int32_t begin = static_cast<int32_t>(out.data() - out_base);
    for (int32_t e = begin; e < begin + static_cast<int32_t>(out.size()); ++e) {
      const graph::NodeId dst = sim_.out_dst_[e];
      longest = std::max(longest, trajectory.tail[dst < 0 ? ~dst : dst]);
    }
    trajectory.tail[id] = ws_.units[id].duration + longest;
  }
}

}  // namespace gopt::simulator::internal
