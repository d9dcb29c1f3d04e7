// A candidate plan simulated from a checkpoint of a recorded base run
// (Simulator::SimulateCandidate): incremental simulation of the plan
// search's local moves. Internal to the simulator.
#ifndef GOPT_SIMULATOR_CANDIDATE_RUN_H_
#define GOPT_SIMULATOR_CANDIDATE_RUN_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "simulator/event_loop.h"
#include "simulator/plan.h"
#include "simulator/resume_point.h"
#include "simulator/simulator.h"
#include "simulator/step_time_bound.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {

// Resumes the base's event loop at a checkpoint (ResumePoint) with the
// candidate's changes applied (devices, raised priorities), and runs it
// until one of:
//  - the queue empties: the result is FullRun's, bit for bit;
//  - its StepTimeBound passes `stop_above_s` (StepTimeBound::StopAbove of
//    the cutoff) at the end of an instant: slower_than_cutoff;
//  - it rejoins the base: at the end of an instant its state equals the
//    base's at a later checkpoint (no device changed, the same transfers
//    made, every raised unit started), so the rest of the run is the
//    base's and the result is completed from it (EventLoop::AdoptBaseFrom).
//
// The workspace is the thread's candidate workspace (WorkspaceKind::
// kCandidateRuns): Run first sets it to the base's final state, copying the
// base when the workspace last held another one, else undoing what the last
// candidate changed (the units it touched, the transfers it wrote, the live
// transfers of its checkpoint), which the workspace records.
//
//   CandidateResult candidate;
//   RETURN_IF_ERROR(CandidateRun(simulator, plan, options, workspace, base,
//                                stop_above_s).Run(start, &candidate));
//
// Lives for one run on one thread; borrows its arguments, which must
// outlive it, and uses `workspace` exclusively while it runs. Not
// thread-safe.
class CandidateRun : private LoopHooks {
 public:
  CandidateRun(const Simulator& simulator, const Plan& plan,
               const SimulationOptions& options, Workspace& workspace,
               const Trajectory::Data& base, double stop_above_s);

  // Simulates the plan, which must be valid (ValidatePlan), from `start`
  // (ResumePoint::Find of this plan and base, checkpoint >= 0) into
  // `*candidate`: its result, or slower_than_cutoff with the bound; and
  // what the run skipped, simulated and whether it rejoined.
  // InvalidArgument when its fusion groups form a cycle. Call once.
  absl::Status Run(const ResumePoint& start, CandidateResult* candidate);

 private:
  friend class EventLoop;  // calls the hooks

  // The workspace set to the base's final state.
  void PrepareWorkspace();
  // The changed units' devices and raised ranks, their producers' local
  // uses and the devices' remaining work, after EventLoop::Resume.
  void ApplyChanges(const std::vector<int32_t>& changed_units);
  // A unit this run changed (undone by the next candidate's
  // PrepareWorkspace).
  ABSL_ATTRIBUTE_NOINLINE void Touch(int32_t u);

  // The hooks: touched units, raised units started, the bound, the latest
  // base end among finished units, transfers compared with the base's, and
  // at the end of each instant the stop and the rejoin checks.
  void OnUnitReady(int32_t u) { Touch(u); }
  ABSL_ATTRIBUTE_NOINLINE void OnKernelStart(int32_t u, int32_t device,
                                             double now);
  ABSL_ATTRIBUTE_NOINLINE void OnFreeUnitStart(int32_t u);
  ABSL_ATTRIBUTE_NOINLINE void OnUnitFinish(int32_t u);
  ABSL_ATTRIBUTE_NOINLINE void OnTransferMade(int32_t index);
  ABSL_ATTRIBUTE_NOINLINE bool AfterEvent(double now, bool instant_done);

  // Whether at the end of instant `now` the state is the base's at a
  // checkpoint (then rejoined_at_).
  bool InSyncWithBase(double now);

  const Simulator& sim_;
  const Plan& plan_;
  Workspace& ws_;
  const Trajectory::Data& base_;
  EventLoop loop_;
  StepTimeBound bound_;
  bool stopped_ = false;  // the bound passed stop_above_s
  // Whether it can still rejoin the base: no device changed, no transfer
  // differed so far.
  bool may_rejoin_ = true;
  // The raised units, and how many of them have started (ranks below
  // base_.rank_offset).
  int32_t raised_units_ = 0;
  int32_t raised_started_ = 0;
  // The latest base end time of the units it finished.
  double base_end_finished_ = -std::numeric_limits<double>::infinity();
  // The next base checkpoint to compare with, and the one it rejoined at.
  int next_checkpoint_ = 0;
  int rejoined_at_ = -1;
};

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_CANDIDATE_RUN_H_
