// A candidate plan simulated from the start that stops once its step time
// is certainly above a cutoff (Simulator::SimulateCandidate, when the
// candidate cannot resume from its base). Internal to the simulator.
#ifndef GOPT_SIMULATOR_BOUNDED_RUN_H_
#define GOPT_SIMULATOR_BOUNDED_RUN_H_

#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "simulator/event_loop.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/step_time_bound.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {

// A full run that keeps a StepTimeBound (with the base's tails) and, at the
// end of each instant, stops when the bound is above `stop_above_s`
// (StepTimeBound::StopAbove of the cutoff). The candidate's kernels must be
// the base's (ResumePoint::same_kernels). Unless it stops, its result is
// FullRun's, bit for bit.
//
//   CandidateResult candidate;
//   RETURN_IF_ERROR(BoundedRun(simulator, plan, options, workspace, base,
//                              stop_above_s).Run(&candidate));
//
// Lives for one run on one thread; borrows its arguments, which must
// outlive it, and uses `workspace` exclusively while it runs. Not
// thread-safe.
class BoundedRun : private LoopHooks {
 public:
  BoundedRun(const Simulator& simulator, const Plan& plan,
             const SimulationOptions& options, Workspace& workspace,
             const Trajectory::Data& base, double stop_above_s);

  // Simulates the plan, which must be valid (ValidatePlan), into
  // `*candidate`: its result, or slower_than_cutoff with the bound; and
  // events_simulated. InvalidArgument when its fusion groups form a cycle.
  // Call once.
  absl::Status Run(CandidateResult* candidate);

 private:
  friend class EventLoop;  // calls the hooks

  // The hooks: the bound follows each kernel; the check at instants' ends.
  ABSL_ATTRIBUTE_NOINLINE void OnKernelStart(int32_t u, int32_t device,
                                             double now);
  ABSL_ATTRIBUTE_NOINLINE bool AfterEvent(double now, bool instant_done);

  Workspace& ws_;
  EventLoop loop_;
  StepTimeBound bound_;
  bool stopped_ = false;  // the bound passed stop_above_s
};

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_BOUNDED_RUN_H_
