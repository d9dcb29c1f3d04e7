#include "policy/cost_model/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "graph/status_macros.h"
#include "policy/cost_model/npy.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"

namespace gopt::policy::cost_model {
namespace {

absl::Status ShapeError(const std::string& name, absl::string_view array,
                        absl::string_view expected,
                        const std::vector<int64_t>& shape) {
  std::string got;
  for (int64_t d : shape) absl::StrAppend(&got, got.empty() ? "" : ",", d);
  return absl::InvalidArgumentError(
      absl::StrCat("npz '", name, "': array '", array, "' should have shape ",
                   expected, ", has (", got, ")"));
}

// The producer of `node`'s `input`-th data operand, or -1.
graph::NodeId Operand(const graph::Graph& graph, graph::NodeId node,
                      int input) {
  int seen = 0;
  for (const graph::Edge& edge : graph.in_edges(node)) {
    if (edge.control) continue;
    if (seen++ == input) return edge.src;
  }
  return -1;
}

}  // namespace

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

absl::StatusOr<std::vector<ConfigGroup>> GroupsFromTuningData(
    const graph::hlo::TuningDataset& dataset) {
  std::vector<ConfigGroup> groups;
  for (const graph::hlo::TuningModule& module : dataset.modules) {
    ConfigGroup group;
    ASSIGN_OR_RETURN(group.graph,
                     FeaturizeGraph(module.graph, module.configurable_nodes));
    group.graph.name = module.name;
    bool tile = false;
    bool layout = false;
    for (const graph::hlo::TuningConfig& config : module.configs) {
      tile = tile || !config.tile_features.empty();
      layout = layout || config.tile_features.empty();
      if (config.error != 0 || config.runtime_ns <= 0) continue;
      if (config.is_default) group.default_config = group.num_configs;
      const std::vector<float>& f = config.tile_features.empty()
                                        ? config.layout_features
                                        : config.tile_features;
      group.config_features.insert(group.config_features.end(), f.begin(),
                                   f.end());
      group.runtimes.push_back(static_cast<double>(config.runtime_ns));
      ++group.num_configs;
    }
    if (tile && layout) {
      return absl::InvalidArgumentError(absl::StrCat(
          "module '", module.name, "' mixes tile and layout runs"));
    }
    group.task = tile ? Task::kTile : Task::kLayout;
    RETURN_IF_ERROR(Annotate(ValidateConfigGroup(group), "tuning data"));
    groups.push_back(std::move(group));
  }
  return groups;
}

absl::StatusOr<ConfigGroup> ConfigGroupFromNpz(absl::string_view bytes,
                                               Task task,
                                               const std::string& name) {
  ASSIGN_OR_RETURN(auto arrays, ParseNpz(bytes));
  auto get = [&](const std::string& key) -> absl::StatusOr<const NpyArray*> {
    const auto it = arrays.find(key);
    if (it == arrays.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("npz '", name, "': no array '", key, "' (a ",
                       TaskName(task), " sample needs it)"));
    }
    return &it->second;
  };
  ConfigGroup group;
  group.task = task;
  group.graph.name = name;
  ASSIGN_OR_RETURN(const NpyArray* feat, get("node_feat"));
  if (feat->shape.size() != 2 || feat->shape[1] != kNodeFeatures ||
      !feat->is_float()) {
    return ShapeError(name, "node_feat", "(n,140) float", feat->shape);
  }
  const int64_t n = feat->shape[0];
  group.graph.num_nodes = static_cast<int32_t>(n);
  group.graph.node_features = feat->floats;
  ASSIGN_OR_RETURN(const NpyArray* opcode, get("node_opcode"));
  if (opcode->shape != std::vector<int64_t>{n} || opcode->is_float()) {
    return ShapeError(name, "node_opcode", "(n,) integer", opcode->shape);
  }
  group.graph.opcodes.assign(opcode->ints.begin(), opcode->ints.end());
  ASSIGN_OR_RETURN(const NpyArray* edges, get("edge_index"));
  if (edges->shape.size() != 2 || edges->shape[1] != 2 || edges->is_float()) {
    return ShapeError(name, "edge_index", "(m,2) integer", edges->shape);
  }
  for (int64_t e = 0; e < edges->shape[0]; ++e) {
    group.graph.edge_dst.push_back(static_cast<int32_t>(edges->ints[2 * e]));
    group.graph.edge_src.push_back(
        static_cast<int32_t>(edges->ints[2 * e + 1]));
  }
  ASSIGN_OR_RETURN(const NpyArray* runtime, get("config_runtime"));
  if (runtime->shape.size() != 1) {
    return ShapeError(name, "config_runtime", "(c,)", runtime->shape);
  }
  const int64_t c = runtime->shape[0];
  group.num_configs = static_cast<int32_t>(c);
  for (int64_t i = 0; i < c; ++i) {
    group.runtimes.push_back(runtime->is_float()
                                 ? static_cast<double>(runtime->floats[i])
                                 : static_cast<double>(runtime->ints[i]));
  }
  if (task == Task::kTile) {
    ASSIGN_OR_RETURN(const NpyArray* config, get("config_feat"));
    if (config->shape != std::vector<int64_t>{c, kTileConfigFeatures} ||
        !config->is_float()) {
      return ShapeError(name, "config_feat", "(c,24) float", config->shape);
    }
    group.config_features = config->floats;
    const auto normalizers = arrays.find("config_runtime_normalizers");
    if (normalizers != arrays.end()) {
      const NpyArray& norm = normalizers->second;
      if (norm.shape != std::vector<int64_t>{c}) {
        return ShapeError(name, "config_runtime_normalizers", "(c,)",
                          norm.shape);
      }
      for (int64_t i = 0; i < c; ++i) {
        const double v = norm.is_float() ? norm.floats[i] : norm.ints[i];
        group.runtimes[i] /= v;
      }
    }
  } else {
    ASSIGN_OR_RETURN(const NpyArray* ids, get("node_config_ids"));
    if (ids->shape.size() != 1 || ids->is_float()) {
      return ShapeError(name, "node_config_ids", "(nc,) integer", ids->shape);
    }
    group.graph.configurable_nodes.assign(ids->ints.begin(), ids->ints.end());
    const int64_t nc = ids->shape[0];
    ASSIGN_OR_RETURN(const NpyArray* config, get("node_config_feat"));
    if (config->shape != std::vector<int64_t>{c, nc, kLayoutConfigFeatures} ||
        !config->is_float()) {
      return ShapeError(name, "node_config_feat", "(c,nc,18) float",
                        config->shape);
    }
    group.config_features = config->floats;
  }
  RETURN_IF_ERROR(ValidateConfigGroup(group));
  return group;
}

