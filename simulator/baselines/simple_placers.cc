#include "simulator/baselines/simple_placers.h"

#include <algorithm>
#include <random>

#include "simulator/baselines/cost_table.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {

using graph::NodeId;

absl::StatusOr<std::vector<int32_t>> SinglePlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  std::vector<int32_t> device(context.graph.num_nodes());
  for (NodeId id = 0; id < context.graph.num_nodes(); ++id) {
    device[id] = costs.NearestAllowedDevice(id, 0);
  }
  return device;
}

absl::StatusOr<std::vector<int32_t>> RoundRobinPlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  const int num_devices = context.topology.num_devices();
  std::vector<int32_t> device(context.graph.num_nodes());
  for (NodeId id = 0; id < context.graph.num_nodes(); ++id) {
    device[id] = costs.NearestAllowedDevice(id, id % num_devices);
  }
  return device;
}

absl::StatusOr<std::vector<int32_t>> RandomPlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  // mt19937_64's output sequence is fixed by the standard, and the modulo
  // below (unlike std::uniform_int_distribution) is too, so a seed gives
  // the same placement with every standard library.
  std::mt19937_64 rng(context.seed);
  std::vector<int32_t> device(context.graph.num_nodes());
  for (NodeId id = 0; id < context.graph.num_nodes(); ++id) {
    const std::vector<int32_t>& allowed = costs.AllowedDevices(id);
    device[id] = allowed[rng() % allowed.size()];
  }
  return device;
}

absl::StatusOr<std::vector<int32_t>> ExpertPlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const graph::Graph& graph = context.graph;
  const CostTable costs(graph, context.topology, context.cost_model);
  std::vector<int32_t> used;
  for (int d = 0; d < context.topology.num_devices(); ++d) {
    if (context.topology.devices[d].kind != DeviceKind::kCpu) used.push_back(d);
  }
  if (used.empty()) {
    for (int d = 0; d < context.topology.num_devices(); ++d) used.push_back(d);
  }
  // Chunk k ends at boundary[k] on the cumulative-work axis.
  double total_speed = 0;
  for (int32_t d : used) {
    total_speed += std::max(context.topology.devices[d].peak_f32_flops, 1.0);
  }
  std::vector<double> weight(graph.num_nodes(), 0);
  double total_work = 0;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    for (int32_t d : used) weight[id] += costs.ComputeSeconds(id, d);
    weight[id] /= used.size();
    total_work += weight[id];
  }
  std::vector<double> boundary(used.size());
  double speed_so_far = 0;
  for (size_t k = 0; k < used.size(); ++k) {
    speed_so_far +=
        std::max(context.topology.devices[used[k]].peak_f32_flops, 1.0);
    boundary[k] = total_work * speed_so_far / total_speed;
  }
  std::vector<int32_t> device(graph.num_nodes());
  size_t chunk = 0;
  double cumulative = 0;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const double midpoint = cumulative + weight[id] / 2;
    while (chunk + 1 < used.size() && midpoint > boundary[chunk]) ++chunk;
    cumulative += weight[id];
    device[id] = costs.NearestAllowedDevice(id, used[chunk]);
  }
  AttachFreeSourcesToConsumers(costs, &device);
  return device;
}

}  // namespace gopt::simulator::baselines
