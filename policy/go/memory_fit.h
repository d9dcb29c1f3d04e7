#ifndef GOPT_POLICY_GO_MEMORY_FIT_H_
#define GOPT_POLICY_GO_MEMORY_FIT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/topology.h"

namespace gopt::policy::go {

// A running estimate of each device's memory while a placement is walked in
// topological (NodeId) order, following the simulator's rule
// (simulator/simulator.h) with the walk standing in for execution order:
//   + a parameter or constant, from its node on, for the rest of the step;
//   + the output of every other node that is not free (reshape, tuple, ...),
//     from its node until its last consumer (a free consumer aliases it, so
//     the free node's own last consumer counts; an output nobody consumes
//     stays to the end, as in the simulator);
//   + one received copy of a tensor per device that reads it from another
//     device, from its first reader there until the tensor's last consumer
//     anywhere (the simulator frees it after the last reader on that device,
//     which the walk does not know yet: an over-estimate).
// Fusion is not modelled (every output counts, an over-estimate), and the
// simulator's order strays from topological order where priorities or
// remote inputs reorder a device's kernels (either way); so the estimate
// steers a placement, and the simulator decides whether it fits.
//
// The memory-fitting decode (ScoreActions, ppo_trainer.h) uses it to move
// nodes of a plan that runs out of memory.
//
// Holds per-node sizes and last uses of `graph` (borrowed: it must outlive
// this object): O(nodes + edges) to build; Fit and EstimatePeakBytes take
// O((nodes + edges) * devices). Immutable; thread-safe.
class PlacementMemoryFit {
 public:
  // `num_devices` is the topology's device count (1..64; Fit and
  // EstimatePeakBytes return InvalidArgument for any other).
  PlacementMemoryFit(const graph::Graph& graph, int num_devices);

  // The estimate's largest value per device, in bytes, for `device` (one
  // entry per node, each in 0..num_devices-1). InvalidArgument as Fit.
  absl::StatusOr<std::vector<int64_t>> EstimatePeakBytes(
      const std::vector<int32_t>& device) const;

  // Walks the nodes in topological order and keeps each node's device in
  // `device` unless the estimate there, with the node's output and the
  // copies of its inputs it needs added, would pass budget_bytes of that
  // device. Such a node moves to the device, among those `allowed`
  // (num_nodes x num_devices, 1 = the node's constraint allows it) whose
  // estimate stays within budget, that moves the fewest bytes between
  // devices: copies of its inputs that device lacks, plus its output once
  // per other device its consumers sit on in `device` (they are walked
  // later, so their devices there are still the caller's); then the one
  // holding the fewest bytes, then the lowest index.
  //
  // With `follow_inputs`, every node takes the device within budget that
  // moves the fewest bytes, its own device winning ties: chains of large
  // tensors, and a node that makes a large tensor for a consumer elsewhere
  // (a broadcast of a constant), join the device that reads them. The
  // transfers, not the kernels, are what overflows a spread placement: the
  // simulator allocates a received copy when its transfer is queued, and
  // the sender keeps its buffer until it arrives, so tensors queued behind
  // each other on a link occupy both ends at once.
  //
  // A node no allowed device has room for, and a node of a colocation
  // group, keeps its device. Deterministic. Returns the nodes moved and the
  // estimate's peaks for the placement it leaves. InvalidArgument when a
  // vector's length or a device index does not match the graph and the
  // device count.
  struct FitResult {
    int moved_nodes = 0;
    std::vector<int64_t> peak_bytes;  // per device, as EstimatePeakBytes
  };
  absl::StatusOr<FitResult> Fit(const std::vector<int64_t>& budget_bytes,
                                const std::vector<uint8_t>& allowed,
                                bool follow_inputs,
                                std::vector<int32_t>* device) const;

 private:
  class Walk;

  absl::Status CheckPlacement(const std::vector<int32_t>& device) const;

  const graph::Graph& graph_;
  const int num_devices_;
  std::vector<uint8_t> resident_;  // parameter or constant
  std::vector<uint8_t> free_;      // no output buffer of its own
  std::vector<int64_t> output_bytes_;
  // Per node: the walk position after which its output (and every copy of
  // it) is released; num_nodes for "never".
  std::vector<int32_t> last_use_;
  // Nodes by last use: release_[release_offsets_[v]..release_offsets_[v+1])
  // are released once node v is placed.
  std::vector<int32_t> release_offsets_;
  std::vector<graph::NodeId> release_;
};

}  // namespace gopt::policy::go

#endif  // GOPT_POLICY_GO_MEMORY_FIT_H_
