#ifndef GOPT_SIMULATOR_SIMULATOR_H_
#define GOPT_SIMULATOR_SIMULATOR_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/topology.h"

namespace gopt::simulator {
namespace internal {
// The simulator's run types (event_loop.h and the files it names).
class CandidateRun;
class EventLoop;
class RecordingRun;
struct ResumePoint;
}  // namespace internal

struct SimulationOptions {
  // Record per-node start/end times and every transfer (for traces and
  // reports). Off in training inner loops, where only the totals matter.
  bool record_timeline = true;
};

// One tensor sent over a link.
struct TransferRecord {
  graph::NodeId node = 0;  // producer
  int32_t output = 0;      // producer output, -1 = all outputs
  int32_t src_device = 0;
  int32_t dst_device = 0;
  int64_t bytes = 0;
  double start_s = 0;
  double end_s = 0;
};

struct SimulationResult {
  double step_time_s = 0;
  std::vector<double> device_busy_s;       // per device: kernel time
  std::vector<int64_t> peak_memory_bytes;  // per device
  bool oom = false;                        // some device exceeded memory
  int64_t bytes_moved = 0;                 // over links
  int64_t num_transfers = 0;
  int64_t num_kernels = 0;   // launched kernels
  double layout_copy_s = 0;  // time spent in layout copies
  // The chain of nodes that determined the step time (data dependencies,
  // transfers and device queueing), first to last.
  std::vector<graph::NodeId> critical_path;
  // Busy time (kernels + transfers) along the critical path; the rest of
  // the step time on that chain is spent waiting.
  double critical_path_busy_s = 0;
  // Per node (NodeId order), when record_timeline: start and end of the
  // kernel the node ran in (0/0 for free ops such as reshape).
  std::vector<double> node_start_s;
  std::vector<double> node_end_s;
  std::vector<TransferRecord> transfers;  // when record_timeline
};

// A plan simulated by Simulator::Record, kept so that plans differing from
// it in a few nodes' devices and priorities (local moves) can be simulated
// from where they first differ (Simulator::SimulateCandidate). Holds the
// run's final state and checkpoints of its event loop: about 12 bytes per
// node per checkpoint (at most 32, fewer for large graphs) plus 100 bytes
// per node and 80 per transfer. Immutable once recorded; thread-safe to
// share.
class Trajectory {
 public:
  struct Data;  // trajectory.h
  explicit Trajectory(std::unique_ptr<Data> data);
  ~Trajectory();

  // The recorded plan, and its simulation (with the timeline when Record
  // was asked for one).
  const Plan& plan() const;
  const SimulationResult& result() const;
  // Checkpoints kept, and event-loop iterations of the whole run.
  int num_checkpoints() const;
  int64_t num_events() const;

  const Data& data() const { return *data_; }
  // Hands the buffers over to a new recording (Simulator::Record).
  std::unique_ptr<Data> TakeData();

 private:
  std::unique_ptr<Data> data_;
};

// A candidate plan simulated against a Trajectory.
struct CandidateResult {
  // The candidate's step time is certainly above the cutoff it was
  // simulated with: the run stopped early, `result` is empty and
  // step_time_lower_bound_s (> cutoff) is all that is known.
  bool slower_than_cutoff = false;
  double step_time_lower_bound_s = 0;
  // Otherwise the simulation, equal in every field to Simulate's.
  SimulationResult result;
  // Whether the run started from a checkpoint (else from the start), the
  // event-loop iterations it ran (0 for a run from the start without a
  // cutoff), and whether it rejoined the base: reached a checkpoint of the
  // base's in the same state, and took the rest of the run from the base.
  bool incremental = false;
  int64_t events_simulated = 0;
  // The base's event-loop iterations before the checkpoint the run started
  // from (0 for a run from the start).
  int64_t events_skipped = 0;
  bool rejoined_base = false;
};

// Event-driven execution of a graph under a plan:
//  - per device one kernel at a time, chosen from the ready ops by plan
//    priority (highest first; ties: lower NodeId); free ops (parameters,
//    constants, reshapes, tuples, ...) complete as soon as their inputs do;
//  - a fused group is one kernel: summed FLOPs, only the bytes that cross
//    the group boundary, one launch; on a device whose groups run op by op
//    (DeviceProfile::fused_groups_run_op_by_op) it is one scheduling unit
//    whose members are each priced as their own kernel;
//  - a tensor needed on another device is sent once per (tensor, device),
//    over a directed link that carries one transfer at a time: a transfer
//    arrives latency + bytes / bandwidth after it starts, and holds the
//    link for bytes / bandwidth (the latency of queued transfers overlaps);
//    transfers overlap compute;
//  - a collective node's kernel also holds its device for the ring
//    algorithm's link time (CollectiveLinkSeconds, collective_time.h);
//  - a layout mismatch between a producer and a consumer that both have
//    explicit layouts inserts a copy (read + write of the tensor, plus a
//    launch) before the consumer; a non-default layout on a dot or
//    convolution runs at 90% efficiency;
//  - memory per device: parameters and constants resident throughout;
//    other outputs allocated when their kernel starts and freed after their
//    last local consumer and outgoing transfer; received copies freed after
//    their last consumer. Exceeding a device's memory sets `oom`.
// Construction precomputes per-graph data; Simulate is const and
// thread-safe, so one Simulator serves parallel rollouts. The graph,
// topology and cost model are borrowed and must outlive the Simulator.
//
// Simulate allocates nothing per event: its working memory (about 85 bytes
// per node and 80 per edge) is one buffer per thread, reused by every call
// on that thread, whichever Simulator makes it. A Simulator whose
// destruction finds the calling thread's buffer holding more than 64 MiB,
// and last used by itself, frees it: a thread that simulated a large graph
// does not keep that memory once the graph's Simulator is gone.
// SimulateCandidate keeps a second such workspace per thread, holding the
// base Trajectory's final state (about the size of the trajectory without
// its checkpoints), under the same rule.
class Simulator {
 public:
  Simulator(const graph::Graph& graph, const Topology& topology,
            const OpCostModel& cost_model);
  ~Simulator();

