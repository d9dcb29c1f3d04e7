#include "worker/diverse_plans.h"

#include <algorithm>
#include <functional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "simulator/baselines/greedy_fusion.h"
#include "util/status_macros.h"

namespace gopt::worker {
namespace {

using graph::NodeId;

// Longest path from a source, in edges, per node.
std::vector<int> Depths(const graph::Graph& graph) {
  std::vector<int> depth(graph.num_nodes(), 0);
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    for (const graph::Edge& e : graph.in_edges(id)) {
      depth[id] = std::max(depth[id], depth[e.src] + 1);
    }
  }
  return depth;
}

}  // namespace

absl::StatusOr<std::vector<NamedPlan>> DiversePlans(
    const graph::Graph& graph, const simulator::Topology& topology,
    uint64_t seed, int max_plans) {
  const int n = graph.num_nodes();
  const int devices = std::max(1, topology.num_devices());
  const simulator::Plan base = simulator::DefaultPlan(graph, topology);
  std::vector<NamedPlan> out;
  auto placed = [&](const std::string& name,
                    const std::function<int(int)>& device_of) {
    simulator::Plan plan = base;
    for (int i = 0; i < n; ++i) plan.device[i] = device_of(i) % devices;
    simulator::KeepDeviceConstraints(graph, topology, &plan.device);
    plan.method = name;
    out.push_back({name, plan});
    return plan;
  };
  const simulator::Plan single = placed("default", [](int) { return 0; });
  if (devices > 1) {
    placed("all-on-last", [&](int) { return devices - 1; });
  }
  placed("alternate", [](int i) { return i; });
  simulator::Plan split_50;
  for (int pct : {25, 50, 75}) {
    simulator::Plan plan = placed(absl::StrCat("split-", pct), [&](int i) {
      return static_cast<int64_t>(i) * 100 < int64_t{pct} * n ? 0 : 1;
    });
    if (pct == 50) split_50 = std::move(plan);
  }
  const std::vector<int> depth = Depths(graph);
  placed("depth-parity", [&](int i) { return depth[i]; });
  placed("depth-halves", [&](int i) { return (depth[i] / 8) % 2; });
  simulator::Plan random_1;
  for (int k = 1; k <= 4; ++k) {
    std::mt19937_64 rng(seed * 1000 + k);
    const int bias = k % 2 == 0 ? 4 : 2;  // some mostly on device 0
    simulator::Plan plan = placed(absl::StrCat("random-", k), [&](int) {
      return rng() % bias == 0 ? static_cast<int>(1 + rng() % devices) : 0;
    });
    if (k == 1) random_1 = std::move(plan);
  }
  auto prioritized = [&](const std::string& name, const simulator::Plan& from,
                         const std::function<int32_t(int)>& priority_of) {
    simulator::Plan plan = from;
    plan.priority.resize(n);
    for (int i = 0; i < n; ++i) plan.priority[i] = priority_of(i);
    plan.method = name;
    out.push_back({name, std::move(plan)});
  };
  for (int k = 1; k <= 2; ++k) {
    std::mt19937_64 rng(seed * 1000 + 100 + k);
    prioritized(absl::StrCat("default+random-priority-", k), single,
                [&](int) { return static_cast<int32_t>(rng() % 16); });
    prioritized(absl::StrCat("split-50+random-priority-", k), split_50,
                [&](int) { return static_cast<int32_t>(rng() % 16); });
  }
  prioritized("split-50+reverse-priority", split_50, [](int i) { return -i; });
  // Fusion on one device, on a split with priorities, on a random split.
  const std::vector<NamedPlan> to_fuse = {
      out.front(), out.back(), {"random-1", random_1}};
  for (const NamedPlan& from : to_fuse) {
    simulator::Plan plan = from.plan;
    ASSIGN_OR_RETURN(
        plan.fusion_group,
        simulator::baselines::GreedyFusionGroups(graph, plan.device,
                                                 /*fusion_priority=*/nullptr));
    plan.method = from.name + "+fused";
    out.push_back({plan.method, std::move(plan)});
  }
  const int limit = max_plans > 0 ? max_plans : static_cast<int>(out.size());
  if (static_cast<int>(out.size()) > limit) out.resize(limit);
  return out;
}

}  // namespace gopt::worker
