// Incremental simulation of local moves: Simulator::Record keeps
// checkpoints of a run's event loop, Simulator::SimulateCandidate resumes a
// plan that differs in a few nodes from the last checkpoint before the
// first event the differences can change.
//
// Why resuming is exact: a checkpoint is taken at the end of an instant
// (every event up to its time processed and dispatched). Before a changed
// unit is ready, its priority (rank) decides nothing, and before one of its
// producers finishes, its device decides nothing either: sends, local uses
// and memory only depend on it from then on. So up to the earliest of
// those times (in the base run) both runs process the same events in the
// same state, and the candidate's state at a checkpoint before then is the
// base's, with the changed units' devices, ranks and their producers' local
// uses adjusted.
//
// What a checkpoint need not hold: a unit's times and causes are written
// when it becomes ready, starts or finishes, so those of units not yet
// ready are overwritten before any read; the same holds for a producer's
// sends (next_carried, in_transfer) and for transfers made later. Those
// come from the base's final state, which each thread keeps in its
// candidate workspace and restores after each candidate (the units it
// touched, the transfers it wrote).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/simulator_run.h"
#include "util/status_macros.h"

namespace gopt::simulator {
namespace {

// Ranks left free below the base's for raised priorities: the most units a
// candidate may change and still resume.
constexpr int32_t kRaisedRanks = 1024;
// Checkpoints per run, and the memory they may take (about 12 bytes per
// node each).
constexpr int64_t kMaxCheckpoints = 32;
constexpr int64_t kCheckpointBudgetBytes = int64_t{256} << 20;
// The relative slack of the early stop: the bound adds kernel times in
// another order than the run, so it may exceed the step time by rounding.
constexpr double kStopSlack = 1e-9;
constexpr double kNoCutoff = std::numeric_limits<double>::infinity();

std::atomic<uint64_t> next_trajectory_id{1};

int32_t PriorityOf(const Plan& plan, graph::NodeId id) {
  return plan.priority.empty() ? 0 : plan.priority[id];
}

}  // namespace

Trajectory::Trajectory(std::unique_ptr<Data> data) : data_(std::move(data)) {}
Trajectory::~Trajectory() = default;
std::unique_ptr<Trajectory::Data> Trajectory::TakeData() {
  return std::move(data_);
}
const Plan& Trajectory::plan() const { return data_->plan; }
const SimulationResult& Trajectory::result() const { return data_->result; }
int Trajectory::num_checkpoints() const {
  return static_cast<int>(data_->checkpoints.size());
}
int64_t Trajectory::num_events() const { return data_->total_events; }

absl::StatusOr<std::unique_ptr<Trajectory>> Simulator::Record(
    const Plan& plan, const SimulationOptions& options,
    std::unique_ptr<Trajectory> recycle) const {
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  std::unique_ptr<Trajectory::Data> data;
  if (recycle != nullptr) data = recycle->TakeData();
  if (data == nullptr) data = std::make_unique<Trajectory::Data>();
  // The old checkpoints become spares whose buffers new ones take over.
  for (internal::Checkpoint& old : data->checkpoints) {
    data->spare_checkpoints.push_back(std::move(old));
  }
  data->checkpoints.clear();
  data->simulator = this;
  data->id = next_trajectory_id++;
  Run run(*this, plan, options,
          internal::AcquireThreadWorkspace(this, /*candidate=*/false));
  ASSIGN_OR_RETURN(data->result, run.Record(*data));
  return std::make_unique<Trajectory>(std::move(data));
}

absl::StatusOr<SimulationResult> Simulator::Run::Record(
    Trajectory::Data& trajectory) {
  BuildUnits();
  PriceUnits();
  RankUnits();
  recorder_ = &trajectory;
  bounded_ = true;
  ws_.remaining_work.assign(num_devices_, 0);
  for (int32_t u = 0; u < num_units_; ++u) {
    ws_.remaining_work[ws_.inputs[u].device] += ws_.units[u].duration;
  }
  // Events: one per unit, one per transfer (at most one per edge between
  // devices).
  int64_t events = num_units_;
  for (const Edge& edge : sim_.graph_.edges()) {
    events += plan_.device[edge.src] != plan_.device[edge.dst];
  }
  const int64_t bytes_per_checkpoint =
      12 * static_cast<int64_t>(n_) + 8 * num_units_ + 1;
  const int64_t checkpoints = std::clamp<int64_t>(
      kCheckpointBudgetBytes / bytes_per_checkpoint, 2, kMaxCheckpoints);
  trajectory.checkpoint_interval = std::max<int64_t>(64, events / checkpoints);
  interval_peak_bytes_ = ws_.memory;
  StartEventLoop();
  LoopEvents();
  RETURN_IF_ERROR(CheckAllCompleted());
  trajectory.total_events = events_;
  // The memory peaks after each checkpoint, from those between them.
  std::vector<internal::Checkpoint>& kept = trajectory.checkpoints;
  if (!kept.empty()) kept.back().later_peak_bytes = interval_peak_bytes_;
  for (int k = static_cast<int>(kept.size()) - 2; k >= 0; --k) {
    for (int d = 0; d < num_devices_; ++d) {
      kept[k].later_peak_bytes[d] = std::max(kept[k].later_peak_bytes[d],
                                             kept[k + 1].later_peak_bytes[d]);
    }
  }
  KeepFinalState(trajectory);
  return Finish();
}

void Simulator::Run::TrackStart(int32_t u, int32_t device, double now) {
  const UnitState& unit = ws_.units[u];
  raised_started_ += unit.rank < rank_offset_;
  double& remaining = ws_.remaining_work[device];
  remaining -= unit.duration;
  bound_s_ = std::max(bound_s_, unit.end + remaining);
  if (tail_ != nullptr) bound_s_ = std::max(bound_s_, now + tail_[u]);
}

void Simulator::Run::TrackFreeStart(int32_t u) {
  raised_started_ += ws_.units[u].rank < rank_offset_;
}

void Simulator::Run::TrackFinish(int32_t u) {
  // Only InSyncWithBase reads it, and not once rejoining is ruled out (a
  // base unit's end is a cache miss per finished unit).
  if (!may_rejoin_) return;
  base_end_finished_ = std::max(base_end_finished_, base_->units[u].end);
}

void Simulator::Run::TrackTouch(int32_t u) { ws_.touched.push_back(u); }

void Simulator::Run::TrackMemory(int32_t device) {
  interval_peak_bytes_[device] =
      std::max(interval_peak_bytes_[device], ws_.memory[device]);
}

bool Simulator::Run::AfterEvent(double now, bool instant_done) {
  ++events_;
  if (!instant_done) return false;
  if (recorder_ != nullptr) MaybeCheckpoint(now);
  if (std::max(bound_s_, last_arrival_) > stop_above_s_) {
    stopped_ = true;
    return true;
  }
  if (candidate_ && InSyncWithBase(now)) {
    FinishAsBase();
    return true;
  }
  return false;
}

void Simulator::Run::MaybeCheckpoint(double now) {
  Trajectory::Data& trajectory = *recorder_;
  if (!trajectory.checkpoints.empty() &&
      events_ - trajectory.checkpoints.back().events <
          trajectory.checkpoint_interval) {
    return;
  }
  if (!trajectory.checkpoints.empty()) {
    trajectory.checkpoints.back().later_peak_bytes = interval_peak_bytes_;
  }
  interval_peak_bytes_ = ws_.memory;
  std::vector<Checkpoint>& spares = trajectory.spare_checkpoints;
  if (spares.empty()) {
    trajectory.checkpoints.emplace_back();
  } else {
    trajectory.checkpoints.push_back(std::move(spares.back()));
    spares.pop_back();
  }
  Checkpoint& c = trajectory.checkpoints.back();
  c.time_s = now;
  c.events = events_;
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
  c.seq = seq_;
  c.completed_units = completed_units_;
  c.last = last_;
  c.last_end = last_end_;
  c.last_arrival = last_arrival_;
  c.num_transfers = num_transfers_;
  // Transfers whose fields change later: those still feeding consumers
  // (remote_uses) and the last queued on each link (next_on_link).
  for (int32_t t = 0; t < num_transfers_; ++t) {
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

void Simulator::Run::KeepFinalState(Trajectory::Data& trajectory) const {
  trajectory.plan = plan_;
  trajectory.num_units = num_units_;
  trajectory.last_unit = last_;
  trajectory.last_end_s = last_end_;
  trajectory.last_arrival_s = last_arrival_;
  trajectory.rank_offset = kRaisedRanks;
  trajectory.unit_of.assign(ws_.unit_of.begin(), ws_.unit_of.begin() + n_);
  trajectory.member_offsets.assign(ws_.member_offsets.begin(),
                                   ws_.member_offsets.begin() + num_units_ + 1);
  trajectory.members.assign(ws_.members.begin(), ws_.members.begin() + n_);
  trajectory.materialized.assign(ws_.materialized.begin(),
                                 ws_.materialized.begin() + n_);
  trajectory.units.assign(ws_.units.begin(), ws_.units.begin() + num_units_);
  trajectory.unit_of_rank.assign(num_units_ + kRaisedRanks, -1);
  trajectory.highest_priority = std::numeric_limits<int32_t>::min();
  for (int32_t u = 0; u < num_units_; ++u) {
    UnitState& unit = trajectory.units[u];
    unit.rank += kRaisedRanks;
    trajectory.unit_of_rank[unit.rank] = u;
    trajectory.highest_priority =
        std::max(trajectory.highest_priority, unit.priority);
  }
  trajectory.transfers.assign(ws_.transfers.begin(),
                              ws_.transfers.begin() + num_transfers_);
  trajectory.next_carried = ws_.next_carried;
  trajectory.in_transfer = ws_.in_transfer;
  trajectory.tail.clear();
  if (fused_) return;
  // Without fusion units are nodes, in topological order: the tail of a
  // node is its kernel time plus the longest tail among its consumers.
  trajectory.tail.assign(n_, 0);
  for (NodeId id = n_ - 1; id >= 0; --id) {
    double longest = 0;
    const absl::Span<const Edge> out = sim_.graph_.out_edges(id);
    const int32_t begin = static_cast<int32_t>(out.data() - out_base_);
    for (int32_t e = begin; e < begin + static_cast<int32_t>(out.size()); ++e) {
      const NodeId dst = sim_.out_dst_[e];
      longest = std::max(longest, trajectory.tail[dst < 0 ? ~dst : dst]);
    }
    trajectory.tail[id] = ws_.units[id].duration + longest;
  }
}

int Simulator::Run::PickCheckpoint(const Trajectory::Data& base,
                                   std::vector<int32_t>* changed_units,
                                   bool* same_kernels) const {
  changed_units->clear();
  // Transfers that take device time move kernels as devices change: such
  // candidates run in full.
  *same_kernels = sim_.num_device_classes_ == 1 &&
                  !sim_.link_device_overheads_ &&
                  plan_.fusion_group == base.plan.fusion_group &&
                  plan_.layout == base.plan.layout;
  if (!*same_kernels || base.checkpoints.empty()) return -1;
  for (NodeId id = 0; id < n_; ++id) {
    if (plan_.device[id] == base.plan.device[id] &&
        PriorityOf(plan_, id) == PriorityOf(base.plan, id)) {
      continue;
    }
    if (changed_units->size() >= static_cast<size_t>(kRaisedRanks)) return -1;
    changed_units->push_back(base.unit_of[id]);
  }
  std::sort(changed_units->begin(), changed_units->end());
  changed_units->erase(
      std::unique(changed_units->begin(), changed_units->end()),
      changed_units->end());
  // The earliest time a difference can change an event in the base run.
  double first_s = std::numeric_limits<double>::infinity();
  for (const int32_t u : *changed_units) {
    const UnitState& unit = base.units[u];
    int32_t priority = std::numeric_limits<int32_t>::min();
    bool moved = false;
    for (int32_t m = base.member_offsets[u]; m < base.member_offsets[u + 1];
         ++m) {
      const NodeId id = base.members[m];
      priority = std::max(priority, PriorityOf(plan_, id));
      if (plan_.device[id] == base.plan.device[id]) continue;
      // A resident node is allocated before the first event.
      if (sim_.resident_[id]) return -1;
      moved = true;
      for (const Edge& edge : sim_.graph_.in_edges(id)) {
        const int32_t producer = base.unit_of[edge.src];
        if (producer != u)
          first_s = std::min(first_s, base.units[producer].end);
      }
    }
    if (priority != unit.priority) {
      // Only raised above every unit keeps the others' ranks.
      if (priority <= base.highest_priority) return -1;
      first_s = std::min(first_s, unit.ready_at);
    }
    if (moved) first_s = std::min(first_s, unit.ready_at);
  }
  int checkpoint = -1;
  for (int c = 0; c < static_cast<int>(base.checkpoints.size()); ++c) {
    if (!(base.checkpoints[c].time_s < first_s)) break;
    checkpoint = c;
  }
  return checkpoint;
}

void Simulator::Run::PrepareCandidateWorkspace(const Trajectory::Data& base) {
  Workspace& ws = ws_;
  const size_t edges = sim_.graph_.edges().size();
  if (ws.base_id != base.id) {
    ws.base_id = 0;
    ws.unit_of = base.unit_of;
    ws.member_offsets = base.member_offsets;
    ws.members = base.members;
    ws.materialized = base.materialized;
    ws.units = base.units;
    ws.unit_of_rank = base.unit_of_rank;
    ws.next_carried = base.next_carried;
    ws.in_transfer = base.in_transfer;
    internal::ReserveScratch(ws.transfers, edges);
    if (ws.transfers.size() < edges) ws.transfers.resize(edges);
    std::copy(base.transfers.begin(), base.transfers.end(),
              ws.transfers.begin());
    ws.inputs.resize(base.num_units);
    ws.local_uses.resize(n_);
    ws.touched.clear();
    ws.transfers_from = ws.transfers_to = 0;
    ws.touched_checkpoint = -1;
    ws.base_id = base.id;
    return;
  }
  // Undo the last candidate.
  for (const int32_t u : ws.touched) {
    ws.units[u] = base.units[u];
    for (int32_t m = ws.member_offsets[u]; m < ws.member_offsets[u + 1]; ++m) {
      const absl::Span<const Edge> out = sim_.graph_.out_edges(ws.members[m]);
      const int32_t begin =
          static_cast<int32_t>(out.data() - sim_.graph_.out_edges(0).data());
      for (int32_t e = begin; e < begin + static_cast<int32_t>(out.size());
           ++e) {
        ws.next_carried[e] = base.next_carried[e];
        const int32_t j = sim_.in_index_of_out_edge_[e];
        ws.in_transfer[j] = base.in_transfer[j];
      }
    }
  }
  ws.touched.clear();
  const int32_t recorded = static_cast<int32_t>(base.transfers.size());
  for (int32_t t = ws.transfers_from; t < std::min(ws.transfers_to, recorded);
       ++t) {
    ws.transfers[t] = base.transfers[t];
  }
  if (ws.touched_checkpoint >= 0) {
    for (const Checkpoint::LiveTransfer& live :
         base.checkpoints[ws.touched_checkpoint].live_transfers) {
      ws.transfers[live.index] = base.transfers[live.index];
    }
  }
  ws.touched_checkpoint = -1;
  ws.transfers_from = ws.transfers_to = 0;
}

void Simulator::Run::Restore(const Trajectory::Data& base, int checkpoint) {
  const Checkpoint& c = base.checkpoints[checkpoint];
  ws_.touched_checkpoint = checkpoint;
  ws_.transfers_from = c.num_transfers;
  std::copy(c.inputs.begin(), c.inputs.end(), ws_.inputs.begin());
  std::copy(c.local_uses.begin(), c.local_uses.end(), ws_.local_uses.begin());
  ws_.events.Assign(c.queue);
  ws_.ready.resize(num_devices_);
  // The units ready or running now are the ones this run may change
  // without making them ready (see MakeReady's Touch).
  for (int d = 0; d < num_devices_; ++d) {
    ws_.ready[d].Reset(num_units_ + rank_offset_);
    for (const int32_t u : c.ready_units[d]) {
      ws_.ready[d].Insert(ws_.units[u].rank);
      ws_.touched.push_back(u);
    }
    if (c.device_busy[d]) ws_.touched.push_back(c.device_last_unit[d]);
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
  seq_ = c.seq;
  completed_units_ = c.completed_units;
  last_ = c.last;
  last_end_ = c.last_end;
  last_arrival_ = c.last_arrival;
  num_transfers_ = c.num_transfers;
  events_ = c.events;
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

void Simulator::Run::ApplyChanges(const Trajectory::Data& base,
                                  const std::vector<int32_t>& changed_units) {
  std::vector<std::pair<int32_t, int32_t>> raised;  // (priority, unit)
  std::vector<NodeId> recount;  // nodes whose local uses may change
  for (const int32_t u : changed_units) {
    Touch(u);
    int32_t priority = std::numeric_limits<int32_t>::min();
    int32_t device = 0;
    for (int32_t m = ws_.member_offsets[u]; m < ws_.member_offsets[u + 1];
         ++m) {
      const NodeId id = ws_.members[m];
      priority = std::max(priority, PriorityOf(plan_, id));
      device = plan_.device[id];
      if (device == base.plan.device[id]) continue;
      recount.push_back(id);
      for (const Edge& edge : sim_.graph_.in_edges(id)) {
        if (!edge.control && ws_.unit_of[edge.src] != u) {
          recount.push_back(edge.src);
        }
      }
    }
    if (priority != ws_.units[u].priority) raised.push_back({priority, u});
    UnitInputs& inputs = ws_.inputs[u];
    if (device != inputs.device) {
      const double duration = ws_.units[u].duration;
      ws_.remaining_work[inputs.device] -= duration;
      ws_.remaining_work[device] += duration;
      inputs.device = device;
    }
  }
  if (!recount.empty()) may_rejoin_ = false;  // a device changed
  // Raised units rank first: highest priority, then lowest unit.
  std::sort(raised.begin(), raised.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  raised_units_ = static_cast<int32_t>(raised.size());
  for (size_t r = 0; r < raised.size(); ++r) {
    UnitState& unit = ws_.units[raised[r].second];
    unit.priority = raised[r].first;
    unit.rank = static_cast<int32_t>(r);
    ws_.unit_of_rank[r] = raised[r].second;
  }
  // A node's local uses: its consumers in other units on its device (see
  // PriceNode), under the candidate's devices instead of the base's.
  std::sort(recount.begin(), recount.end());
  recount.erase(std::unique(recount.begin(), recount.end()), recount.end());
  for (const NodeId id : recount) {
    int32_t delta = 0;
    for (const Edge& edge : sim_.graph_.out_edges(id)) {
      if (edge.control || ws_.unit_of[edge.dst] == ws_.unit_of[id]) continue;
      delta += plan_.device[edge.dst] == plan_.device[id];
      delta -= base.plan.device[edge.dst] == base.plan.device[id];
    }
    ws_.local_uses[id] += delta;
  }
  // The kernels running now end no earlier than planned, and their devices'
  // remaining work follows them.
  for (int d = 0; d < num_devices_; ++d) {
    const int32_t u = ws_.device_last_unit[d];
    if (!ws_.device_busy[d] || u < 0) continue;
    bound_s_ = std::max(bound_s_, ws_.units[u].end + ws_.remaining_work[d]);
  }
}

absl::Status Simulator::Run::SimulateBounded(const Trajectory::Data& base,
                                             double stop_above_s,
                                             CandidateResult* candidate) {
  BuildUnits();
  PriceUnits();
  RankUnits();
  bounded_ = true;
  stop_above_s_ = stop_above_s;
  tail_ = base.tail.empty() ? nullptr : base.tail.data();
  ws_.remaining_work.assign(num_devices_, 0);
  for (int32_t u = 0; u < num_units_; ++u) {
    ws_.remaining_work[ws_.inputs[u].device] += ws_.units[u].duration;
  }
  StartEventLoop();
  LoopEvents();
  candidate->events_simulated = events_;
  if (stopped_) {
    candidate->slower_than_cutoff = true;
    candidate->step_time_lower_bound_s = std::max(bound_s_, last_arrival_);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckAllCompleted());
  candidate->result = Finish();
  return absl::OkStatus();
}

absl::Status Simulator::Run::SimulateFrom(
    const Trajectory::Data& base, int checkpoint,
    const std::vector<int32_t>& changed_units, double stop_above_s,
    CandidateResult* candidate) {
  candidate_ = true;
  bounded_ = true;
  base_ = &base;
  may_rejoin_ = true;
  next_checkpoint_ = checkpoint + 1;
  stop_above_s_ = stop_above_s;
  rank_offset_ = base.rank_offset;
  num_units_ = base.num_units;
  tail_ = base.tail.empty() ? nullptr : base.tail.data();
  result_.num_kernels = base.result.num_kernels;
  result_.layout_copy_s = base.result.layout_copy_s;
  Restore(base, checkpoint);
  ApplyChanges(base, changed_units);
  const int64_t events_before = events_;
  LoopEvents();
  candidate->incremental = true;
  candidate->events_skipped = events_before;
  candidate->events_simulated = events_ - events_before;
  candidate->rejoined_base = rejoined_at_ >= 0;
  ws_.transfers_to = num_transfers_;
  if (stopped_) {
    candidate->slower_than_cutoff = true;
    candidate->step_time_lower_bound_s = std::max(bound_s_, last_arrival_);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckAllCompleted());
  candidate->result = Finish();
  return absl::OkStatus();
}

void Simulator::Run::CompareWithBase(int32_t index) {
  if (!may_rejoin_) return;
  const Transfer& transfer = ws_.transfers[index];
  if (index >= static_cast<int32_t>(base_->transfers.size())) {
    may_rejoin_ = false;
    return;
  }
  const Transfer& b = base_->transfers[index];
  may_rejoin_ = transfer.node == b.node && transfer.output == b.output &&
                transfer.dst_device == b.dst_device &&
                transfer.start_s == b.start_s && transfer.end_s == b.end_s &&
                transfer.seq == b.seq;
}

// The candidate's state equals the base's at checkpoint k when: it made the
// base's transfers (CompareWithBase), finished the same units (as many, all
// finished by then in the base), every raised unit has started (ranks no
// longer matter), and the queue, the ready units (with their ready times
// and causes), the devices, links, memory and counters are equal. Pending
// inputs and local uses follow from the same units finished and transfers
// made, so they need no comparing.
bool Simulator::Run::InSyncWithBase(double now) {
  if (!may_rejoin_ || raised_started_ < raised_units_) return false;
  const std::vector<Checkpoint>& checkpoints = base_->checkpoints;
  while (next_checkpoint_ < static_cast<int>(checkpoints.size()) &&
         checkpoints[next_checkpoint_].time_s < now) {
    ++next_checkpoint_;
  }
  if (next_checkpoint_ >= static_cast<int>(checkpoints.size())) return false;
  const Checkpoint& k = checkpoints[next_checkpoint_];
  if (k.time_s != now || k.completed_units != completed_units_ ||
      base_end_finished_ > now || k.num_transfers != num_transfers_ ||
      k.seq != seq_ || k.bytes_moved != result_.bytes_moved ||
      k.memory != ws_.memory || k.device_busy_s != result_.device_busy_s ||
      k.device_busy != ws_.device_busy ||
      k.device_last_unit != ws_.device_last_unit ||
      k.link_free != ws_.link_free || k.link_tail != ws_.link_tail ||
      k.link_last_transfer != ws_.link_last_transfer ||
      k.last_arrival != last_arrival_ || !SameQueueAndReadyUnits(k)) {
    return false;
  }
  rejoined_at_ = next_checkpoint_;
  return true;
}

bool Simulator::Run::SameQueueAndReadyUnits(const Checkpoint& checkpoint) {
  auto earlier = [](const Event& a, const Event& b) { return a.Before(b); };
  std::vector<Event> queue = ws_.events.heap();
  std::vector<Event> expected = checkpoint.queue;
  if (queue.size() != expected.size()) return false;
  std::sort(queue.begin(), queue.end(), earlier);
  std::sort(expected.begin(), expected.end(), earlier);
  for (size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].time != expected[i].time || queue[i].tag != expected[i].tag) {
      return false;
    }
  }
  for (int d = 0; d < num_devices_; ++d) {
    const std::vector<int32_t>& ready = checkpoint.ready_units[d];
    size_t i = 0;
    bool same = true;
    ws_.ready[d].ForEach([&](int64_t rank) {
      const int32_t u = ws_.unit_of_rank[rank];
      const UnitState& unit = ws_.units[u];
      const UnitState& planned = base_->units[u];
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

// From the checkpoint it rejoined at the run is the base's: the units,
// sends and transfers still to come are the base's final ones (already in
// the workspace), and the totals are the base's, but for the memory peak
// and the last unit, which may have changed before.
void Simulator::Run::FinishAsBase() {
  const Checkpoint& k = base_->checkpoints[rejoined_at_];
  for (int d = 0; d < num_devices_; ++d) {
    result_.peak_memory_bytes[d] =
        std::max(result_.peak_memory_bytes[d], k.later_peak_bytes[d]);
  }
  const double base_end = base_->last_end_s;
  if (base_->last_unit >= 0 &&
      (last_ < 0 || base_end > last_end_ ||
       (base_end == last_end_ && base_->last_unit < last_))) {
    last_ = base_->last_unit;
    last_end_ = base_end;
  }
  last_arrival_ = base_->last_arrival_s;  // the same transfers until now
  result_.device_busy_s = base_->result.device_busy_s;
  result_.bytes_moved = base_->result.bytes_moved;
  num_transfers_ = static_cast<int32_t>(base_->transfers.size());
  completed_units_ = num_units_;
}

absl::StatusOr<CandidateResult> Simulator::SimulateCandidate(
    const Trajectory& base, const Plan& plan, const SimulationOptions& options,
    double cutoff_s) const {
  const Trajectory::Data& data = base.data();
  if (data.simulator != this) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SimulateCandidate on graph '", graph_.name(),
        "': the base trajectory was recorded by another simulator"));
  }
  RETURN_IF_ERROR(ValidatePlan(plan, graph_, topology_));
  CandidateResult candidate;
  Run run(*this, plan, options,
          internal::AcquireThreadWorkspace(this, /*candidate=*/true));
  std::vector<int32_t> changed_units;
  bool same_kernels = false;
  const int checkpoint =
      run.PickCheckpoint(data, &changed_units, &same_kernels);
  const double stop_above_s =
      cutoff_s + kStopSlack * std::abs(cutoff_s) + 1e-300;
  if (checkpoint < 0) {
    Run full(*this, plan, options,
             internal::AcquireThreadWorkspace(this, /*candidate=*/false));
    if (!same_kernels || !(stop_above_s < kNoCutoff)) {
      ASSIGN_OR_RETURN(candidate.result, full.Simulate());
      return candidate;
    }
    RETURN_IF_ERROR(full.SimulateBounded(data, stop_above_s, &candidate));
    return candidate;
  }
  run.PrepareCandidateWorkspace(data);
  RETURN_IF_ERROR(run.SimulateFrom(data, checkpoint, changed_units,
                                   stop_above_s, &candidate));
  return candidate;
}

}  // namespace gopt::simulator
