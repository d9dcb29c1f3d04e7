#ifndef GOPT_SIMULATOR_TESTING_TEST_GRAPHS_H_
#define GOPT_SIMULATOR_TESTING_TEST_GRAPHS_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "simulator/topology.h"

// Fixtures for the simulator's tests: a topology with round numbers, a
// builder of small graphs whose kernel times are easy to work out by hand,
// and random graphs for the randomized tests.
namespace gopt::simulator::testing {

// `devices` identical devices with round numbers: 1 TFLOP/s at full
// efficiency, 100 GB/s memory, 1 us launch, 1 GB memory; links 10 GB/s
// with 10 us latency. A kernel with F FLOPs and B bytes takes
//   max((F + 1e6) / 1e12, B / 1e11) + 1e-6 seconds
// (the roofline's small-kernel term adds peak * 1 us = 1e6 FLOPs).
Topology RoundNumberTopology(int devices = 2);

// Builds small graphs of f32 parameters and ops. Not thread-safe.
class TestGraphBuilder {
 public:
  // A parameter with an f32[elements] output; returns its id.
  int Param(const std::string& name, int64_t elements);

  // An op of `kind` with `flops`, 8000 bytes of traffic (4000 read, 4000
  // written) and an f32[elements] output, reading output 0 of each of
  // `inputs` in order; returns its id.
  int AddOp(const std::string& name, graph::OpKind kind, double flops,
            const std::vector<int>& inputs, int64_t elements = 1000,
            graph::DeviceConstraint constraint = graph::DeviceConstraint::kAny);

  // The graph (default limits); fails the process on an invalid graph,
  // which in a test is a bug of the test. Call once.
  graph::Graph Build();

 private:
  graph::GraphBuilder builder_{"test", "generated"};
};

// Options of RandomGraph; the defaults give the simulator invariant test's
// graphs.
struct RandomGraphOptions {
  // Kinds of the op (non-input) nodes, drawn uniformly. Default:
  // elementwise binary, dot, reshape, convolution, identity.
  std::vector<graph::OpKind> kinds = {
      graph::OpKind::kElementwiseBinary, graph::OpKind::kDot,
      graph::OpKind::kReshape, graph::OpKind::kConvolution,
      graph::OpKind::kIdentity};
  // One first output in four f16 instead of f32 (default false: all f32).
  bool f16_outputs = false;
  // One node in eight CPU-only or accelerator-only (default false).
  bool device_constraints = false;
};

// A random `nodes`-node graph (nodes >= 2) drawn from `rng`: parameters and
// constants (the first two nodes, then one in eight), ops of
// options.kinds with coarse costs (so that equal times, ties, are common),
// a [1-64, 1-64] first output, a second f16 output on one node in five,
// 1-3 operands among the 10 nodes before, each reading output 0 or (one in
// four) all outputs, one in ten a control edge instead. The same rng state
// and options give the same graph. Fails the process on an invalid graph
// (a bug of the generator).
graph::Graph RandomGraph(std::mt19937_64& rng, int nodes,
                         const RandomGraphOptions& options = {});

}  // namespace gopt::simulator::testing

#endif  // GOPT_SIMULATOR_TESTING_TEST_GRAPHS_H_
