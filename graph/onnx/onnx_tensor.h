#ifndef GOPT_GRAPH_ONNX_ONNX_TENSOR_H_
#define GOPT_GRAPH_ONNX_ONNX_TENSOR_H_

// Internal to the ONNX importer: tensor values known while importing (their
// type and, for small tensors, their contents) and their decoding from
// TensorProto. Not part of gopt's public API.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/tensor_type.h"
#include "onnx/onnx.pb.h"

namespace gopt::graph::onnx_internal {

// Largest tensor whose contents the importer keeps for constant folding.
// Shape-computing subgraphs handle a few dozen values; weights are never
// folded, so memory stays bounded whatever the file claims.
inline constexpr int64_t kMaxFoldElements = 4096;

// The contents of a small constant tensor, row-major. Integral and boolean
// tensors keep exact values in `ints`; floating point tensors in `reals`.
struct ConstantData {
  bool is_real = false;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  int64_t size() const {
    return static_cast<int64_t>(is_real ? reals.size() : ints.size());
  }
  // Appends element `index` of `source` (of the same kind: real or int).
  void AppendFrom(const ConstantData& source, int64_t index) {
    if (is_real) {
      reals.push_back(source.reals[index]);
    } else {
      ints.push_back(source.ints[index]);
    }
  }
  // Element `i` as an integer (reals truncate toward zero; reals outside the
  // int64 range return nullopt).
  std::optional<int64_t> IntAt(int64_t i) const;
  // Element `i` as a double.
  double RealAt(int64_t i) const;
};

// One tensor as the importer sees it: its type, its contents when known and
// small, and the builder node/output that produces it.
struct Value {
  TensorType type;
  std::optional<ConstantData> constant;
  // Produced by an initializer or a Constant node: a literal of the file,
  // not something computed at run time.
  bool literal = false;
  int node = -1;
  int32_t output = 0;
};

// Maps an ONNX TensorProto.DataType value onto gopt's DType. Returns
// InvalidArgument for UNDEFINED and unknown values.
absl::StatusOr<DType> DTypeFromOnnx(int64_t onnx_type);

// True for the integral and boolean dtypes, whose folded values are ints.
bool IsIntegralDType(DType dtype);

// The type of `tensor` (dims and element type), validated. `what` names the
// tensor in messages ("initializer 'w'"). InvalidArgument on negative or
// overflowing dims or an unknown element type.
absl::StatusOr<TensorType> TensorTypeFromProto(
    const gopt::onnx::TensorProto& tensor, absl::string_view what);

// Decodes the contents of `tensor`, whose validated type is `type`, when it
// has at most kMaxFoldElements elements and its data is stored inline (raw
// or typed). Returns nullopt when the tensor is too large, has no data, is
// stored externally or has an element type that is not folded (strings,
// complex, 8-bit floats). InvalidArgument when the stored data does not
// match the dims (wrong byte or value count).
absl::StatusOr<std::optional<ConstantData>> DecodeTensorData(
    const gopt::onnx::TensorProto& tensor, const TensorType& type,
    absl::string_view what);

}  // namespace gopt::graph::onnx_internal

#endif  // GOPT_GRAPH_ONNX_ONNX_TENSOR_H_
