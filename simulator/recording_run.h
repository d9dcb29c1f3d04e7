// A plan simulated from the start with its event loop recorded
// (Simulator::Record): checkpoints along the run and its final state, from
// which candidate runs resume (CandidateRun). Internal to the simulator.
#ifndef GOPT_SIMULATOR_RECORDING_RUN_H_
#define GOPT_SIMULATOR_RECORDING_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/statusor.h"
#include "simulator/event_loop.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/trajectory.h"
#include "simulator/workspace.h"

namespace gopt::simulator::internal {

// A full run that also fills a Trajectory::Data: checkpoints at the end of
// instant 0 and then at the end of the first instant at least
// checkpoint_interval events after the last one (about 32 per run, fewer
// where 32 would take over 256 MiB), per checkpoint the memory peaks after
// it, and the final state with every rank raised by kRaisedRanks (and,
// without fusion, every unit's tail). Its result is FullRun's, bit for
// bit.
//
//   RecordingRun run(simulator, plan, options, workspace, *data);
//   ASSIGN_OR_RETURN(data->result, run.Run());
//
// Lives for one run on one thread; borrows its arguments, which must
// outlive it, and uses `workspace` exclusively while it runs. `trajectory`
// may hold an earlier recording, whose buffers it reuses. Not thread-safe.
class RecordingRun : private LoopHooks {
 public:
  RecordingRun(const Simulator& simulator, const Plan& plan,
               const SimulationOptions& options, Workspace& workspace,
               Trajectory::Data& trajectory)
      : sim_(simulator),
        plan_(plan),
        ws_(workspace),
        trajectory_(trajectory),
        loop_(simulator, plan, options, workspace) {}

  // Simulates the plan, which must be valid (ValidatePlan), recording it.
  // InvalidArgument when its fusion groups form a cycle (the trajectory is
  // then unusable). Call once.
  absl::StatusOr<SimulationResult> Run();

 private:
  friend class EventLoop;  // calls the hooks

  // The hooks: the remaining work per device, the memory peak since the
  // last checkpoint, and checkpoints at the end of instants.
  ABSL_ATTRIBUTE_NOINLINE void OnKernelStart(int32_t u, int32_t device,
                                             double now);
  ABSL_ATTRIBUTE_NOINLINE void OnAllocate(int32_t device);
  void OnStarted();
  ABSL_ATTRIBUTE_NOINLINE bool AfterEvent(double now, bool instant_done);

  // A checkpoint at the end of instant `now` when one is due.
  void MaybeCheckpoint(double now);
  // Per checkpoint, the memory peaks after it, from those between them.
  void KeepLaterPeaks();
  // The final state, ranks raised, and the tails.
  void KeepFinalState();

  const Simulator& sim_;
  const Plan& plan_;
  Workspace& ws_;
  Trajectory::Data& trajectory_;
  EventLoop loop_;
  // Per device the most memory in use since the last checkpoint.
  std::vector<int64_t> interval_peak_bytes_;
};

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_RECORDING_RUN_H_
