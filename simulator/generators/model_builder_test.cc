#include "simulator/generators/model_builder.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"

namespace gopt::simulator::generators {
namespace {

using graph::DType;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using ::testing::HasSubstr;

const Node& NodeNamed(const Graph& graph, const std::string& name) {
  std::optional<graph::NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  return graph.node(id.value_or(0));
}

// x [32, 128] -> dense 64 -> relu -> dense 16 -> mean.
Graph TwoLayerMlp(OptimizerKind optimizer) {
  ModelBuilder b("mlp", DType::kF32);
  const Tensor x = b.Input("x", {32, 128});
  const Tensor w1 = b.Weight("w1", {128, 64});
  const Tensor w2 = b.Weight("w2", {64, 16});
  Tensor h = b.Unary("relu", UnaryOp::kRelu, b.MatMul("dense1", x, w1));
  const Tensor y = b.MatMul("dense2", h, w2);
  absl::StatusOr<Graph> graph =
      std::move(b).Finish(b.ReduceMean("loss", y, {0, 1}), optimizer);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : Graph();
}

TEST(ModelBuilderTest, DotAndItsTwoGradientDotsCostTwoMnk) {
  const Graph graph = TwoLayerMlp(OptimizerKind::kSgdMomentum);
  // Forward: [32,64] x [64,16].
  const Node& forward = NodeNamed(graph, "dense2");
  EXPECT_EQ(forward.kind, OpKind::kDot);
  EXPECT_EQ(forward.op, "MatMul");
  EXPECT_DOUBLE_EQ(forward.flops, 2.0 * 32 * 16 * 64);
  // dX = dY [32,16] x W^T -> [32,64]; dW = X^T x dY -> [64,16].
  const Node& dx = NodeNamed(graph, "gradients/dense2_grad/MatMul");
  EXPECT_EQ(dx.outputs[0].dims, (std::vector<int64_t>{32, 64}));
  EXPECT_DOUBLE_EQ(dx.flops, 2.0 * 32 * 16 * 64);
  const Node& dw = NodeNamed(graph, "gradients/dense2_grad/MatMul_1");
  EXPECT_EQ(dw.outputs[0].dims, (std::vector<int64_t>{64, 16}));
  EXPECT_DOUBLE_EQ(dw.flops, 2.0 * 32 * 16 * 64);
  // The input x needs no gradient, so dense1 has only its weight gradient.
  EXPECT_FALSE(graph.FindNode("gradients/dense1_grad/MatMul").has_value());
  EXPECT_TRUE(graph.FindNode("gradients/dense1_grad/MatMul_1").has_value());
  EXPECT_EQ(NodeNamed(graph, "gradients/relu_grad/ReluGrad").kind,
            OpKind::kElementwiseBinary);
}

TEST(ModelBuilderTest, SgdMomentumUpdatesEachWeightElementwise) {
  const Graph graph = TwoLayerMlp(OptimizerKind::kSgdMomentum);
  const Node& slot = NodeNamed(graph, "train/w1/Momentum");
  EXPECT_EQ(slot.kind, OpKind::kParameter);
  EXPECT_EQ(slot.outputs[0].dims, (std::vector<int64_t>{128, 64}));
  const Node& update = NodeNamed(graph, "train/w1/sub");
  EXPECT_EQ(update.kind, OpKind::kElementwiseBinary);
  EXPECT_DOUBLE_EQ(update.flops, 128.0 * 64);
}

TEST(ModelBuilderTest, AdamKeepsTwoSlotsAndTwelveOpsPerWeight) {
  const Graph sgd = TwoLayerMlp(OptimizerKind::kSgdMomentum);
  const Graph adam = TwoLayerMlp(OptimizerKind::kAdam);
  // Per weight: SGD 1 slot + 4 ops, Adam 2 slots + 12 ops; Adam also has 4
  // more scalar hyper-parameters.
  EXPECT_EQ(adam.num_nodes() - sgd.num_nodes(), 2 * (14 - 5) + 4);
  EXPECT_TRUE(adam.FindNode("train/w2/Adam_1").has_value());
}

TEST(ModelBuilderTest, ConvolutionGradientsAreConvolutionsWithForwardFlops) {
  ModelBuilder b("conv", DType::kF32);
  const Tensor x = b.Input("x", {8, 32, 32, 16});
  Tensor h =
      b.Conv2D("conv1", x, b.Weight("k1", {3, 3, 16, 16}), 1, Padding::kSame);
  h = b.Conv2D("conv2", h, b.Weight("k2", {3, 3, 16, 32}), 1, Padding::kSame);
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceMean("loss", h, {0, 1, 2, 3}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const double forward = 2.0 * 8 * 32 * 32 * 32 * (3 * 3 * 16);
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "conv2").flops, forward);
  const Node& dx =
      NodeNamed(*graph, "gradients/conv2_grad/Conv2DBackpropInput");
  EXPECT_EQ(dx.kind, OpKind::kConvolution);
  EXPECT_EQ(dx.outputs[0].dims, (std::vector<int64_t>{8, 32, 32, 16}));
  EXPECT_DOUBLE_EQ(dx.flops, forward);
  const Node& dw =
      NodeNamed(*graph, "gradients/conv2_grad/Conv2DBackpropFilter");
  EXPECT_EQ(dw.kind, OpKind::kConvolution);
  EXPECT_EQ(dw.outputs[0].dims, (std::vector<int64_t>{3, 3, 16, 32}));
  EXPECT_DOUBLE_EQ(dw.flops, forward);
  EXPECT_FALSE(
      graph->FindNode("gradients/conv1_grad/Conv2DBackpropInput").has_value());
}

TEST(ModelBuilderTest, StridedConvolutionBackpropInputIsDilatedLikeXla) {
  ModelBuilder b("conv", DType::kF32);
  const Tensor x = b.Weight("x", {2, 15, 15, 8});
  const Tensor y =
      b.Conv2D("conv", x, b.Weight("k", {3, 3, 8, 4}), 2, Padding::kSame);
  EXPECT_EQ(b.type(y).dims, (std::vector<int64_t>{2, 8, 8, 4}));
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceMean("loss", y, {0, 1, 2, 3}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& dx = NodeNamed(*graph, "gradients/conv_grad/Conv2DBackpropInput");
  EXPECT_EQ(dx.outputs[0].dims, (std::vector<int64_t>{2, 15, 15, 8}));
  EXPECT_EQ(dx.attributes.window()[0].base_dilation, 2);
  // A dense kernel visits the stride's zeros too (the catalog's rule).
  EXPECT_DOUBLE_EQ(dx.flops, 2.0 * 2 * 15 * 15 * 8 * (3 * 3 * 4));
  const Node& dw =
      NodeNamed(*graph, "gradients/conv_grad/Conv2DBackpropFilter");
  EXPECT_EQ(dw.outputs[0].dims, (std::vector<int64_t>{3, 3, 8, 4}));
  EXPECT_DOUBLE_EQ(dw.flops, NodeNamed(*graph, "conv").flops);
}

TEST(ModelBuilderTest, StridedPointwiseBackpropInputCostsTheForwardFlops) {
  ModelBuilder b("conv", DType::kF32);
  const Tensor x = b.Weight("x", {2, 14, 14, 16});
  const Tensor y =
      b.Conv2D("conv", x, b.Weight("k", {1, 1, 16, 32}), 2, Padding::kSame);
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceMean("loss", y, {0, 1, 2, 3}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const double forward = 2.0 * 2 * 7 * 7 * 32 * 16;
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "conv").flops, forward);
  const Node& dx = NodeNamed(*graph, "gradients/conv_grad/Conv2DBackpropInput");
  EXPECT_EQ(dx.outputs[0].dims, (std::vector<int64_t>{2, 7, 7, 16}));
  EXPECT_DOUBLE_EQ(dx.flops, forward);
  const Node& pad =
      NodeNamed(*graph, "gradients/conv_grad/Conv2DBackpropInput_pad");
  EXPECT_EQ(pad.kind, OpKind::kPad);
  EXPECT_EQ(pad.outputs[0].dims, (std::vector<int64_t>{2, 14, 14, 16}));
  EXPECT_EQ(pad.attributes.padding()[1].interior, 1);
  EXPECT_EQ(pad.attributes.padding()[1].high, 1);
}

TEST(ModelBuilderTest, DepthwiseGradientsUseFeatureAndBatchGroups) {
  ModelBuilder b("dw", DType::kF32);
  const Tensor x = b.Weight("x", {4, 10, 10, 24});
  const Tensor y = b.DepthwiseConv2D("dw", x, b.Weight("k", {5, 5, 1, 24}), 1,
                                     Padding::kSame, 2);
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceMean("loss", y, {0, 1, 2, 3}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const double forward = 2.0 * 4 * 10 * 10 * 24 * 25;
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "dw").flops, forward);
  const Node& dx =
      NodeNamed(*graph, "gradients/dw_grad/DepthwiseConv2dNativeBackpropInput");
  EXPECT_EQ(dx.attributes.feature_group_count, 24);
  EXPECT_DOUBLE_EQ(dx.flops, forward);
  const Node& dw = NodeNamed(
      *graph, "gradients/dw_grad/DepthwiseConv2dNativeBackpropFilter");
  EXPECT_EQ(dw.attributes.batch_group_count, 24);
  EXPECT_EQ(dw.outputs[0].dims, (std::vector<int64_t>{5, 5, 1, 24}));
  EXPECT_DOUBLE_EQ(dw.flops, forward);
}

