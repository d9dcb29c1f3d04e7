#include "graph/shape_inference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace gopt::graph {
namespace {

using ::testing::ElementsAre;

TEST(ShapeInferenceTest, Broadcast) {
  EXPECT_THAT(BroadcastDims({8, 1, 6}, {7, 1}).value(), ElementsAre(8, 7, 6));
  EXPECT_FALSE(BroadcastDims({3}, {4}).ok());
}

TEST(ShapeInferenceTest, MatMulPromotesVectorsAndBroadcastsBatch) {
  EXPECT_THAT(MatMulOutputDims({2, 1, 3, 4}, {5, 4, 6}).value(),
              ElementsAre(2, 5, 3, 6));
  EXPECT_THAT(MatMulOutputDims({4}, {4, 6}).value(), ElementsAre(6));
  EXPECT_FALSE(MatMulOutputDims({3, 4}, {5, 6}).ok());
}

TEST(ShapeInferenceTest, DotOutputOrdersBatchThenFreeDims) {
  DotDimensions dims;
  dims.lhs_batch = {0};
  dims.rhs_batch = {0};
  dims.lhs_contracting = {2};
  dims.rhs_contracting = {1};
  EXPECT_THAT(DotOutputDims({4, 3, 5}, {4, 5, 7}, dims).value(),
              ElementsAre(4, 3, 7));
}

TEST(ShapeInferenceTest, StridedPaddedDilatedWindow) {
  WindowDimension window;
  window.size = 3;
  window.stride = 2;
  window.padding_low = 1;
  window.padding_high = 1;
  EXPECT_EQ(WindowedOutputSize(224, window).value(), 112);
  window.window_dilation = 2;  // effective size 5
  EXPECT_EQ(WindowedOutputSize(7, window).value(), 3);
}

TEST(ShapeInferenceTest, ConvolutionNchw) {
  ConvolutionDimensions dims{0, 1, {2, 3}, 1, 0, {2, 3}, 0, 1, {2, 3}};
  std::vector<WindowDimension> window(2);
  window[0].stride = window[1].stride = 2;
  window[0].padding_low = window[0].padding_high = 3;
  window[1].padding_low = window[1].padding_high = 3;
  // ResNet-50 stem: [1,3,224,224] * [64,3,7,7] stride 2 pad 3 -> 112x112.
  EXPECT_THAT(
      ConvolutionOutputDims({1, 3, 224, 224}, {64, 3, 7, 7}, dims, window, 1, 1)
          .value(),
      ElementsAre(1, 64, 112, 112));
}

TEST(ShapeInferenceTest, ReduceAndTranspose) {
  EXPECT_THAT(ReduceOutputDims({2, 3, 4}, {-1}, false).value(),
              ElementsAre(2, 3));
  EXPECT_THAT(ReduceOutputDims({2, 3, 4}, {1}, true).value(),
              ElementsAre(2, 1, 4));
  EXPECT_THAT(TransposeOutputDims({2, 3, 4}, {2, 0, 1}).value(),
              ElementsAre(4, 2, 3));
  EXPECT_FALSE(TransposeOutputDims({2, 3}, {0, 0}).ok());
}

TEST(ShapeInferenceTest, PartialBroadcastTakesKnownSizesAboveOne) {
  const PartialShape a = PartialShape::Known({kUnknownDim, 1, 6});
  const PartialShape b = PartialShape::Known({7, kUnknownDim});
  absl::StatusOr<PartialShape> out = BroadcastPartialShapes(a, b);
  ASSERT_TRUE(out.ok()) << out.status();
  // ? against 6 must be 6 (or 1, which broadcasts to 6); ? against the
  // implicit leading 1 stays unknown.
  EXPECT_THAT(out->dims, ElementsAre(kUnknownDim, 7, 6));
  EXPECT_FALSE(
      BroadcastPartialShapes(a, PartialShape::UnknownRank())->rank_known);
  EXPECT_FALSE(
      BroadcastPartialShapes(PartialShape::Known({3}), PartialShape::Known({4}))
          .ok());
}

TEST(ShapeInferenceTest, PartialReduceTransposeAndWindowKeepUnknownDims) {
  const PartialShape x = PartialShape::Known({kUnknownDim, 3, 4});
  EXPECT_THAT(ReducePartialShape(x, {1}, /*keep_dims=*/false)->dims,
              ElementsAre(kUnknownDim, 4));
  EXPECT_THAT(TransposePartialShape(x, {2, 0, 1})->dims,
              ElementsAre(4, kUnknownDim, 3));
  EXPECT_FALSE(ReducePartialShape(x, {3}, /*keep_dims=*/true).ok());
  WindowDimension window;
  window.size = 3;
  window.stride = 2;
  EXPECT_EQ(PartialWindowedOutputSize(kUnknownDim, window).value(),
            kUnknownDim);
  EXPECT_EQ(PartialWindowedOutputSize(9, window).value(), 4);
}

TEST(ShapeInferenceTest, MergeShapesPrefersKnownDims) {
  const PartialShape merged =
      MergeShapes(PartialShape::Known({kUnknownDim, 5, 2}),
                  PartialShape::Known({3, kUnknownDim, 4}));
  EXPECT_THAT(merged.dims, ElementsAre(3, 5, kUnknownDim));
  EXPECT_FALSE(MergeShapes(PartialShape::Known({1}), PartialShape::Known({}))
                   .rank_known);
  EXPECT_EQ(PartialShapeString(merged), "[3,5,?]");
  EXPECT_EQ(KnownNumElements(PartialShape::Known({3, 5})), 15);
  EXPECT_FALSE(KnownNumElements(merged).has_value());
}

TEST(ShapeInferenceTest, ResolveSliceClampsAndCountsBothDirections) {
  // x[1:-1:2] of 10 -> indices 1,3,5,7.
  EXPECT_EQ(ResolveSlice(10, 1, -1, 2).count, 4);
  // x[::-3] of 10 -> 9,6,3,0.
  const ResolvedSlice reversed =
      ResolveSlice(10, INT64_MAX, INT64_MIN, /*step=*/-3);
  EXPECT_EQ(reversed.start, 9);
  EXPECT_EQ(reversed.count, 4);
  // Out-of-range bounds clamp; an empty range reads nothing.
  EXPECT_EQ(ResolveSlice(10, -100, 100, 1).count, 10);
  EXPECT_EQ(ResolveSlice(10, 5, 2, 1).count, 0);
  EXPECT_EQ(ResolveSlice(10, 0, INT64_MAX, INT64_MAX).count, 1);
}

TEST(ShapeInferenceTest, FoldIntBinaryDivisionModuloAndOverflow) {
  EXPECT_EQ(FoldIntBinary(IntBinaryOp::kTruncatingDiv, -7, 2), -3);
  EXPECT_EQ(FoldIntBinary(IntBinaryOp::kFlooringDiv, -7, 2), -4);
  EXPECT_EQ(FoldIntBinary(IntBinaryOp::kFlooringMod, -7, 3), 2);
  EXPECT_EQ(FoldIntBinary(IntBinaryOp::kFlooringMod, 7, -3), -2);
  EXPECT_FALSE(FoldIntBinary(IntBinaryOp::kTruncatingDiv, 1, 0).has_value());
  EXPECT_FALSE(FoldIntBinary(IntBinaryOp::kMul, INT64_MAX, 2).has_value());
  EXPECT_EQ(FoldIntBinary(IntBinaryOp::kMax, 3, 9), 9);
}

}  // namespace
}  // namespace gopt::graph
