#include "policy/cost_model/features.h"

#include <algorithm>
#include <array>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gopt::policy::cost_model {
namespace {

// The producer of `node`'s `input`-th data operand, or -1.
graph::NodeId Operand(const graph::Graph& graph, graph::NodeId node,
                      int input) {
  int seen = 0;
  for (const graph::Edge& edge : graph.in_edges(node)) {
    if (edge.control) continue;
    if (seen++ == input) return edge.src;
  }
  return -1;
}

// TpuGraphs opcode ids (../shared/data/tpugraphs/opcode_ids.txt).
constexpr std::array<std::pair<const char*, int32_t>, 120> kOpcodeIds = {{
    {"abs", 1},
    {"add", 2},
    {"add-dependency", 3},
    {"after-all", 4},
    {"all-reduce", 5},
    {"all-to-all", 6},
    {"atan2", 7},
    {"batch-norm-grad", 8},
    {"batch-norm-inference", 9},
    {"batch-norm-training", 10},
    {"bitcast", 11},
    {"bitcast-convert", 12},
    {"broadcast", 13},
    {"call", 14},
    {"ceil", 15},
    {"cholesky", 16},
    {"clamp", 17},
    {"collective-permute", 18},
    {"count-leading-zeros", 19},
    {"compare", 20},
    {"complex", 21},
    {"concatenate", 22},
    {"conditional", 23},
    {"constant", 24},
    {"convert", 25},
    {"convolution", 26},
    {"copy", 27},
    {"copy-done", 28},
    {"copy-start", 29},
    {"cosine", 30},
    {"custom-call", 31},
    {"divide", 32},
    {"domain", 33},
    {"dot", 34},
    {"dynamic-slice", 35},
    {"dynamic-update-slice", 36},
    {"exponential", 37},
    {"exponential-minus-one", 38},
    {"fft", 39},
    {"floor", 40},
    {"fusion", 41},
    {"gather", 42},
    {"get-dimension-size", 43},
    {"set-dimension-size", 44},
    {"get-tuple-element", 45},
    {"imag", 46},
    {"infeed", 47},
    {"iota", 48},
    {"is-finite", 49},
    {"log", 50},
    {"log-plus-one", 51},
    {"and", 52},
    {"not", 53},
    {"or", 54},
    {"xor", 55},
    {"map", 56},
    {"maximum", 57},
    {"minimum", 58},
    {"multiply", 59},
    {"negate", 60},
    {"outfeed", 61},
    {"pad", 62},
    {"parameter", 63},
    {"partition-id", 64},
    {"popcnt", 65},
    {"power", 66},
    {"real", 67},
    {"recv", 68},
    {"recv-done", 69},
    {"reduce", 70},
    {"reduce-precision", 71},
    {"reduce-window", 72},
    {"remainder", 73},
    {"replica-id", 74},
    {"reshape", 75},
    {"reverse", 76},
    {"rng", 77},
    {"rng-get-and-update-state", 78},
    {"rng-bit-generator", 79},
    {"round-nearest-afz", 80},
    {"rsqrt", 81},
    {"scatter", 82},
    {"select", 83},
    {"select-and-scatter", 84},
    {"send", 85},
    {"send-done", 86},
    {"shift-left", 87},
    {"shift-right-arithmetic", 88},
    {"shift-right-logical", 89},
    {"sign", 90},
    {"sine", 91},
    {"slice", 92},
    {"sort", 93},
    {"sqrt", 94},
    {"subtract", 95},
    {"tanh", 96},
    {"trace", 97},
    {"transpose", 98},
    {"triangular-solve", 99},
    {"tuple", 100},
    {"tuple-select", 101},
    {"while", 102},
    {"cbrt", 103},
    {"all-gather", 104},
    {"collective-permute-start", 105},
    {"collective-permute-done", 106},
    {"logistic", 107},
    {"dynamic-reshape", 108},
    {"all-reduce-start", 109},
    {"all-reduce-done", 110},
    {"reduce-scatter", 111},
    {"all-gather-start", 112},
    {"all-gather-done", 113},
    {"opt-barrier", 114},
    {"async-start", 115},
    {"async-update", 116},
    {"async-done", 117},
    {"round-nearest-even", 118},
    {"stochastic-convert", 119},
    {"tan", 120},
}};

// Feature offsets (FEATURES.md).
constexpr int kIsRoot = 0;
constexpr int kElementType = 2;
constexpr int kDims = 21;
constexpr int kTupleElements = 29;
constexpr int kParameterNumber = 30;
constexpr int kDimensionsAttr = 31;
constexpr int kWindow = 37;
constexpr int kWindowReversal = 85;
constexpr int kConvDims = 93;
constexpr int kConvSpatial = 99;
constexpr int kFeatureGroupCount = 107;
constexpr int kBatchGroupCount = 108;
constexpr int kSlice = 109;
constexpr int kDynamicSliceSizes = 121;
constexpr int kPadding = 125;
constexpr int kIsStable = 133;
constexpr int kLayout = 134;

// One-hot position of an element type in FEATURES.md order.
int ElementTypeIndex(graph::DType dtype) {
  using graph::DType;
  switch (dtype) {
    case DType::kPred:
      return 1;
    case DType::kS8:
      return 2;
    case DType::kS16:
      return 3;
    case DType::kS32:
      return 4;
    case DType::kS64:
      return 5;
    case DType::kU8:
      return 6;
    case DType::kU16:
      return 7;
    case DType::kU32:
      return 8;
    case DType::kU64:
      return 9;
    case DType::kF16:
      return 10;
    case DType::kF32:
      return 11;
    case DType::kF64:
      return 12;
    case DType::kBF16:
      return 13;
    case DType::kC64:
      return 14;
    case DType::kC128:
      return 15;
    case DType::kOpaque:
      return 17;
    case DType::kToken:
      return 18;
    default:
      return 0;
  }
}
constexpr int kTupleTypeIndex = 16;

// Writes `count` values of `values` (0-padded) at `offset`.
template <typename T>
void PutList(const std::vector<T>& values, int count, int offset, float* out) {
  for (int i = 0; i < count && i < static_cast<int>(values.size()); ++i) {
    out[offset + i] = static_cast<float>(values[i]);
  }
}

// Writes 6 values, their sum and product at `offset` (`slots` values).
template <typename T>
void PutListSumProduct(const std::vector<T>& values, int slots, int offset,
                       float* out) {
  PutList(values, slots, offset, out);
  double sum = 0;
  double product = 1;
  for (const T& v : values) {
    sum += static_cast<double>(v);
    product *= static_cast<double>(v);
  }
  out[offset + slots] = static_cast<float>(sum);
  out[offset + slots + 1] = static_cast<float>(product);
}

template <typename F>
std::vector<int64_t> WindowField(const std::vector<graph::WindowDimension>& w,
                                 F field) {
  std::vector<int64_t> values;
  values.reserve(w.size());
  for (const graph::WindowDimension& d : w) values.push_back(field(d));
  return values;
}

// Appends `graph`'s nodes and edges to `out` at `offset` and recurses into
// its subgraphs; records each subgraph's offset under its path.
void Flatten(const graph::Graph& graph, int32_t offset,
             std::vector<int32_t>* path,
             absl::flat_hash_map<std::vector<int32_t>, int32_t>* offsets,
             FeaturizedGraph* out) {
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    const graph::Node& node = graph.node(id);
    const std::vector<float> features = FeaturizeNode(node);
    out->node_features.insert(out->node_features.end(), features.begin(),
                              features.end());
    out->opcodes.push_back(TpuGraphsOpcodeId(node.op));
  }
  for (const graph::Edge& edge : graph.edges()) {
    if (edge.control) continue;
    out->edge_src.push_back(offset + edge.src);
    out->edge_dst.push_back(offset + edge.dst);
  }
  out->num_nodes += graph.num_nodes();
  for (size_t s = 0; s < graph.subgraphs().size(); ++s) {
    const graph::Graph& sub = *graph.subgraphs()[s];
    const int32_t sub_offset = out->num_nodes;
    path->push_back(static_cast<int32_t>(s));
    (*offsets)[*path] = sub_offset;
    Flatten(sub, sub_offset, path, offsets, out);
    path->pop_back();
    if (sub.num_nodes() == 0) continue;
    graph::NodeId root = sub.num_nodes() - 1;
    for (graph::NodeId id = 0; id < sub.num_nodes(); ++id) {
      if (sub.node(id).attributes.is_root) root = id;
    }
    for (graph::NodeId owner = 0; owner < graph.num_nodes(); ++owner) {
      const std::vector<int32_t>& subs = graph.node(owner).subgraphs;
      if (std::find(subs.begin(), subs.end(), static_cast<int32_t>(s)) !=
          subs.end()) {
        out->edge_src.push_back(sub_offset + root);
        out->edge_dst.push_back(offset + owner);
      }
    }
  }
}