TEST(ModelBuilderTest, SharedWeightGradientsAreSummed) {
  ModelBuilder b("shared", DType::kF32);
  const Tensor w = b.Weight("w", {16, 16});
  Tensor h = b.Input("x", {4, 16});
  for (int step = 0; step < 3; ++step) {
    h = b.Unary("tanh", UnaryOp::kTanh, b.MatMul("matmul", h, w));
  }
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceSum("loss", h, {0, 1}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  int sums = 0;
  for (const Node& node : graph->nodes()) {
    if (node.op == "AddN") ++sums;
  }
  EXPECT_EQ(sums, 2);  // three contributions to dW
}

TEST(ModelBuilderTest, BroadcastOperandGradientIsReduced) {
  ModelBuilder b("bias", DType::kF32);
  const Tensor x = b.Input("x", {4, 3, 5, 8});
  const Tensor bias = b.Weight("bias", {3, 1, 8});
  const Tensor y = b.Add("add", x, bias);
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceMean("loss", y, {0, 1, 2, 3}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& sum = NodeNamed(*graph, "gradients/add_grad/y/Sum");
  EXPECT_EQ(sum.kind, OpKind::kReduce);
  EXPECT_EQ(sum.attributes.dimensions, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(sum.outputs[0].dims, (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(NodeNamed(*graph, "gradients/add_grad/y/Reshape").outputs[0].dims,
            (std::vector<int64_t>{3, 1, 8}));
}

TEST(ModelBuilderTest, ShapeMismatchIsReportedByFinish) {
  ModelBuilder b("bad", DType::kF32);
  const Tensor x = b.Input("x", {4, 8});
  const Tensor y = b.MatMul("matmul", x, b.Weight("w", {7, 2}));
  EXPECT_FALSE(y.valid());
  EXPECT_EQ(b.Dim(y, 0), 1);
  const Tensor loss = b.ReduceMean("loss", y, {0, 1});
  absl::StatusOr<Graph> graph =
      std::move(b).Finish(loss, OptimizerKind::kSgdMomentum);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("matmul"));
}

TEST(ModelBuilderTest, LossMustBeScalar) {
  ModelBuilder b("bad", DType::kF32);
  const Tensor x = b.Weight("x", {4, 8});
  absl::StatusOr<Graph> graph =
      std::move(b).Finish(x, OptimizerKind::kSgdMomentum);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("scalar"));
}

TEST(ModelBuilderTest, RepeatedNamesAreMadeUnique) {
  ModelBuilder b("names", DType::kF32);
  const Tensor x = b.Weight("x", {4});
  const Tensor a = b.Unary("relu", UnaryOp::kRelu, x);
  const Tensor c = b.Unary("relu", UnaryOp::kRelu, a);
  absl::StatusOr<Graph> graph = std::move(b).Finish(
      b.ReduceSum("loss", c, {0}), OptimizerKind::kSgdMomentum);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(graph->FindNode("relu").has_value());
  EXPECT_TRUE(graph->FindNode("relu_1").has_value());
}

}  // namespace
}  // namespace gopt::simulator::generators
