#ifndef GOPT_POLICY_GO_ACTIONS_H_
#define GOPT_POLICY_GO_ACTIONS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "policy/policy.h"
#include "simulator/baselines/greedy_fusion.h"
#include "simulator/plan.h"

namespace gopt::policy::go {

// Scheduling and fusion priorities take one of this many levels.
inline constexpr int kPriorityLevels = 16;

// What the network says about one graph: per task, row-major per-node
// log-probabilities over the task's actions. A task the network was not
// asked to decide has an empty vector. A network with the co-location head
// (GoModelOptions::co_location_head) also gives, when it decides placement,
// one logit per dependency edge of its features (GraphFeatures::edge_src /
// edge_dst, in that order) that both ends share a device: label-free, so a
// decode can turn the logits into a partition whatever the devices' names.
struct PolicyOutput {
  int num_nodes = 0;
  int num_devices = 0;
  std::vector<float> placement;   // num_nodes x num_devices
  std::vector<float> scheduling;  // num_nodes x kPriorityLevels
  std::vector<float> fusion;      // num_nodes x kPriorityLevels
  // Per features edge (edge_src/edge_dst order): logit that both ends share
  // a device; empty without the head or when placement is not decided.
  std::vector<float> co_location;
};

// One action per node for each decided task (empty for the others).
struct Actions {
  std::vector<int32_t> device;
  std::vector<int32_t> priority;         // scheduling level 0..15
  std::vector<int32_t> fusion_priority;  // fusion level 0..15 (0 = never)
  // How the fusion levels become groups (simulator/baselines/
  // greedy_fusion.h): the `greedy` rule, or `greedy-join`'s. A decode
  // choice, not a network output.
  simulator::baselines::FusionJoin fusion_join =
      simulator::baselines::FusionJoin::kOneProducer;
};

// A uniform double in [0, 1) from 53 random bits of `rng` (the same on
// every platform, unlike std::uniform_real_distribution).
double UniformDouble(std::mt19937_64* rng);

// Draws every node's action of every decided task independently from
// `output` using `rng`, or takes the most likely action when `rng` is null
// (greedy decoding; ties to the lowest index). Deterministic for a given
// generator state. Thread-safe for distinct generators.
Actions SampleActions(const PolicyOutput& output, std::mt19937_64* rng);

// Sum over nodes and tasks of the log-probability of `actions`.
double ActionsLogProb(const PolicyOutput& output, const Actions& actions);

// Turns actions into a plan for `graph`: the decided tasks from `actions`,
// the others from `base_plan` (when given, its fusion groups only when the
// placement is also kept) or the framework defaults. Fusion priorities
// become groups through simulator::baselines::GreedyFusionGroups with
// `actions.fusion_join`, the rule of the `greedy` (or `greedy-join`)
// baseline. Plan::method is "go". InvalidArgument when a
// vector does not have one entry per node. Thread-safe.
absl::StatusOr<simulator::Plan> ActionsToPlan(const graph::Graph& graph,
                                              const Actions& actions,
                                              const simulator::Plan* base_plan);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_ACTIONS_H_
