#include "graph/onnx/onnx_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace gopt::graph::onnx_internal {
namespace {

using ::gopt::onnx::TensorProto;

// IEEE half precision bits to double.
double HalfToDouble(uint16_t bits) {
  const int sign = (bits >> 15) & 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  } else {
    value = std::ldexp(static_cast<double>(mantissa + 1024), exponent - 25);
  }
  return sign ? -value : value;
}

double BFloat16ToDouble(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

// Reads the little-endian element `i` of `raw` with `bytes` bytes.
uint64_t ReadLittleEndian(const std::string& raw, int64_t i, int bytes) {
  uint64_t word = 0;
  for (int b = bytes - 1; b >= 0; --b) {
    word = (word << 8) |
           static_cast<uint8_t>(raw[static_cast<size_t>(i * bytes + b)]);
  }
  return word;
}

// Sign-extends the low `bits` bits of `word`.
int64_t SignExtend(uint64_t word, int bits) {
  if (bits == 64) return static_cast<int64_t>(word);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  word &= (sign << 1) - 1;
  return static_cast<int64_t>(word ^ sign) - static_cast<int64_t>(sign);
}

// Converts one stored element (raw little-endian bits or a typed-field
// value widened to 64 bits) to the folded representation.
void AppendElement(DType dtype, uint64_t word, ConstantData* data) {
  switch (dtype) {
    case DType::kF32: {
      const uint32_t bits = static_cast<uint32_t>(word);
      float value;
      std::memcpy(&value, &bits, sizeof(value));
      data->reals.push_back(value);
      return;
    }
    case DType::kF64: {
      double value;
      std::memcpy(&value, &word, sizeof(value));
      data->reals.push_back(value);
      return;
    }
    case DType::kF16:
      data->reals.push_back(HalfToDouble(static_cast<uint16_t>(word)));
      return;
    case DType::kBF16:
      data->reals.push_back(BFloat16ToDouble(static_cast<uint16_t>(word)));
      return;
    case DType::kPred:
      data->ints.push_back((word & 0xff) != 0 ? 1 : 0);
      return;
    case DType::kS8:
      data->ints.push_back(SignExtend(word, 8));
      return;
    case DType::kS16:
      data->ints.push_back(SignExtend(word, 16));
      return;
    case DType::kS32:
      data->ints.push_back(SignExtend(word, 32));
      return;
    case DType::kS64:
      data->ints.push_back(static_cast<int64_t>(word));
      return;
    case DType::kU8:
      data->ints.push_back(static_cast<int64_t>(word & 0xff));
      return;
    case DType::kU16:
      data->ints.push_back(static_cast<int64_t>(word & 0xffff));
      return;
    case DType::kU32:
      data->ints.push_back(static_cast<int64_t>(word & 0xffffffffu));
      return;
    case DType::kU64:
      // Values beyond INT64_MAX wrap; they never describe shapes.
      data->ints.push_back(static_cast<int64_t>(word));
      return;
    default:
      return;
  }
}

// Whether `dtype` is decoded for folding at all.
bool IsFoldedDType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16:
      return true;
    default:
      return IsIntegralDType(dtype);
  }
}

// Number of values a typed field holds for `count` elements of `dtype`,
// and which field that is; -1 when the dtype has no typed field we check.
int64_t TypedFieldSize(const TensorProto& tensor, DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kC64:
      return tensor.float_data_size();
    case DType::kF64:
    case DType::kC128:
      return tensor.double_data_size();
    case DType::kS64:
      return tensor.int64_data_size();
    case DType::kU32:
    case DType::kU64:
      return tensor.uint64_data_size();
    case DType::kString:
      return tensor.string_data_size();
    case DType::kInvalid:
    case DType::kToken:
    case DType::kOpaque:
      return -1;
    default:
      return tensor.int32_data_size();
  }
}

}  // namespace

