#include "simulator/baselines/greedy_fusion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::simulator::baselines {
namespace {

using graph::NodeId;
using graph::OpKind;
using ::testing::ElementsAre;
using testing::GraphMaker;
using ::testing::HasSubstr;
using testing::UniformTopology;

std::vector<int32_t> Groups(const graph::Graph& graph,
                            const std::vector<int32_t>& device,
                            const std::vector<int32_t>* priority = nullptr) {
  absl::StatusOr<std::vector<int32_t>> groups =
      GreedyFusionGroups(graph, device, priority);
  EXPECT_TRUE(groups.ok()) << groups.status();
  return groups.ok() ? *groups : std::vector<int32_t>();
}

std::vector<int32_t> JoinGroups(
    const graph::Graph& graph, const std::vector<int32_t>& device,
    const std::vector<int32_t>* priority = nullptr) {
  absl::StatusOr<std::vector<int32_t>> groups =
      GreedyFusionGroups(graph, device, priority, FusionJoin::kAllProducers);
  EXPECT_TRUE(groups.ok()) << groups.status();
  return groups.ok() ? *groups : std::vector<int32_t>();
}

TEST(GreedyFusionTest, FusesAnElementwiseChainIntoOneGroup) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e3, {p});
  const int b = g.Op("b", OpKind::kConvert, 1e3, {a});
  const int r = g.Op("r", OpKind::kReshape, 0, {b});
  g.Op("c", OpKind::kTranscendental, 1e3, {r});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(Groups(graph, std::vector<int32_t>(graph.num_nodes(), 0)),
              ElementsAre(-1, 0, 0, 0, 0));
  // One kernel in the simulator.
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = Groups(graph, plan.device);
  const RooflineCostModel cost_model;
  const Topology topology = UniformTopology(1);
  EXPECT_EQ(Simulator(graph, topology, cost_model).Simulate(plan)->num_kernels,
            1);
}

TEST(GreedyFusionTest, NeverCrossesDevices) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  int previous = p;
  for (int i = 0; i < 6; ++i)
    previous = g.Op(absl::StrCat("a", i), 1e3, {previous});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(Groups(graph, {0, 0, 0, 0, 1, 1, 1}),
              ElementsAre(-1, 0, 0, 0, 1, 1, 1));
}

TEST(GreedyFusionTest, NeverFusesTwoHeavyOps) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int d1 = g.Op("d1", OpKind::kDot, 1e9, {p});
  const int d2 = g.Op("d2", OpKind::kDot, 1e9, {d1});
  g.Op("c", OpKind::kConvolution, 1e9, {d2});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(Groups(graph, std::vector<int32_t>(4, 0)),
              ElementsAre(-1, -1, -1, -1));
}

TEST(GreedyFusionTest, AvoidsTheCycleThroughAnUnfusedConsumer) {
  // a -> dot -> c and a -> c: fusing c into a's group would make that
  // group both feed and consume dot. c joins dot's group instead.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e3, {p});
  const int dot = g.Op("dot", OpKind::kDot, 1e9, {a});
  g.Op("c", OpKind::kElementwiseBinary, 1e3, {a, dot});
  const graph::Graph graph = g.Build();
  const std::vector<int32_t> groups = Groups(graph, std::vector<int32_t>(4, 0));
  EXPECT_THAT(groups, ElementsAre(-1, -1, 0, 0));
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = groups;
  const RooflineCostModel cost_model;
  const Topology topology = UniformTopology(1);
  EXPECT_TRUE(Simulator(graph, topology, cost_model).Simulate(plan).ok());
}

TEST(GreedyFusionTest, ReduceEndsTheFusion) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e3, {p});
  const int r = g.Op("r", OpKind::kReduce, 1e3, {a});
  g.Op("m", OpKind::kElementwiseBinary, 1e3, {r});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(Groups(graph, std::vector<int32_t>(4, 0)),
              ElementsAre(-1, 0, 0, -1));
}

