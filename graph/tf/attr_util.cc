#include "graph/tf/attr_util.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::AttrValue;
using ::gopt::tensorflow::NodeDef;
using ::gopt::tensorflow::TensorProto;

absl::Status AttrTypeError(const NodeDef& node, absl::string_view name,
                           absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "node '", node.name(), "' attr '", name, "' is not ", expected));
}

const AttrValue* FindAttr(const NodeDef& node, absl::string_view name) {
  auto it = node.attr().find(std::string(name));
  return it == node.attr().end() ? nullptr : &it->second;
}

template <typename T>
std::vector<int64_t> LittleEndianValues(const std::string& bytes,
                                        int64_t count) {
  std::vector<int64_t> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    values.push_back(static_cast<int64_t>(value));
  }
  return values;
}

template <typename Repeated>
std::optional<std::vector<int64_t>> RepeatLast(const Repeated& field,
                                               int64_t count) {
  if (field.empty()) {
    return count == 0
               ? std::optional<std::vector<int64_t>>(std::vector<int64_t>())
               : std::nullopt;
  }
  std::vector<int64_t> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t index = std::min<int64_t>(i, field.size() - 1);
    values.push_back(static_cast<int64_t>(field.Get(static_cast<int>(index))));
  }
  return values;
}

}  // namespace

DType DTypeFromTf(int tf_dtype) {
  const int base = tf_dtype > 100 ? tf_dtype - 100 : tf_dtype;
  switch (base) {
    case tensorflow::DT_FLOAT:
      return DType::kF32;
    case tensorflow::DT_DOUBLE:
      return DType::kF64;
    case tensorflow::DT_INT32:
    case tensorflow::DT_QINT32:
      return DType::kS32;
    case tensorflow::DT_UINT8:
    case tensorflow::DT_QUINT8:
      return DType::kU8;
    case tensorflow::DT_INT16:
    case tensorflow::DT_QINT16:
      return DType::kS16;
    case tensorflow::DT_INT8:
    case tensorflow::DT_QINT8:
      return DType::kS8;
    case tensorflow::DT_STRING:
      return DType::kString;
    case tensorflow::DT_COMPLEX64:
      return DType::kC64;
    case tensorflow::DT_INT64:
      return DType::kS64;
    case tensorflow::DT_BOOL:
      return DType::kPred;
    case tensorflow::DT_BFLOAT16:
      return DType::kBF16;
    case tensorflow::DT_UINT16:
    case tensorflow::DT_QUINT16:
      return DType::kU16;
    case tensorflow::DT_COMPLEX128:
      return DType::kC128;
    case tensorflow::DT_HALF:
      return DType::kF16;
    case tensorflow::DT_RESOURCE:
    case tensorflow::DT_VARIANT:
      return DType::kOpaque;
    case tensorflow::DT_UINT32:
      return DType::kU32;
    case tensorflow::DT_UINT64:
      return DType::kU64;
    case tensorflow::DT_FLOAT8_E5M2:
      return DType::kF8E5M2;
    case tensorflow::DT_FLOAT8_E4M3FN:
      return DType::kF8E4M3FN;
    case tensorflow::DT_INT4:
      return DType::kS4;
    case tensorflow::DT_UINT4:
      return DType::kU4;
    default:
      return DType::kInvalid;
  }
}

bool HasAttr(const NodeDef& node, absl::string_view name) {
  return FindAttr(node, name) != nullptr;
}

absl::StatusOr<int64_t> IntAttr(const NodeDef& node, absl::string_view name,
                                int64_t default_value) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return default_value;
  if (attr->value_case() != AttrValue::kI) {
    return AttrTypeError(node, name, "an int");
  }
  return attr->i();
}

absl::StatusOr<bool> BoolAttr(const NodeDef& node, absl::string_view name,
                              bool default_value) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return default_value;
  if (attr->value_case() != AttrValue::kB) {
    return AttrTypeError(node, name, "a bool");
  }
  return attr->b();
}

absl::StatusOr<std::string> StringAttr(const NodeDef& node,
                                       absl::string_view name,
                                       absl::string_view default_value) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return std::string(default_value);
  if (attr->value_case() != AttrValue::kS) {
    return AttrTypeError(node, name, "a string");
  }
  return attr->s();
}

absl::StatusOr<std::optional<DType>> TypeAttr(const NodeDef& node,
                                              absl::string_view name) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return std::optional<DType>();
  if (attr->value_case() != AttrValue::kType) {
    return AttrTypeError(node, name, "a type");
  }
  return std::optional<DType>(DTypeFromTf(attr->type()));
}

absl::StatusOr<std::vector<int64_t>> IntListAttr(
    const NodeDef& node, absl::string_view name,
    std::optional<size_t> expected_size, std::vector<int64_t> default_value) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return default_value;
  if (attr->value_case() != AttrValue::kList) {
    return AttrTypeError(node, name, "a list of ints");
  }
  const auto& values = attr->list().i();
  if (expected_size.has_value() &&
      static_cast<size_t>(values.size()) != *expected_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name(), "' attr '", name, "' has ",
                     values.size(), " values, expected ", *expected_size));
  }
  return std::vector<int64_t>(values.begin(), values.end());
}

