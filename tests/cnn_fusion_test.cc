// The kernel rules on real CNNs (simulator/fusion_rules.h): an inference
// batch norm folds into the convolution before it and the activation after
// it joins the same kernel, so the greedy fusion baseline
// (`gopt simulate FILE --topology=v100x4-nvlink --method=single+fifo+greedy`)
// launches one kernel per convolution block. Before batch norm could fuse
// (main at 7fdb82a), every batch norm was a kernel of its own, between its
// convolution's and its activation's.

#include <gtest/gtest.h>

#include <string>

#include "graph/import/builtin_importers.h"
#include "simulator/baselines/baseline_plan.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/op_cost_model.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

struct CnnCase {
  const char* path;
  int64_t kernels_before;      // main at 7fdb82a
  double step_time_ms_before;  // main at 7fdb82a
  int64_t kernels;
  double step_time_ms;
};

void PrintTo(const CnnCase& c, std::ostream* os) { *os << c.path; }

class CnnFusionTest : public ::testing::TestWithParam<CnnCase> {};

TEST_P(CnnFusionTest, GreedyFusesConvolutionBatchNormAndActivation) {
  const CnnCase& c = GetParam();
  graph::ImporterRegistry importers;
  graph::RegisterBuiltinImporters(&importers);
  graph::ImportOptions options;
  options.source_name = c.path;
  absl::StatusOr<graph::Graph> graph =
      importers.Import(testing::ReadSharedData(c.path), "auto", options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<simulator::Topology> topology =
      simulator::PresetTopology("v100x4-nvlink");
  ASSERT_TRUE(topology.ok()) << topology.status();
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  const simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{*graph, *topology,
                                                      cost_model, /*seed=*/0};
  absl::StatusOr<simulator::Plan> plan = simulator::baselines::MakeBaselinePlan(
      registry, "single+fifo+greedy", context);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<simulator::SimulationResult> result =
      simulator::Simulator(*graph, *topology, cost_model).Simulate(*plan);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->num_kernels, c.kernels);
  EXPECT_NEAR(result->step_time_s * 1e3, c.step_time_ms, 1e-5);
  std::cout << c.path << ": " << c.kernels_before << " -> "
            << result->num_kernels << " kernels, " << c.step_time_ms_before
            << " -> " << result->step_time_s * 1e3 << " ms\n";
}

INSTANTIATE_TEST_SUITE_P(SharedData, CnnFusionTest,
                         ::testing::Values(CnnCase{"onnx/light_resnet50.onnx",
                                                   157, 1.86705, 55, 1.111662},
                                           CnnCase{"onnx/light_shufflenet.onnx",
                                                   134, 0.890314, 55,
                                                   0.379461}));

}  // namespace
}  // namespace gopt
