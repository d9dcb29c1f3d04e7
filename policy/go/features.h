#ifndef GOPT_POLICY_GO_FEATURES_H_
#define GOPT_POLICY_GO_FEATURES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::policy::go {

// Number of node and device features GraphFeatures carries (the network's
// input widths; a checkpoint records the widths it was trained with).
int NumNodeFeatures();
int NumDeviceFeatures();

// Largest topology the GO network handles.
inline constexpr int kMaxDevices = 64;

// The network's view of one (graph, topology) pair, as plain arrays so that
// the featurizer needs no LibTorch. Row-major; values are finite and roughly
// in [-1, 2]; a value that does not exist (a missing dimension, no output)
// is -1.
//
// Node features, per node in NodeId (= topological) order:
//   op-kind one-hot, op-category one-hot, output-0 dtype one-hot;
//   log FLOPs, log bytes read, written, output and communicated;
//   output rank and log of up to 6 output dims (-1 when absent);
//   log in/out degree; normalised topological index; device-constraint
//   one-hot; free op, layout-configurable, cost-unknown, has-subgraphs;
//   the node's kernel time relative to the graph's mean, its share of the
//   graph's memory, the midpoint of its kernel time and of its output bytes
//   on the cumulative (topological) axes, and its upward rank (longest
//   remaining path at mean device speed) relative to the largest.
// Device features, per device:
//   log peak FLOP/s (f32, f16), log memory bandwidth, log memory, log launch
//   overhead, kind one-hot, position (i + 0.5) / D and its square, D / 64,
//   mean and min log link bandwidth to the other devices, the device's share
//   of the total peak FLOP/s, log (device memory / graph memory).
struct GraphFeatures {
  int num_nodes = 0;
  int num_devices = 0;
  std::vector<float> node;    // num_nodes x NumNodeFeatures()
  std::vector<float> device;  // num_devices x NumDeviceFeatures()
  // Distinct (src, dst) dependencies (data or control), sorted by dst.
  std::vector<int64_t> edge_src;
  std::vector<int64_t> edge_dst;
  // num_nodes x num_devices: 1 where the node's device constraint allows
  // the device (the rule of simulator::ValidatePlan).
  std::vector<uint8_t> allowed;
  // Per node: the midpoint of its kernel time on the cumulative axis, in
  // [0, 1] (also a node feature; the placement head's locality prior).
  std::vector<float> work_position;
  // Per node: upward rank / largest upward rank, in [0, 1] (also a node
  // feature; the scheduling head's critical-path prior).
  std::vector<float> upward_rank;
  // Per node: the device HEFT and METIS k-way partitioning choose for it
  // (the placement head's heuristic priors, simulator/baselines), or -1
  // where the heuristic could not place the graph.
  std::vector<int32_t> heft_device;
  std::vector<int32_t> metis_device;
};

// Builds the features of `graph` on `topology`, pricing kernels with
// `cost_model`. InvalidArgument for an empty graph, a topology without
// devices or with more than kMaxDevices. O((nodes + edges) * devices) plus
// one HEFT and one METIS placement, all on the calling thread (it starts no
// thread; callers that want several graphs at once run several calls);
// thread-safe.
absl::StatusOr<GraphFeatures> Featurize(
    const graph::Graph& graph, const simulator::Topology& topology,
    const simulator::OpCostModel& cost_model);

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_FEATURES_H_