absl::StatusOr<std::vector<int64_t>> ExplicitPaddingsAttr(
    const NodeDef& node, absl::string_view padding) {
  if (padding != "EXPLICIT") return std::vector<int64_t>(8, 0);
  if (FindAttr(node, "explicit_paddings") == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node.name(),
                     "' has padding EXPLICIT but no attr 'explicit_paddings' "
                     "(8 values expected)"));
  }
  return IntListAttr(node, "explicit_paddings", 8);
}

absl::StatusOr<std::vector<std::string>> StringListAttr(
    const NodeDef& node, absl::string_view name) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return std::vector<std::string>();
  if (attr->value_case() != AttrValue::kList) {
    return AttrTypeError(node, name, "a list of strings");
  }
  return std::vector<std::string>(attr->list().s().begin(),
                                  attr->list().s().end());
}

absl::StatusOr<PartialShape> ShapeFromProto(
    const tensorflow::TensorShapeProto& proto, absl::string_view node_name,
    absl::string_view field) {
  if (proto.unknown_rank()) return PartialShape::UnknownRank();
  if (proto.dim_size() > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node_name, "' ", field, " has rank ",
                     proto.dim_size(), ", more than the limit of ", kMaxRank));
  }
  PartialShape shape = PartialShape::OfRank(proto.dim_size());
  for (int i = 0; i < proto.dim_size(); ++i) {
    const int64_t size = proto.dim(i).size();
    if (size < kUnknownDim) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node_name, "' ",
                                                     field, " dimension ", i,
                                                     " has size ", size));
    }
    shape.dims[i] = size;
  }
  return shape;
}

absl::StatusOr<PartialShape> ShapeAttr(const NodeDef& node,
                                       absl::string_view name) {
  const AttrValue* attr = FindAttr(node, name);
  if (attr == nullptr) return PartialShape::UnknownRank();
  if (attr->value_case() != AttrValue::kShape) {
    return AttrTypeError(node, name, "a shape");
  }
  return ShapeFromProto(attr->shape(), node.name(),
                        absl::StrCat("attr '", name, "'"));
}

absl::StatusOr<std::vector<PartialShape>> OutputShapesAttr(
    const NodeDef& node) {
  std::vector<PartialShape> shapes;
  const AttrValue* attr = FindAttr(node, "_output_shapes");
  if (attr == nullptr) return shapes;
  if (attr->value_case() != AttrValue::kList) {
    return AttrTypeError(node, "_output_shapes", "a list of shapes");
  }
  for (int i = 0; i < attr->list().shape_size(); ++i) {
    auto shape = ShapeFromProto(attr->list().shape(i), node.name(),
                                absl::StrCat("attr '_output_shapes' ", i));
    if (!shape.ok()) return shape.status();
    shapes.push_back(*std::move(shape));
  }
  return shapes;
}

std::optional<std::vector<int64_t>> IntTensorValues(const TensorProto& tensor,
                                                    int64_t num_elements) {
  if (num_elements < 0 || num_elements > kMaxFoldedElements) {
    return std::nullopt;
  }
  const std::string& content = tensor.tensor_content();
  auto from_content = [&](size_t width) -> std::optional<std::vector<int64_t>> {
    if (content.size() != width * static_cast<size_t>(num_elements)) {
      return std::nullopt;
    }
    switch (width) {
      case 1:
        return LittleEndianValues<int8_t>(content, num_elements);
      case 2:
        return LittleEndianValues<int16_t>(content, num_elements);
      case 4:
        return LittleEndianValues<int32_t>(content, num_elements);
      default:
        return LittleEndianValues<int64_t>(content, num_elements);
    }
  };
  switch (tensor.dtype()) {
    case tensorflow::DT_INT32:
    case tensorflow::DT_INT16:
    case tensorflow::DT_INT8:
      if (!content.empty()) {
        const size_t width = tensor.dtype() == tensorflow::DT_INT32   ? 4
                             : tensor.dtype() == tensorflow::DT_INT16 ? 2
                                                                      : 1;
        return from_content(width);
      }
      return RepeatLast(tensor.int_val(), num_elements);
    case tensorflow::DT_UINT8:
      if (!content.empty()) {
        if (content.size() != static_cast<size_t>(num_elements)) {
          return std::nullopt;
        }
        std::vector<int64_t> values;
        for (unsigned char c : content) values.push_back(c);
        return values;
      }
      return RepeatLast(tensor.int_val(), num_elements);
    case tensorflow::DT_INT64:
      if (!content.empty()) return from_content(8);
      return RepeatLast(tensor.int64_val(), num_elements);
    case tensorflow::DT_BOOL:
      if (!content.empty()) return from_content(1);
      return RepeatLast(tensor.bool_val(), num_elements);
    default:
      return std::nullopt;
  }
}

}  // namespace gopt::graph::tf