FeaturizedGraph FlattenGraph(
    const graph::Graph& graph,
    absl::flat_hash_map<std::vector<int32_t>, int32_t>* offsets) {
  FeaturizedGraph out;
  out.name = graph.name();
  std::vector<int32_t> path;
  (*offsets)[path] = 0;
  Flatten(graph, 0, &path, offsets, &out);
  return out;
}

// Marks configurable nodes of `graph` (and its subgraphs) in flattened
// order.
void CollectConfigurable(
    const graph::Graph& graph, std::vector<int32_t>* path,
    const absl::flat_hash_map<std::vector<int32_t>, int32_t>& offsets,
    std::vector<int32_t>* out) {
  const int32_t offset = offsets.at(*path);
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (graph.node(id).layout_configurable) out->push_back(offset + id);
  }
  for (size_t s = 0; s < graph.subgraphs().size(); ++s) {
    path->push_back(static_cast<int32_t>(s));
    CollectConfigurable(*graph.subgraphs()[s], path, offsets, out);
    path->pop_back();
  }
}

}  // namespace

int32_t TpuGraphsOpcodeId(absl::string_view opcode) {
  static const auto* const kIds = [] {
    auto* ids = new absl::flat_hash_map<std::string, int32_t>();
    for (const auto& [name, id] : kOpcodeIds) (*ids)[name] = id;
    return ids;
  }();
  const auto it = kIds->find(opcode);
  return it == kIds->end() ? 0 : it->second;
}

