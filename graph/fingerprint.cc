#include "graph/fingerprint.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "util/sha256.h"

namespace gopt::graph {
namespace {

// What the fingerprint hashes, encoded compactly before SHA-256: integers
// as zigzag LEB128 varints (almost every value hashed is a small count,
// index, kind or dimension: one byte instead of eight), doubles as their
// 8 bytes, strings after their length. Every field has a fixed place and
// every list follows its length, and the encoding is prefix-free, so equal
// bytes mean equal fields. Buffered inline, so that a field costs a few
// instructions rather than a call and SHA-256 sees large blocks (the plan
// store fingerprints every request that imports; docs/benchmarks.md).
class FingerprintWriter {
 public:
  void UpdateInt64(int64_t value) {
    if (used_ + kMaxVarintBytes > sizeof(buffer_)) Flush();
    uint64_t zigzag = (static_cast<uint64_t>(value) << 1) ^
                      static_cast<uint64_t>(value >> 63);
    while (zigzag >= 0x80) {
      buffer_[used_++] = static_cast<char>((zigzag & 0x7f) | 0x80);
      zigzag >>= 7;
    }
    buffer_[used_++] = static_cast<char>(zigzag);
  }

  void UpdateDouble(double value) {
    // -0.0 and 0.0 cost the same; one encoding for both.
    if (value == 0) value = 0;
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    // Little-endian whatever the host's byte order.
    char bytes[sizeof(bits)];
    for (size_t i = 0; i < sizeof(bits); ++i) {
      bytes[i] = static_cast<char>(bits >> (8 * i));
    }
    Append(absl::string_view(bytes, sizeof(bytes)));
  }

  void UpdateString(absl::string_view bytes) {
    UpdateInt64(static_cast<int64_t>(bytes.size()));
    Append(bytes);
  }

  std::string HexDigest() {
    Flush();
    return hash_.HexDigest();
  }

 private:
  static constexpr size_t kMaxVarintBytes = 10;

  void Append(absl::string_view bytes) {
    if (used_ + bytes.size() > sizeof(buffer_)) Flush();
    if (bytes.size() > sizeof(buffer_)) {
      hash_.Update(bytes);
      return;
    }
    std::memcpy(buffer_ + used_, bytes.data(), bytes.size());
    used_ += bytes.size();
  }

  void Flush() {
    hash_.Update(absl::string_view(buffer_, used_));
    used_ = 0;
  }

  char buffer_[size_t{1} << 14];
  size_t used_ = 0;
  Sha256 hash_;
};

void HashInts(const std::vector<int64_t>& values, FingerprintWriter* hash) {
  hash->UpdateInt64(static_cast<int64_t>(values.size()));
  for (int64_t value : values) hash->UpdateInt64(value);
}

void HashTensorType(const TensorType& type, FingerprintWriter* hash) {
  hash->UpdateInt64(static_cast<int64_t>(type.dtype));
  HashInts(type.dims, hash);
  hash->UpdateInt64(static_cast<int64_t>(type.minor_to_major.size()));
  for (int32_t dim : type.minor_to_major) hash->UpdateInt64(dim);
  hash->UpdateInt64(static_cast<int64_t>(type.tuple_elements.size()));
  for (const TensorType& element : type.tuple_elements) {
    HashTensorType(element, hash);
  }
}

void HashAttributes(const OpAttributes& attributes, FingerprintWriter* hash) {
  HashInts(attributes.dimensions, hash);
  hash->UpdateInt64(attributes.feature_group_count);
  hash->UpdateInt64(attributes.batch_group_count);
  hash->UpdateInt64(attributes.trip_count);
  hash->UpdateInt64(attributes.collective_group_size);
  hash->UpdateInt64(attributes.is_root);
  hash->UpdateInt64(attributes.has_dot_dimensions);
  if (attributes.has_dot_dimensions) {
    const DotDimensions& dot = attributes.dot();
    HashInts(dot.lhs_batch, hash);
    HashInts(dot.rhs_batch, hash);
    HashInts(dot.lhs_contracting, hash);
    HashInts(dot.rhs_contracting, hash);
  }
  hash->UpdateInt64(attributes.has_convolution_dimensions);
  if (attributes.has_convolution_dimensions) {
    const ConvolutionDimensions& conv = attributes.convolution();
    for (int64_t value :
         {conv.input_batch, conv.input_feature, conv.kernel_input_feature,
          conv.kernel_output_feature, conv.output_batch, conv.output_feature}) {
      hash->UpdateInt64(value);
    }
    HashInts(conv.input_spatial, hash);
    HashInts(conv.kernel_spatial, hash);
    HashInts(conv.output_spatial, hash);
  }
  hash->UpdateInt64(static_cast<int64_t>(attributes.window().size()));
  for (const WindowDimension& window : attributes.window()) {
    for (int64_t value :
         {window.size, window.stride, window.padding_low, window.padding_high,
          window.window_dilation, window.base_dilation,
          static_cast<int64_t>(window.reversal)}) {
      hash->UpdateInt64(value);
    }
  }
}

void HashGraph(const Graph& graph, FingerprintWriter* hash) {
  hash->UpdateInt64(graph.num_nodes());
  hash->UpdateInt64(graph.num_edges());
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    hash->UpdateInt64(static_cast<int64_t>(node.kind));
    hash->UpdateString(node.op);
    hash->UpdateInt64(static_cast<int64_t>(node.outputs.size()));
    for (const TensorType& output : node.outputs) HashTensorType(output, hash);
    hash->UpdateDouble(node.flops);
    hash->UpdateInt64(node.bytes_read);
    hash->UpdateInt64(node.bytes_written);
    hash->UpdateInt64(node.bytes_communicated);
    hash->UpdateInt64(node.cost_unknown);
    hash->UpdateInt64(static_cast<int64_t>(node.device_constraint));
    hash->UpdateInt64(node.colocation_group);
    hash->UpdateInt64(node.layout_configurable);
    HashAttributes(node.attributes, hash);
    hash->UpdateInt64(static_cast<int64_t>(node.subgraphs.size()));
    for (int32_t subgraph : node.subgraphs) hash->UpdateInt64(subgraph);
    const auto in_edges = graph.in_edges(id);
    hash->UpdateInt64(static_cast<int64_t>(in_edges.size()));
    for (const Edge& edge : in_edges) {
      hash->UpdateInt64(edge.src);
      hash->UpdateInt64(edge.src_output);
      hash->UpdateInt64(edge.dst_input);
      hash->UpdateInt64(edge.control);
    }
  }
  hash->UpdateInt64(static_cast<int64_t>(graph.loops().size()));
  for (const LoopInfo& loop : graph.loops()) {
    hash->UpdateInt64(loop.merge);
    hash->UpdateInt64(loop.next_iteration);
    hash->UpdateInt64(loop.trip_count);
  }
  hash->UpdateInt64(static_cast<int64_t>(graph.colocation_groups().size()));
  hash->UpdateInt64(graph.spmd().num_partitions);
  hash->UpdateInt64(static_cast<int64_t>(graph.subgraphs().size()));
  for (const auto& subgraph : graph.subgraphs()) {
    HashGraph(*subgraph, hash);
  }
}

}  // namespace

std::string GraphFingerprint(const Graph& graph) {
  FingerprintWriter hash;
  hash.UpdateInt64(kGraphFingerprintVersion);
  HashGraph(graph, &hash);
  return absl::StrCat("g", kGraphFingerprintVersion, "-", hash.HexDigest());
}

}  // namespace gopt::graph
