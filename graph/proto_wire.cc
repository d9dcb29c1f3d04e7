#include "graph/proto_wire.h"

namespace gopt::graph {
namespace {

bool ReadVarint(absl::string_view* bytes, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (bytes->empty()) return false;
    const uint8_t byte = static_cast<uint8_t>(bytes->front());
    bytes->remove_prefix(1);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

bool ReadWireField(absl::string_view* bytes, WireField* field) {
  uint64_t tag = 0;
  if (!ReadVarint(bytes, &tag)) return false;
  field->number = static_cast<int64_t>(tag >> 3);
  field->wire_type = static_cast<int>(tag & 7);
  if (field->number == 0) return false;
  switch (field->wire_type) {
    case 0:
      return ReadVarint(bytes, &field->varint);
    case 1:
      if (bytes->size() < 8) return false;
      bytes->remove_prefix(8);
      return true;
    case 2: {
      uint64_t length = 0;
      if (!ReadVarint(bytes, &length) || length > bytes->size()) return false;
      field->payload = bytes->substr(0, length);
      bytes->remove_prefix(length);
      return true;
    }
    case 5:
      if (bytes->size() < 4) return false;
      bytes->remove_prefix(4);
      return true;
    default:
      return false;
  }
}

bool IsPrintableName(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace gopt::graph