std::vector<float> FeaturizeNode(const graph::Node& node) {
  std::vector<float> f(kNodeFeatures, 0.0f);
  float* out = f.data();
  const graph::OpAttributes& a = node.attributes;
  out[kIsRoot] = a.is_root ? 1 : 0;

  const bool is_tuple = node.outputs.size() != 1 || node.outputs[0].is_tuple();
  const graph::TensorType* array = is_tuple ? nullptr : &node.outputs[0];
  if (is_tuple) {
    out[kElementType + kTupleTypeIndex] = 1;
    out[kTupleElements] = static_cast<float>(
        node.outputs.size() == 1 ? node.outputs[0].tuple_elements.size()
                                 : node.outputs.size());
  } else {
    out[kElementType + ElementTypeIndex(array->dtype)] = 1;
  }
  PutListSumProduct(array != nullptr ? array->dims : std::vector<int64_t>(), 6,
                    kDims, out);
  if (a.parameter_number >= 0) {
    out[kParameterNumber] = static_cast<float>(a.parameter_number);
  }
  PutList(a.dimensions, 6, kDimensionsAttr, out);

  using W = graph::WindowDimension;
  const std::vector<std::function<int64_t(const W&)>> window_fields = {
      [](const W& d) { return d.size; },
      [](const W& d) { return d.stride; },
      [](const W& d) { return d.padding_low; },
      [](const W& d) { return d.padding_high; },
      [](const W& d) { return d.window_dilation; },
      [](const W& d) { return d.base_dilation; }};
  for (size_t i = 0; i < window_fields.size(); ++i) {
    PutListSumProduct(WindowField(a.window(), window_fields[i]), 6,
                      kWindow + 8 * static_cast<int>(i), out);
  }
  const std::vector<int64_t> reversal =
      WindowField(a.window(), [](const W& d) -> int64_t { return d.reversal; });
  PutList(reversal, 6, kWindowReversal, out);
  const auto reversed = std::count(reversal.begin(), reversal.end(), 1);
  out[kWindowReversal + 6] = static_cast<float>(reversed);
  out[kWindowReversal + 7] = static_cast<float>(reversal.size() - reversed);

  if (a.has_convolution_dimensions) {
    const graph::ConvolutionDimensions& c = a.convolution();
    const std::vector<int64_t> roles = {
        c.input_batch,           c.input_feature, c.kernel_input_feature,
        c.kernel_output_feature, c.output_batch,  c.output_feature};
    PutList(roles, 6, kConvDims, out);
    PutList(c.input_spatial, 4, kConvSpatial, out);
    PutList(c.kernel_spatial, 4, kConvSpatial + 4, out);
    out[kFeatureGroupCount] = static_cast<float>(a.feature_group_count);
    out[kBatchGroupCount] = static_cast<float>(a.batch_group_count);
  }
  PutListSumProduct(a.slice_starts(), 2, kSlice, out);
  PutListSumProduct(a.slice_strides(), 2, kSlice + 4, out);
  PutListSumProduct(a.slice_limits(), 2, kSlice + 8, out);
  PutList(a.dynamic_slice_sizes(), 4, kDynamicSliceSizes, out);
  std::vector<int64_t> low;
  std::vector<int64_t> high;
  for (const graph::PaddingDimension& p : a.padding()) {
    low.push_back(p.low);
    high.push_back(p.high);
  }
  PutListSumProduct(low, 2, kPadding, out);
  PutListSumProduct(high, 2, kPadding + 4, out);
  out[kIsStable] = a.is_stable ? 1 : 0;
  if (array != nullptr) {
    std::vector<int32_t> layout = array->minor_to_major;
    if (layout.empty()) {
      for (int d = array->rank() - 1; d >= 0; --d) layout.push_back(d);
    }
    PutList(layout, 6, kLayout, out);
  }
  return f;
}