std::vector<float> LayoutAssignmentFeatures(
    const graph::Graph& graph, const FeaturizedGraph& featurized,
    const std::vector<std::vector<int32_t>>& layout) {
  std::vector<float> out;
  out.reserve(featurized.configurable_nodes.size() * kLayoutConfigFeatures);
  static const std::vector<int32_t> kDefault;
  auto layout_of = [&](graph::NodeId id) -> const std::vector<int32_t>& {
    if (id < 0 || layout.empty()) return kDefault;
    return layout[id];
  };
  for (int32_t node : featurized.configurable_nodes) {
    std::vector<float> f;
    if (node < graph.num_nodes()) {
      f = LayoutConfigFeatures(layout_of(node),
                               layout_of(Operand(graph, node, 0)),
                               layout_of(Operand(graph, node, 1)));
    } else {
      f.assign(kLayoutConfigFeatures, -1.0f);
    }
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

absl::StatusOr<ConfigGroup> SimulatorLabelledGroup(
    const graph::Graph& graph, const simulator::Topology& topology,
    const SimulatorLabelOptions& options) {
  ConfigGroup group;
  group.task = Task::kLayout;
  group.graph = FeaturizeGraph(graph);
  group.default_config = 0;
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator sim(graph, topology, cost_model);
  simulator::SimulationOptions sim_options;
  sim_options.record_timeline = false;
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  simulator::Plan plan = simulator::DefaultPlan(graph);
  for (int32_t c = 0; c < options.num_configs; ++c) {
    plan.layout.assign(graph.num_nodes(), {});
    if (c > 0) {
      for (int32_t node : group.graph.configurable_nodes) {
        if (node >= graph.num_nodes()) continue;
        const graph::Node& n = graph.node(node);
        const int rank = n.outputs.empty() ? 0 : n.outputs[0].rank();
        if (rank < 2 || coin(rng) >= options.change_probability) continue;
        std::vector<int32_t> order(rank);
        std::iota(order.rbegin(), order.rend(), 0);
        const std::vector<int32_t> default_order = order;
        while (order == default_order) {
          std::shuffle(order.begin(), order.end(), rng);
        }
        plan.layout[node] = order;
      }
    }
    ASSIGN_OR_RETURN(simulator::SimulationResult result,
                     sim.Simulate(plan, sim_options));
    const std::vector<float> f =
        LayoutAssignmentFeatures(graph, group.graph, plan.layout);
    group.config_features.insert(group.config_features.end(), f.begin(),
                                 f.end());
    group.runtimes.push_back(result.step_time_s);
    ++group.num_configs;
  }
  RETURN_IF_ERROR(ValidateConfigGroup(group));
  return group;
}

}  // namespace gopt::policy::cost_model
