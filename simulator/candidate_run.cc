#include "simulator/candidate_run.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "util/status_macros.h"

namespace gopt::simulator::internal {
namespace {

int32_t PriorityOf(const Plan& plan, graph::NodeId id) {
  return plan.priority.empty() ? 0 : plan.priority[id];
}

}  // namespace

CandidateRun::CandidateRun(const Simulator& simulator, const Plan& plan,
                           const SimulationOptions& options,
                           Workspace& workspace, const Trajectory::Data& base,
                           double stop_above_s)
    : sim_(simulator),
      plan_(plan),
      ws_(workspace),
      base_(base),
      loop_(simulator, plan, options, workspace),
      bound_(workspace.remaining_work,
             base.tail.empty() ? nullptr : base.tail.data(), stop_above_s) {}

absl::Status CandidateRun::Run(const ResumePoint& start,
                               CandidateResult* candidate) {
  PrepareWorkspace();
  const Checkpoint& checkpoint = base_.checkpoints[start.checkpoint];
  next_checkpoint_ = start.checkpoint + 1;
  ws_.touched_checkpoint = start.checkpoint;
  ws_.transfers_from = checkpoint.counters.num_transfers;
  loop_.Resume(base_, checkpoint);
  // The units ready or running now are the ones this run may change
  // without making them ready (see OnUnitReady).
  for (int d = 0; d < loop_.num_devices(); ++d) {
    for (const int32_t u : checkpoint.ready_units[d]) ws_.touched.push_back(u);
    if (checkpoint.device_busy[d]) {
      ws_.touched.push_back(checkpoint.device_last_unit[d]);
    }
  }
  ApplyChanges(start.changed_units);
  const int64_t events_before = loop_.counters().events;
  loop_.Run(*this);
  candidate->incremental = true;
  candidate->events_skipped = events_before;
  candidate->events_simulated = loop_.counters().events - events_before;
  candidate->rejoined_base = rejoined_at_ >= 0;
  ws_.transfers_to = loop_.counters().num_transfers;
  if (stopped_) {
    candidate->slower_than_cutoff = true;
    candidate->step_time_lower_bound_s =
        bound_.seconds(loop_.counters().last_arrival);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(loop_.CheckAllCompleted());
  candidate->result = loop_.Finish();
  return absl::OkStatus();
}

void CandidateRun::PrepareWorkspace() {
  Workspace& ws = ws_;
  const Trajectory::Data& base = base_;
  const graph::Graph& graph = sim_.graph();
  const size_t edges = graph.edges().size();
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
    ReserveScratch(ws.transfers, edges);
    if (ws.transfers.size() < edges) ws.transfers.resize(edges);
    std::copy(base.transfers.begin(), base.transfers.end(),
              ws.transfers.begin());
    ws.inputs.resize(base.num_units);
    ws.local_uses.resize(graph.num_nodes());
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
      const absl::Span<const graph::Edge> out = graph.out_edges(ws.members[m]);
      const int32_t begin =
          static_cast<int32_t>(out.data() - graph.out_edges(0).data());
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

void CandidateRun::ApplyChanges(const std::vector<int32_t>& changed_units) {
  const graph::Graph& graph = sim_.graph();
  std::vector<std::pair<int32_t, int32_t>> raised;  // (priority, unit)
  std::vector<graph::NodeId> recount;  // nodes whose local uses may change
  for (const int32_t u : changed_units) {
    Touch(u);
    int32_t priority = std::numeric_limits<int32_t>::min();
    int32_t device = 0;
    for (int32_t m = ws_.member_offsets[u]; m < ws_.member_offsets[u + 1];
         ++m) {
      const graph::NodeId id = ws_.members[m];
      priority = std::max(priority, PriorityOf(plan_, id));
      device = plan_.device[id];
      if (device == base_.plan.device[id]) continue;
      recount.push_back(id);
      for (const graph::Edge& edge : graph.in_edges(id)) {
        if (!edge.control && ws_.unit_of[edge.src] != u) {
          recount.push_back(edge.src);
        }
      }
    }
    if (priority != ws_.units[u].priority) raised.push_back({priority, u});
    UnitInputs& inputs = ws_.inputs[u];
    if (device != inputs.device) {
      bound_.MoveWork(ws_.units[u].duration, inputs.device, device);
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
  // EventLoop::PriceNode), under the candidate's devices instead of the
  // base's.
  std::sort(recount.begin(), recount.end());
  recount.erase(std::unique(recount.begin(), recount.end()), recount.end());
  for (const graph::NodeId id : recount) {
    int32_t delta = 0;
    for (const graph::Edge& edge : graph.out_edges(id)) {
      if (edge.control || ws_.unit_of[edge.dst] == ws_.unit_of[id]) continue;
      delta += plan_.device[edge.dst] == plan_.device[id];
      delta -= base_.plan.device[edge.dst] == base_.plan.device[id];
    }
    ws_.local_uses[id] += delta;
  }
  // The kernels running now end no earlier than planned, and their devices'
  // remaining work follows them.
  for (int d = 0; d < loop_.num_devices(); ++d) {
    const int32_t u = ws_.device_last_unit[d];
    if (!ws_.device_busy[d] || u < 0) continue;
    bound_.KernelRunning(ws_.units[u].end, d);
  }
}

void CandidateRun::Touch(int32_t u) { ws_.touched.push_back(u); }

void CandidateRun::OnKernelStart(int32_t u, int32_t device, double now) {
  const UnitState& unit = ws_.units[u];
  raised_started_ += unit.rank < base_.rank_offset;
  bound_.KernelStarted(unit, u, device, now);
}

void CandidateRun::OnFreeUnitStart(int32_t u) {
  raised_started_ += ws_.units[u].rank < base_.rank_offset;
}

void CandidateRun::OnUnitFinish(int32_t u) {
  // Only InSyncWithBase reads it, and not once rejoining is ruled out (a
  // base unit's end is a cache miss per finished unit).
  if (!may_rejoin_) return;
  base_end_finished_ = std::max(base_end_finished_, base_.units[u].end);
}

// Whether the transfer it made at `index` is the base's at the same index.
void CandidateRun::OnTransferMade(int32_t index) {
  if (!may_rejoin_) return;
  const Transfer& transfer = ws_.transfers[index];
  if (index >= static_cast<int32_t>(base_.transfers.size())) {
    may_rejoin_ = false;
    return;
  }
  const Transfer& b = base_.transfers[index];
  may_rejoin_ = transfer.node == b.node && transfer.output == b.output &&
                transfer.dst_device == b.dst_device &&
                transfer.start_s == b.start_s && transfer.end_s == b.end_s &&
                transfer.seq == b.seq;
}

bool CandidateRun::AfterEvent(double now, bool instant_done) {
  if (!instant_done) return false;
  if (bound_.Exceeded(loop_.counters().last_arrival)) {
    stopped_ = true;
    return true;
  }
  if (InSyncWithBase(now)) {
    loop_.AdoptBaseFrom(base_, base_.checkpoints[rejoined_at_]);
    return true;
  }
  return false;
}

// The candidate's state equals the base's at checkpoint k when: it made the
// base's transfers (OnTransferMade), finished the same units (as many, all
// finished by then in the base), every raised unit has started (ranks no
// longer matter), and the queue, the ready units (with their ready times
// and causes), the devices, links, memory and counters are equal
// (EventLoop::MatchesCheckpoint). Pending inputs and local uses follow from
// the same units finished and transfers made, so they need no comparing.
bool CandidateRun::InSyncWithBase(double now) {
  if (!may_rejoin_ || raised_started_ < raised_units_) return false;
  const std::vector<Checkpoint>& checkpoints = base_.checkpoints;
  while (next_checkpoint_ < static_cast<int>(checkpoints.size()) &&
         checkpoints[next_checkpoint_].time_s < now) {
    ++next_checkpoint_;
  }
  if (next_checkpoint_ >= static_cast<int>(checkpoints.size())) return false;
  const Checkpoint& k = checkpoints[next_checkpoint_];
  if (k.time_s != now || base_end_finished_ > now ||
      !loop_.MatchesCheckpoint(base_, k)) {
    return false;
  }
  rejoined_at_ = next_checkpoint_;
  return true;
}

}  // namespace gopt::simulator::internal
