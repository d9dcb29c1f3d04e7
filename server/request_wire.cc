#include "server/request_wire.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpc/slice.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "util/status_macros.h"

namespace gopt::server {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

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

// Calls `on_field(field_number, input)` for each length-delimited field of
// the message in `input` (up to its current limit), with `input` limited to
// the field's payload; the rest of a payload `on_field` leaves unread is
// skipped, and so are fields of other wire types. Nothing is copied: the
// stream reads the bytes where they are.
template <typename OnField>
absl::Status ForEachLengthDelimited(CodedInputStream* input, OnField on_field) {
  while (true) {
    const uint32_t tag = input->ReadTag();
    if (tag == 0) {
      // 0 is both "the message ended" and an invalid or cut-short tag.
      if (input->BytesUntilLimit() == 0) return absl::OkStatus();
      return Malformed("a field tag is invalid");
    }
    const int field = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    uint64_t value = 0;
    bool read = true;
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT:
        read = input->ReadVarint64(&value);
        break;
      case WireFormatLite::WIRETYPE_FIXED64:
        read = input->Skip(8);
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        read = input->Skip(4);
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        if (!input->ReadVarint64(&value)) {
          return Malformed(absl::StrCat("field ", field, " is cut short"));
        }
        if (value > static_cast<uint64_t>(input->BytesUntilLimit())) {
          return Malformed(
              absl::StrCat("field ", field, " is longer than the message"));
        }
        const CodedInputStream::Limit limit =
            input->PushLimit(static_cast<int>(value));
        RETURN_IF_ERROR(on_field(field, input));
        read = input->Skip(input->BytesUntilLimit());
        input->PopLimit(limit);
        break;
      }
      default:
        // Groups (deprecated) and invalid wire types: our messages have
        // neither.
        return Malformed(
            absl::StrCat("field ", field, " has wire type ", tag & 7));
    }
    if (!read) {
      return Malformed(absl::StrCat("field ", field, " is cut short"));
    }
  }
}

absl::Status CountGraphNodes(CodedInputStream* graph, int depth,
                             int64_t* nodes) {
  if (depth > kMaxGraphDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph.graph: subgraphs nested deeper than ",
                     kMaxGraphDepth, " levels"));
  }
  return ForEachLengthDelimited(
      graph, [&](int field, CodedInputStream* payload) -> absl::Status {
        if (field == kGraphNodesField) ++*nodes;
        if (field == kGraphSubgraphsField) {
          return CountGraphNodes(payload, depth + 1, nodes);
        }
        return absl::OkStatus();
      });
}

// The inline graph's nodes of the request of `size` bytes in `input`.
absl::StatusOr<int64_t> CountStreamedGraphNodes(
    google::protobuf::io::ZeroCopyInputStream* input, size_t size) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Malformed("it is larger than 2 GiB");
  }
  CodedInputStream request(input);
  request.PushLimit(static_cast<int>(size));
  int64_t nodes = 0;
  RETURN_IF_ERROR(ForEachLengthDelimited(
      &request, [&](int field, CodedInputStream* graph_input) -> absl::Status {
        if (field != kRequestGraphField) return absl::OkStatus();
        return ForEachLengthDelimited(
            graph_input,
            [&](int input_field, CodedInputStream* graph) -> absl::Status {
              if (input_field != kGraphInputGraphField) {
                return absl::OkStatus();
              }
              return CountGraphNodes(graph, /*depth=*/0, &nodes);
            });
      }));
  return nodes;
}

}  // namespace

absl::StatusOr<int64_t> CountInlineGraphNodes(absl::string_view request_bytes) {
  google::protobuf::io::ArrayInputStream input(
      request_bytes.data(),
      static_cast<int>(std::min<size_t>(request_bytes.size(),
                                        std::numeric_limits<int>::max())));
  return CountStreamedGraphNodes(&input, request_bytes.size());
}

absl::Status ParseRequest(const grpc::ByteBuffer& buffer,
                          int64_t max_graph_nodes, absl::string_view type_name,
                          google::protobuf::MessageLite* message) {
  // gRPC hands an empty message over as a buffer with nothing in it.
  if (!buffer.Valid()) {
    message->Clear();
    return absl::OkStatus();
  }
  // Both passes read gRPC's slices in place: copying the buffer takes a
  // reference to each slice, not its bytes, and a large request is never
  // gathered into one string (that copy cost about a fifth of a plan-store
  // hit's time on a multi-megabyte graph).
  grpc::ByteBuffer slices(buffer);
  absl::StatusOr<int64_t> nodes = [&]() -> absl::StatusOr<int64_t> {
    grpc::ProtoBufferReader reader(&slices);
    return CountStreamedGraphNodes(&reader, slices.Length());
  }();
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
  grpc::ProtoBufferReader reader(&slices);
  if (!message->ParseFromZeroCopyStream(&reader)) {
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
