#ifndef GOPT_GRAPH_PROTO_WIRE_H_
#define GOPT_GRAPH_PROTO_WIRE_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace gopt::graph {

// One field of a serialized protobuf message, as seen on the wire.
struct WireField {
  int64_t number = 0;
  int wire_type = 0;          // 0 varint, 1 fixed64, 2 bytes, 5 fixed32
  uint64_t varint = 0;        // wire type 0
  absl::string_view payload;  // wire type 2 (points into the input)
};

// Reads the next field from `*bytes` and advances past it. Returns false on
// malformed or truncated input and on groups (wire types 3 and 4). Used for
// cheap format sniffing without a full parse; never reads out of bounds.
bool ReadWireField(absl::string_view* bytes, WireField* field);

// True when `text` is non-empty and every byte is printable ASCII.
bool IsPrintableName(absl::string_view text);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_PROTO_WIRE_H_
