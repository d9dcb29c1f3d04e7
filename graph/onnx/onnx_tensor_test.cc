#include "graph/onnx/onnx_tensor.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::graph::onnx_internal {
namespace {

using ::gopt::onnx::TensorProto;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OnnxTensorTest, DecodesRawLittleEndianInt64) {
  TensorProto tensor;
  tensor.set_data_type(TensorProto::INT64);
  tensor.add_dims(2);
  const std::string raw("\x03\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff",
                        16);
  tensor.set_raw_data(raw);
  absl::StatusOr<TensorType> type = TensorTypeFromProto(tensor, "t");
  ASSERT_TRUE(type.ok()) << type.status();
  absl::StatusOr<std::optional<ConstantData>> data =
      DecodeTensorData(tensor, *type, "t");
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_TRUE(data->has_value());
  EXPECT_THAT((*data)->ints, ElementsAre(3, -1));
}

TEST(OnnxTensorTest, DecodesTypedFloatAndHalfBits) {
  TensorProto floats;
  floats.set_data_type(TensorProto::FLOAT);
  floats.add_float_data(1.5f);
  absl::StatusOr<TensorType> type = TensorTypeFromProto(floats, "f");
  ASSERT_TRUE(type.ok());
  EXPECT_EQ(type->rank(), 0);
  auto data = DecodeTensorData(floats, *type, "f");
  ASSERT_TRUE(data.ok() && data->has_value());
  EXPECT_THAT((*data)->reals, ElementsAre(1.5));

  TensorProto half;
  half.set_data_type(TensorProto::FLOAT16);
  half.add_dims(2);
  half.add_int32_data(0x3c00);  // 1.0
  half.add_int32_data(0xc000);  // -2.0
  type = TensorTypeFromProto(half, "h");
  ASSERT_TRUE(type.ok());
  data = DecodeTensorData(half, *type, "h");
  ASSERT_TRUE(data.ok() && data->has_value());
  EXPECT_THAT((*data)->reals, ElementsAre(1.0, -2.0));
}

TEST(OnnxTensorTest, WrongRawSizeIsAnError) {
  TensorProto tensor;
  tensor.set_data_type(TensorProto::FLOAT);
  tensor.add_dims(3);
  tensor.set_raw_data(std::string(8, '\0'));
  absl::StatusOr<TensorType> type = TensorTypeFromProto(tensor, "w");
  ASSERT_TRUE(type.ok());
  auto data = DecodeTensorData(tensor, *type, "initializer 'w'");
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(),
              HasSubstr("initializer 'w' has 8 bytes of raw_data, f32[3] "
                        "needs 12"));
}

TEST(OnnxTensorTest, LargeOrEmptyTensorsAreNotFolded) {
  TensorProto tensor;
  tensor.set_data_type(TensorProto::FLOAT);
  tensor.add_dims(kMaxFoldElements + 1);
  absl::StatusOr<TensorType> type = TensorTypeFromProto(tensor, "big");
  ASSERT_TRUE(type.ok());
  auto data = DecodeTensorData(tensor, *type, "big");
  ASSERT_TRUE(data.ok());
  EXPECT_FALSE(data->has_value());
}

TEST(OnnxTensorTest, NegativeAndOverflowingDimsAreErrors) {
  TensorProto negative;
  negative.set_data_type(TensorProto::FLOAT);
  negative.add_dims(-2);
  EXPECT_FALSE(TensorTypeFromProto(negative, "n").ok());
  TensorProto huge;
  huge.set_data_type(TensorProto::FLOAT);
  huge.add_dims(INT64_MAX);
  huge.add_dims(INT64_MAX);
  EXPECT_FALSE(TensorTypeFromProto(huge, "h").ok());
  TensorProto unknown_type;
  unknown_type.set_data_type(99);
  EXPECT_FALSE(TensorTypeFromProto(unknown_type, "u").ok());
}

}  // namespace
}  // namespace gopt::graph::onnx_internal
