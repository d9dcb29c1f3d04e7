// One plan simulated from the start to the end (Simulator::Simulate).
// Internal to the simulator.
#ifndef GOPT_SIMULATOR_FULL_RUN_H_
#define GOPT_SIMULATOR_FULL_RUN_H_

#include "absl/status/statusor.h"
#include "simulator/event_loop.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {

// The event loop with no hooks: set-up, every event, the result. What
// Simulate returns, and what every other run must match bit for bit.
//
//   ASSIGN_OR_RETURN(SimulationResult result,
//                    FullRun(simulator, plan, options, workspace).Run());
//
// Lives for one run on one thread; borrows its arguments, which must
// outlive it, and uses `workspace` exclusively while it runs. Not
// thread-safe.
class FullRun : private LoopHooks {
 public:
  FullRun(const Simulator& simulator, const Plan& plan,
          const SimulationOptions& options, Workspace& workspace)
      : loop_(simulator, plan, options, workspace) {}

  // Simulates the plan, which must be valid (ValidatePlan). InvalidArgument
  // when its fusion groups form a cycle. Call once.
  absl::StatusOr<SimulationResult> Run();

 private:
  friend class EventLoop;  // calls the hooks (LoopHooks': none)

  EventLoop loop_;
};

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_FULL_RUN_H_
