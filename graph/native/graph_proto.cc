#include "graph/native/graph_proto.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/op_catalog.h"
#include "util/status_macros.h"

namespace gopt::graph {
namespace {

constexpr int kMaxSubgraphDepth = 32;

void TensorTypeToProto(const TensorType& type, gopt::v1::TensorType* proto) {
  proto->set_dtype(static_cast<gopt::v1::DataType>(type.dtype));
  for (int64_t dim : type.dims) proto->add_dims(dim);
  for (int32_t dim : type.minor_to_major) proto->add_minor_to_major(dim);
  for (const TensorType& element : type.tuple_elements) {
    TensorTypeToProto(element, proto->add_tuple_elements());
  }
}

absl::StatusOr<TensorType> TensorTypeFromProto(
    const gopt::v1::TensorType& proto, int depth) {
  if (depth > kMaxSubgraphDepth) {
    return absl::InvalidArgumentError("tuple types nest more than 32 deep");
  }
  if (!gopt::v1::DataType_IsValid(proto.dtype()) ||
      proto.dtype() >= kNumDTypes) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dtype ", proto.dtype()));
  }
  TensorType type;
  type.dtype = static_cast<DType>(proto.dtype());
  type.dims.assign(proto.dims().begin(), proto.dims().end());
  type.minor_to_major.assign(proto.minor_to_major().begin(),
                             proto.minor_to_major().end());
  for (const gopt::v1::TensorType& element : proto.tuple_elements()) {
    ASSIGN_OR_RETURN(TensorType converted,
                     TensorTypeFromProto(element, depth + 1));
    type.tuple_elements.push_back(std::move(converted));
  }
  return type;
}

void AttributesToProto(const OpAttributes& attrs, gopt::v1::OpAttributes* p) {
  for (int64_t d : attrs.dimensions) p->add_dimensions(d);
  for (const WindowDimension& w : attrs.window()) {
    gopt::v1::WindowDimension* dim = p->add_window();
    dim->set_size(w.size);
    dim->set_stride(w.stride);
    dim->set_padding_low(w.padding_low);
    dim->set_padding_high(w.padding_high);
    dim->set_window_dilation(w.window_dilation);
    dim->set_base_dilation(w.base_dilation);
    dim->set_reversal(w.reversal);
  }
  if (attrs.has_convolution_dimensions) {
    const ConvolutionDimensions& c = attrs.convolution();
    gopt::v1::ConvolutionDimensions* pc = p->mutable_convolution();
    pc->set_input_batch(c.input_batch);
    pc->set_input_feature(c.input_feature);
    for (int64_t d : c.input_spatial) pc->add_input_spatial(d);
    pc->set_kernel_input_feature(c.kernel_input_feature);
    pc->set_kernel_output_feature(c.kernel_output_feature);
    for (int64_t d : c.kernel_spatial) pc->add_kernel_spatial(d);
    pc->set_output_batch(c.output_batch);
    pc->set_output_feature(c.output_feature);
    for (int64_t d : c.output_spatial) pc->add_output_spatial(d);
  }
  p->set_feature_group_count(attrs.feature_group_count);
  p->set_batch_group_count(attrs.batch_group_count);
  if (attrs.has_dot_dimensions) {
    gopt::v1::DotDimensions* pd = p->mutable_dot();
    for (int64_t d : attrs.dot().lhs_batch) pd->add_lhs_batch(d);
    for (int64_t d : attrs.dot().rhs_batch) pd->add_rhs_batch(d);
    for (int64_t d : attrs.dot().lhs_contracting) pd->add_lhs_contracting(d);
    for (int64_t d : attrs.dot().rhs_contracting) pd->add_rhs_contracting(d);
  }
  for (int64_t d : attrs.slice_starts()) p->add_slice_starts(d);
  for (int64_t d : attrs.slice_limits()) p->add_slice_limits(d);
  for (int64_t d : attrs.slice_strides()) p->add_slice_strides(d);
  for (int64_t d : attrs.dynamic_slice_sizes()) p->add_dynamic_slice_sizes(d);
  for (const PaddingDimension& pad : attrs.padding()) {
    gopt::v1::PaddingDimension* pp = p->add_padding();
    pp->set_low(pad.low);
    pp->set_high(pad.high);
    pp->set_interior(pad.interior);
  }
  if (attrs.parameter_number >= 0) {
    p->set_parameter_number(attrs.parameter_number);
  }
  if (attrs.tuple_index >= 0) p->set_tuple_index(attrs.tuple_index);
  p->set_is_stable(attrs.is_stable);
  p->set_is_root(attrs.is_root);
  if (attrs.trip_count >= 0) p->set_trip_count(attrs.trip_count);
  p->set_custom_call_target(attrs.custom_call_target());
  p->set_comparison(attrs.comparison());
}

OpAttributes AttributesFromProto(const gopt::v1::OpAttributes& p) {
  auto or_one = [](int64_t v) { return v == 0 ? int64_t{1} : v; };
  OpAttributes attrs;
  attrs.dimensions.assign(p.dimensions().begin(), p.dimensions().end());
  for (const gopt::v1::WindowDimension& w : p.window()) {
    WindowDimension dim;
    dim.size = w.size();
    dim.stride = or_one(w.stride());
    dim.padding_low = w.padding_low();
    dim.padding_high = w.padding_high();
    dim.window_dilation = or_one(w.window_dilation());
    dim.base_dilation = or_one(w.base_dilation());
    dim.reversal = w.reversal();
    attrs.mutable_window()->push_back(dim);
  }
  if (p.has_convolution()) {
    const gopt::v1::ConvolutionDimensions& c = p.convolution();
    attrs.has_convolution_dimensions = true;
    ConvolutionDimensions& conv = *attrs.mutable_convolution();
    conv.input_batch = c.input_batch();
    conv.input_feature = c.input_feature();
    conv.input_spatial.assign(c.input_spatial().begin(),
                              c.input_spatial().end());
    conv.kernel_input_feature = c.kernel_input_feature();
    conv.kernel_output_feature = c.kernel_output_feature();
    conv.kernel_spatial.assign(c.kernel_spatial().begin(),
                               c.kernel_spatial().end());
    conv.output_batch = c.output_batch();
    conv.output_feature = c.output_feature();
    conv.output_spatial.assign(c.output_spatial().begin(),
                               c.output_spatial().end());
  }
  attrs.feature_group_count = or_one(p.feature_group_count());
  attrs.batch_group_count = or_one(p.batch_group_count());
  if (p.has_dot()) {
    attrs.has_dot_dimensions = true;
    attrs.mutable_dot()->lhs_batch.assign(p.dot().lhs_batch().begin(),
                                          p.dot().lhs_batch().end());
    attrs.mutable_dot()->rhs_batch.assign(p.dot().rhs_batch().begin(),
                                          p.dot().rhs_batch().end());
    attrs.mutable_dot()->lhs_contracting.assign(
        p.dot().lhs_contracting().begin(), p.dot().lhs_contracting().end());
    attrs.mutable_dot()->rhs_contracting.assign(
        p.dot().rhs_contracting().begin(), p.dot().rhs_contracting().end());
  }
  attrs.mutable_slice_starts()->assign(p.slice_starts().begin(),
                                       p.slice_starts().end());
  attrs.mutable_slice_limits()->assign(p.slice_limits().begin(),
                                       p.slice_limits().end());
  attrs.mutable_slice_strides()->assign(p.slice_strides().begin(),
                                        p.slice_strides().end());
  attrs.mutable_dynamic_slice_sizes()->assign(p.dynamic_slice_sizes().begin(),
                                              p.dynamic_slice_sizes().end());
  for (const gopt::v1::PaddingDimension& pad : p.padding()) {
    attrs.mutable_padding()->push_back({pad.low(), pad.high(), pad.interior()});
  }
  attrs.parameter_number = p.has_parameter_number() ? p.parameter_number() : -1;
  attrs.tuple_index = p.has_tuple_index() ? p.tuple_index() : -1;
  attrs.is_stable = p.is_stable();
  attrs.is_root = p.is_root();
  attrs.trip_count = p.has_trip_count() ? p.trip_count() : -1;
  if (!p.custom_call_target().empty()) {
    *attrs.mutable_custom_call_target() = p.custom_call_target();
  }
  if (!p.comparison().empty()) *attrs.mutable_comparison() = p.comparison();
  return attrs;
}

// Recomputes a node's costs from the catalog (compute_costs mode).
absl::Status ComputeNodeCost(
    const GraphBuilder& builder, const std::vector<Edge>& in_edges,
    const std::vector<std::shared_ptr<const Graph>>& subgraphs, Node* node) {
  std::vector<TensorType> operand_storage;
  operand_storage.reserve(in_edges.size());
  for (const Edge& edge : in_edges) {
    if (edge.control) continue;
    const Node& src = builder.node(edge.src);
    if (edge.src_output == Edge::kAllOutputs) {
      TensorType whole;
      whole.tuple_elements = src.outputs;
      if (src.outputs.size() == 1) whole = src.outputs[0];
      operand_storage.push_back(std::move(whole));
    } else if (edge.src_output >= 0 &&
               edge.src_output < static_cast<int32_t>(src.outputs.size())) {
      operand_storage.push_back(src.outputs[edge.src_output]);
    }
  }
  OpCostQuery query;
  query.kind = node->kind;
  query.attributes = &node->attributes;
  for (const TensorType& type : operand_storage)
    query.operands.push_back(&type);
  for (const TensorType& type : node->outputs) query.outputs.push_back(&type);
  ASSIGN_OR_RETURN(OpCost cost, ComputeOpCost(query));
  std::vector<const Graph*> bodies;
  for (int32_t index : node->subgraphs) {
    if (index >= 0 && index < static_cast<int32_t>(subgraphs.size())) {
      bodies.push_back(subgraphs[index].get());
    }
  }
  if (!bodies.empty()) {
    const OpCost body = node->kind == OpKind::kConditional
                            ? MaxBranchCost(bodies)
                            : SubgraphCost(bodies, node->attributes.trip_count);
    cost.flops += body.flops;
    if (node->kind != OpKind::kFusion) {
      cost.bytes_read += body.bytes_read;
      cost.bytes_written += body.bytes_written;
    }
    cost.bytes_communicated += body.bytes_communicated;
    cost.unknown = cost.unknown || body.unknown;
  }
  SetNodeCost(cost, node);
  return absl::OkStatus();
}

// A node's source element; a node without one is its own.
SourceElement SourceFromProto(const gopt::v1::Node& pn) {
  return {pn.source_scope(),
          pn.source_name().empty() ? pn.name() : pn.source_name(),
          pn.source_is_tensor()};
}

absl::StatusOr<Graph> GraphFromProtoAtDepth(const gopt::v1::Graph& proto,
                                            const GraphLimits& limits,
                                            int depth) {
  if (depth > kMaxSubgraphDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("subgraphs nest more than ", kMaxSubgraphDepth, " deep"));
  }
  if (proto.nodes_size() > limits.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("graph '", proto.name(), "' has ", proto.nodes_size(),
                     " nodes, more than the limit of ", limits.max_nodes));
  }
  GraphBuilder builder(proto.name(), proto.source_format().empty()
                                         ? std::string("gopt")
                                         : proto.source_format());
  std::vector<std::shared_ptr<const Graph>> subgraphs;
  for (int i = 0; i < proto.subgraphs_size(); ++i) {
    absl::StatusOr<Graph> subgraph =
        GraphFromProtoAtDepth(proto.subgraphs(i), limits, depth + 1);
    if (!subgraph.ok()) {
      return Annotate(subgraph.status(), absl::StrCat("subgraph ", i));
    }
    subgraphs.push_back(std::make_shared<const Graph>(*std::move(subgraph)));
    builder.AddSubgraph(subgraphs.back());
  }

  absl::flat_hash_map<std::string, int> index_by_name;
  index_by_name.reserve(proto.nodes_size());
  for (const gopt::v1::Node& pn : proto.nodes()) {
    const std::string context = absl::StrCat("node '", pn.name(), "'");
    Node node;
    node.name = pn.name();
    node.source = SourceFromProto(pn);
    node.op = pn.op();
    std::optional<OpKind> kind = OpKindFromName(pn.kind());
    if (!kind.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          context, " field 'kind': unknown op kind '", pn.kind(), "'"));
    }
    node.kind = *kind;
    for (int o = 0; o < pn.outputs_size(); ++o) {
      absl::StatusOr<TensorType> type = TensorTypeFromProto(pn.outputs(o), 0);
      if (!type.ok()) {
        return Annotate(type.status(), absl::StrCat(context, " output ", o));
      }
      node.outputs.push_back(*std::move(type));
    }
    node.attributes = AttributesFromProto(pn.attributes());
    for (double value : {pn.flops(), static_cast<double>(pn.bytes_read()),
                         static_cast<double>(pn.bytes_written()),
                         static_cast<double>(pn.bytes_communicated())}) {
      if (!std::isfinite(value) || value < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            context, ": costs must be finite and non-negative, got ", value));
      }
    }
    node.flops = pn.flops();
    node.bytes_read = pn.bytes_read();
    node.bytes_written = pn.bytes_written();
    node.bytes_communicated = pn.bytes_communicated();
    node.cost_unknown = pn.cost_unknown();
    if (!gopt::v1::DeviceConstraint_IsValid(pn.device_constraint()) ||
        pn.device_constraint() > 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, " field 'device_constraint': unknown value ",
                       pn.device_constraint()));
    }
    node.device_constraint =
        static_cast<DeviceConstraint>(pn.device_constraint());
    if (!pn.colocation_group().empty()) {
      node.colocation_group = builder.ColocationGroup(pn.colocation_group());
    }
    node.layout_configurable = pn.layout_configurable();
    for (int32_t index : pn.subgraphs()) {
      if (index < 0 || index >= proto.subgraphs_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            context, " field 'subgraphs': index ", index, " but the graph has ",
            proto.subgraphs_size(), " subgraph(s)"));
      }
      node.subgraphs.push_back(index);
    }
    const int index = builder.AddNode(std::move(node));
    if (!index_by_name.emplace(pn.name(), index).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("duplicate node name '", pn.name(), "'"));
    }
  }

  std::vector<std::vector<Edge>> in_edges(proto.nodes_size());
  for (int dst = 0; dst < proto.nodes_size(); ++dst) {
    const gopt::v1::Node& pn = proto.nodes(dst);
    int32_t position = 0;
    for (int i = 0; i < pn.inputs_size(); ++i) {
      const gopt::v1::Input& input = pn.inputs(i);
      auto it = index_by_name.find(input.node());
      if (it == index_by_name.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", pn.name(), "' input ", i, " names '",
                         input.node(), "', which is not a node of the graph"));
      }
      if (input.control()) {
        builder.AddControlEdge(it->second, dst);
        in_edges[dst].push_back(Edge{it->second, -1, dst, -1, true});
        continue;
      }
      const int32_t slot = input.has_slot() ? input.slot() : position;
      if (slot < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", pn.name(), "' input ", i, " has negative slot ", slot));
      }
      ++position;
      builder.AddEdge(it->second, input.output(), dst, slot);
      in_edges[dst].push_back(
          Edge{it->second, input.output(), dst, slot, false});
    }
  }

  if (proto.compute_costs()) {
    for (int i = 0; i < builder.num_nodes(); ++i) {
      std::sort(in_edges[i].begin(), in_edges[i].end(),
                [](const Edge& a, const Edge& b) {
                  return a.dst_input < b.dst_input;
                });
      absl::Status status = ComputeNodeCost(builder, in_edges[i], subgraphs,
                                            &builder.mutable_node(i));
      if (!status.ok()) {
        return Annotate(status,
                        absl::StrCat("node '", builder.node(i).name, "'"));
      }
    }
  }

  for (const gopt::v1::Loop& loop : proto.loops()) {
    auto merge = index_by_name.find(loop.merge());
    auto next = index_by_name.find(loop.next_iteration());
    if (merge == index_by_name.end() || next == index_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop '", loop.frame_name(),
                       "' names a merge or next_iteration node that does not "
                       "exist ('",
                       loop.merge(), "', '", loop.next_iteration(), "')"));
    }
    builder.AddLoop(LoopInfo{loop.frame_name(), merge->second, next->second,
                             loop.trip_count()});
  }
  for (const std::string& warning : proto.warnings())
    builder.AddWarning(warning);
  return std::move(builder).Build(limits);
}

}  // namespace

