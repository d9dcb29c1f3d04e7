#include "simulator/testing/test_graphs.h"

#include <algorithm>
#include <string>
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

graph::Graph RandomGraph(std::mt19937_64& rng, int nodes,
                         const RandomGraphOptions& options) {
  using graph::DType;
  const int num_kinds = static_cast<int>(options.kinds.size());
  graph::GraphBuilder builder("random", "generated");
  for (int i = 0; i < nodes; ++i) {
    graph::Node node;
    node.name = "n" + std::to_string(i);
    node.op = "op";
    const bool input = i < 2 || rng() % 8 == 0;
    node.kind = input ? (rng() % 2 ? graph::OpKind::kParameter
                                   : graph::OpKind::kConstant)
                      : options.kinds[rng() % num_kinds];
    node.outputs = {graph::MakeTensorType(
        options.f16_outputs && rng() % 4 == 0 ? DType::kF16 : DType::kF32,
        {static_cast<int64_t>(1 + rng() % 64),
         static_cast<int64_t>(1 + rng() % 64)})};
    if (rng() % 5 == 0) {
      node.outputs.push_back(graph::MakeTensorType(
          DType::kF16, {static_cast<int64_t>(1 + rng() % 99)}));
    }
    if (!input) {
      node.flops = static_cast<double>(rng() % 4) * 1e6;
      node.bytes_read = static_cast<int64_t>(rng() % 3) * 40000;
      node.bytes_written = static_cast<int64_t>(rng() % 3) * 20000;
    }
    if (options.device_constraints && rng() % 8 == 0) {
      node.device_constraint = rng() % 2
                                   ? graph::DeviceConstraint::kCpuOnly
                                   : graph::DeviceConstraint::kAcceleratorOnly;
    }
    const int id = builder.AddNode(std::move(node));
    if (input) continue;
    const int operands = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < operands; ++k) {
      const int src = i - 1 - static_cast<int>(rng() % std::min(i, 10));
      if (rng() % 10 == 0) {
        builder.AddControlEdge(src, id);
      } else {
        builder.AddEdge(src, rng() % 4 == 0 ? graph::Edge::kAllOutputs : 0, id,
                        k);
      }
    }
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
}

}  // namespace gopt::simulator::testing
