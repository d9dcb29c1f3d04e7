#include "simulator/bounded_run.h"

#include "simulator/trajectory.h"
#include "util/status_macros.h"

namespace gopt::simulator::internal {

BoundedRun::BoundedRun(const Simulator& simulator, const Plan& plan,
                       const SimulationOptions& options, Workspace& workspace,
                       const Trajectory::Data& base, double stop_above_s)
    : ws_(workspace),
      loop_(simulator, plan, options, workspace),
      bound_(workspace.remaining_work,
             base.tail.empty() ? nullptr : base.tail.data(), stop_above_s) {}

absl::Status BoundedRun::Run(CandidateResult* candidate) {
  loop_.SetUp();
  StepTimeBound::CountWork(ws_, loop_.num_units(), loop_.num_devices());
  loop_.Start(*this);
  loop_.Run(*this);
  candidate->events_simulated = loop_.counters().events;
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

void BoundedRun::OnKernelStart(int32_t u, int32_t device, double now) {
  bound_.KernelStarted(ws_.units[u], u, device, now);
}

bool BoundedRun::AfterEvent(double /*now*/, bool instant_done) {
  if (!instant_done) return false;
  stopped_ = bound_.Exceeded(loop_.counters().last_arrival);
  return stopped_;
}

}  // namespace gopt::simulator::internal
