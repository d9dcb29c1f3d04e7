#ifndef GOPT_POLICY_COST_MODEL_DATASET_H_
#define GOPT_POLICY_COST_MODEL_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/hlo/tuning_data.h"
#include "policy/cost_model/features.h"
#include "simulator/topology.h"

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

// One group per module of a tuning data set (tile runs give kTile groups,
// layout runs kLayout groups); failed runs (error != 0) are dropped.
// InvalidArgument when a module mixes tile and layout runs or has no valid
// run.
absl::StatusOr<std::vector<ConfigGroup>> GroupsFromTuningData(
    const graph::hlo::TuningDataset& dataset);

// Reads one TpuGraphs `.npz` sample (tile or layout collection) from
// `bytes`: node_feat, node_opcode, edge_index ([u,v] = u consumes v),
// config_runtime, and config_feat (tile; runtimes are divided by
// config_runtime_normalizers when present) or node_config_ids +
// node_config_feat (layout). InvalidArgument naming the array when one is
// missing or has the wrong shape.
absl::StatusOr<ConfigGroup> ConfigGroupFromNpz(absl::string_view bytes,
                                               Task task,
                                               const std::string& name);

// The kLayoutConfigFeatures values of every configurable node of
// `featurized` (made by FeaturizeGraph(graph)) under `layout` (per top-level
// node minor_to_major, empty = default; an empty vector = all default):
// output = the node's layout, input / kernel = the layouts of the producers
// of its first two data operands. Configurable nodes inside subgraphs stay
// at the default (-1).
std::vector<float> LayoutAssignmentFeatures(
    const graph::Graph& graph, const FeaturizedGraph& featurized,
    const std::vector<std::vector<int32_t>>& layout);

// How simulator-labelled layout configurations are drawn.
struct SimulatorLabelOptions {
  int32_t num_configs = 64;  // config 0 is the all-default layout
  // Chance that a configurable node of rank >= 2 gets a random non-default
  // dimension order in a config. Default 0.3.
  double change_probability = 0.3;
  uint64_t seed = 0;
};

// Draws random layout assignments for `graph`'s layout-configurable nodes,
// simulates each on device 0 of `topology` (everything else at framework
// defaults) and returns them as a kLayout group labelled with simulated
// step times. Errors are the simulator's. Deterministic for a seed.
absl::StatusOr<ConfigGroup> SimulatorLabelledGroup(
    const graph::Graph& graph, const simulator::Topology& topology,
    const SimulatorLabelOptions& options);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_DATASET_H_
