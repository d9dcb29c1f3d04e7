#ifndef GOPT_GRAPH_PARSE_COST_H_
#define GOPT_GRAPH_PARSE_COST_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/descriptor.h"

namespace gopt::graph {

// What parsing a serialized graph will cost, read off its bytes before any
// parse allocates: a protobuf message of empty repeated nodes parses into
// ~200x its size, so limits must apply before the parse, not after it.
struct ParseCost {
  // Messages (JSON objects, text-format blocks) in the file, root included.
  int64_t messages = 0;
  // Elements of the format's node types anywhere in the file (subgraph and
  // fused-computation bodies included): an upper bound of the graph's nodes.
  int64_t nodes = 0;
  // Estimated heap bytes of the parsed tree, beyond the input itself.
  int64_t bytes = 0;
  // Deepest nesting seen (the root is 1).
  int depth = 0;
};

// Bounds checked while scanning, so a hostile file stops the scan early.
struct ParseCostLimits {
  // Deepest nesting accepted; deeper is InvalidArgument. Default 64 (real
  // graphs nest a few levels; protobuf's own parse limit is 100).
  int max_depth = 64;
  // Most node elements accepted; more is ResourceExhausted, naming the
  // count reached and this limit. Default: unlimited.
  int64_t max_nodes = std::numeric_limits<int64_t>::max();
};

// Heap bytes an importer builds per node beside the parsed message (its
// own instruction records, name maps, shape tables), from the peak RSS of
// importing the real graphs of ../shared/data (docs/reliability.md,
// "Import admission").
inline constexpr int64_t kImporterBytesPerNode = 8192;

// Arena options for parsing one imported file: blocks grow to 4 MiB, so a
// large parse is a few hundred blocks handed back at once when the import
// ends, instead of millions of small frees.
google::protobuf::ArenaOptions ImportArenaOptions();

// The message types a format's nodes come from.
struct NodeTypes {
  // Elements of these types count as nodes.
  std::vector<const google::protobuf::Descriptor*> counted;
  // Elements of this type (the format's operator, one of `counted`) are
  // never empty in a real file: an operator has at least a name or an op.
  // Null = no such check.
  const google::protobuf::Descriptor* never_empty = nullptr;
};

// The cost of parsing `bytes` as a serialized message of type `root`,
// guided by its descriptor (field types, message types, packed scalars) and
// sized by the generated classes' object sizes. InvalidArgument, naming the
// byte offset, for bytes that are not a protobuf message (a truncated
// field, a group, a bad tag), that nest deeper than limits.max_depth, or
// that hold an empty element of node_types.never_empty (reported after
// the count, so a file over the node limit is ResourceExhausted first);
// ResourceExhausted past limits.max_nodes. Reads nothing out of bounds;
// O(size of `bytes`). Thread-safe.
absl::StatusOr<ParseCost> ProtoParseCost(
    absl::string_view bytes, const google::protobuf::Descriptor* root,
    const NodeTypes& node_types, const ParseCostLimits& limits);

// The cost of parsing `text` as JSON into a protobuf message: nesting
// (InvalidArgument past limits.max_depth, naming the offset), objects
// (each a message), values. `node_key` names the JSON key whose array
// elements are the nodes ("nodes" for a gopt.v1.Graph, "node" for a TF
// GraphDef); every object directly in such an array counts as a node, and
// an empty one ({}) is InvalidArgument naming its offset (after the count,
// as ProtoParseCost). Strings are skipped with their escapes; the scan
// never fails on text that is not JSON (the parser reports that), only on
// nesting, empty nodes and node limits.
absl::StatusOr<ParseCost> JsonParseCost(absl::string_view text,
                                        absl::string_view node_key,
                                        const ParseCostLimits& limits);

// The cost of parsing a brace-structured text format (HLO text, protobuf
// text format): nesting of { } (InvalidArgument past limits.max_depth, with
// line number), and, as nodes, the lines that hold `node_marker` (" = " for
// HLO instructions, "node {" for a text GraphDef). `bytes_per_node`
// sizes what the parser builds per node beyond the text.
absl::StatusOr<ParseCost> TextParseCost(absl::string_view text,
                                        absl::string_view node_marker,
                                        int64_t bytes_per_node,
                                        const ParseCostLimits& limits);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_PARSE_COST_H_
