#ifndef GOPT_POLICY_COST_MODEL_CONFIG_GROUP_H_
#define GOPT_POLICY_COST_MODEL_CONFIG_GROUP_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policy/cost_model/features.h"

// The configurations of one graph that a cost model scores (and ranks in
// training): what the serving policies build from a request and the
// training data sets (dataset.h) read from files.
namespace gopt::policy::cost_model {

// What a configuration decides: per-node layouts of a whole program, or
// the tile sizes of one kernel.
enum class Task { kLayout, kTile };

// "layout" / "tile".
absl::string_view TaskName(Task task);
// Parses "layout" or "tile"; InvalidArgument otherwise.
absl::StatusOr<Task> ParseTask(absl::string_view name);

// The measured (or simulated) configurations of one graph: the unit a
// ranking loss and the per-graph metrics work on. A plain value.
struct ConfigGroup {
  FeaturizedGraph graph;
  Task task = Task::kLayout;
  int32_t num_configs = 0;
  // kTile: num_configs x kTileConfigFeatures. kLayout: num_configs x
  // graph.configurable_nodes.size() x kLayoutConfigFeatures.
  std::vector<float> config_features;
  // Per config; any positive unit (only ratios within a group matter).
  std::vector<double> runtimes;
  int32_t default_config = -1;  // the compiler default's index, -1 if none

  // Floats per configuration in config_features.
  int64_t config_width() const;
};

// `group` restricted to `configs` (indices, in that order); the default
// index follows its config or becomes -1.
ConfigGroup SelectConfigs(const ConfigGroup& group,
                          const std::vector<int32_t>& configs);

// Checks the invariants above (sizes, positive finite runtimes, node and
// edge indices in range). InvalidArgument naming the group and field.
absl::Status ValidateConfigGroup(const ConfigGroup& group);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_CONFIG_GROUP_H_
