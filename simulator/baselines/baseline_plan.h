#ifndef GOPT_SIMULATOR_BASELINES_BASELINE_PLAN_H_
#define GOPT_SIMULATOR_BASELINES_BASELINE_PLAN_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"

namespace gopt::simulator::baselines {

// The scheduling that runs each device's ops in the order the placement
// heuristic assumed (Placer::PlaceInOrder); valid only with a placement
// whose AssumesOrder() is true, and the default scheduling for those.
inline constexpr absl::string_view kPlacementOrder = "placement-order";

// A baseline method: one heuristic per task. Written
// PLACEMENT[+SCHEDULING[+FUSION[+LAYOUT]]]; missing parts take the
// framework defaults "fifo" (kPlacementOrder for a placement that assumes an
// order, such as m-sct), "none" and "default".
struct BaselineMethod {
  std::string placement;
  std::string scheduling = "fifo";
  std::string fusion = "none";
  std::string layout = "default";

  // "metis+critical-path+greedy+default": all four parts.
  std::string FullName() const;
};

// Parses a method name and checks that every part is registered (or is
// kPlacementOrder with a placement that assumes an order).
// InvalidArgument for an empty method, an empty part or more than four
// parts, and for an unknown name, naming the part and listing the valid
// names ("method 'metis+lifo': unknown scheduling 'lifo'; known: fifo,
// critical-path").
//
//   ParseBaselineMethod(registry, "expert")  // expert+fifo+none+default
//   ParseBaselineMethod(registry, "m-sct")   // m-sct+placement-order+...
absl::StatusOr<BaselineMethod> ParseBaselineMethod(
    const BaselineRegistry& registry, absl::string_view method);

// Builds the plan of `method` (see ParseBaselineMethod) for the context's
// graph and topology: placement first, then scheduling, fusion and layout
// on that placement. Plan::method is the full normalized name. Errors: those
// of ParseBaselineMethod, and a heuristic's own error annotated with the
// method (e.g. FailedPrecondition from m-sct). The plan passes ValidatePlan
// (Internal otherwise). Thread-safe; deterministic for a seed.
absl::StatusOr<Plan> MakeBaselinePlan(const BaselineRegistry& registry,
                                      absl::string_view method,
                                      const BaselineContext& context);

// One method tried by BestBaseline.
struct BaselineTrial {
  std::string method;  // full normalized name
  bool valid = false;  // the plan was made and simulated
  std::string error;   // why not, when !valid
  double step_time_s = 0;
  bool oom = false;
  // Seconds the heuristics took to make this plan (each task's heuristic
  // runs once per placement and its time is counted in every method that
  // uses its result), and to simulate it.
  double method_seconds = 0;
  double simulation_seconds = 0;
};

struct BestBaselineOptions {
  // Methods to try (ParseBaselineMethod syntax). Default (empty): every
  // combination of registered placement x scheduling x fusion x layout,
  // with kPlacementOrder as one more scheduling for the placements that
  // assume an order.
  std::vector<std::string> methods;
  // Called before each method; a non-OK status (e.g. the request's
  // deadline passed, the client cancelled) stops the search and is
  // returned as is. May be empty.
  std::function<absl::Status()> check_stop;
};

struct BestBaselineResult {
  Plan plan;                          // the winner (method set)
  SimulationResult result;            // its simulation, timeline recorded
  std::vector<BaselineTrial> trials;  // every method tried, in order tried
};

// Tries every method of `options`, simulates each valid plan with the
// context's cost model, and returns the fastest plan that is not OOM (ties:
// the first tried) with the table of all trials. A method that fails (e.g.
// m-sct finding no room) is recorded as invalid and skipped. Identical
// plans (e.g. a layout heuristic that keeps every default) are simulated
// once. Errors: InvalidArgument for a bad name in options.methods;
// FailedPrecondition (no plan fits: the topology must change) when every
// valid plan is OOM, or no method produced a plan at all (the message
// summarises the trials); check_stop's status
// when it stops the search. Thread-safe.
absl::StatusOr<BestBaselineResult> BestBaseline(
    const BaselineRegistry& registry, const BaselineContext& context,
    const BestBaselineOptions& options = {});

// Which parts of a plan BaselineCombinations varies; the others stay at
// the framework default (each registry list's first name).
struct VariedParts {
  bool placement = true;
  bool scheduling = true;
  bool fusion = true;
  bool layout = true;
};

// Every combination of the registered heuristics for the varied parts, in
// registry order (placement, then scheduling, fusion, layout), with
// kPlacementOrder as one more scheduling for a placement that assumes an
// order (m-etf, m-sct) when scheduling is varied. What BestBaseline tries
// by default (every part varied) and what gopt-server tries for the
// requested tasks.
std::vector<BaselineMethod> BaselineCombinations(
    const BaselineRegistry& registry, const VariedParts& parts = {});

// The methods `gopt bench` reports by default: every placement alone (the
// framework's scheduling, or the placer's own order for m-etf and m-sct; no
// fusion, default layouts), plus the stronger
// placements with critical-path scheduling and greedy fusion, and the
// single-device plan with greedy fusion (what a fusing compiler does on one
// device).
std::vector<std::string> DefaultBaselineMethods();

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_BASELINE_PLAN_H_
