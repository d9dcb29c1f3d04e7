#include "graph/tensor_type.h"

#include <array>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::graph {
namespace {

struct DTypeInfo {
  DType dtype;
  absl::string_view name;
  int bits;
};

constexpr std::array<DTypeInfo, kNumDTypes> kDTypes = {{
    {DType::kInvalid, "invalid", 0},
    {DType::kPred, "pred", 8},
    {DType::kS4, "s4", 4},
    {DType::kS8, "s8", 8},
    {DType::kS16, "s16", 16},
    {DType::kS32, "s32", 32},
    {DType::kS64, "s64", 64},
    {DType::kU4, "u4", 4},
    {DType::kU8, "u8", 8},
    {DType::kU16, "u16", 16},
    {DType::kU32, "u32", 32},
    {DType::kU64, "u64", 64},
    {DType::kF8E4M3FN, "f8e4m3fn", 8},
    {DType::kF8E5M2, "f8e5m2", 8},
    {DType::kF16, "f16", 16},
    {DType::kBF16, "bf16", 16},
    {DType::kF32, "f32", 32},
    {DType::kF64, "f64", 64},
    {DType::kC64, "c64", 64},
    {DType::kC128, "c128", 128},
    {DType::kString, "string", 64},
    {DType::kToken, "token", 0},
    {DType::kOpaque, "opaque", 0},
}};

int64_t SaturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > std::numeric_limits<int64_t>::max() / b) {
    return std::numeric_limits<int64_t>::max();
  }
  return a * b;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  return a + b;
}

}  // namespace

absl::string_view DTypeName(DType dtype) {
  return kDTypes[static_cast<int>(dtype)].name;
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name && info.dtype != DType::kInvalid) return info.dtype;
  }
  if (name == "f8e4m3") return DType::kF8E4M3FN;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown element type '", name, "'"));
}

int DTypeBits(DType dtype) { return kDTypes[static_cast<int>(dtype)].bits; }

bool IsFloatingPoint(DType dtype) {
  switch (dtype) {
    case DType::kF8E4M3FN:
    case DType::kF8E5M2:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64:
    case DType::kC64:
    case DType::kC128:
      return true;
    default:
      return false;
  }
}

int64_t TensorType::num_elements() const {
  if (is_tuple()) {
    int64_t total = 0;
    for (const TensorType& element : tuple_elements) {
      total = SaturatingAdd(total, element.num_elements());
    }
    return total;
  }
  int64_t product = 1;
  for (int64_t dim : dims) product = SaturatingMul(product, dim);
  return product;
}

int64_t TensorType::size_bytes() const {
  if (is_tuple()) {
    int64_t total = 0;
    for (const TensorType& element : tuple_elements) {
      total = SaturatingAdd(total, element.size_bytes());
    }
    return total;
  }
  const int64_t bits = SaturatingMul(num_elements(), DTypeBits(dtype));
  if (bits == std::numeric_limits<int64_t>::max()) return bits;
  return (bits + 7) / 8;
}

std::string TensorType::ToString() const {
  if (is_tuple()) {
    return absl::StrCat(
        "(",
        absl::StrJoin(tuple_elements, ", ",
                      [](std::string* out, const TensorType& element) {
                        out->append(element.ToString());
                      }),
        ")");
  }
  std::string text =
      absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(dims, ","), "]");
  if (!minor_to_major.empty()) {
    absl::StrAppend(&text, "{", absl::StrJoin(minor_to_major, ","), "}");
  }
  return text;
}

bool TensorType::operator==(const TensorType& other) const {
  return dtype == other.dtype && dims == other.dims &&
         minor_to_major == other.minor_to_major &&
         tuple_elements == other.tuple_elements;
}

TensorType MakeTensorType(DType dtype, std::vector<int64_t> dims) {
  TensorType type;
  type.dtype = dtype;
  type.dims = std::move(dims);
  return type;
}

absl::Status ValidateTensorType(const TensorType& type) {
  if (type.is_tuple()) {
    for (size_t i = 0; i < type.tuple_elements.size(); ++i) {
      absl::Status status = ValidateTensorType(type.tuple_elements[i]);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tuple element ", i, ": ", status.message()));
      }
    }
    return absl::OkStatus();
  }
  int64_t elements = 1;
  for (size_t i = 0; i < type.dims.size(); ++i) {
    const int64_t dim = type.dims[i];
    if (dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", i, " of ", type.ToString(),
                       " is negative (", dim, ")"));
    }
    elements = SaturatingMul(elements, dim);
    if (elements > kMaxTensorBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", type.ToString(), " has more than 2^50 elements"));
    }
  }
  if (type.size_bytes() > kMaxTensorBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", type.ToString(), " is larger than 2^50 bytes"));
  }
  if (!type.minor_to_major.empty()) {
    if (type.minor_to_major.size() != type.dims.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout of ", type.ToString(), " has ", type.minor_to_major.size(),
          " entries for rank ", type.dims.size()));
    }
    std::vector<bool> seen(type.dims.size(), false);
    for (int32_t d : type.minor_to_major) {
      if (d < 0 || d >= type.rank() || seen[d]) {
        return absl::InvalidArgumentError(
            absl::StrCat("layout of ", type.ToString(),
                         " is not a permutation of 0..", type.rank() - 1));
      }
      seen[d] = true;
    }
  }
  return absl::OkStatus();
}

}  // namespace gopt::graph