gopt::v1::Graph GraphToProto(const Graph& graph) {
  gopt::v1::Graph proto;
  proto.set_name(graph.name());
  proto.set_source_format(graph.format());
  for (const auto& subgraph : graph.subgraphs()) {
    *proto.add_subgraphs() = GraphToProto(*subgraph);
  }
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    gopt::v1::Node* pn = proto.add_nodes();
    pn->set_name(node.name);
    pn->set_op(node.op);
    pn->set_kind(std::string(OpKindName(node.kind)));
    int32_t position = 0;
    for (const Edge& edge : graph.in_edges(id)) {
      gopt::v1::Input* input = pn->add_inputs();
      input->set_node(graph.node(edge.src).name);
      if (edge.control) {
        input->set_control(true);
        input->set_output(-1);
        continue;
      }
      input->set_output(edge.src_output);
      if (edge.dst_input != position) input->set_slot(edge.dst_input);
      ++position;
    }
    for (const TensorType& output : node.outputs) {
      TensorTypeToProto(output, pn->add_outputs());
    }
    AttributesToProto(node.attributes, pn->mutable_attributes());
    pn->set_flops(node.flops);
    pn->set_bytes_read(node.bytes_read);
    pn->set_bytes_written(node.bytes_written);
    pn->set_bytes_communicated(node.bytes_communicated);
    pn->set_cost_unknown(node.cost_unknown);
    pn->set_device_constraint(
        static_cast<gopt::v1::DeviceConstraint>(node.device_constraint));
    if (node.colocation_group >= 0) {
      pn->set_colocation_group(
          graph.colocation_groups()[node.colocation_group]);
    }
    pn->set_layout_configurable(node.layout_configurable);
    for (int32_t index : node.subgraphs) pn->add_subgraphs(index);
    if (node.source.name != node.name) {
      pn->set_source_name(node.source.name);
    }
    pn->set_source_scope(node.source.scope);
    pn->set_source_is_tensor(node.source.is_tensor);
  }
  for (const LoopInfo& loop : graph.loops()) {
    gopt::v1::Loop* pl = proto.add_loops();
    pl->set_frame_name(loop.frame_name);
    pl->set_merge(graph.node(loop.merge).name);
    pl->set_next_iteration(graph.node(loop.next_iteration).name);
    pl->set_trip_count(loop.trip_count);
  }
  for (const std::string& warning : graph.warnings()) {
    proto.add_warnings(warning);
  }
  return proto;
}

absl::StatusOr<Graph> GraphFromProto(const gopt::v1::Graph& proto,
                                     const GraphLimits& limits) {
  return GraphFromProtoAtDepth(proto, limits, 0);
}

}  // namespace gopt::graph
