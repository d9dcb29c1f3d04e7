#include "graph/tf/shape_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "google/protobuf/text_format.h"

namespace gopt::graph::tf {
namespace {

using ::testing::HasSubstr;

tensorflow::NodeDef ParseNode(const std::string& text) {
  tensorflow::NodeDef node;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &node));
  return node;
}

TensorInfo Tensor(std::vector<int64_t> dims, DType dtype = DType::kF32) {
  TensorInfo info;
  info.dtype = dtype;
  info.shape = PartialShape::Known(std::move(dims));
  return info;
}

TensorInfo IntVector(std::vector<int64_t> values) {
  TensorInfo info = Tensor({static_cast<int64_t>(values.size())}, DType::kS32);
  info.value = std::move(values);
  return info;
}

absl::StatusOr<std::vector<TensorInfo>> Infer(
    const std::string& node_text, const std::vector<TensorInfo>& inputs,
    int num_outputs = 1) {
  std::vector<const TensorInfo*> pointers;
  for (const TensorInfo& input : inputs) pointers.push_back(&input);
  bool has_rule = false;
  return InferOutputs(ParseNode(node_text), pointers, num_outputs, &has_rule);
}

TEST(ShapeRulesTest, UnknownDimBroadcastsToTheKnownSize) {
  TensorInfo upsampled = Tensor({1, kUnknownDim, kUnknownDim, 64});
  auto out =
      Infer("name: 'add' op: 'AddV2'", {upsampled, Tensor({1, 16, 16, 64})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape.dims, (std::vector<int64_t>{1, 16, 16, 64}));
}

TEST(ShapeRulesTest, IncompatibleBroadcastIsAnError) {
  auto out = Infer("name: 'add' op: 'Add'", {Tensor({3, 4}), Tensor({5})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("node 'add' (Add)"));
}

TEST(ShapeRulesTest, StridedSliceWithMasks) {
  // x[1:, ..., None, 0] on [5,6,7]: begin_mask 0, ellipsis at 1, new axis
  // at 2, shrink at 3 -> [4,6,1].
  auto out = Infer(
      "name: 's' op: 'StridedSlice' "
      "attr { key: 'ellipsis_mask' value { i: 2 } } "
      "attr { key: 'new_axis_mask' value { i: 4 } } "
      "attr { key: 'shrink_axis_mask' value { i: 8 } }",
      {Tensor({5, 6, 7}), IntVector({1, 0, 0, 0}), IntVector({5, 0, 0, 1}),
       IntVector({1, 1, 1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape.dims, (std::vector<int64_t>{4, 6, 1}));
}

TEST(ShapeRulesTest, ShapeValuesFoldThroughSliceAndConcat) {
  auto shape =
      Infer("name: 'shape' op: 'Shape'", {Tensor({2, kUnknownDim, 8})});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*(*shape)[0].value, (std::vector<int64_t>{2, kUnknownValue, 8}));
  auto tail = Infer("name: 't' op: 'Slice'",
                    {(*shape)[0], IntVector({2}), IntVector({1})});
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*(*tail)[0].value, (std::vector<int64_t>{8}));
  TensorInfo axis = Tensor({}, DType::kS32);
  axis.value = std::vector<int64_t>{0};
  auto joined =
      Infer("name: 'c' op: 'ConcatV2'", {IntVector({-1}), (*tail)[0], axis});
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(*(*joined)[0].value, (std::vector<int64_t>{-1, 8}));
  auto reshaped =
      Infer("name: 'r' op: 'Reshape'", {Tensor({2, 4, 8}), (*joined)[0]});
  ASSERT_TRUE(reshaped.ok()) << reshaped.status();
  EXPECT_EQ((*reshaped)[0].shape.dims, (std::vector<int64_t>{8, 8}));
}

TEST(ShapeRulesTest, ReshapeThatChangesTheElementCountIsAnError) {
  auto out =
      Infer("name: 'r' op: 'Reshape'", {Tensor({2, 3}), IntVector({4, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("cannot reshape 6 elements"));
}

TEST(ShapeRulesTest, SplitAndUnpackOutputs) {
  TensorInfo axis = Tensor({}, DType::kS32);
  axis.value = std::vector<int64_t>{1};
  auto split =
      Infer("name: 's' op: 'Split' attr { key: 'num_split' value { i: 4 } }",
            {axis, Tensor({1, 576})}, 4);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ((*split)[3].shape.dims, (std::vector<int64_t>{1, 144}));
  auto unpack = Infer(
      "name: 'u' op: 'Unpack' attr { key: 'axis' value { i: 1 } } "
      "attr { key: 'num' value { i: 3 } }",
      {Tensor({2, 3, 5})}, 3);
  ASSERT_TRUE(unpack.ok()) << unpack.status();
  EXPECT_EQ((*unpack)[2].shape.dims, (std::vector<int64_t>{2, 5}));
}

TEST(ShapeRulesTest, NonMaxSuppressionSizeIsDataDependentUnlessPadded) {
  TensorInfo max_out = Tensor({}, DType::kS32);
  max_out.value = std::vector<int64_t>{100};
  std::vector<TensorInfo> inputs = {Tensor({50, 4}), Tensor({50}), max_out};
  auto open = Infer("name: 'nms' op: 'NonMaxSuppressionV5'", inputs, 3);
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ((*open)[0].shape.dims, (std::vector<int64_t>{kUnknownDim}));
  auto padded = Infer(
      "name: 'nms' op: 'NonMaxSuppressionV5' "
      "attr { key: 'pad_to_max_output_size' value { b: true } }",
      inputs, 3);
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_EQ((*padded)[1].shape.dims, (std::vector<int64_t>{100}));
  EXPECT_TRUE((*padded)[2].shape.dims.empty());
}

TEST(ShapeRulesTest, PoolsAndBatchMatMul) {
  auto pool = Infer(
      "name: 'p' op: 'MaxPool' attr { key: 'padding' value { s: 'VALID' } } "
      "attr { key: 'ksize' value { list { i: 1 i: 3 i: 3 i: 1 } } } "
      "attr { key: 'strides' value { list { i: 1 i: 2 i: 2 i: 1 } } }",
      {Tensor({1, 9, 9, 8})});
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)[0].shape.dims, (std::vector<int64_t>{1, 4, 4, 8}));
  auto bmm = Infer(
      "name: 'b' op: 'BatchMatMulV2' attr { key: 'adj_y' value { b: true } }",
      {Tensor({4, 1, 2, 3}), Tensor({5, 7, 3})});
  ASSERT_TRUE(bmm.ok()) << bmm.status();
  EXPECT_EQ((*bmm)[0].shape.dims, (std::vector<int64_t>{4, 5, 2, 7}));
}

TEST(ShapeRulesTest, OutputCountsFollowTheOp) {
  auto count = KnownOutputCount(
      ParseNode("name: 's' op: 'Split' attr { key: 'num_split' value { i: 3 "
                "} }"),
      /*max_outputs=*/4096);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(**count, 3);
  auto v3 = KnownOutputCount(ParseNode("name: 'bn' op: 'FusedBatchNormV3'"),
                             /*max_outputs=*/4096);
  EXPECT_EQ(**v3, 6);
  auto huge = KnownOutputCount(
      ParseNode("name: 's' op: 'Split' attr { key: 'num_split' value { i: "
                "1000000000 } }"),
      /*max_outputs=*/4096);
  EXPECT_FALSE(huge.ok());
  auto unknown = KnownOutputCount(ParseNode("name: 'c' op: 'MyCustomOp'"),
                                  /*max_outputs=*/4096);
  EXPECT_FALSE(unknown->has_value());
}

}  // namespace
}  // namespace gopt::graph::tf
