#ifndef GOPT_TRAINING_COST_MODEL_DATASET_H_
#define GOPT_TRAINING_COST_MODEL_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/hlo/tuning_data.h"
#include "policy/cost_model/config_group.h"
#include "simulator/topology.h"

namespace gopt::policy::cost_model {

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

#endif  // GOPT_TRAINING_COST_MODEL_DATASET_H_
