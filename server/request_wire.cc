#include "server/request_wire.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpc/slice.h"
#include "util/status_macros.h"

namespace gopt::server {
namespace {

using google::protobuf::internal::WireFormatLite;

// Field numbers (proto/gopt/v1): OptimizeRequest.graph and
// EvaluateRequest.graph = 1, GraphInput.graph = 1, Graph.nodes = 3,
// Graph.subgraphs = 4.
constexpr int kRequestGraphField = 1;
constexpr int kGraphInputGraphField = 1;
constexpr int kGraphNodesField = 3;
constexpr int kGraphSubgraphsField = 4;
constexpr int kMaxGraphDepth = 64;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("the request is not a valid protobuf message: ", what));
}

// Reads a base-128 varint at `*pos`; false when the bytes end first or it
// is longer than 10 bytes.
bool ReadVarint(absl::string_view bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= bytes.size()) return false;
    const uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Calls `on_field(field_number, payload)` for each length-delimited field
// of the message in `bytes`, skipping the others. Nothing is copied.
template <typename OnField>
absl::Status ForEachLengthDelimited(absl::string_view bytes, OnField on_field) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t tag = 0;
    if (!ReadVarint(bytes, &pos, &tag) || (tag >> 3) == 0) {
      return Malformed("a field tag is invalid");
    }
    const int field = static_cast<int>(tag >> 3);
    uint64_t length = 0;
    switch (static_cast<WireFormatLite::WireType>(tag & 7)) {
      case WireFormatLite::WIRETYPE_VARINT:
        if (!ReadVarint(bytes, &pos, &length)) {
          return Malformed(absl::StrCat("field ", field, " is cut short"));
        }
        continue;
      case WireFormatLite::WIRETYPE_FIXED64:
        length = 8;
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        length = 4;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED:
        if (!ReadVarint(bytes, &pos, &length)) {
          return Malformed(absl::StrCat("field ", field, " is cut short"));
        }
        if (length > bytes.size() - pos) {
          return Malformed(
              absl::StrCat("field ", field, " is longer than the message"));
        }
        RETURN_IF_ERROR(on_field(field, bytes.substr(pos, length)));
        pos += length;
        continue;
      default:
        // Groups (deprecated) and invalid wire types: our messages have
        // neither.
        return Malformed(
            absl::StrCat("field ", field, " has wire type ", tag & 7));
    }
    if (length > bytes.size() - pos) {
      return Malformed(absl::StrCat("field ", field, " is cut short"));
    }
    pos += length;
  }
  return absl::OkStatus();
}

absl::Status CountGraphNodes(absl::string_view graph, int depth,
                             int64_t* nodes) {
  if (depth > kMaxGraphDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph.graph: subgraphs nested deeper than ",
                     kMaxGraphDepth, " levels"));
  }
  return ForEachLengthDelimited(
      graph, [&](int field, absl::string_view payload) -> absl::Status {
        if (field == kGraphNodesField) ++*nodes;
        if (field == kGraphSubgraphsField) {
          return CountGraphNodes(payload, depth + 1, nodes);
        }
        return absl::OkStatus();
      });
}

}  // namespace

absl::StatusOr<int64_t> CountInlineGraphNodes(absl::string_view request_bytes) {
  int64_t nodes = 0;
  RETURN_IF_ERROR(ForEachLengthDelimited(
      request_bytes,
      [&](int field, absl::string_view graph_input) -> absl::Status {
        if (field != kRequestGraphField) return absl::OkStatus();
        return ForEachLengthDelimited(
            graph_input,
            [&](int input_field, absl::string_view graph) -> absl::Status {
              if (input_field != kGraphInputGraphField) {
                return absl::OkStatus();
              }
              return CountGraphNodes(graph, /*depth=*/0, &nodes);
            });
      }));
  return nodes;
}

absl::StatusOr<std::string> ByteBufferToString(const grpc::ByteBuffer& buffer) {
  // gRPC hands an empty message over as a buffer with nothing in it.
  if (!buffer.Valid()) return std::string();
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) {
    return absl::InternalError("cannot read the request's bytes");
  }
  std::string bytes;
  bytes.reserve(buffer.Length());
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

absl::Status ParseRequest(const grpc::ByteBuffer& buffer,
                          int64_t max_graph_nodes, absl::string_view type_name,
                          google::protobuf::MessageLite* message) {
  ASSIGN_OR_RETURN(const std::string bytes, ByteBufferToString(buffer));
  absl::StatusOr<int64_t> nodes = CountInlineGraphNodes(bytes);
  if (!nodes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(type_name, ": ", nodes.status().message()));
  }
  if (*nodes > max_graph_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "graph.graph has ", *nodes,
        " nodes (subgraphs included); this server accepts at most ",
        max_graph_nodes, " (--max_graph_nodes)"));
  }
  if (!message->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request is not a valid ", type_name,
        ": malformed bytes, a field of the wrong type, or messages nested "
        "deeper than protobuf's limit of 100 levels"));
  }
  return absl::OkStatus();
}

absl::StatusOr<grpc::ByteBuffer> SerializeResponse(
    const google::protobuf::MessageLite& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) {
    return absl::InternalError("cannot serialize the response");
  }
  grpc::Slice slice(std::move(bytes));
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer SharedBytesBuffer(std::shared_ptr<const std::string> body,
                                   absl::string_view tail) {
  std::vector<grpc::Slice> slices;
  if (body != nullptr && !body->empty()) {
    // The slice holds a reference to `body` and drops it when gRPC frees it.
    auto* holder = new std::shared_ptr<const std::string>(std::move(body));
    void* data = const_cast<char*>((*holder)->data());
    const size_t size = (*holder)->size();
    slices.emplace_back(
        grpc_slice_new_with_user_data(
            data, size,
            [](void* held) {
              delete static_cast<std::shared_ptr<const std::string>*>(held);
            },
            holder),
        grpc::Slice::STEAL_REF);
  }
  if (!tail.empty()) slices.emplace_back(tail.data(), tail.size());
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace gopt::server