// A ResNet block at inference: conv -> batch norm (given its running mean
// and variance) -> add (the shortcut) -> relu is one kernel, as Grappler's
// _FusedConv2D or ONNX Runtime's Conv with BN folded and ReLU fused runs
// it; the next convolution starts the next kernel.
TEST(GreedyFusionTest, FusesAConvolutionItsInferenceBatchNormAndActivation) {
  GraphMaker g;
  const int x = g.Param("x", 1000);
  const int w = g.Param("w", 72);
  const int scale = g.Param("scale", 8);
  const int offset = g.Param("offset", 8);
  const int mean = g.Param("mean", 8);
  const int variance = g.Param("variance", 8);
  const int conv = g.Op("conv", OpKind::kConvolution, 1.4e5, {x, w});
  const int bn = g.Normalization("bn", "BatchNormalization",
                                 {conv, scale, offset, mean, variance});
  const int add = g.Op("add", 1e3, {bn, x});
  const int relu = g.Op("relu", OpKind::kElementwiseUnary, 1e3, {add});
  g.Op("conv2", OpKind::kConvolution, 1.4e5, {relu, w});
  const graph::Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = Groups(graph, plan.device);
  EXPECT_THAT(plan.fusion_group,
              ElementsAre(-1, -1, -1, -1, -1, -1, 0, 0, 0, 0, -1));
  const RooflineCostModel cost_model;
  const Topology topology = UniformTopology(1);
  EXPECT_EQ(Simulator(graph, topology, cost_model).Simulate(plan)->num_kernels,
            2);
}

// In training the batch norm computes this batch's statistics, which no
// convolution kernel does: conv is a kernel, the batch norm and its ReLU
// (and the moving-average update reading its mean) the next.
TEST(GreedyFusionTest, StartsAKernelAtATrainingBatchNorm) {
  GraphMaker g;
  const int x = g.Param("x", 1000);
  const int w = g.Param("w", 72);
  const int scale = g.Param("scale", 8);
  const int offset = g.Param("offset", 8);
  const int conv = g.Op("conv", OpKind::kConvolution, 1.4e5, {x, w});
  const int bn =
      g.Normalization("bn", "FusedBatchNormV3", {conv, scale, offset},
                      /*elements=*/1000, /*statistics=*/2);
  g.Op("relu", OpKind::kElementwiseUnary, 1e3, {bn});
  const int update = g.Op("update", 8, {}, 8);
  g.Read(update, bn, /*output=*/1);
  const graph::Graph graph = g.Build();
  EXPECT_THAT(Groups(graph, std::vector<int32_t>(graph.num_nodes(), 0)),
              ElementsAre(-1, -1, -1, -1, -1, 0, 0, 0));
  EXPECT_THAT(JoinGroups(graph, std::vector<int32_t>(graph.num_nodes(), 0)),
              ElementsAre(-1, -1, -1, -1, -1, 0, 0, 0));
}

// Attention scores: the scale joins the dot's kernel, the softmax starts
// its own with the dropout after it (XLA's GPU softmax fusion).
TEST(GreedyFusionTest, SoftmaxStartsAKernelAfterADot) {
  GraphMaker g;
  const int q = g.Param("q", 1000);
  const int k = g.Param("k", 1000);
  const int dot = g.Op("dot", OpKind::kDot, 1e6, {q, k});
  const int scaled = g.Op("scaled", 1e3, {dot});
  const int softmax = g.Op("softmax", OpKind::kSoftmax, 5e3, {scaled});
  g.Op("dropout", 1e3, {softmax});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(Groups(graph, std::vector<int32_t>(graph.num_nodes(), 0)),
              ElementsAre(-1, -1, 0, 0, 1, 1));
}

TEST(GreedyFusionTest, PriorityZeroKeepsANodeAlone) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e3, {p});
  const int b = g.Op("b", 1e3, {a});
  g.Op("c", 1e3, {b});
  const graph::Graph graph = g.Build();
  const std::vector<int32_t> device(4, 0);
  const std::vector<int32_t> priority = {0, 5, 0, 5};
  EXPECT_THAT(Groups(graph, device, &priority), ElementsAre(-1, -1, -1, -1));
  const std::vector<int32_t> eager = {0, 5, 5, 1};
  EXPECT_THAT(Groups(graph, device, &eager), ElementsAre(-1, 0, 0, 0));
}

