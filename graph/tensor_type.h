#ifndef GOPT_GRAPH_TENSOR_TYPE_H_
#define GOPT_GRAPH_TENSOR_TYPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gopt::graph {

// Element type of a tensor. Names follow XLA's lower-case spelling ("f32",
// "bf16", "pred"); every importer maps its own enum onto this one.
enum class DType : uint8_t {
  kInvalid = 0,
  kPred,
  kS4,
  kS8,
  kS16,
  kS32,
  kS64,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF8E4M3FN,
  kF8E5M2,
  kF16,
  kBF16,
  kF32,
  kF64,
  kC64,
  kC128,
  kString,  // TF/ONNX strings: costed as 8 bytes (a pointer) per element.
  kToken,   // XLA ordering token: no storage.
  kOpaque,  // XLA opaque / TF resource & variant handles: no storage.
};

// Number of DType values; DType values are 0..kNumDTypes-1.
inline constexpr int kNumDTypes = static_cast<int>(DType::kOpaque) + 1;

// "f32" for kF32, "invalid" for kInvalid.
absl::string_view DTypeName(DType dtype);

// Parses an XLA element type name ("f32", "bf16", "pred", "token", ...).
// Returns InvalidArgument naming `name` when it is not one.
absl::StatusOr<DType> DTypeFromName(absl::string_view name);

// Storage bits per element: 1-bit pred is stored as 8 bits, as XLA does;
// token/opaque/invalid have 0.
int DTypeBits(DType dtype);

// True for floating point and complex types.
bool IsFloatingPoint(DType dtype);

// The type of one tensor: element type, dimensions and optional layout.
// Dimensions are concrete and non-negative (importers resolve symbolic and
// unknown dimensions before building a graph). `tuple_elements` is non-empty
// only for nested tuple values (an XLA tuple inside a tuple); the top level of
// a multi-output node is Node::outputs instead.
struct TensorType {
  DType dtype = DType::kInvalid;
  std::vector<int64_t> dims;
  // Physical layout, XLA style: minor_to_major[0] is the fastest-varying
  // dimension. Empty means the default (row-major: {rank-1, ..., 0}).
  std::vector<int32_t> minor_to_major;
  std::vector<TensorType> tuple_elements;

  int rank() const { return static_cast<int>(dims.size()); }
  bool is_tuple() const { return !tuple_elements.empty(); }

  // Product of dims (1 for a scalar); for a tuple, the sum over its elements.
  // Saturates at INT64_MAX; ValidateTensorType rejects such types.
  int64_t num_elements() const;

  // Storage size in bytes (rounded up to whole bytes), summed over tuples.
  int64_t size_bytes() const;

  // XLA-like rendering: "f32[2,3]{1,0}", "(f32[2], s32[])", "pred[]".
  std::string ToString() const;

  bool operator==(const TensorType& other) const;
  bool operator!=(const TensorType& other) const { return !(*this == other); }
};

// Convenience constructor: TensorType{dtype, dims} with the default layout.
TensorType MakeTensorType(DType dtype, std::vector<int64_t> dims);

// Largest number of elements or bytes a single tensor may have (2^50): far
// beyond any real device, small enough that sums over a graph cannot overflow.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 50;

// Checks that every dim is >= 0, that the layout is a permutation of
// 0..rank-1 (when given), and that the byte size stays under kMaxTensorBytes
// without overflow. Returns InvalidArgument describing the first problem.
absl::Status ValidateTensorType(const TensorType& type);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_TENSOR_TYPE_H_
