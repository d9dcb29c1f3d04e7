#include "simulator/testing/baseline_graphs.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gopt::simulator::baselines::testing {

using graph::DType;
using graph::Graph;
using graph::MakeTensorType;
using graph::Node;
using graph::OpKind;

Topology UniformTopology(int devices, int64_t memory_bytes, bool last_is_cpu) {
  DeviceProfile gpu;
  gpu.name = "test-gpu";
  gpu.kind = DeviceKind::kGpu;
  gpu.peak_f32_flops = 1e12;
  gpu.memory_bandwidth_bytes_per_s = 1e11;
  gpu.memory_bytes = memory_bytes;
  gpu.launch_overhead_s = 1e-6;
  gpu.max_efficiency = 1.0;
  Topology topology;
  topology.name = absl::StrCat("test-", devices);
  topology.devices.assign(devices, gpu);
  if (last_is_cpu) {
    DeviceProfile& cpu = topology.devices.back();
    cpu.name = "test-cpu";
    cpu.kind = DeviceKind::kCpu;
    cpu.peak_f32_flops = 1e11;
    cpu.memory_bandwidth_bytes_per_s = 2e10;
  }
  topology.links.assign(static_cast<size_t>(devices) * devices,
                        Link{1e10, 1e-5});
  return topology;
}

GraphMaker::GraphMaker(std::string name)
    : builder_(std::move(name), "generated") {}

int GraphMaker::Param(const std::string& name, int64_t elements) {
  Node node;
  node.name = name;
  node.op = "parameter";
  node.kind = OpKind::kParameter;
  node.outputs = {MakeTensorType(DType::kF32, {elements})};
  next_input_.push_back(0);
  return builder_.AddNode(std::move(node));
}

int GraphMaker::Op(const std::string& name, OpKind kind, double flops,
                   const std::vector<int>& inputs, int64_t elements) {
  Node node;
  node.name = name;
  node.op = std::string(graph::OpKindName(kind));
  node.kind = kind;
  node.outputs = {MakeTensorType(DType::kF32, {elements})};
  node.flops = flops;
  for (int input : inputs) {
    node.bytes_read += builder_.node(input).output_bytes();
  }
  node.bytes_written = 4 * elements;
  const int id = builder_.AddNode(std::move(node));
  for (size_t i = 0; i < inputs.size(); ++i) {
    builder_.AddEdge(inputs[i], 0, id, static_cast<int32_t>(i));
  }
  next_input_.push_back(static_cast<int32_t>(inputs.size()));
  return id;
}

int GraphMaker::Normalization(const std::string& name, const std::string& op,
                              const std::vector<int>& inputs, int64_t elements,
                              int statistics) {
  const int id =
      Op(name, OpKind::kNormalization, 5.0 * elements, inputs, elements);
  Node& node = builder_.mutable_node(id);
  node.op = op;
  for (int i = 0; i < statistics; ++i) {
    node.outputs.push_back(MakeTensorType(DType::kF32, {8}));
    node.bytes_written += 4 * 8;
  }
  return id;
}

void GraphMaker::Read(int node, int producer, int32_t output) {
  builder_.AddEdge(producer, output, node, next_input_[node]++);
}

void GraphMaker::Constrain(int node, graph::DeviceConstraint constraint) {
  builder_.mutable_node(node).device_constraint = constraint;
}

void GraphMaker::Colocate(int node, const std::string& group) {
  builder_.mutable_node(node).colocation_group =
      builder_.ColocationGroup(group);
}

void GraphMaker::SetLayoutConfigurable(int node, std::vector<int64_t> dims) {
  Node& n = builder_.mutable_node(node);
  n.layout_configurable = true;
  n.outputs[0].dims = std::move(dims);
}

Graph GraphMaker::Build() {
  return std::move(builder_).Build(graph::GraphLimits()).value();
}

Graph ChainGraph(int length) {
  GraphMaker g("chain");
  int previous = g.Param("p", 1000);
  for (int i = 1; i <= length; ++i) {
    previous = g.Op(absl::StrCat("a", i), 1e8, {previous});
  }
  return g.Build();
}

Graph DiamondGraph() {
  GraphMaker g("diamond");
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e9, {p});
  const int b = g.Op("b", 1e9, {a});
  const int c = g.Op("c", 1e9, {a});
  g.Op("d", 1e8, {b, c});
  return g.Build();
}

Graph FanOutGraph(int width) {
  GraphMaker g("fan-out");
  const int p = g.Param("p", 1000);
  const int root = g.Op("root", 1e6, {p});
  std::vector<int> ends;
  for (int i = 0; i < width; ++i) {
    const int w = g.Param(absl::StrCat("w", i), 1000);
    const int mm = g.Op(absl::StrCat("dot", i), OpKind::kDot, 1e10, {root, w});
    ends.push_back(
        g.Op(absl::StrCat("relu", i), OpKind::kElementwiseUnary, 1e3, {mm}));
  }
  g.Op("join", OpKind::kConcatenate, 0, ends);
  return g.Build();
}

Graph CpuOnlyGraph() {
  GraphMaker g("cpu-only");
  const int p = g.Param("p", 1000);
  const int decode = g.Op("decode", OpKind::kCustomCall, 1e6, {p});
  g.Constrain(decode, graph::DeviceConstraint::kCpuOnly);
  const int a = g.Op("a", OpKind::kDot, 1e9, {decode});
  g.Constrain(a, graph::DeviceConstraint::kAcceleratorOnly);
  const int b = g.Op("b", 1e8, {a});
  g.Op("c", 1e8, {b});
  return g.Build();
}

Graph ColocatedFanOutGraph(int width) {
  GraphMaker g("colocated-fan-out");
  const int p = g.Param("p", 1000);
  const int root = g.Op("root", 1e6, {p});
  std::vector<int> ends;
  for (int i = 0; i < width; ++i) {
    const int w = g.Param(absl::StrCat("w", i), 1000);
    g.Colocate(w, "w0");
    const int mm = g.Op(absl::StrCat("dot", i), OpKind::kDot, 1e10, {root, w});
    if (i % 2 == 0) g.Colocate(mm, "w0");
    ends.push_back(mm);
  }
  g.Op("join", OpKind::kConcatenate, 0, ends);
  return g.Build();
}

Graph TwoChainsGraph() {
  GraphMaker g("two-chains");
  const int input = g.Param("input", 1000);
  const int a1 = g.Op("a1", 1e9, {input}, /*elements=*/150'000'000);
  const int b1 = g.Op("b1", 1e9, {input}, /*elements=*/150'000'000);
  g.Op("a2", 1e9, {a1});
  g.Op("b2", 1e9, {b1});
  return g.Build();
}

std::vector<std::pair<std::string, Graph>> SmallGraphs() {
  std::vector<std::pair<std::string, Graph>> graphs;
  graphs.emplace_back("chain", ChainGraph(6));
  graphs.emplace_back("diamond", DiamondGraph());
  graphs.emplace_back("fan-out", FanOutGraph(8));
  graphs.emplace_back("cpu-only", CpuOnlyGraph());
  graphs.emplace_back("colocated-fan-out", ColocatedFanOutGraph(8));
  {
    GraphMaker g("one-node");
    g.Op("only", 1e6, {});
    graphs.emplace_back("one-node", g.Build());
  }
  graphs.emplace_back("empty", GraphMaker("empty").Build());
  return graphs;
}

}  // namespace gopt::simulator::baselines::testing
