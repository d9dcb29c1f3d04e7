#include "training/cost_model/runtime_model_training.h"

#include <cmath>
#include <map>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/generators/generators.h"
#include "simulator/simulator.h"
#include "worker/diverse_plans.h"

namespace gopt::policy::cost_model {
namespace {

using ::testing::HasSubstr;

// A "machine" whose kernels take their roofline time times a factor per op
// kind: a model with one hidden unit per kind (reading that kind's one-hot
// column) and the log factors as the last layer's weights.
std::shared_ptr<const simulator::LearnedCostModel> TrueMachine(
    const std::map<graph::OpKind, float>& factors) {
  simulator::RuntimeModelParams params;
  params.dense_mean.assign(simulator::kDenseKernelFeatures, 0);
  params.dense_scale.assign(simulator::kDenseKernelFeatures, 1);
  simulator::DenseLayer hidden;
  hidden.inputs = simulator::kKernelFeatures;
  hidden.outputs = static_cast<int>(factors.size());
  hidden.weights.assign(static_cast<size_t>(hidden.inputs) * hidden.outputs, 0);
  hidden.bias.assign(hidden.outputs, 0);
  simulator::DenseLayer last;
  last.inputs = hidden.outputs;
  last.outputs = 1;
  last.bias = {0};
  int o = 0;
  for (const auto& [kind, factor] : factors) {
    hidden.weights[static_cast<size_t>(o) * hidden.inputs +
                   static_cast<int>(kind)] = 1;
    last.weights.push_back(std::log(factor));
    params.known_kinds.push_back(kind);
    ++o;
  }
  params.layers = {hidden, last};
  return std::make_shared<const simulator::LearnedCostModel>(params);
}

graph::Graph SmallGraph(const std::string& family) {
  simulator::generators::GeneratorOptions options;
  options.family = family;
  options.layers = family == "gnmt" ? 2 : 1;
  options.batch = 2;
  options.seq = family == "bert" ? 16 : 4;
  options.hidden = family == "bert" ? 64 : 32;
  absl::StatusOr<graph::Graph> graph =
      simulator::generators::GenerateModelGraph(options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : graph::Graph();
}

// Measurements of DiversePlans of `graph` on `machine` (a topology whose
// devices carry the true model): node times and step times as it prices
// them.
void Measure(const std::string& id, const graph::Graph& graph,
             const simulator::Topology& machine,
             worker::RuntimeDataset* dataset) {
  absl::StatusOr<std::vector<worker::NamedPlan>> plans =
      worker::DiversePlans(graph, machine, /*seed=*/1);
  ASSERT_TRUE(plans.ok()) << plans.status();
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator simulator(graph, machine, cost_model);
  for (const worker::NamedPlan& p : *plans) {
    absl::StatusOr<simulator::SimulationResult> result =
        simulator.Simulate(p.plan, simulator::SimulationOptions{});
    ASSERT_TRUE(result.ok()) << result.status();
    worker::MeasuredPlan m;
    m.graph_id = id;
    m.plan_name = p.name;
    m.plan = p.plan;
    m.measured_step_s = m.measured_min_step_s = result->step_time_s;
    m.runs = 1;
    m.executors = machine.num_devices();
    m.node_seconds.assign(graph.num_nodes(), 0);
    for (graph::NodeId n = 0; n < graph.num_nodes(); ++n) {
      const graph::Node& node = graph.node(n);
      if (simulator::baselines::IsFreeNode(node)) continue;
      const simulator::KernelWork work = simulator::NodeKernelWork(node);
      m.node_seconds[n] =
          machine.devices[p.plan.device[n]].runtime_model->KernelSeconds(
              work, machine.devices[p.plan.device[n]]);
    }
    dataset->plans.push_back(std::move(m));
  }
  dataset->graphs.emplace(id, graph);
}

TEST(RuntimeModelTrainingTest, LearnsWhatTheMachineDoesAndRanksHeldOutPlans) {
  absl::StatusOr<simulator::Topology> calibrated =
      simulator::PresetTopology("cpu-host");
  ASSERT_TRUE(calibrated.ok());
  simulator::Topology machine = *calibrated;
  // Dots three times slower than the roofline says, elementwise ops twice
  // as fast.
  const auto truth = TrueMachine({{graph::OpKind::kDot, 3.0f},
                                  {graph::OpKind::kElementwiseBinary, 0.5f},
                                  {graph::OpKind::kElementwiseUnary, 0.5f}});
  for (simulator::DeviceProfile& device : machine.devices) {
    device.runtime_model = truth;
  }
  worker::RuntimeDataset dataset;
  Measure("rnnlm", SmallGraph("rnnlm"), machine, &dataset);
  Measure("gnmt", SmallGraph("gnmt"), machine, &dataset);
  Measure("bert", SmallGraph("bert"), machine, &dataset);

  RuntimeTrainingOptions options;
  options.held_out = {"bert"};
  options.epochs = 300;
  absl::StatusOr<RuntimeTrainingResult> result =
      TrainRuntimeModel(dataset, *calibrated, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->kernel_samples, 50);
  EXPECT_LT(result->kernel_log_rmse_learned,
            0.25 * result->kernel_log_rmse_roofline);
  ASSERT_EQ(result->per_graph.size(), 3u);
  for (const GraphFidelity& f : result->per_graph) {
    EXPECT_EQ(f.held_out, f.graph == "bert");
    EXPECT_EQ(f.plans, 20);
    EXPECT_LT(f.mape_learned, f.mape_roofline) << f.graph;
    EXPECT_GE(f.spearman_learned, f.spearman_roofline) << f.graph;
  }

  // Deterministic for a seed.
  absl::StatusOr<RuntimeTrainingResult> again =
      TrainRuntimeModel(dataset, *calibrated, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->params.layers[0].weights, result->params.layers[0].weights);
}

TEST(RuntimeModelTrainingTest, NothingToTrainOnIsAnError) {
  absl::StatusOr<simulator::Topology> calibrated =
      simulator::PresetTopology("cpu-host");
  ASSERT_TRUE(calibrated.ok());
  worker::RuntimeDataset dataset;
  RuntimeTrainingOptions options;
  EXPECT_THAT(
      TrainRuntimeModel(dataset, *calibrated, options).status().message(),
      HasSubstr("no measured kernel"));
}

}  // namespace
}  // namespace gopt::policy::cost_model
