#include "engine/verify.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::engine {
namespace {

constexpr char kNoWorkers[] =
    "this engine has no worker pool (gopt-server --workers, or the CLI's "
    "in-process worker)";

bool SamePlan(const simulator::Plan& a, const simulator::Plan& b) {
  return a.device == b.device && a.priority == b.priority &&
         a.fusion_group == b.fusion_group && a.layout == b.layout;
}

}  // namespace

int VerifyCandidates(PlanMeasurer* measurer, const graph::Graph& graph,
                     const std::vector<VerifyCandidate>& candidates, int k,
                     absl::Time deadline, const std::atomic<bool>* cancelled,
                     gopt::v1::OptimizeResponse* response) {
  if (measurer == nullptr) {
    response->add_warnings(
        absl::StrCat("verify: not measured, ", kNoWorkers,
                     "; the step times are the simulator's"));
    return 0;
  }
  // Index into `candidates` of each row of response->verified added here.
  std::vector<int> measured;
  int chosen = -1;
  double chosen_s = 0;
  double chosen_min_s = 0;
  const int first_row = response->verified_size();
  for (int i = 0; i < static_cast<int>(candidates.size()) &&
                  static_cast<int>(measured.size()) < k;
       ++i) {
    bool duplicate = false;
    for (int j : measured)
      duplicate |= SamePlan(candidates[j].plan, candidates[i].plan);
    if (duplicate) continue;
    if (absl::Now() >= deadline ||
        (cancelled != nullptr && cancelled->load())) {
      response->add_warnings(
          absl::StrCat("verify: the deadline left no time to measure '",
                       candidates[i].method, "' and the candidates after it"));
      break;
    }
    measured.push_back(i);
    gopt::v1::MeasuredCandidate* row = response->add_verified();
    row->set_method(candidates[i].method);
    row->set_predicted_step_time_s(candidates[i].predicted_step_time_s);
    absl::StatusOr<PlanMeasurement> measurement =
        measurer->Measure(graph, candidates[i].plan, deadline, cancelled);
    if (!measurement.ok()) {
      row->set_error(std::string(measurement.status().message()));
      response->add_warnings(absl::StrCat(
          "verify: '", candidates[i].method, "' was not measured (",
          measurement.status().message(), "); its step time is simulated"));
      if (i == 0) break;  // the simulator's choice stands, unmeasured
      continue;
    }
    row->set_measured_step_time_s(measurement->measured_step_time_s);
    row->set_measured_spread(measurement->measured_spread);
    row->set_measured_min_step_time_s(measurement->measured_min_step_time_s);
    row->set_real_op_fraction(measurement->real_op_fraction);
    row->set_real_op_flop_fraction(measurement->real_op_flop_fraction);
    row->set_worker(measurement->worker);
    if (chosen < 0 || measurement->measured_step_time_s < chosen_s) {
      chosen = i;
      chosen_s = measurement->measured_step_time_s;
      chosen_min_s = measurement->measured_min_step_time_s;
    }
  }
  if (chosen < 0) return 0;
  for (int row = 0; row < static_cast<int>(measured.size()); ++row) {
    if (measured[row] == chosen) {
      response->mutable_verified(first_row + row)->set_chosen(true);
    }
  }
  response->set_measured_step_time_s(chosen_s);
  response->set_measured_min_step_time_s(chosen_min_s);
  if (chosen != 0) {
    response->add_warnings(absl::StrCat(
        "verify: '", candidates[chosen].method, "' measured fastest (",
        chosen_s, " s); it replaces the simulator's choice '",
        candidates[0].method, "'"));
  }
  return chosen;
}

void MeasureForEvaluate(PlanMeasurer* measurer, const graph::Graph& graph,
                        const simulator::Plan& plan, absl::Time deadline,
                        const std::atomic<bool>* cancelled,
                        gopt::v1::EvaluateResponse* response) {
  if (measurer == nullptr) {
    response->add_warnings(absl::StrCat("measure: not measured, ", kNoWorkers));
    return;
  }
  if (response->oom()) {
    // Running a plan the simulator says cannot fit would only find out on
    // the worker, at the cost of its (and the host's) memory.
    response->add_warnings(absl::StrCat(
        "measure: the plan was not run: the simulator marks it out of memory "
        "(simulated peak bytes per device: ",
        absl::StrJoin(response->peak_memory_bytes(), ", "),
        "); the step time is simulated only"));
    return;
  }
  absl::StatusOr<PlanMeasurement> measurement =
      measurer->Measure(graph, plan, deadline, cancelled);
  if (!measurement.ok()) {
    response->add_warnings(absl::StrCat("measure: the plan was not measured (",
                                        measurement.status().message(),
                                        "); the step time is simulated only"));
    return;
  }
  response->set_measured_step_time_s(measurement->measured_step_time_s);
  response->set_measured_spread(measurement->measured_spread);
  response->set_measured_min_step_time_s(measurement->measured_min_step_time_s);
  response->set_real_op_fraction(measurement->real_op_fraction);
  response->set_real_op_flop_fraction(measurement->real_op_flop_fraction);
  response->set_measured_on(measurement->worker);
  for (const std::string& warning : measurement->warnings) {
    response->add_warnings(absl::StrCat("measure: ", warning));
  }
}

}  // namespace gopt::engine
