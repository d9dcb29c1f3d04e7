#include "graph/shape_inference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gopt::graph
