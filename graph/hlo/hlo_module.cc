#include "graph/hlo/hlo_module.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::graph::hlo {
namespace {

absl::Status ValidateShape(const HloShape& shape, int depth) {
  if (depth > kMaxHloNestingDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tuple shape nested deeper than ", kMaxHloNestingDepth, " levels"));
  }
  if (shape.is_tuple) {
    for (size_t i = 0; i < shape.tuple_shapes.size(); ++i) {
      absl::Status status = ValidateShape(shape.tuple_shapes[i], depth + 1);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tuple element ", i, ": ", status.message()));
      }
    }
    return absl::OkStatus();
  }
  return ValidateArrayShape(shape.dtype, shape.dims, shape.minor_to_major);
}

}  // namespace

absl::Status ValidateArrayShape(DType dtype, const std::vector<int64_t>& dims,
                                const std::vector<int32_t>& minor_to_major) {
  int64_t elements = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", i, " is negative (", dims[i], ")"));
    }
    // Checked before multiplying, so the product never overflows.
    if (dims[i] > 0 && elements > kMaxTensorBytes / dims[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", DTypeName(dtype), "[", absl::StrJoin(dims, ","),
          "] has more than 2^50 elements"));
    }
    elements *= dims[i];
  }
  const int64_t bits = DTypeBits(dtype);
  if (bits > 0 && elements > kMaxTensorBytes / bits * 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", DTypeName(dtype), "[", absl::StrJoin(dims, ","),
                     "] is larger than 2^50 bytes"));
  }
  if (minor_to_major.empty()) return absl::OkStatus();
  if (minor_to_major.size() != dims.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout has ", minor_to_major.size(), " entries for rank ",
                     dims.size()));
  }
  // Ranks are small; a quadratic duplicate check needs no allocation.
  for (size_t i = 0; i < minor_to_major.size(); ++i) {
    const int32_t d = minor_to_major[i];
    bool repeated = false;
    for (size_t j = 0; j < i; ++j)
      repeated = repeated || minor_to_major[j] == d;
    if (d < 0 || static_cast<size_t>(d) >= dims.size() || repeated) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout {", absl::StrJoin(minor_to_major, ","),
                       "} is not a permutation of 0..", dims.size() - 1));
    }
  }
  return absl::OkStatus();
}

TensorType HloShape::ToTensorType() const {
  TensorType type;
  if (is_tuple) {
    type.tuple_elements.reserve(tuple_shapes.size());
    for (const HloShape& element : tuple_shapes) {
      type.tuple_elements.push_back(element.ToTensorType());
    }
    return type;
  }
  type.dtype = dtype;
  type.dims = dims;
  type.minor_to_major = minor_to_major;
  return type;
}

std::vector<TensorType> HloShape::ToNodeOutputs() const {
  std::vector<TensorType> outputs;
  if (!is_tuple) {
    outputs.push_back(ToTensorType());
    return outputs;
  }
  outputs.reserve(tuple_shapes.size());
  for (const HloShape& element : tuple_shapes) {
    outputs.push_back(element.ToTensorType());
  }
  return outputs;
}

void HloShape::AppendTo(std::string* out) const {
  if (is_tuple) {
    out->push_back('(');
    for (size_t i = 0; i < tuple_shapes.size(); ++i) {
      if (i > 0) out->append(", ");
      tuple_shapes[i].AppendTo(out);
    }
    out->push_back(')');
    return;
  }
  absl::StrAppend(out, DTypeName(dtype), "[");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out->push_back(',');
    absl::StrAppend(out, dims[i]);
  }
  out->push_back(']');
  if (!minor_to_major.empty()) {
    out->push_back('{');
    for (size_t i = 0; i < minor_to_major.size(); ++i) {
      if (i > 0) out->push_back(',');
      absl::StrAppend(out, minor_to_major[i]);
    }
    out->push_back('}');
  }
}

std::string HloShape::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

bool HloShape::operator==(const HloShape& other) const {
  return is_tuple == other.is_tuple && dtype == other.dtype &&
         dims == other.dims && minor_to_major == other.minor_to_major &&
         tuple_shapes == other.tuple_shapes;
}

