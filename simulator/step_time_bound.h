// A lower bound on a run's step time while the run goes on, for stopping a
// candidate once it is certainly slower than a cutoff. Internal to the
// simulator (BoundedRun, CandidateRun).
#ifndef GOPT_SIMULATOR_STEP_TIME_BOUND_H_
#define GOPT_SIMULATOR_STEP_TIME_BOUND_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "simulator/workspace.h"

namespace gopt::simulator::internal {

// Keeps per device the kernel seconds not yet started (the workspace's
// remaining_work, borrowed) and from it a lower bound on the step time: a
// started kernel's end plus the work its device has left and, given tails
// (plans without fusion, whose units are nodes), a kernel's start plus its
// tail, the longest chain of kernel times from it to a sink. The last
// transfer's arrival bounds the step time too: seconds() and Exceeded() take
// it from the run. One per run, on the run's thread; not thread-safe.
//
//   StepTimeBound bound(ws.remaining_work, tails, StepTimeBound::StopAbove(
//       cutoff_s));
//   bound.CountWork(ws, num_units, num_devices);  // a run from the start
//   ... bound.KernelStarted(...) as kernels start ...
//   if (bound.Exceeded(last_arrival_s)) stop;
class StepTimeBound {
 public:
  // `tail_s`: per unit, or null for no tails; borrowed, like
  // `remaining_work_s`, for the bound's lifetime. `stop_above_s`: where
  // Exceeded starts (see StopAbove).
  StepTimeBound(std::vector<double>& remaining_work_s, const double* tail_s,
                double stop_above_s)
      : remaining_work_s_(remaining_work_s),
        tail_s_(tail_s),
        stop_above_s_(stop_above_s) {}
  StepTimeBound(const StepTimeBound&) = delete;
  StepTimeBound& operator=(const StepTimeBound&) = delete;

  // The threshold that stops a run whose step time is certainly above
  // `cutoff_s`: the bound adds kernel times in another order than the run,
  // so it may exceed the step time by rounding; a relative slack of 1e-9
  // (and 1e-300 for a cutoff of 0) absorbs that. Infinity stays infinity.
  static double StopAbove(double cutoff_s);

  // Sets the remaining work of each of `num_devices` devices to the
  // kernel seconds of its units (the first `num_units` of `ws`): a run from
  // the start. Also what a recording keeps in its checkpoints.
  static void CountWork(Workspace& ws, int32_t num_units, int num_devices);

  // Unit u (`unit`) started on `device` at `now`, its end written.
  void KernelStarted(const UnitState& unit, int32_t u, int32_t device,
                     double now) {
    double& remaining = remaining_work_s_[device];
    remaining -= unit.duration;
    bound_s_ = std::max(bound_s_, unit.end + remaining);
    if (tail_s_ != nullptr) bound_s_ = std::max(bound_s_, now + tail_s_[u]);
  }
  // A unit of `duration_s` not yet started moved from device `from` to
  // `to`.
  void MoveWork(double duration_s, int32_t from, int32_t to) {
    remaining_work_s_[from] -= duration_s;
    remaining_work_s_[to] += duration_s;
  }
  // A kernel runs on `device` until `end_s` (a run resumed while it runs).
  void KernelRunning(double end_s, int32_t device) {
    bound_s_ = std::max(bound_s_, end_s + remaining_work_s_[device]);
  }

  // The bound, given the last transfer's arrival so far.
  double seconds(double last_arrival_s) const {
    return std::max(bound_s_, last_arrival_s);
  }
  // Whether the step time is certainly above the cutoff.
  bool Exceeded(double last_arrival_s) const {
    return seconds(last_arrival_s) > stop_above_s_;
  }

 private:
  std::vector<double>& remaining_work_s_;
  const double* const tail_s_;
  const double stop_above_s_;
  double bound_s_ = 0;
};

}  // namespace gopt::simulator::internal

#endif  // GOPT_SIMULATOR_STEP_TIME_BOUND_H_
