#include "training/cost_model/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "training/cost_model/npy.h"
#include "util/status_macros.h"

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

}  // namespace

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