absl::Status ValidateHloModule(const HloModule& module) {
  const int32_t num_computations =
      static_cast<int32_t>(module.computations.size());
  if (module.entry < 0 || module.entry >= num_computations) {
    return absl::InvalidArgumentError(
        absl::StrCat("module '", module.name, "' has no entry computation"));
  }
  for (const HloComputation& computation : module.computations) {
    const int32_t size = static_cast<int32_t>(computation.instructions.size());
    if (computation.root < 0 || computation.root >= size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation '", computation.name, "' has no root instruction"));
    }
    for (const HloInstruction& instruction : computation.instructions) {
      auto error = [&](absl::string_view field, absl::string_view what) {
        return absl::InvalidArgumentError(
            absl::StrCat("computation '", computation.name, "' instruction '",
                         instruction.name, "' ", field, ": ", what));
      };
      for (int32_t operand : instruction.operands) {
        if (operand < 0 || operand >= size) {
          return error("operands",
                       absl::StrCat("index ", operand, " is out of range"));
        }
      }
      for (int32_t called : instruction.called_computations) {
        if (called < 0 || called >= num_computations) {
          return error("called computations",
                       absl::StrCat("index ", called, " is out of range"));
        }
      }
      absl::Status status = ValidateShape(instruction.shape, 0);
      if (!status.ok()) return error("shape", status.message());
    }
  }
  return absl::OkStatus();
}

bool HloStackFrameIndex::Resolve(int64_t frame_id, std::string* file,
                                 std::string* function, int32_t* line) const {
  auto frame = frames.find(frame_id);
  if (frame == frames.end()) return false;
  auto location = file_locations.find(frame->second.file_location_id);
  if (location == file_locations.end()) return false;
  auto file_name = file_names.find(location->second.file_name_id);
  auto function_name = function_names.find(location->second.function_name_id);
  *file = file_name != file_names.end() ? file_name->second : "";
  *function =
      function_name != function_names.end() ? function_name->second : "";
  *line = location->second.line;
  return true;
}

