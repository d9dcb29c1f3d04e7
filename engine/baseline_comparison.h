#ifndef GOPT_ENGINE_BASELINE_COMPARISON_H_
#define GOPT_ENGINE_BASELINE_COMPARISON_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policy/policy.h"
#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"

// The baseline side of a method comparison as gopt-server runs it: every
// requested heuristic combination simulated, and the best one chosen.
// Serving-safe (no training code).
namespace gopt::engine {

// Whether a simulated step time may be compared and reported: finite and
// positive. Topology and graph validation keep every time finite; this is
// the last line of defence.
bool UsableStepTime(double seconds);

// Every combination of `registry`'s heuristics for `tasks` (full names);
// tasks not in `tasks` keep the framework default.
std::vector<std::string> BaselineMethodsFor(
    const simulator::baselines::BaselineRegistry& registry,
    const policy::TaskSet& tasks);

// The fastest plan that fits in memory of one group of methods that share
// a placement (BestBaseline's winner).
struct BaselineGroupWinner {
  simulator::Plan plan;  // method set to its full name
  // Its step time; 0 when that was not usable (see UsableStepTime).
  double step_time_s = 0;
  // Faster than every earlier group's winner (or the first group's):
  // the comparison's best baseline so far.
  bool best_so_far = false;
};

// How CompareBaselines runs.
struct BaselineComparisonOptions {
  // Methods by name (parsed by the registry); empty = none are run.
  std::vector<std::string> methods;
  // Asked before each group and each method simulated alone; a status that
  // is not OK stops the comparison (BaselineComparison::stopped). Unset =
  // never stop.
  std::function<absl::Status()> check_stop;
  // Called after each group with the number of groups done and the group's
  // winner (nullopt when no plan of the group fits or could be made).
  std::function<void(int groups_done,
                     const std::optional<BaselineGroupWinner>& winner)>
      on_group;
};

// What CompareBaselines found.
struct BaselineComparison {
  // One row per method tried, by group (placement) in the order the
  // methods first name a placement. A method whose plan simulated to a
  // step time that is not usable is invalid with an error saying so.
  std::vector<simulator::baselines::BaselineTrial> rows;
  int64_t num_simulations = 0;  // plans simulated
  // The fastest group winner (its full name and step time); "" and 0 when
  // no group had one.
  std::string best_method;
  double best_step_time_s = 0;
  // Not OK when check_stop (or a deadline or cancellation inside a group)
  // stopped the comparison; the fields above then hold what was done.
  absl::Status stopped;
};

// Runs `options.methods` on the context's graph and topology, grouped by
// placement (the heuristics of one placement share work, and check_stop is
// asked between groups): each group's best plan by BestBaseline; when no
// plan of a group fits or can be made, each of its methods is made and
// simulated with `simulator` alone to say why. Errors: InvalidArgument
// (the registry's message) for a method name the registry does not know;
// nothing runs then. Thread-compatible.
absl::StatusOr<BaselineComparison> CompareBaselines(
    const simulator::baselines::BaselineRegistry& registry,
    const simulator::baselines::BaselineContext& context,
    const simulator::Simulator& simulator,
    const BaselineComparisonOptions& options);

// numerator / denominator when the denominator is positive, else 0 (no
// reference to compare with): the ratios a comparison reports.
double RatioOrZero(double numerator, double denominator);

}  // namespace gopt::engine

#endif  // GOPT_ENGINE_BASELINE_COMPARISON_H_
