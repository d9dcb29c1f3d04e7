#include "simulator/fusion_rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "simulator/testing/baseline_graphs.h"

// One test per kernel rule (fusion_rules.h), on graphs built here. Node ids
// are the builder's: these graphs keep insertion order.
namespace gopt::simulator {
namespace {

using baselines::testing::GraphMaker;
using graph::OpKind;

// x -> conv(x, w) -> a normalization `op` -> relu, with the normalization's
// other inputs (scale, offset and, with `running_statistics`, mean and
// variance) as parameters. Ids: x 0, w 1, scale 2, offset 3, [mean 4,
// variance 5,] then conv, norm, relu. With `statistics_read`, the
// normalization has two statistics outputs and a node `update` reads its
// mean (as training reads it into the moving average).
struct ConvNormRelu {
  int conv = -1;
  int norm = -1;
  int relu = -1;
  graph::Graph graph;
};

ConvNormRelu MakeConvNormRelu(const std::string& op, bool running_statistics,
                              bool statistics_read) {
  GraphMaker g;
  const int x = g.Param("x", 1000);
  const int w = g.Param("w", 72);
  std::vector<int> parameters = {g.Param("scale", 8), g.Param("offset", 8)};
  if (running_statistics) {
    parameters.push_back(g.Param("mean", 8));
    parameters.push_back(g.Param("variance", 8));
  }
  ConvNormRelu result;
  result.conv = g.Op("conv", OpKind::kConvolution, 1.4e5, {x, w});
  std::vector<int> inputs = {result.conv};
  inputs.insert(inputs.end(), parameters.begin(), parameters.end());
  result.norm = g.Normalization("norm", op, inputs, /*elements=*/1000,
                                /*statistics=*/statistics_read ? 2 : 0);
  result.relu = g.Op("relu", OpKind::kElementwiseUnary, 1e3, {result.norm});
  if (statistics_read) {
    const int update = g.Op("update", OpKind::kElementwiseBinary, 8, {}, 8);
    g.Read(update, result.norm, /*output=*/1);
  }
  result.graph = g.Build();
  return result;
}

// `members` in group 0, every other node unfused.
std::vector<int32_t> OneGroup(const graph::Graph& graph,
                              const std::vector<int>& members) {
  std::vector<int32_t> group(graph.num_nodes(), -1);
  for (int id : members) group[id] = 0;
  return group;
}

TEST(FusionRulesTest, NormalizationAndSoftmaxAreCheap) {
  EXPECT_EQ(FusionRoleOf(OpKind::kNormalization), FusionRole::kCheap);
  EXPECT_EQ(FusionRoleOf(OpKind::kSoftmax), FusionRole::kCheap);
  EXPECT_EQ(FusionRoleOf(OpKind::kElementwiseUnary), FusionRole::kCheap);
  EXPECT_EQ(FusionRoleOf(OpKind::kReduce), FusionRole::kCheap);
  EXPECT_EQ(FusionRoleOf(OpKind::kConvolution), FusionRole::kHeavy);
  EXPECT_EQ(FusionRoleOf(OpKind::kDot), FusionRole::kHeavy);
  EXPECT_EQ(FusionRoleOf(OpKind::kGather), FusionRole::kAlone);
  EXPECT_EQ(FusionRoleOf(OpKind::kSelectAndScatter), FusionRole::kAlone);
}

TEST(FusionRulesTest, AKernelHoldsAtMostOneDotOrConvolution) {
  GraphMaker g;
  const int x = g.Param("x", 1000);
  const int c1 = g.Op("c1", OpKind::kConvolution, 1e6, {x});
  const int c2 = g.Op("c2", OpKind::kDot, 1e6, {c1});
  const graph::Graph graph = g.Build();
  EXPECT_EQ(CheckFusionRules(graph, OneGroup(graph, {c1, c2})).message(),
            "fusion group 0 holds two dots or convolutions, n1 'c1' "
            "(convolution) and n2 'c2' (dot): a kernel holds at most one dot "
            "or convolution");
}

// XLA's BatchNormExpander makes an inference batch norm a multiply and an
// add per element; Grappler's remapper and ONNX Runtime fold it into the
// convolution before it, whose activation they fuse too.
TEST(FusionRulesTest, InferenceBatchNormFoldsIntoItsConvolution) {
  for (const std::string op :
       {"batch-norm-inference", "BatchNormalization", "FusedBatchNormV3"}) {
    SCOPED_TRACE(op);
    const ConvNormRelu g = MakeConvNormRelu(op, /*running_statistics=*/true,
                                            /*statistics_read=*/false);
    EXPECT_FALSE(ComputesStatistics(g.graph, g.norm));
    EXPECT_TRUE(
        CheckFusionRules(g.graph, OneGroup(g.graph, {g.conv, g.norm, g.relu}))
            .ok());
  }
}

// A batch norm whose batch statistics are read (by the moving averages and
// the gradient) normalizes with the statistics of this batch: a reduction
// over all but the feature dimension, which no convolution kernel computes.
TEST(FusionRulesTest, TrainingBatchNormNeverSharesAConvolutionsKernel) {
  const ConvNormRelu g =
      MakeConvNormRelu("BatchNormalization", /*running_statistics=*/true,
                       /*statistics_read=*/true);
  EXPECT_TRUE(ComputesStatistics(g.graph, g.norm));
  EXPECT_EQ(
      CheckFusionRules(g.graph, OneGroup(g.graph, {g.conv, g.norm})).message(),
      "fusion group 0 holds a dot or convolution and a normalization that "
      "computes statistics, n6 'conv' (convolution) and n7 'norm' "
      "(normalization): a normalization that computes statistics of its "
      "input (softmax, training batch norm, layer norm, ...) runs in a kernel "
      "of cheap ops, never in a dot's or convolution's; only an inference "
      "batch norm (given mean and variance) folds into one");
  // Its normalization and activation are one kernel (oneDNN's batch norm
  // with its ReLU, TensorFlow's _FusedBatchNormEx, XLA's elementwise pass).
  EXPECT_TRUE(
      CheckFusionRules(g.graph, OneGroup(g.graph, {g.norm, g.relu})).ok());
}

// Without the running mean and variance as inputs a batch norm computes
// them (HLO's batch-norm-training; a generated training step's
// FusedBatchNormV3 of x, scale and offset).
TEST(FusionRulesTest, BatchNormWithoutRunningStatisticsComputesThem) {
  for (const std::string op : {"batch-norm-training", "FusedBatchNormV3"}) {
    SCOPED_TRACE(op);
    const ConvNormRelu g = MakeConvNormRelu(op, /*running_statistics=*/false,
                                            /*statistics_read=*/false);
    EXPECT_TRUE(ComputesStatistics(g.graph, g.norm));
    EXPECT_FALSE(
        CheckFusionRules(g.graph, OneGroup(g.graph, {g.conv, g.norm})).ok());
  }
}

// Layer norm and softmax reduce each row and normalize it: XLA's GPU
// backend fuses that reduction with the elementwise ops before and after
// it; no GEMM computes it in its epilogue.
TEST(FusionRulesTest, LayerNormAndSoftmaxJoinCheapOpsButNotADot) {
  GraphMaker g;
  const int x = g.Param("x", 1000);
  const int residual = g.Param("residual", 1000);
  const int gamma = g.Param("gamma", 8);
  const int beta = g.Param("beta", 8);
  const int add = g.Op("add", 1e3, {x, residual});
  const int norm = g.Normalization("norm", "LayerNormalization",
                                   {add, gamma, beta}, /*elements=*/1000,
                                   /*statistics=*/2);
  const int scale = g.Op("scale", 1e3, {norm});
  const int dot = g.Op("dot", OpKind::kDot, 1e6, {scale});
  const int softmax = g.Op("softmax", OpKind::kSoftmax, 5e3, {dot});
  const int dropout = g.Op("dropout", 1e3, {softmax});
  const graph::Graph graph = g.Build();
  EXPECT_TRUE(ComputesStatistics(graph, norm));
  EXPECT_TRUE(ComputesStatistics(graph, softmax));
  EXPECT_TRUE(
      CheckFusionRules(graph, OneGroup(graph, {add, norm, scale})).ok());
  EXPECT_TRUE(
      CheckFusionRules(graph, OneGroup(graph, {softmax, dropout})).ok());
  EXPECT_EQ(CheckFusionRules(graph, OneGroup(graph, {dot, softmax})).message(),
            "fusion group 0 holds a dot or convolution and a normalization "
            "that computes statistics, n7 'dot' (dot) and n8 'softmax' "
            "(softmax): a normalization that computes statistics of its input "
            "(softmax, training batch norm, layer norm, ...) runs in a kernel "
            "of cheap ops, never in a dot's or convolution's; only an "
            "inference batch norm (given mean and variance) folds into one");
}

// A normalization's gradient reduces over the batch (the scale's and the
// offset's gradients; XLA expands batch-norm-grad into two reduces).
TEST(FusionRulesTest, NormalizationGradientsComputeStatistics) {
  for (const std::string op :
       {"batch-norm-grad", "FusedBatchNormGradV3", "LayerNormGrad"}) {
    SCOPED_TRACE(op);
    GraphMaker g;
    const int dy = g.Param("dy", 1000);
    const int x = g.Param("x", 1000);
    const int scale = g.Param("scale", 8);
    const int mean = g.Param("mean", 8);
    const int variance = g.Param("variance", 8);
    const int grad = g.Normalization("grad", op, {dy, x, scale, mean, variance},
                                     /*elements=*/1000, /*statistics=*/2);
    const graph::Graph graph = g.Build();
    EXPECT_TRUE(ComputesStatistics(graph, grad));
  }
}

TEST(FusionRulesTest, OtherOpsRunAsKernelsOfTheirOwn) {
  GraphMaker g;
  const int x = g.Param("x", 1000);
  const int gather = g.Op("gather", OpKind::kGather, 0, {x});
  const int add = g.Op("add", 1e3, {gather});
  const graph::Graph graph = g.Build();
  EXPECT_FALSE(ComputesStatistics(graph, add));
  EXPECT_EQ(CheckFusionRules(graph, OneGroup(graph, {gather, add})).message(),
            "fusion group 0 holds an op that never shares a kernel, n1 "
            "'gather' (gather) and n2 'add' (elementwise-binary): a gather "
            "runs as a kernel of its own (only elementwise, reduce, "
            "reduce-window, broadcast, transpose, copy, slice, dynamic-slice, "
            "pad, concatenate, reverse, reshape, bitcast, normalization and "
            "softmax ops join a kernel, with at most one dot or convolution)");
}

}  // namespace
}  // namespace gopt::simulator
