#include "policy/cost_model/config_group.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace gopt::policy::cost_model {

absl::string_view TaskName(Task task) {
  return task == Task::kTile ? "tile" : "layout";
}

absl::StatusOr<Task> ParseTask(absl::string_view name) {
  if (name == "tile") return Task::kTile;
  if (name == "layout") return Task::kLayout;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown task '", name, "' (expected tile or layout)"));
}

int64_t ConfigGroup::config_width() const {
  return task == Task::kTile
             ? kTileConfigFeatures
             : static_cast<int64_t>(graph.configurable_nodes.size()) *
                   kLayoutConfigFeatures;
}

ConfigGroup SelectConfigs(const ConfigGroup& group,
                          const std::vector<int32_t>& configs) {
  ConfigGroup out;
  out.graph = group.graph;
  out.task = group.task;
  out.num_configs = static_cast<int32_t>(configs.size());
  const int64_t width = group.config_width();
  out.config_features.reserve(configs.size() * width);
  for (size_t i = 0; i < configs.size(); ++i) {
    const int32_t c = configs[i];
    out.config_features.insert(out.config_features.end(),
                               group.config_features.begin() + c * width,
                               group.config_features.begin() + (c + 1) * width);
    out.runtimes.push_back(group.runtimes[c]);
    if (c == group.default_config) out.default_config = static_cast<int32_t>(i);
  }
  return out;
}

absl::Status ValidateConfigGroup(const ConfigGroup& group) {
  const std::string where = absl::StrCat("group '", group.graph.name, "'");
  const FeaturizedGraph& g = group.graph;
  if (g.num_nodes <= 0 ||
      g.node_features.size() !=
          static_cast<size_t>(g.num_nodes) * kNodeFeatures ||
      g.opcodes.size() != static_cast<size_t>(g.num_nodes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": node_features/opcodes do not match ", g.num_nodes, " nodes"));
  }
  if (g.edge_src.size() != g.edge_dst.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": edge_src and edge_dst differ in length"));
  }
  for (size_t e = 0; e < g.edge_src.size(); ++e) {
    if (g.edge_src[e] < 0 || g.edge_src[e] >= g.num_nodes ||
        g.edge_dst[e] < 0 || g.edge_dst[e] >= g.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": edge ", e, " names a node outside 0..", g.num_nodes - 1));
    }
  }
  for (int32_t op : g.opcodes) {
    if (op < 0 || op >= kNumOpcodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": opcode id ", op, " outside 0..120"));
    }
  }
  for (int32_t node : g.configurable_nodes) {
    if (node < 0 || node >= g.num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": configurable node ", node, " out of range"));
    }
  }
  if (group.num_configs <= 0 ||
      group.config_features.size() !=
          static_cast<size_t>(group.num_configs * group.config_width()) ||
      group.runtimes.size() != static_cast<size_t>(group.num_configs)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", group.num_configs,
                     " configs do not match config_features/runtimes sizes"));
  }
  for (double r : group.runtimes) {
    if (!(r > 0) || !std::isfinite(r)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": runtime ", r, " is not positive"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gopt::policy::cost_model