TEST(GreedyFusionTest, TwoInputConsumerJoinsTheLaterGroupOrBoth) {
  // c reads a and b, both alone: greedy joins only b (the later first
  // member), which keeps every edge into the group from before the group;
  // greedy-join makes one kernel of all three (as XLA fuses both producers
  // into their consumer), whichever producer is preferred.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e3, {p});
  const int b = g.Op("b", 1e3, {p});
  g.Op("c", 1e3, {a, b});
  const graph::Graph graph = g.Build();
  const std::vector<int32_t> device(4, 0);
  const std::vector<int32_t> prefer_a = {1, 9, 1, 1};
  EXPECT_THAT(Groups(graph, device), ElementsAre(-1, -1, 0, 0));
  EXPECT_THAT(Groups(graph, device, &prefer_a), ElementsAre(-1, -1, 0, 0));
  EXPECT_THAT(JoinGroups(graph, device), ElementsAre(-1, 0, 0, 0));
  EXPECT_THAT(JoinGroups(graph, device, &prefer_a), ElementsAre(-1, 0, 0, 0));
  // A producer that may not fuse stays out; the other still joins.
  const std::vector<int32_t> a_alone = {1, 0, 1, 1};
  EXPECT_THAT(JoinGroups(graph, device, &a_alone), ElementsAre(-1, -1, 0, 0));
}

TEST(GreedyJoinFusionTest, JoinsALaterIndependentInputsGroup) {
  // x -> y -> c and z -> c, with z after y and independent of it: c joins
  // x-y's group and z's (no path leads from one to the other).
  // kOneProducer keeps c with z only (its rule wants every other input of
  // the joined group before the group's first member).
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int x = g.Op("x", 1e3, {p});
  const int y = g.Op("y", 1e3, {x});
  const int z = g.Op("z", 1e3, {p});
  g.Op("c", 1e3, {y, z});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(JoinGroups(graph, std::vector<int32_t>(5, 0)),
              ElementsAre(-1, 0, 0, 0, 0));
  EXPECT_THAT(Groups(graph, std::vector<int32_t>(5, 0)),
              ElementsAre(-1, 0, 0, 1, 1));
}

TEST(GreedyJoinFusionTest, RefusesAJoinThatClosesACycleThroughAThirdKernel) {
  // a -> b -> x (a custom call, alone) -> c and b -> c: joining c to a-b's
  // group would make that kernel feed x and wait for it.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e3, {p});
  const int b = g.Op("b", OpKind::kElementwiseUnary, 1e3, {a});
  const int x = g.Op("x", OpKind::kCustomCall, 1e3, {b});
  g.Op("c", OpKind::kElementwiseBinary, 1e3, {b, x});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(JoinGroups(graph, std::vector<int32_t>(5, 0)),
              ElementsAre(-1, 0, 0, -1, -1));
}

TEST(GreedyJoinFusionTest, NeverPutsAReducesConsumerInItsKernel) {
  // a -> r (reduce) -> m -> c and a -> c: r's consumers start a new group
  // ({m}); c joins it, and a's group may not join too (it would put m, r's
  // consumer, in r's kernel).
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e3, {p});
  const int r = g.Op("r", OpKind::kReduce, 1e3, {a});
  const int m = g.Op("m", OpKind::kElementwiseUnary, 1e3, {r});
  g.Op("c", OpKind::kElementwiseBinary, 1e3, {a, m});
  const graph::Graph graph = g.Build();
  const std::vector<int32_t> groups =
      JoinGroups(graph, std::vector<int32_t>(5, 0));
  EXPECT_THAT(groups, ElementsAre(-1, 0, 0, 1, 1));
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = groups;
  const RooflineCostModel cost_model;
  EXPECT_TRUE(
      Simulator(graph, UniformTopology(1), cost_model).Simulate(plan).ok());
}

TEST(GreedyJoinFusionTest, AConsumerOfATransferJoinsNoGroup) {
  // a -> dot0 -> c on device 0, b -> dot1 -> c with dot1 on device 1:
  // joining c to dot0's group would hold dot0 back until dot1's result has
  // crossed over. c starts a group of its own; its consumer joins it.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int dot0 = g.Op("dot0", OpKind::kDot, 1e9, {p});
  const int dot1 = g.Op("dot1", OpKind::kDot, 1e9, {p});
  const int c = g.Op("c", OpKind::kElementwiseBinary, 1e3, {dot0, dot1});
  g.Op("d", OpKind::kElementwiseUnary, 1e3, {c});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(JoinGroups(graph, {0, 0, 1, 0, 0}),
              ElementsAre(-1, -1, -1, 0, 0));
  EXPECT_THAT(JoinGroups(graph, {0, 0, 0, 0, 0}), ElementsAre(-1, 0, -1, 0, 0));
}