std::optional<int64_t> ConstantData::IntAt(int64_t i) const {
  if (!is_real) return ints[static_cast<size_t>(i)];
  const double value = reals[static_cast<size_t>(i)];
  // 2^63 is exactly representable; anything at or beyond it does not fit.
  if (!(value > -9.2233720368547758e18 && value < 9.2233720368547758e18)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

double ConstantData::RealAt(int64_t i) const {
  return is_real ? reals[static_cast<size_t>(i)]
                 : static_cast<double>(ints[static_cast<size_t>(i)]);
}

absl::StatusOr<DType> DTypeFromOnnx(int64_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
      return DType::kF32;
    case TensorProto::UINT8:
      return DType::kU8;
    case TensorProto::INT8:
      return DType::kS8;
    case TensorProto::UINT16:
      return DType::kU16;
    case TensorProto::INT16:
      return DType::kS16;
    case TensorProto::INT32:
      return DType::kS32;
    case TensorProto::INT64:
      return DType::kS64;
    case TensorProto::STRING:
      return DType::kString;
    case TensorProto::BOOL:
      return DType::kPred;
    case TensorProto::FLOAT16:
      return DType::kF16;
    case TensorProto::DOUBLE:
      return DType::kF64;
    case TensorProto::UINT32:
      return DType::kU32;
    case TensorProto::UINT64:
      return DType::kU64;
    case TensorProto::COMPLEX64:
      return DType::kC64;
    case TensorProto::COMPLEX128:
      return DType::kC128;
    case TensorProto::BFLOAT16:
      return DType::kBF16;
    case TensorProto::FLOAT8E4M3FN:
    case TensorProto::FLOAT8E4M3FNUZ:
      return DType::kF8E4M3FN;
    case TensorProto::FLOAT8E5M2:
    case TensorProto::FLOAT8E5M2FNUZ:
      return DType::kF8E5M2;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported element type ", onnx_type));
  }
}

bool IsIntegralDType(DType dtype) {
  switch (dtype) {
    case DType::kPred:
    case DType::kS8:
    case DType::kS16:
    case DType::kS32:
    case DType::kS64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<TensorType> TensorTypeFromProto(const TensorProto& tensor,
                                               absl::string_view what) {
  absl::StatusOr<DType> dtype = DTypeFromOnnx(tensor.data_type());
  if (!dtype.ok()) return Annotate(dtype.status(), what);
  TensorType type;
  type.dtype = *dtype;
  type.dims.assign(tensor.dims().begin(), tensor.dims().end());
  RETURN_IF_ERROR(Annotate(ValidateTensorType(type), what));
  return type;
}

absl::StatusOr<std::optional<ConstantData>> DecodeTensorData(
    const TensorProto& tensor, const TensorType& type, absl::string_view what) {
  if (tensor.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  const int64_t count = type.num_elements();
  const int bits = DTypeBits(type.dtype);
  const bool has_raw = tensor.has_raw_data();
  if (has_raw && bits % 8 == 0 && type.dtype != DType::kString) {
    const int64_t expected = count * (bits / 8);
    if (static_cast<int64_t>(tensor.raw_data().size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " has ", tensor.raw_data().size(), " bytes of raw_data, ",
          type.ToString(), " needs ", expected));
    }
  }
  const int64_t typed = TypedFieldSize(tensor, type.dtype);
  if (!has_raw && typed > 0) {
    const bool complex =
        type.dtype == DType::kC64 || type.dtype == DType::kC128;
    const int64_t expected = complex ? 2 * count : count;
    if (typed != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " stores ", typed, " values, ", type.ToString(),
                       " needs ", expected));
    }
  }
  if (count > kMaxFoldElements || !IsFoldedDType(type.dtype)) {
    return std::nullopt;
  }
  if (!has_raw && typed <= 0) return std::nullopt;
  ConstantData data;
  data.is_real = !IsIntegralDType(type.dtype);
  if (has_raw) {
    const int bytes = bits / 8;
    for (int64_t i = 0; i < count; ++i) {
      AppendElement(type.dtype, ReadLittleEndian(tensor.raw_data(), i, bytes),
                    &data);
    }
    return data;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint64_t word = 0;
    switch (type.dtype) {
      case DType::kF32: {
        const float value = tensor.float_data(static_cast<int>(i));
        uint32_t bits32;
        std::memcpy(&bits32, &value, sizeof(bits32));
        word = bits32;
        break;
      }
      case DType::kF64: {
        const double value = tensor.double_data(static_cast<int>(i));
        std::memcpy(&word, &value, sizeof(word));
        break;
      }
      case DType::kS64:
        word = static_cast<uint64_t>(tensor.int64_data(static_cast<int>(i)));
        break;
      case DType::kU32:
      case DType::kU64:
        word = tensor.uint64_data(static_cast<int>(i));
        break;
      default:
        word = static_cast<uint64_t>(
            static_cast<int64_t>(tensor.int32_data(static_cast<int>(i))));
        break;
    }
    AppendElement(type.dtype, word, &data);
  }
  return data;
}

}  // namespace gopt::graph::onnx_internal
