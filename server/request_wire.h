#ifndef GOPT_SERVER_REQUEST_WIRE_H_
#define GOPT_SERVER_REQUEST_WIRE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"

namespace gopt::server {

// Reading requests off the wire before they cost memory. gRPC would parse a
// request message in full before any handler runs: a 63 MiB message of
// empty graph nodes becomes ~7 GB of objects. The service takes requests as
// raw bytes instead, counts the nodes of an inline graph by walking the
// wire format (no allocation per node), refuses an oversized graph, and
// only then parses.

// Nodes of the inline gopt.v1.Graph (GraphInput.graph, field 1 of both
// OptimizeRequest and EvaluateRequest), subgraphs included, counted on the
// wire. 0 for a serialized graph. InvalidArgument for bytes that are not a
// protobuf message or graphs nested deeper than 64 levels.
absl::StatusOr<int64_t> CountInlineGraphNodes(absl::string_view request_bytes);

// Checks the inline graph's node count against `max_graph_nodes`
// (ResourceExhausted naming both), then parses `message` (whose type name
// is `type_name`, e.g. "gopt.v1.OptimizeRequest") from `buffer`. Both read
// gRPC's slices in place: the request's bytes are never copied whole.
// InvalidArgument with the reason when the bytes do not parse.
absl::Status ParseRequest(const grpc::ByteBuffer& buffer,
                          int64_t max_graph_nodes, absl::string_view type_name,
                          google::protobuf::MessageLite* message);

// `message` serialized into a ByteBuffer. Internal if it cannot be.
absl::StatusOr<grpc::ByteBuffer> SerializeResponse(
    const google::protobuf::MessageLite& message);

// `body` then `tail` (serialized messages) as one ByteBuffer. `body` is
// shared with the buffer, never copied: it stays alive until gRPC is done
// with the buffer.
grpc::ByteBuffer SharedBytesBuffer(std::shared_ptr<const std::string> body,
                                   absl::string_view tail);

}  // namespace gopt::server

#endif  // GOPT_SERVER_REQUEST_WIRE_H_
