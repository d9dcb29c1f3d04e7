#ifndef GOPT_ENGINE_PLAN_MEASURER_H_
#define GOPT_ENGINE_PLAN_MEASURER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "simulator/plan.h"

namespace gopt::engine {

// One plan measured on a real device.
struct PlanMeasurement {
  double measured_step_time_s = 0;      // median of the kept runs
  double measured_spread = 0;           // (p90 - p10) / median
  double measured_min_step_time_s = 0;  // the fastest measured run
  // Share of nodes, and of FLOPs, that ran as their real LibTorch op (the
  // rest ran as copies of the node's bytes).
  double real_op_fraction = 0;
  double real_op_flop_fraction = 0;
  int runs = 0;
  std::string worker;  // which worker measured it ("in-process", host:port)
  std::vector<std::string> warnings;
};

// Runs plans for real and measures them (the Engine's view of the worker
// pool: gopt_engine has no gRPC, WorkerPool implements this). Implementations
// must be thread-safe.
class PlanMeasurer {
 public:
  virtual ~PlanMeasurer() = default;
  // Measures `plan` of `graph` (both borrowed for the call), finishing by
  // `deadline` and stopping when `cancelled` (may be null) reads true.
  // Errors: InvalidArgument for a plan the worker cannot run (naming node
  // and field), Unavailable when no worker could run it, DeadlineExceeded,
  // ResourceExhausted (queue full), Cancelled.
  virtual absl::StatusOr<PlanMeasurement> Measure(
      const graph::Graph& graph, const simulator::Plan& plan,
      absl::Time deadline, const std::atomic<bool>* cancelled) = 0;
};

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_PLAN_MEASURER_H_
