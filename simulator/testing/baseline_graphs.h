#ifndef GOPT_SIMULATOR_TESTING_BASELINE_GRAPHS_H_
#define GOPT_SIMULATOR_TESTING_BASELINE_GRAPHS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "simulator/topology.h"

// Small hand-built graphs and machines for the baseline tests.
namespace gopt::simulator::baselines::testing {

// `devices` identical GPUs with round numbers (1 TFLOP/s f32 at full
// efficiency, 100 GB/s memory bandwidth, 1 us launch, `memory_bytes` of
// memory) joined by 10 GB/s links with 10 us latency. With
// `last_is_cpu`, the last device is a CPU (100 GFLOP/s, 20 GB/s).
Topology UniformTopology(int devices, int64_t memory_bytes = 1'000'000'000,
                         bool last_is_cpu = false);

// Builds graphs node by node (builder indices are returned; the built graph
// renumbers them topologically, which for these graphs keeps the order).
class GraphMaker {
 public:
  explicit GraphMaker(std::string name = "test");

  // An f32[elements] parameter (resident weights).
  int Param(const std::string& name, int64_t elements);
  // An op of `kind` with `flops`, reading each input's f32[elements] and
  // writing its own f32[elements] output.
  int Op(const std::string& name, graph::OpKind kind, double flops,
         const std::vector<int>& inputs, int64_t elements = 1000);
  // Shorthand for an elementwise-binary op.
  int Op(const std::string& name, double flops, const std::vector<int>& inputs,
         int64_t elements = 1000) {
    return Op(name, graph::OpKind::kElementwiseBinary, flops, inputs, elements);
  }
  // A normalization (OpKind::kNormalization) named `op` in its source
  // format ("batch-norm-inference", "BatchNormalization", "LayerNorm"),
  // 5 FLOPs per element: output 0 is an f32[elements] like `inputs[0]`'s,
  // then `statistics` f32[8] outputs (a batch norm's mean and variance).
  int Normalization(const std::string& name, const std::string& op,
                    const std::vector<int>& inputs, int64_t elements = 1000,
                    int statistics = 0);
  // `node` also reads output `output` of `producer` (as its next input).
  void Read(int node, int producer, int32_t output);
  void Constrain(int node, graph::DeviceConstraint constraint);
  // Puts `node` in colocation group `group` (TF's `_class` "loc:@group").
  void Colocate(int node, const std::string& group);
  void SetLayoutConfigurable(int node, std::vector<int64_t> dims);
  graph::Graph Build();

 private:
  graph::GraphBuilder builder_;
  std::vector<int32_t> next_input_;  // by builder index: inputs so far
};

// p -> a1 -> a2 -> ... -> a{length}.
graph::Graph ChainGraph(int length);
// p -> a -> {b, c} -> d.
graph::Graph DiamondGraph();
// p -> root -> `width` independent heavy branches -> one join.
graph::Graph FanOutGraph(int width);
// A small pipeline whose middle node is CPU-only (string decoding).
graph::Graph CpuOnlyGraph();
// A fan-out whose branch weights are colocated with the first branch's
// weight (as TF colocates variables with their reads).
graph::Graph ColocatedFanOutGraph(int width);
// Two independent chains input -> a1 -> a2 and input -> b1 -> b2 where a1
// and b1 write 600 MB each: on one 1 GB device, FIFO (a1, b1, a2, b2) holds
// 1.2 GB, while finishing one chain before the other fits.
graph::Graph TwoChainsGraph();
// The graphs every baseline must handle: chain, diamond, fan-out, CPU-only,
// colocated fan-out, a single node, and an empty graph.
std::vector<std::pair<std::string, graph::Graph>> SmallGraphs();

}  // namespace gopt::simulator::baselines::testing

#endif  // GOPT_SIMULATOR_TESTING_BASELINE_GRAPHS_H_
