#include "simulator/resume_point.h"

#include <algorithm>
#include <limits>

#include "simulator/trajectory.h"

namespace gopt::simulator::internal {
namespace {

int32_t PriorityOf(const Plan& plan, graph::NodeId id) {
  return plan.priority.empty() ? 0 : plan.priority[id];
}

}  // namespace

ResumePoint ResumePoint::Find(const Simulator& simulator,
                              const Trajectory::Data& base, const Plan& plan) {
  ResumePoint start;
  std::vector<int32_t>& changed_units = start.changed_units;
  const int n = simulator.graph().num_nodes();
  // Transfers that take device time move kernels as devices change: such
  // candidates run in full.
  start.same_kernels = simulator.num_device_classes_ == 1 &&
                       !simulator.link_device_overheads_ &&
                       plan.fusion_group == base.plan.fusion_group &&
                       plan.layout == base.plan.layout;
  if (!start.same_kernels || base.checkpoints.empty()) return start;
  for (graph::NodeId id = 0; id < n; ++id) {
    if (plan.device[id] == base.plan.device[id] &&
        PriorityOf(plan, id) == PriorityOf(base.plan, id)) {
      continue;
    }
    if (changed_units.size() >= static_cast<size_t>(kRaisedRanks)) {
      return start;
    }
    changed_units.push_back(base.unit_of[id]);
  }
  std::sort(changed_units.begin(), changed_units.end());
  changed_units.erase(std::unique(changed_units.begin(), changed_units.end()),
                      changed_units.end());
  // The earliest time a difference can change an event in the base run.
  double first_s = std::numeric_limits<double>::infinity();
  for (const int32_t u : changed_units) {
    const UnitState& unit = base.units[u];
    int32_t priority = std::numeric_limits<int32_t>::min();
    bool moved = false;
    for (int32_t m = base.member_offsets[u]; m < base.member_offsets[u + 1];
         ++m) {
      const graph::NodeId id = base.members[m];
      priority = std::max(priority, PriorityOf(plan, id));
      if (plan.device[id] == base.plan.device[id]) continue;
      // A resident node is allocated before the first event.
      if (simulator.resident_[id]) return start;
      moved = true;
      for (const graph::Edge& edge : simulator.graph().in_edges(id)) {
        const int32_t producer = base.unit_of[edge.src];
        if (producer != u) {
          first_s = std::min(first_s, base.units[producer].end);
        }
      }
    }
    if (priority != unit.priority) {
      // Only raised above every unit keeps the others' ranks.
      if (priority <= base.highest_priority) return start;
      first_s = std::min(first_s, unit.ready_at);
    }
    if (moved) first_s = std::min(first_s, unit.ready_at);
  }
  for (int c = 0; c < static_cast<int>(base.checkpoints.size()); ++c) {
    if (!(base.checkpoints[c].time_s < first_s)) break;
    start.checkpoint = c;
  }
  return start;
}

}  // namespace gopt::simulator::internal
