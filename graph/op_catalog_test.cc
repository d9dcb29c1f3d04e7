#include "graph/op_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gopt::graph {
namespace {

TEST(OpCatalogTest, DotCountsTwoFlopsPerMultiplyAdd) {
  // [8,16] x [16,32] -> [8,32]: 8*32 outputs, each 16 multiply-adds.
  const TensorType lhs = MakeTensorType(DType::kF32, {8, 16});
  const TensorType rhs = MakeTensorType(DType::kF32, {16, 32});
  const TensorType out = MakeTensorType(DType::kF32, {8, 32});
  OpAttributes attrs;
  attrs.has_dot_dimensions = true;
  attrs.mutable_dot()->lhs_contracting = {1};
  attrs.mutable_dot()->rhs_contracting = {0};
  auto cost = ComputeOpCost({OpKind::kDot, &attrs, {&lhs, &rhs}, {&out}});
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->flops, 2.0 * 8 * 32 * 16);
  EXPECT_EQ(cost->bytes_read, (8 * 16 + 16 * 32) * 4);
  EXPECT_EQ(cost->bytes_written, 8 * 32 * 4);
}

TEST(OpCatalogTest, DotRejectsContractingDimOutsideRank) {
  const TensorType lhs = MakeTensorType(DType::kF32, {8, 16});
  const TensorType out = MakeTensorType(DType::kF32, {8});
  OpAttributes attrs;
  attrs.has_dot_dimensions = true;
  attrs.mutable_dot()->lhs_contracting = {5};
  auto cost = ComputeOpCost({OpKind::kDot, &attrs, {&lhs, &lhs}, {&out}});
  ASSERT_FALSE(cost.ok());
  EXPECT_THAT(cost.status().message(), ::testing::HasSubstr("lhs_contracting"));
}

TEST(OpCatalogTest, GroupedConvolutionUsesKernelInputFeatures) {
  // NCHW input [1,32,8,8], 4 groups, kernel OIHW [64,8,3,3], output
  // [1,64,8,8]: each output element sums 8*3*3 = 72 products.
  const TensorType input = MakeTensorType(DType::kF32, {1, 32, 8, 8});
  const TensorType kernel = MakeTensorType(DType::kF32, {64, 8, 3, 3});
  const TensorType out = MakeTensorType(DType::kF32, {1, 64, 8, 8});
  OpAttributes attrs;
  attrs.has_convolution_dimensions = true;
  *attrs.mutable_convolution() = {0, 1, {2, 3}, 1, 0, {2, 3}, 0, 1, {2, 3}};
  attrs.feature_group_count = 4;
  auto cost =
      ComputeOpCost({OpKind::kConvolution, &attrs, {&input, &kernel}, {&out}});
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->flops, 2.0 * (64 * 8 * 8) * 72);
}

TEST(OpCatalogTest, SliceReadsOnlyWhatItOutputs) {
  const TensorType input = MakeTensorType(DType::kF32, {100});
  const TensorType out = MakeTensorType(DType::kF32, {10});
  auto cost = ComputeOpCost({OpKind::kSlice, nullptr, {&input}, {&out}});
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->bytes_read, 40);
  EXPECT_EQ(cost->flops, 0);
}

TEST(OpCatalogTest, CustomCallIsBytesOnly) {
  const TensorType x = MakeTensorType(DType::kF32, {10});
  auto cost = ComputeOpCost({OpKind::kCustomCall, nullptr, {&x}, {&x}});
  ASSERT_TRUE(cost.ok());
  EXPECT_TRUE(cost->unknown);
  EXPECT_EQ(cost->bytes_read + cost->bytes_written, 80);
}

TEST(OpCatalogTest, AllGatherCommunicatesItsOutput) {
  const TensorType shard = MakeTensorType(DType::kBF16, {4, 8});
  const TensorType full = MakeTensorType(DType::kBF16, {32, 8});
  auto cost = ComputeOpCost({OpKind::kAllGather, nullptr, {&shard}, {&full}});
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->bytes_communicated, 32 * 8 * 2);
}

TEST(OpCatalogTest, RnnCostsEveryStepAndDirection) {
  // LSTM: seq 5, batch 2, input 3, hidden 4 (gates*hidden 16), 1 direction.
  const TensorType x = MakeTensorType(DType::kF32, {5, 2, 3});
  const TensorType w = MakeTensorType(DType::kF32, {1, 16, 3});
  const TensorType r = MakeTensorType(DType::kF32, {1, 16, 4});
  const TensorType y = MakeTensorType(DType::kF32, {5, 1, 2, 4});
  auto cost = ComputeOpCost({OpKind::kRnn, nullptr, {&x, &w, &r}, {&y}});
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->flops, 5 * (2.0 * 2 * 16 * (3 + 4) + 8.0 * 2 * 16));
}

TEST(OpCatalogTest, SubgraphCostScalesByTripCountAndSaturates) {
  GraphBuilder builder("body", "generated");
  Node node;
  node.name = "n";
  node.flops = 10;
  node.bytes_read = 100;
  builder.AddNode(std::move(node));
  const Graph body = std::move(builder).Build(GraphLimits()).value();
  const Graph* bodies[] = {&body};
  EXPECT_EQ(SubgraphCost(bodies, 7).flops, 70);
  EXPECT_EQ(SubgraphCost(bodies, 7).bytes_read, 700);
  EXPECT_GT(SubgraphCost(bodies, int64_t{1} << 62).bytes_read, 0);
}

}  // namespace
}  // namespace gopt::graph
