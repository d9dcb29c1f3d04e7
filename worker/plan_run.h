#ifndef GOPT_WORKER_PLAN_RUN_H_
#define GOPT_WORKER_PLAN_RUN_H_

// One plan of one graph, set up to run on an Executor's threads (internal
// to the worker: includes ATen).

#include <ATen/ATen.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "simulator/plan.h"
#include "worker/task_thread.h"

namespace gopt::worker::internal {

// Where a run's work goes: one thread per device, one per directed link
// (links[src * num_devices + dst], null on the diagonal). Borrowed.
struct RunThreads {
  std::vector<TaskThread*> devices;
  std::vector<TaskThread*> links;
  std::vector<at::Device> torch_devices;  // per plan device
  // Per plan device: waits for its queued kernels (CUDA streams); empty
  // for CPU devices, whose kernels finish before they return.
  std::vector<std::function<void()>> synchronize;
};

// How the set-up went: which nodes run as real ops.
struct SetupReport {
  int64_t real_op_nodes = 0;
  double real_flops = 0;
  // With Setup's `partial`: nodes that did not run (output over the host's
  // tensor limit, an input that did not run, or the deadline passed first).
  int64_t not_run_nodes = 0;
  std::vector<double> node_seconds;  // per node: its set-up seconds
  std::vector<std::string> warnings;
};

// A plan, prepared: resident inputs and weights on their devices, each node
// checked once (real op or copy), units (single nodes or fusion groups)
// with their device, priority and dependencies. RunOnce executes one step
// on `threads` as the simulator models it: each device runs its ready
// units highest priority first (ties: lowest first NodeId); free units
// (only free ops) run as soon as their inputs are there; a value needed on
// another device is copied once per (node, device) by the link's thread.
// Not thread-safe: one RunOnce at a time.
class PlanRun {
 public:
  PlanRun(const graph::Graph& graph, const simulator::Plan& plan,
          RunThreads threads, uint64_t seed, absl::Time deadline,
          const std::atomic<bool>* cancelled,
          std::atomic<int64_t>* node_executions = nullptr);

  // Creates the resident tensors and runs every node once in topological
  // order to decide real op or copy, freeing each value after its last
  // consumer. DeadlineExceeded / Cancelled; ResourceExhausted naming a node
  // whose output is over the host's tensor limit. With `partial` (a set-up
  // pass that is all the caller runs: no RunOnce may follow), such a node,
  // the nodes that need its value and, once the deadline passes, the nodes
  // not reached yet do not run instead: counted in not_run_nodes and named
  // in warnings, never as real.
  absl::Status Setup(SetupReport* report, bool partial = false);

  // One step. Returns its wall seconds; per-node seconds into `node_s`
  // (resized to the node count) when non-null. DeadlineExceeded, Cancelled,
  // Internal naming the node when a kernel fails.
  absl::Status RunOnce(double* step_s, std::vector<double>* node_s);

  // Per device: the most tensor bytes held at once in the last RunOnce.
  std::vector<int64_t> PeakMemoryBytes() const;
  // Copies and bytes copied between devices in the last RunOnce.
  int64_t num_copies() const { return num_copies_; }
  int64_t bytes_copied() const { return bytes_copied_; }
  // Per sink node output (NodeId order): sum and absolute sum of its
  // elements after the last RunOnce, non-finite values as 0.
  std::vector<double> OutputChecksums() const;

 private:
  struct Unit {
    std::vector<graph::NodeId> nodes;  // topological order
    int32_t device = 0;
    int32_t priority = 0;
    bool free = true;        // only free ops: runs inline when ready
    int32_t num_inputs = 0;  // distinct outside producers
  };
  struct Remote {  // consumers of a node on another device
    int32_t device = 0;
    bool data = false;  // a value to copy (not only control edges)
    std::vector<int32_t> units;
  };

  void BuildUnits();
  void BuildDependencies();
  std::vector<at::Tensor> Inputs(graph::NodeId node, int32_t device) const;
  std::vector<at::Tensor> RunNode(graph::NodeId node,
                                  const std::vector<at::Tensor>& inputs) const;
  absl::Status Check() const;
  // Setup's per-node step: runs (or decides copy mode for) node `id` once
  // with its producers' values.
  absl::Status SetupNode(
      graph::NodeId id, SetupReport* report,
      std::map<std::string, std::pair<int, std::string>>* copies_by_kind);
  // Before a node runs: false (and the run failed with Cancelled) when
  // `cancelled_` reads true; else counts the node in node_executions_.
  bool StartNode();
  // Runs unit `u` (kernels only; no lock held), then Complete.
  void ExecuteUnit(int32_t u, std::vector<double>* node_s);
  // Bookkeeping after unit `u` ran: frees inputs, readies consumers, queues
  // copies; runs newly ready free units inline.
  void Complete(int32_t u, std::vector<double>* node_s);
  void Ready(int32_t u, std::vector<int32_t>* inline_units)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(graph::NodeId node, int32_t device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Fail(absl::Status status);
  void DeviceLoop(int32_t device, std::vector<double>* node_s);
  void LinkLoop(int32_t src, int32_t dst);
  bool Stopping() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const graph::Graph& graph_;
  const simulator::Plan& plan_;
  RunThreads threads_;
  const int num_devices_;
  const uint64_t seed_;
  const absl::Time deadline_;
  const std::atomic<bool>* cancelled_;
  std::atomic<int64_t>* const node_executions_;

  // Set up once.
  std::vector<uint8_t> real_;                      // per node
  std::vector<std::vector<at::Tensor>> resident_;  // params/constants
  std::vector<std::vector<at::Tensor>> copy_src_;  // copy-mode nodes
  std::vector<int64_t> resident_bytes_;            // per device
  std::vector<Unit> units_;
  std::vector<int32_t> unit_of_;                       // per node
  std::vector<std::vector<int32_t>> local_units_;      // per node
  std::vector<std::vector<Remote>> remotes_;           // per node
  std::vector<std::vector<graph::NodeId>> producers_;  // per node, distinct
  std::vector<int32_t> local_uses_init_;               // per node
  std::vector<int32_t> remote_uses_init_;              // per node * device
  std::vector<uint8_t> sink_;                          // per node

  // Per run. Values are written by the thread that computes them before it
  // takes mu_ to publish them, and read after the reader took mu_.
  mutable absl::Mutex mu_;
  std::vector<std::vector<at::Tensor>> values_;  // per node
  std::vector<std::vector<at::Tensor>> remote_;  // per node * device
  std::vector<int32_t> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<int32_t> local_uses_ ABSL_GUARDED_BY(mu_);
  std::vector<int32_t> remote_uses_ ABSL_GUARDED_BY(mu_);
  // Ready units per device, ordered by (priority desc, first node asc).
  std::vector<std::vector<std::pair<int64_t, int32_t>>> ready_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<graph::NodeId>> link_queue_ ABSL_GUARDED_BY(mu_);
  int64_t units_left_ ABSL_GUARDED_BY(mu_) = 0;
  int loops_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> live_bytes_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> peak_bytes_ ABSL_GUARDED_BY(mu_);
  int64_t num_copies_ = 0;
  int64_t bytes_copied_ = 0;
};

}  // namespace gopt::worker::internal

#endif  // GOPT_WORKER_PLAN_RUN_H_