TEST(GreedyJoinFusionTest, NeverPutsACheapOpBeforeTheDotOfItsGroup) {
  // a -> dot -> c and a -> c: c joins dot's group; joining a's too would
  // fuse a before the dot (a prologue a library GEMM cannot take).
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e3, {p});
  const int dot = g.Op("dot", OpKind::kDot, 1e9, {a});
  g.Op("c", OpKind::kElementwiseBinary, 1e3, {a, dot});
  const graph::Graph graph = g.Build();
  EXPECT_THAT(JoinGroups(graph, std::vector<int32_t>(4, 0)),
              ElementsAre(-1, -1, 0, 0));
}

TEST(GreedyFusionTest, FusionJoinOfMethodReadsTheFusionPart) {
  EXPECT_EQ(FusionJoinOfMethod("single+fifo+greedy-join+default"),
            FusionJoin::kAllProducers);
  EXPECT_EQ(FusionJoinOfMethod("heft+critical-path+greedy-join"),
            FusionJoin::kAllProducers);
  EXPECT_EQ(FusionJoinOfMethod("heft+critical-path+greedy"),
            FusionJoin::kOneProducer);
  EXPECT_EQ(FusionJoinOfMethod("greedy-join"), FusionJoin::kOneProducer);
  EXPECT_EQ(FusionJoinOfMethod("go"), FusionJoin::kOneProducer);
  EXPECT_EQ(FusionJoinOfMethod(""), FusionJoin::kOneProducer);
}

TEST(GreedyFusionTest, RejectsVectorsOfTheWrongLength) {
  const graph::Graph graph = testing::ChainGraph(3);
  auto groups = GreedyFusionGroups(graph, {0, 0}, nullptr);
  EXPECT_EQ(groups.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(groups.status().message(), HasSubstr("placement has 2 entries"));
  const std::vector<int32_t> priority = {1};
  groups = GreedyFusionGroups(graph, std::vector<int32_t>(4, 0), &priority);
  EXPECT_EQ(groups.status().code(), absl::StatusCode::kInvalidArgument);
}

// Random DAGs with random kinds and devices, both join modes: the simulator
// (which rejects cyclic groups) accepts every grouping, and groups never span
// devices.
TEST(GreedyFusionTest, RandomGraphsNeverGetCyclicGroups) {
  std::mt19937_64 rng(42);
  const OpKind kinds[] = {
      OpKind::kElementwiseBinary, OpKind::kDot,     OpKind::kReduce,
      OpKind::kBroadcast,         OpKind::kReshape, OpKind::kConcatenate,
      OpKind::kCustomCall};
  const RooflineCostModel cost_model;
  const Topology topology = UniformTopology(2);
  int fused_nodes[2] = {0, 0};
  for (int trial = 0; trial < 1000; ++trial) {
    GraphMaker g(absl::StrCat("random", trial));
    std::vector<int> nodes = {g.Param("p", 1000)};
    for (int i = 0; i < 40; ++i) {
      std::vector<int> inputs;
      const int fan_in = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < fan_in; ++k) {
        inputs.push_back(nodes[rng() % nodes.size()]);
      }
      std::sort(inputs.begin(), inputs.end());
      inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
      nodes.push_back(
          g.Op(absl::StrCat("n", i), kinds[rng() % 7], 1e6, inputs));
    }
    const graph::Graph graph = g.Build();
    std::vector<int32_t> device(graph.num_nodes());
    for (int32_t& d : device) d = (rng() % 4 == 0) ? 1 : 0;
    Plan plan = DefaultPlan(graph);
    plan.device = device;
    for (const bool join : {false, true}) {
      plan.fusion_group =
          join ? JoinGroups(graph, device) : Groups(graph, device);
      for (NodeId id = 0; id < graph.num_nodes(); ++id) {
        if (plan.fusion_group[id] >= 0) ++fused_nodes[join];
      }
      absl::StatusOr<SimulationResult> result =
          Simulator(graph, topology, cost_model).Simulate(plan);
      ASSERT_TRUE(result.ok()) << "trial " << trial << (join ? " (join)" : "")
                               << ": " << result.status();
    }
  }
  EXPECT_GT(fused_nodes[0], 1000);
  EXPECT_GT(fused_nodes[1], 1000);
}

}  // namespace
}  // namespace gopt::simulator::baselines
