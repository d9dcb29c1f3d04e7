#ifndef GOPT_POLICY_TESTING_GO_INSTANCE_H_
#define GOPT_POLICY_TESTING_GO_INSTANCE_H_

#include <memory>

#include "gtest/gtest.h"
#include "policy/go/go_model.h"
#include "policy/go/ppo_trainer.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy::go::testing {

// For tests: a TrainingInstance that owns `graph` on `devices` identical
// test GPUs (simulator::baselines::testing::UniformTopology). Adds a test
// failure and returns null when the instance cannot be made.
inline std::unique_ptr<TrainingInstance> TestInstance(const graph::Graph& graph,
                                                      int devices) {
  absl::StatusOr<std::unique_ptr<TrainingInstance>> instance =
      MakeTrainingInstance(
          graph.name(), std::make_shared<const graph::Graph>(graph),
          std::make_shared<const simulator::Topology>(
              simulator::baselines::testing::UniformTopology(devices)));
  EXPECT_TRUE(instance.ok()) << instance.status();
  if (!instance.ok()) return nullptr;
  return *std::move(instance);
}

// For tests: a small GO network (width 32, one attention layer, segments
// of 8 nodes) that trains in milliseconds, initialised from `seed`.
inline GoModelOptions SmallModelOptions(uint64_t seed) {
  GoModelOptions options;
  options.hidden = 32;
  options.attention_layers = 1;
  options.attention_dim = 16;
  options.heads = 2;
  options.feed_forward = 32;
  options.segment = 8;
  options.graph_embedding = 8;
  options.seed = seed;
  return options;
}

}  // namespace gopt::policy::go::testing

#endif  // GOPT_POLICY_TESTING_GO_INSTANCE_H_
