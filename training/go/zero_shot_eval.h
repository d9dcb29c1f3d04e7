#ifndef GOPT_TRAINING_GO_ZERO_SHOT_EVAL_H_
#define GOPT_TRAINING_GO_ZERO_SHOT_EVAL_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"

// `gopt-train eval`: a GO model's zero-shot decisions against the baselines
// (training only; not linked into the server).
namespace gopt::policy::go {

// For every graph source (a file or gen:PRESET) on every preset topology:
// the default plan, the `expert` baseline, the best of
// DefaultBaselineMethods and the model's zero-shot plan (ZeroShot with
// ppo's tasks, samples, seed and simulation threads; the baselines use the
// same seed). Prints one table row per pair to `out`, then the summary.
// Returns {"rows": [{graph, topology, nodes, default_ms, expert_ms,
// best_baseline_ms, best_baseline, go_zero_shot_ms, go_zero_shot_oom}],
// "summary": {pairs, geomean_go_zero_shot_over_expert,
// geomean_go_zero_shot_over_best_baseline}} (geomeans over the pairs where
// all three plans are usable; 0 when there are none). Errors: the graph
// loader's, PresetTopology's, MakeTrainingInstance's and ZeroShot's.
absl::StatusOr<nlohmann::json> EvaluateZeroShot(
    const GoModel& model, const std::vector<std::string>& graphs,
    const std::vector<std::string>& topologies, const PpoOptions& ppo,
    std::ostream& out);

}  // namespace gopt::policy::go

#endif  // GOPT_TRAINING_GO_ZERO_SHOT_EVAL_H_
