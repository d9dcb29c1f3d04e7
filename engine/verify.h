#ifndef GOPT_ENGINE_VERIFY_H_
#define GOPT_ENGINE_VERIFY_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "engine/plan_measurer.h"
#include "gopt/v1/optimizer.pb.h"
#include "graph/graph.h"
#include "simulator/plan.h"

namespace gopt::engine {

// A plan Optimize may answer with, as OptimizeRequest.verify sees it.
struct VerifyCandidate {
  simulator::Plan plan;
  std::string method;  // "default", "best-baseline:...", a policy name
  double predicted_step_time_s = 0;
};

// Largest OptimizeRequest.verify accepted.
inline constexpr int kMaxVerify = 8;

// Runs the first `k` distinct plans of `candidates` (candidates[0] is the
// simulator's choice) on `measurer` one after another, and appends one
// MeasuredCandidate per plan tried to response->verified (failures carry
// their error, and a warning says the numbers stay simulated). Returns the
// index in `candidates` of the plan the answer should carry: the measured
// fastest; 0 when candidates[0] could not be measured (the answer is the
// simulator's, with a warning) or when `measurer` is null (a warning says
// this engine has no workers). Marks the chosen row. Never fails: a
// measurement failure is a warning, never an error. Stops measuring once
// `deadline` passes or `cancelled` reads true.
int VerifyCandidates(PlanMeasurer* measurer, const graph::Graph& graph,
                     const std::vector<VerifyCandidate>& candidates, int k,
                     absl::Time deadline, const std::atomic<bool>* cancelled,
                     gopt::v1::OptimizeResponse* response);

// EvaluateRequest.measure: measures `plan` on `measurer` into the response's
// measured_* fields; a failure (or a null measurer) is a warning. A plan the
// response already marks oom (the simulator's) is never sent to a worker: a
// warning names its simulated peak memory.
void MeasureForEvaluate(PlanMeasurer* measurer, const graph::Graph& graph,
                        const simulator::Plan& plan, absl::Time deadline,
                        const std::atomic<bool>* cancelled,
                        gopt::v1::EvaluateResponse* response);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_VERIFY_H_
