#include "graph/tensor_type.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

TEST(TensorTypeTest, SizesAndRendering) {
  TensorType type = MakeTensorType(DType::kBF16, {2, 3});
  type.minor_to_major = {0, 1};
  EXPECT_EQ(type.num_elements(), 6);
  EXPECT_EQ(type.size_bytes(), 12);
  EXPECT_EQ(type.ToString(), "bf16[2,3]{0,1}");
  EXPECT_EQ(MakeTensorType(DType::kPred, {}).size_bytes(), 1);
  EXPECT_EQ(MakeTensorType(DType::kS4, {3}).size_bytes(), 2);
  EXPECT_EQ(MakeTensorType(DType::kToken, {}).size_bytes(), 0);
}

TEST(TensorTypeTest, TupleSumsElements) {
  TensorType tuple;
  tuple.tuple_elements = {MakeTensorType(DType::kF32, {4}),
                          MakeTensorType(DType::kS64, {})};
  EXPECT_EQ(tuple.size_bytes(), 24);
  EXPECT_EQ(tuple.ToString(), "(f32[4], s64[])");
}

TEST(TensorTypeTest, DTypeNamesRoundTrip) {
  for (int i = 1; i < kNumDTypes; ++i) {
    const DType dtype = static_cast<DType>(i);
    auto parsed = DTypeFromName(DTypeName(dtype));
    ASSERT_TRUE(parsed.ok()) << DTypeName(dtype);
    EXPECT_EQ(*parsed, dtype);
  }
  EXPECT_FALSE(DTypeFromName("f31").ok());
}

TEST(TensorTypeTest, ValidationRejectsBadShapes) {
  EXPECT_TRUE(ValidateTensorType(MakeTensorType(DType::kF32, {0, 5})).ok());
  EXPECT_THAT(ValidateTensorType(MakeTensorType(DType::kF32, {-1})).message(),
              HasSubstr("negative"));
  EXPECT_THAT(
      ValidateTensorType(
          MakeTensorType(DType::kF32, {int64_t{1} << 62, int64_t{1} << 62}))
          .message(),
      HasSubstr("2^50"));
  TensorType bad_layout = MakeTensorType(DType::kF32, {2, 3});
  bad_layout.minor_to_major = {1, 1};
  EXPECT_THAT(ValidateTensorType(bad_layout).message(),
              HasSubstr("not a permutation"));
}

}  // namespace
}  // namespace gopt::graph
