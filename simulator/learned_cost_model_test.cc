#include "simulator/learned_cost_model.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/lower_bound.h"
#include "simulator/op_cost_model.h"
#include "simulator/simulator.h"
#include "simulator/testing/test_graphs.h"
#include "simulator/topology_proto.h"

namespace gopt::simulator {
namespace {

using ::testing::HasSubstr;

// A model whose r is the constant `log_ratio` for the kinds it knows: one
// hidden unit fed only by the bias.
RuntimeModelParams ConstantModel(float log_ratio,
                                 std::vector<graph::OpKind> kinds) {
  RuntimeModelParams params;
  params.dense_mean.assign(kDenseKernelFeatures, 0);
  params.dense_scale.assign(kDenseKernelFeatures, 1);
  DenseLayer hidden;
  hidden.inputs = kKernelFeatures;
  hidden.outputs = 1;
  hidden.weights.assign(kKernelFeatures, 0);
  hidden.bias = {1};
  DenseLayer last;
  last.inputs = 1;
  last.outputs = 1;
  last.weights = {log_ratio};
  last.bias = {0};
  params.layers = {hidden, last};
  params.known_kinds = std::move(kinds);
  params.min_log_ratio = -5;
  params.max_log_ratio = 5;
  return params;
}

KernelWork DotWork() {
  KernelWork work;
  work.flops = 2e9;
  work.bytes = 12'000'000;
  work.kind = graph::OpKind::kDot;
  work.op_class = OpCostClass::kDot;
  return work;
}

TEST(LearnedCostModelTest, ScalesTheRooflineOfKnownKindsOnly) {
  const Topology topology = testing::RoundNumberTopology(1);
  const LearnedCostModel model(
      ConstantModel(std::log(2.0f), {graph::OpKind::kDot}));
  const KernelWork dot = DotWork();
  // (r is a float: log 2 to about 1e-7.)
  EXPECT_NEAR(model.KernelSeconds(dot, topology.devices[0]) /
                  RooflineSeconds(dot, topology.devices[0]),
              2.0, 1e-6);
  KernelWork add = dot;
  add.kind = graph::OpKind::kElementwiseBinary;
  add.op_class = OpCostClass::kElementwise;
  EXPECT_DOUBLE_EQ(model.KernelSeconds(add, topology.devices[0]),
                   RooflineSeconds(add, topology.devices[0]));
  EXPECT_TRUE(model.Knows(graph::OpKind::kDot));
  EXPECT_FALSE(model.Knows(graph::OpKind::kElementwiseBinary));
}

TEST(LearnedCostModelTest, ClampsToTheRangeSeenInTraining) {
  RuntimeModelParams params = ConstantModel(4.0f, {graph::OpKind::kDot});
  params.max_log_ratio = 1;
  const LearnedCostModel model(params);
  const Topology topology = testing::RoundNumberTopology(1);
  EXPECT_NEAR(model.KernelSeconds(DotWork(), topology.devices[0]),
              std::exp(1.0) * RooflineSeconds(DotWork(), topology.devices[0]),
              1e-12);
}

TEST(LearnedCostModelTest, JsonRoundTripKeepsThePredictions) {
  const RuntimeModelParams params =
      ConstantModel(0.5f, {graph::OpKind::kDot, graph::OpKind::kConvolution});
  absl::StatusOr<RuntimeModelParams> back =
      RuntimeModelFromJson(RuntimeModelToJson(params));
  ASSERT_TRUE(back.ok()) << back.status();
  const Topology topology = testing::RoundNumberTopology(1);
  EXPECT_DOUBLE_EQ(
      LearnedCostModel(*back).KernelSeconds(DotWork(), topology.devices[0]),
      LearnedCostModel(params).KernelSeconds(DotWork(), topology.devices[0]));
  EXPECT_EQ(back->known_kinds, params.known_kinds);
}

TEST(LearnedCostModelTest, BadFilesNameTheField) {
  EXPECT_THAT(RuntimeModelFromJson("[]").status().message(),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(
      RuntimeModelFromJson(R"({"format":"x","version":1})").status().message(),
      HasSubstr("gopt-runtime-model"));
  RuntimeModelParams params = ConstantModel(0, {graph::OpKind::kDot});
  params.layers[1].inputs = 3;  // does not chain
  EXPECT_THAT(
      RuntimeModelFromJson(RuntimeModelToJson(params)).status().message(),
      HasSubstr("layers[1]"));
  std::string text = RuntimeModelToJson(ConstantModel(0, {}));
  text.replace(text.find("log_flops"), 9, "log_flopz");
  EXPECT_THAT(RuntimeModelFromJson(text).status().message(),
              HasSubstr("dense_features"));
}

TEST(LearnedCostModelTest, TopologyFileLoadsItsModelAndTheSimulatorUsesIt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "learned_cost_model_test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream model(dir / "m.json");
    model << RuntimeModelToJson(
        ConstantModel(std::log(2.0f), {graph::OpKind::kDot}));
  }
  Topology topology = testing::RoundNumberTopology(1);
  topology.runtime_model_path = "m.json";
  {
    std::ofstream file(dir / "t.json");
    std::string json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(
                    TopologyToProto(topology), &json)
                    .ok());
    file << json;
  }
  absl::StatusOr<Topology> loaded = LoadTopology((dir / "t.json").string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_NE(loaded->devices[0].runtime_model, nullptr);
  EXPECT_EQ(loaded->runtime_model_path, "m.json");

  // p -> dot: the dot's kernel takes twice its roofline time.
  testing::TestGraphBuilder builder;
  const int p = builder.Param("p", 1000);
  builder.AddOp("dot", graph::OpKind::kDot, /*flops=*/1e9, {p});
  const graph::Graph graph = builder.Build();
  const RooflineCostModel cost_model;
  const Simulator learned(graph, *loaded, cost_model);
  const Topology plain = testing::RoundNumberTopology(1);
  const Simulator roofline(graph, plain, cost_model);
  SimulationOptions options;
  absl::StatusOr<SimulationResult> a =
      learned.Simulate(DefaultPlan(graph), options);
  absl::StatusOr<SimulationResult> b =
      roofline.Simulate(DefaultPlan(graph), options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(a->step_time_s / b->step_time_s, 2.0, 1e-6);
  // The lower bound stays below the step time.
  EXPECT_LE(ComputeLowerBound(graph, *loaded, cost_model).seconds(),
            a->step_time_s * (1 + 1e-12));

  std::filesystem::remove(dir / "m.json");
  absl::StatusOr<Topology> missing = LoadTopology((dir / "t.json").string());
  EXPECT_THAT(missing.status().message(), HasSubstr("runtime_model"));
  std::filesystem::remove_all(dir);
}

TEST(LearnedCostModelTest, LowerBoundScalesWithTheSmallestRatio) {
  testing::TestGraphBuilder builder;
  const int p = builder.Param("p", 1000);
  builder.AddOp("dot", graph::OpKind::kDot, /*flops=*/1e9, {p});
  const graph::Graph graph = builder.Build();
  const RooflineCostModel cost_model;
  Topology topology = testing::RoundNumberTopology(1);
  const double plain = ComputeLowerBound(graph, topology, cost_model).seconds();
  RuntimeModelParams params = ConstantModel(-1.0f, {graph::OpKind::kDot});
  params.min_log_ratio = -1;
  topology.devices[0].runtime_model =
      std::make_shared<const LearnedCostModel>(params);
  EXPECT_NEAR(ComputeLowerBound(graph, topology, cost_model).seconds(),
              plain * std::exp(-1.0), 1e-15);
  const Simulator simulator(graph, topology, cost_model);
  absl::StatusOr<SimulationResult> result =
      simulator.Simulate(DefaultPlan(graph), SimulationOptions{});
  ASSERT_TRUE(result.ok());
  // (Equal up to rounding: one kernel is the whole path.)
  EXPECT_LE(ComputeLowerBound(graph, topology, cost_model).seconds(),
            result->step_time_s * (1 + 1e-12));
}

}  // namespace
}  // namespace gopt::simulator