OpKind HloOpcodeToOpKind(absl::string_view opcode) {
  static const auto* const kKinds =
      new absl::flat_hash_map<absl::string_view, OpKind>({
          {"parameter", OpKind::kParameter},
          {"constant", OpKind::kConstant},
          {"partition-id", OpKind::kConstant},
          {"replica-id", OpKind::kConstant},
          {"iota", OpKind::kIota},
          {"rng", OpKind::kRandom},
          {"rng-bit-generator", OpKind::kRandom},
          {"rng-get-and-update-state", OpKind::kRandom},
          {"abs", OpKind::kElementwiseUnary},
          {"negate", OpKind::kElementwiseUnary},
          {"not", OpKind::kElementwiseUnary},
          {"sign", OpKind::kElementwiseUnary},
          {"floor", OpKind::kElementwiseUnary},
          {"ceil", OpKind::kElementwiseUnary},
          {"round-nearest-afz", OpKind::kElementwiseUnary},
          {"round-nearest-even", OpKind::kElementwiseUnary},
          {"is-finite", OpKind::kElementwiseUnary},
          {"popcnt", OpKind::kElementwiseUnary},
          {"count-leading-zeros", OpKind::kElementwiseUnary},
          {"real", OpKind::kElementwiseUnary},
          {"imag", OpKind::kElementwiseUnary},
          {"reduce-precision", OpKind::kElementwiseUnary},
          {"map", OpKind::kElementwiseUnary},
          {"exponential", OpKind::kTranscendental},
          {"exponential-minus-one", OpKind::kTranscendental},
          {"log", OpKind::kTranscendental},
          {"log-plus-one", OpKind::kTranscendental},
          {"sqrt", OpKind::kTranscendental},
          {"rsqrt", OpKind::kTranscendental},
          {"cbrt", OpKind::kTranscendental},
          {"tanh", OpKind::kTranscendental},
          {"logistic", OpKind::kTranscendental},
          {"sine", OpKind::kTranscendental},
          {"cosine", OpKind::kTranscendental},
          {"tan", OpKind::kTranscendental},
          {"acos", OpKind::kTranscendental},
          {"acosh", OpKind::kTranscendental},
          {"asin", OpKind::kTranscendental},
          {"asinh", OpKind::kTranscendental},
          {"atan", OpKind::kTranscendental},
          {"atanh", OpKind::kTranscendental},
          {"cosh", OpKind::kTranscendental},
          {"sinh", OpKind::kTranscendental},
          {"erf", OpKind::kTranscendental},
          {"atan2", OpKind::kTranscendental},
          {"power", OpKind::kTranscendental},
          {"add", OpKind::kElementwiseBinary},
          {"subtract", OpKind::kElementwiseBinary},
          {"multiply", OpKind::kElementwiseBinary},
          {"mulhi", OpKind::kElementwiseBinary},
          {"divide", OpKind::kElementwiseBinary},
          {"remainder", OpKind::kElementwiseBinary},
          {"maximum", OpKind::kElementwiseBinary},
          {"minimum", OpKind::kElementwiseBinary},
          {"and", OpKind::kElementwiseBinary},
          {"or", OpKind::kElementwiseBinary},
          {"xor", OpKind::kElementwiseBinary},
          {"shift-left", OpKind::kElementwiseBinary},
          {"shift-right-arithmetic", OpKind::kElementwiseBinary},
          {"shift-right-logical", OpKind::kElementwiseBinary},
          {"complex", OpKind::kElementwiseBinary},
          {"compare", OpKind::kCompare},
          {"select", OpKind::kSelect},
          {"tuple-select", OpKind::kSelect},
          {"clamp", OpKind::kClamp},
          {"convert", OpKind::kConvert},
          {"stochastic-convert", OpKind::kConvert},
          {"bitcast-convert", OpKind::kBitcast},
          {"dot", OpKind::kDot},
          {"ragged-dot", OpKind::kDot},
          {"convolution", OpKind::kConvolution},
          {"fft", OpKind::kFft},
          {"triangular-solve", OpKind::kTriangularSolve},
          {"cholesky", OpKind::kCholesky},
          {"batch-norm-training", OpKind::kNormalization},
          {"batch-norm-inference", OpKind::kNormalization},
          {"batch-norm-grad", OpKind::kNormalization},
          {"reduce", OpKind::kReduce},
          {"reduce-window", OpKind::kReduceWindow},
          {"select-and-scatter", OpKind::kSelectAndScatter},
          {"broadcast", OpKind::kBroadcast},
          {"transpose", OpKind::kTranspose},
          {"copy", OpKind::kCopy},
          {"copy-start", OpKind::kCopy},
          {"copy-done", OpKind::kIdentity},
          {"reshape", OpKind::kReshape},
          {"dynamic-reshape", OpKind::kReshape},
          {"bitcast", OpKind::kBitcast},
          {"slice", OpKind::kSlice},
          {"dynamic-slice", OpKind::kDynamicSlice},
          {"dynamic-update-slice", OpKind::kDynamicUpdateSlice},
          {"pad", OpKind::kPad},
          {"concatenate", OpKind::kConcatenate},
          {"reverse", OpKind::kReverse},
          {"gather", OpKind::kGather},
          {"scatter", OpKind::kScatter},
          {"sort", OpKind::kSort},
          {"topk", OpKind::kSort},
          {"tuple", OpKind::kTuple},
          {"get-tuple-element", OpKind::kGetTupleElement},
          {"opt-barrier", OpKind::kIdentity},
          {"domain", OpKind::kIdentity},
          {"add-dependency", OpKind::kIdentity},
          {"after-all", OpKind::kIdentity},
          {"set-dimension-size", OpKind::kIdentity},
          {"get-dimension-size", OpKind::kShapeOf},
          {"all-reduce", OpKind::kAllReduce},
          {"all-reduce-start", OpKind::kAllReduce},
          {"all-reduce-done", OpKind::kIdentity},
          {"all-gather", OpKind::kAllGather},
          {"all-gather-start", OpKind::kAllGather},
          {"all-gather-done", OpKind::kIdentity},
          {"reduce-scatter", OpKind::kReduceScatter},
          {"all-to-all", OpKind::kAllToAll},
          {"ragged-all-to-all", OpKind::kAllToAll},
          {"collective-broadcast", OpKind::kCollectivePermute},
          {"collective-reduce", OpKind::kAllReduce},
          {"collective-permute", OpKind::kCollectivePermute},
          {"collective-permute-start", OpKind::kCollectivePermute},
          {"collective-permute-done", OpKind::kIdentity},
          {"send", OpKind::kSendRecv},
          {"recv", OpKind::kSendRecv},
          {"send-done", OpKind::kIdentity},
          {"recv-done", OpKind::kIdentity},
          {"while", OpKind::kWhile},
          {"conditional", OpKind::kConditional},
          {"call", OpKind::kCall},
          // The op an async pair runs is costed at its start (the lowering
          // takes the wrapped computation's kind and cost); update and done
          // only hand the value on.
          {"async-start", OpKind::kCall},
          {"async-update", OpKind::kIdentity},
          {"async-done", OpKind::kIdentity},
          {"fusion", OpKind::kFusion},
          {"custom-call", OpKind::kCustomCall},
          {"infeed", OpKind::kInfeedOutfeed},
          {"outfeed", OpKind::kInfeedOutfeed},
      });
  auto it = kKinds->find(opcode);
  return it == kKinds->end() ? OpKind::kOther : it->second;
}

}  // namespace gopt::graph::hlo
