#include "graph/fingerprint.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "util/sha256.h"

namespace gopt::graph {
namespace {

void HashInts(const std::vector<int64_t>& values, Sha256* hash) {
  hash->UpdateInt64(static_cast<int64_t>(values.size()));
  for (int64_t value : values) hash->UpdateInt64(value);
}

void HashTensorType(const TensorType& type, Sha256* hash) {
  hash->UpdateInt64(static_cast<int64_t>(type.dtype));
  HashInts(type.dims, hash);
  hash->UpdateInt64(static_cast<int64_t>(type.minor_to_major.size()));
  for (int32_t dim : type.minor_to_major) hash->UpdateInt64(dim);
  hash->UpdateInt64(static_cast<int64_t>(type.tuple_elements.size()));
  for (const TensorType& element : type.tuple_elements) {
    HashTensorType(element, hash);
  }
}

void HashAttributes(const OpAttributes& attributes, Sha256* hash) {
  HashInts(attributes.dimensions, hash);
  hash->UpdateInt64(attributes.feature_group_count);
  hash->UpdateInt64(attributes.batch_group_count);
  hash->UpdateInt64(attributes.trip_count);
  // Only when set, so that graphs without collective groups keep their
  // fingerprints (and the plan store its keys).
  if (attributes.collective_group_size != 0) {
    hash->UpdateInt64(attributes.collective_group_size);
  }
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

void HashGraph(const Graph& graph, Sha256* hash) {
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
  if (graph.spmd().num_partitions > 1) {  // as above: only when set
    hash->UpdateInt64(graph.spmd().num_partitions);
  }
  hash->UpdateInt64(static_cast<int64_t>(graph.subgraphs().size()));
  for (const auto& subgraph : graph.subgraphs()) {
    HashGraph(*subgraph, hash);
  }
}

}  // namespace

std::string GraphFingerprint(const Graph& graph) {
  Sha256 hash;
  hash.UpdateInt64(kGraphFingerprintVersion);
  HashGraph(graph, &hash);
  return absl::StrCat("g", kGraphFingerprintVersion, "-", hash.HexDigest());
}

}  // namespace gopt::graph
