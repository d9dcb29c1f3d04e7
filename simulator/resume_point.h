// Where a candidate plan's simulation can start from a recorded run of
// another plan (Simulator::SimulateCandidate). Internal to the simulator.
#ifndef GOPT_SIMULATOR_RESUME_POINT_H_
#define GOPT_SIMULATOR_RESUME_POINT_H_

#include <cstdint>
#include <vector>

#include "simulator/plan.h"
#include "simulator/simulator.h"

namespace gopt::simulator::internal {

// The checkpoint of a recorded base run from which a candidate plan can be
// simulated exactly, and what the candidate changes.
//
// Why resuming is exact: a checkpoint is taken at the end of an instant
// (every event up to its time processed and dispatched). Before a changed
// unit is ready, its priority (rank) decides nothing, and before one of its
// producers finishes, its device decides nothing either: sends, local uses
// and memory only depend on it from then on. So up to the earliest of
// those times (in the base run) both runs process the same events in the
// same state, and the candidate's state at a checkpoint before then is the
// base's, with the changed units' devices, ranks and their producers' local
// uses adjusted (CandidateRun).
//
//   const ResumePoint start = ResumePoint::Find(simulator, base, plan);
//   if (start.checkpoint < 0) { ...simulate from the start... }
//
// A value; Find is a pure function of its arguments (thread-safe).
struct ResumePoint {
  // The last checkpoint of the base before the first event the candidate's
  // differences can change, or -1 when the candidate must be simulated from
  // the start: other fusion or layouts, devices that cost differently,
  // transfers that take device time, a moved parameter or constant, a
  // priority lowered or not raised above every priority of the base, more
  // than kRaisedRanks changed units, or a difference that can change an
  // event by the first checkpoint.
  int checkpoint = -1;
  // The units (of the base) whose device or priority differ, ascending;
  // filled only as far as Find got before deciding on -1.
  std::vector<int32_t> changed_units;
  // Whether the candidate's kernels and their times are the base's (same
  // fusion, layouts and device costs, no device time in links), so that
  // the base's tails bound its step time (BoundedRun).
  bool same_kernels = false;

  // The resume point of `plan` against `base`, a recording of
  // `simulator`'s; `plan` must be valid (ValidatePlan).
  static ResumePoint Find(const Simulator& simulator,
                          const Trajectory::Data& base, const Plan& plan);
};

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_RESUME_POINT_H_