  // Simulates `plan`. InvalidArgument (naming node and field) for a plan
  // that fails ValidatePlan or whose fusion groups form a cycle.
  absl::StatusOr<SimulationResult> Simulate(
      const Plan& plan, const SimulationOptions& options = {}) const;

  // Simulate, keeping a Trajectory for SimulateCandidate. The same errors;
  // the result is Simulate's. `recycle` (may be null), a trajectory no
  // longer needed, lends its buffers: a search that records each new
  // incumbent then allocates (and page-faults) nothing.
  absl::StatusOr<std::unique_ptr<Trajectory>> Record(
      const Plan& plan, const SimulationOptions& options = {},
      std::unique_ptr<Trajectory> recycle = nullptr) const;

  // Simulates `plan` given `base`, a recording of a plan of this simulator
  // that `plan` may differ from anywhere. When they differ only in the
  // devices and priorities of a few nodes (raised above every priority of
  // `base`, as the plan search's moves do), on devices that cost the same,
  // the run starts from the last checkpoint before the first event those
  // differences can change; otherwise from the start. Either way the result
  // is Simulate's, bit for bit, unless the step time is certainly above
  // `cutoff_s`: then the run stops early and says so. The same errors as
  // Simulate, and InvalidArgument when `base` is another simulator's.
  // Thread-safe: each thread keeps its own copy of `base`'s final state
  // (made on its first candidate of `base`).
  absl::StatusOr<CandidateResult> SimulateCandidate(
      const Trajectory& base, const Plan& plan,
      const SimulationOptions& options = {},
      double cutoff_s = std::numeric_limits<double>::infinity()) const;

  // A lower bound on the step time of every plan Simulate accepts (whose
  // fusion groups obey the kernel rules): ComputeLowerBound (lower_bound.h).
  double LowerBound() const { return lower_bound_s_; }
  // A lower bound on the step time of every accepted plan that fits in
  // memory (SimulationResult::oom false): LowerBoundTerms::
  // fits_in_memory_seconds, >= LowerBound().
  double FitsInMemoryLowerBound() const { return fits_lower_bound_s_; }

  const graph::Graph& graph() const { return graph_; }
  const Topology& topology() const { return topology_; }
  // The cost model that prices every kernel (borrowed at construction).
  const OpCostModel& cost_model() const { return cost_model_; }

 private:
  // The run types read the per-graph arrays below.
  friend class internal::CandidateRun;
  friend class internal::EventLoop;
  friend class internal::RecordingRun;
  friend struct internal::ResumePoint;

  // The constructor's phases, in order.
  void PackNodes();
  void PriceSoloKernels();
  void PackEdges();

  const graph::Graph& graph_;
  const Topology& topology_;
  const OpCostModel& cost_model_;
  std::vector<uint8_t> free_;          // per node: no kernel (aliases / inputs)
  std::vector<uint8_t> resident_;      // per node: parameter or constant
  std::vector<uint8_t> compute_kind_;  // dot / convolution (layout-sensitive)
  std::vector<graph::DType> dtype_;
  // Copies of the node fields the inner loop reads, packed: a Node is
  // hundreds of bytes and touching 80k of them per simulation thrashes the
  // cache.
  std::vector<double> flops_;
  std::vector<int64_t> traffic_bytes_;  // bytes_read + bytes_written
  std::vector<int64_t> written_bytes_;
  std::vector<int64_t> output_bytes_;    // all outputs of a node
  std::vector<int32_t> output_offsets_;  // CSR into output_sizes_
  std::vector<int64_t> output_sizes_;    // bytes of each output
  // Per edge in out-edge order (Graph::out_edges), its index in in-edge
  // order (Graph::edges): lets a producer tell each consumer's input which
  // transfer carries it without searching.
  std::vector<int32_t> in_index_of_out_edge_;
  // The event loop's view of the edges, 4 bytes each instead of an Edge's
  // 20: per in-edge its src, per out-edge its dst (~node for control edges)
  // and its src_output.
  std::vector<graph::NodeId> in_src_;
  std::vector<graph::NodeId> out_dst_;
  std::vector<int32_t> out_output_;
  // Devices with equal profiles form a class; per node and class, the
  // kernel seconds of the node unfused with default layouts (0 if free).
  std::vector<int32_t> device_class_;
  int num_device_classes_ = 0;
  std::vector<double> solo_seconds_;
  // Per node, the seconds a collective spends on links
  // (CollectiveLinkSeconds; 0 for other nodes), part of its kernel time.
  std::vector<double> link_seconds_;
  // Some link's transfers take device time (Link::device_overhead_s > 0):
  // candidates are then simulated in full (resume_point.h).
  bool link_device_overheads_ = false;
  double lower_bound_s_ = 0;
  double fits_lower_bound_s_ = 0;

  // Bytes of output `output` of `node` (Edge::kAllOutputs: all of them).
  int64_t OutputBytes(graph::NodeId node, int32_t output) const {
    if (output == graph::Edge::kAllOutputs) return output_bytes_[node];
    return output_sizes_[output_offsets_[node] + output];
  }
  // Bytes `edge` carries (Graph::EdgeBytes, precomputed).
  int64_t EdgeBytes(const graph::Edge& edge) const {
    return edge.control ? 0 : OutputBytes(edge.src, edge.src_output);
  }
};

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_SIMULATOR_H_