FeaturizedGraph FeaturizeGraph(const graph::Graph& graph) {
  absl::flat_hash_map<std::vector<int32_t>, int32_t> offsets;
  FeaturizedGraph out = FlattenGraph(graph, &offsets);
  std::vector<int32_t> path;
  CollectConfigurable(graph, &path, offsets, &out.configurable_nodes);
  return out;
}

absl::StatusOr<FeaturizedGraph> FeaturizeGraph(
    const graph::Graph& graph,
    const std::vector<graph::hlo::HloNodeLocation>& configurable) {
  absl::flat_hash_map<std::vector<int32_t>, int32_t> offsets;
  FeaturizedGraph out = FlattenGraph(graph, &offsets);
  for (size_t k = 0; k < configurable.size(); ++k) {
    const graph::hlo::HloNodeLocation& location = configurable[k];
    const graph::Graph* current = &graph;
    bool valid = true;
    for (int32_t index : location.subgraph_path) {
      if (index < 0 ||
          index >= static_cast<int32_t>(current->subgraphs().size())) {
        valid = false;
        break;
      }
      current = current->subgraphs()[index].get();
    }
    if (!valid || location.node < 0 || location.node >= current->num_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "configurable node ", k, " (subgraph path [",
          absl::StrJoin(location.subgraph_path, ","), "], node ", location.node,
          ") is not in graph '", graph.name(), "'"));
    }
    out.configurable_nodes.push_back(offsets.at(location.subgraph_path) +
                                     location.node);
  }
  return out;
}

std::vector<float> LayoutConfigFeatures(
    const std::vector<int32_t>& output_minor_to_major,
    const std::vector<int32_t>& input_minor_to_major,
    const std::vector<int32_t>& kernel_minor_to_major) {
  std::vector<float> f(kLayoutConfigFeatures, -1.0f);
  const std::vector<int32_t>* layouts[3] = {
      &output_minor_to_major, &input_minor_to_major, &kernel_minor_to_major};
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 6 && i < static_cast<int>(layouts[t]->size()); ++i) {
      f[t * 6 + i] = static_cast<float>((*layouts[t])[i]);
    }
  }
  return f;
}

std::vector<float> LayoutAssignmentFeatures(
    const graph::Graph& graph, const FeaturizedGraph& featurized,
    const std::vector<std::vector<int32_t>>& layout) {
  std::vector<float> out;
  out.reserve(featurized.configurable_nodes.size() * kLayoutConfigFeatures);
  static const std::vector<int32_t> kDefault;
  auto layout_of = [&](graph::NodeId id) -> const std::vector<int32_t>& {
    if (id < 0 || layout.empty()) return kDefault;
    return layout[id];
  };
  for (int32_t node : featurized.configurable_nodes) {
    std::vector<float> f;
    if (node < graph.num_nodes()) {
      f = LayoutConfigFeatures(layout_of(node),
                               layout_of(Operand(graph, node, 0)),
                               layout_of(Operand(graph, node, 1)));
    } else {
      f.assign(kLayoutConfigFeatures, -1.0f);
    }
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

}  // namespace gopt::policy::cost_model
