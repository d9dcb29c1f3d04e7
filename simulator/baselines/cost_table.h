#ifndef GOPT_SIMULATOR_BASELINES_COST_TABLE_H_
#define GOPT_SIMULATOR_BASELINES_COST_TABLE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/topology.h"

namespace gopt::simulator::baselines {

// Whether the simulator runs `node` without a kernel: parameters,
// constants, views and bookkeeping ops (reshape, bitcast, tuple,
// get-tuple-element, identity, shape-of, loop control), and any node that
// neither computes nor moves bytes.
bool IsFreeNode(const graph::Node& node);

// Per-node, per-device costs the placement heuristics share, priced the way
// the simulator prices them:
//  - a node's compute time on a device is the cost model's kernel time for
//    its FLOPs and bytes (read + written) in the dtype of its output 0; free
//    nodes (parameters, constants, reshapes, tuples, ... and nodes with no
//    work at all) take 0, as the simulator runs them without a kernel;
//  - a transfer between two devices takes latency + bytes / bandwidth of
//    the directed link (0 on the same device; control edges carry nothing);
//  - a node may run on a device unless its device constraint forbids it
//    (CPU-only nodes need a CPU device when the topology has one;
//    accelerator-only nodes need a non-CPU device when one exists).
// Building the table costs O(nodes * devices) cost-model calls. A built
// table is immutable and safe to read from many threads. The graph and
// topology are borrowed and must outlive the table.
class CostTable {
 public:
  CostTable(const graph::Graph& graph, const Topology& topology,
            const OpCostModel& cost_model);

  const graph::Graph& graph() const { return graph_; }
  const Topology& topology() const { return topology_; }
  int num_nodes() const { return graph_.num_nodes(); }
  int num_devices() const { return num_devices_; }

  // Kernel seconds of `node` on `device` (0 for free nodes).
  double ComputeSeconds(graph::NodeId node, int device) const {
    return compute_s_[static_cast<size_t>(node) * num_devices_ + device];
  }
  // Mean of ComputeSeconds over the devices `node` may run on.
  double MeanComputeSeconds(graph::NodeId node) const {
    return mean_compute_s_[node];
  }
  // Whether the simulator runs `node` without a kernel.
  bool IsFree(graph::NodeId node) const { return free_[node] != 0; }
  // A free node without inputs (parameters, constants): it can sit on any
  // device at no cost, so placers put it beside its first consumer.
  bool IsFreeSource(graph::NodeId node) const {
    return free_[node] != 0 && graph_.in_edges(node).empty();
  }
  // Parameters and constants: resident in device memory for the whole step.
  bool IsResident(graph::NodeId node) const { return resident_[node] != 0; }

  // Whether the node's device constraint allows `device`.
  bool Allowed(graph::NodeId node, int device) const {
    return allowed_[constraint_class_[node]][device] != 0;
  }
  // The devices `node` may run on, in index order (never empty).
  const std::vector<int32_t>& AllowedDevices(graph::NodeId node) const {
    return allowed_list_[constraint_class_[node]];
  }
  // `device` when allowed for `node`, else the first allowed device after
  // it (cyclically).
  int32_t NearestAllowedDevice(graph::NodeId node, int32_t device) const;

  // Seconds to move `bytes` from `src` to `dst` (0 when src == dst).
  double TransferSeconds(int64_t bytes, int src, int dst) const;
  // TransferSeconds averaged over all ordered pairs of distinct devices
  // (0 with one device).
  double MeanTransferSeconds(int64_t bytes) const {
    return num_devices_ < 2 ? 0
                            : mean_latency_s_ + static_cast<double>(bytes) *
                                                    mean_inverse_bandwidth_;
  }
  // Seconds the edge's data takes between the two devices (control edges
  // and same-device edges: 0).
  double EdgeTransferSeconds(const graph::Edge& edge, int src, int dst) const {
    return edge.control ? 0 : TransferSeconds(graph_.EdgeBytes(edge), src, dst);
  }

  // Bytes a node's output occupies on its device: 0 for free nodes that
  // alias their inputs (reshape, tuple, ...), the output size otherwise
  // (resident parameters and constants included).
  int64_t OutputMemoryBytes(graph::NodeId node) const {
    return output_memory_bytes_[node];
  }

 private:
  const graph::Graph& graph_;
  const Topology& topology_;
  int num_devices_ = 0;
  std::vector<double> compute_s_;  // node * num_devices + device
  std::vector<double> mean_compute_s_;
  std::vector<uint8_t> free_;
  std::vector<uint8_t> resident_;
  std::vector<int64_t> output_memory_bytes_;
  // 0: any device, 1: CPU-only, 2: accelerator-only.
  std::vector<uint8_t> constraint_class_;
  std::vector<uint8_t> allowed_[3];
  std::vector<int32_t> allowed_list_[3];
  double mean_latency_s_ = 0;
  double mean_inverse_bandwidth_ = 0;
};

// InvalidArgument unless the topology has at least one device and a full
// link matrix (num_devices^2 entries). Every placer checks this first.
absl::Status CheckTopology(const Topology& topology);

// InvalidArgument unless `device` has one entry per node of `graph`, each
// in 0..num_devices-1. Used by the schedulers, fusers and layout assigners
// to check the placement they are given.
absl::Status CheckPlacement(const graph::Graph& graph, int num_devices,
                            const std::vector<int32_t>& device);

// Moves every free source (CostTable::IsFreeSource: parameters, constants)
// to the device of its first consumer (lowest NodeId) when that device is
// allowed for it, so weights sit where they are used instead of being sent
// there. Sources without consumers keep their device. O(nodes + edges).
void AttachFreeSourcesToConsumers(const CostTable& costs,
                                  std::vector<int32_t>* device);

}  // namespace gopt::simulator::baselines

#endif  // GOPT_SIMULATOR_BASELINES_COST_TABLE_H_
