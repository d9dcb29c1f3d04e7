#include "simulator/testing/test_graphs.h"

#include <utility>

#include "graph/tensor_type.h"

namespace gopt::simulator::testing {

Topology RoundNumberTopology(int devices) {
  DeviceProfile device;
  device.name = "test";
  device.kind = DeviceKind::kGpu;
  device.peak_f32_flops = 1e12;
  device.memory_bandwidth_bytes_per_s = 1e11;
  device.memory_bytes = 1'000'000'000;
  device.launch_overhead_s = 1e-6;
  device.max_efficiency = 1.0;
  Topology topology;
  topology.name = "test";
  topology.devices.assign(devices, device);
  topology.links.assign(devices * devices, Link{1e10, 1e-5});
  return topology;
}

int TestGraphBuilder::Param(const std::string& name, int64_t elements) {
  graph::Node node;
  node.name = name;
  node.op = "parameter";
  node.kind = graph::OpKind::kParameter;
  node.outputs = {graph::MakeTensorType(graph::DType::kF32, {elements})};
  return builder_.AddNode(std::move(node));
}

int TestGraphBuilder::AddOp(const std::string& name, graph::OpKind kind,
                            double flops, const std::vector<int>& inputs,
                            int64_t elements,
                            graph::DeviceConstraint constraint) {
  graph::Node node;
  node.name = name;
  node.op = "op";
  node.kind = kind;
  node.outputs = {graph::MakeTensorType(graph::DType::kF32, {elements})};
  node.flops = flops;
  node.bytes_read = 4000;
  node.bytes_written = 4000;
  node.device_constraint = constraint;
  const int id = builder_.AddNode(std::move(node));
  for (size_t i = 0; i < inputs.size(); ++i) {
    builder_.AddEdge(inputs[i], 0, id, static_cast<int32_t>(i));
  }
  return id;
}

graph::Graph TestGraphBuilder::Build() {
  return std::move(builder_).Build(graph::GraphLimits()).value();
}

}  // namespace gopt::simulator::testing
