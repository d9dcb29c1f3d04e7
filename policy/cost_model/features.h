#ifndef GOPT_POLICY_COST_MODEL_FEATURES_H_
#define GOPT_POLICY_COST_MODEL_FEATURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/hlo/hlo_lowering.h"

namespace gopt::policy::cost_model {

// Feature widths of the public TpuGraphs dataset.
inline constexpr int kNodeFeatures = 140;
// Opcode ids are 1..120 (TpuGraphs numbering); 0 = an opcode it does not
// know.
inline constexpr int kNumOpcodes = 121;
// Per configurable node: output, input and kernel minor_to_major, 6 dims
// each, -1 padded; all -1 = the compiler's default.
inline constexpr int kLayoutConfigFeatures = 18;
// Per kernel: kernel, output and input tile bounds, each 6 values + sum +
// product (an absent list has sum 0 and product 0).
inline constexpr int kTileConfigFeatures = 24;

// The TpuGraphs opcode id of an HLO opcode name ("convolution" -> 26); 0
// when TpuGraphs does not number it.
int32_t TpuGraphsOpcodeId(absl::string_view opcode);

// A graph in the shape the cost model consumes: the TpuGraphs `.npz` arrays.
// Nodes are the top-level graph's nodes (same ids) followed by the nodes of
// every attached subgraph (while bodies, branches, fused computations),
// depth first. A plain value; safe to read from many threads.
struct FeaturizedGraph {
  std::string name;
  int32_t num_nodes = 0;
  // num_nodes x kNodeFeatures, row-major, in the published padding
  // convention (see FeaturizeNode).
  std::vector<float> node_features;
  std::vector<int32_t> opcodes;  // num_nodes TpuGraphs opcode ids
  // Data edge k: node edge_src[k] produces a value node edge_dst[k] reads.
  // A subgraph's root also feeds the node that owns the subgraph.
  std::vector<int32_t> edge_src;
  std::vector<int32_t> edge_dst;
  // The layout-configurable nodes in configuration order: entry k is the
  // node whose 18 layout features are at [k * 18, k * 18 + 18) of a layout
  // configuration.
  std::vector<int32_t> configurable_nodes;
};

// The 140 TpuGraphs features of one node, in the layout of
// ../shared/data/tpugraphs/FEATURES.md and the published padding convention
// (an absent list with sum/product has sum 0 and product 1, other absent
// values are 0). Where FEATURES.md leaves the order open, ours is:
//  - 2-20 element type one-hot in FEATURES.md order; a node with several
//    outputs (or a tuple value) is "tuple", 29 counts its elements;
//  - 93-98 convolution input batch, input feature, kernel input feature,
//    kernel output feature, output batch, output feature; 99-102 input
//    spatial dims, 103-106 kernel spatial dims (first 4 each);
//  - 107/108 feature and batch group counts of a convolution (0 for other
//    ops);
//  - 125-128 padding low (2 values, sum, product), 129-132 padding high;
//  - 134-139 minor_to_major of output 0, the default row-major order when
//    the graph gives none.
std::vector<float> FeaturizeNode(const graph::Node& node);

// Featurizes `graph` with its layout-configurable nodes (Node::
// layout_configurable) in flattened node order as `configurable_nodes`.
// Never fails.
FeaturizedGraph FeaturizeGraph(const graph::Graph& graph);

// Featurizes `graph` with `configurable` (locations in the lowered graph,
// as TuningModule::configurable_nodes gives them) as the configurable nodes
// in that order. InvalidArgument naming the entry when a location does not
// exist in `graph`.
absl::StatusOr<FeaturizedGraph> FeaturizeGraph(
    const graph::Graph& graph,
    const std::vector<graph::hlo::HloNodeLocation>& configurable);

// The 18 layout features of one configurable node: its output layout and
// the layouts of its first two operands (empty = default, all -1).
std::vector<float> LayoutConfigFeatures(
    const std::vector<int32_t>& output_minor_to_major,
    const std::vector<int32_t>& input_minor_to_major,
    const std::vector<int32_t>& kernel_minor_to_major);

// The kLayoutConfigFeatures values of every configurable node of
// `featurized` (made by FeaturizeGraph(graph)) under `layout` (per top-level
// node minor_to_major, empty = default; an empty vector = all default):
// output = the node's layout, input / kernel = the layouts of the producers
// of its first two data operands. Configurable nodes inside subgraphs stay
// at the default (-1).
std::vector<float> LayoutAssignmentFeatures(
    const graph::Graph& graph, const FeaturizedGraph& featurized,
    const std::vector<std::vector<int32_t>>& layout);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_FEATURES_H_
