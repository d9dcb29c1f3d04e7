#ifndef GOPT_WORKER_EXECUTOR_H_
#define GOPT_WORKER_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "simulator/plan.h"
#include "simulator/topology.h"

namespace gopt::worker {

// Which executors an Executor owns. Each executor is one device of the
// plans it runs: plan device i runs on executor i.
struct ExecutorOptions {
  // CPU executors (plan devices 0..cpu_executors-1); 0 (default) =
  // DefaultCpuExecutors(). Each executor owns its own thread(s).
  int cpu_executors = 0;
  // Intra-op threads each CPU executor's kernels may use (LibTorch's
  // at::set_num_threads on the executor's thread). Default 1.
  int threads_per_executor = 1;
  // Pin each CPU executor's thread(s) to its own cores (executor i to cores
  // i*threads_per_executor ...) where the OS allows; a refused pin is a
  // warning in Describe(), never an error. Default true.
  bool pin_threads = true;
  // CUDA devices to add after the CPU executors (plan devices
  // cpu_executors..). Only honoured when gopt was built against a LibTorch
  // with CUDA (GOPT_WORKER_CUDA); otherwise a value > 0 makes Create fail
  // with FailedPrecondition. -1 = every visible CUDA device (0 without CUDA).
  int cuda_devices = -1;
};

// How one plan is measured. Defaults follow the autotuners users trust
// (TVM's runner, XLA's autotuner): warm up, then repeat until both a
// minimum count and a minimum measured time are reached.
struct ExecuteOptions {
  int warmup_runs = 2;               // unmeasured runs first (default 2)
  int min_repeats = 5;               // measured runs at least (default 5)
  int max_repeats = 100;             // measured runs at most (default 100)
  double min_measure_seconds = 0.2;  // measure at least this long (0.2 s)
  // Whole call (set-up, warm-up and measurement) must finish within this;
  // else DeadlineExceeded. 0 = no limit. Default 60 s.
  double timeout_seconds = 60;
  uint64_t seed = 1;  // seeds the random inputs and weights (default 1)
  // Polled between ops; when it reads true the call returns Cancelled.
  // Borrowed; may be null (default).
  const std::atomic<bool>* cancelled = nullptr;
  // Incremented as each node's op starts (set-up's trial run and every
  // warm-up and measured run), after the node checked `cancelled`: a
  // caller can tell how far a plan got and that a cancellation stopped it.
  // Borrowed; may be null (default).
  std::atomic<int64_t>* node_executions = nullptr;
  // Record each node's kernel seconds (median over measured runs). Costs a
  // clock read per op. Default true.
  bool per_node_times = true;
  // Keep the final outputs of the run (ExecutionResult::outputs) for
  // comparisons between plans. Default false.
  bool keep_outputs = false;
  // Runs the set-up pass only (what a real-op fraction needs): every node
  // once in topological order, each value freed after its last consumer;
  // no warm-up or measured runs (step times 0, per_node_seconds the set-up
  // pass's). A node whose output is over the host's tensor limit, the nodes
  // that need its value and, once timeout_seconds has passed, the nodes not
  // reached do not run: they count in ExecutionResult::not_run_nodes, never
  // as real, and the warnings say why. Default false (such a node fails the
  // call with ResourceExhausted, the deadline with DeadlineExceeded).
  bool setup_only = false;
};

// What a measured plan gives back.
struct ExecutionResult {
  // Median step time over the measured runs that were kept.
  double measured_step_time_s = 0;
  // Spread of the kept runs: (p90 - p10) / median, a relative figure
  // (0.05 = the middle 80% of runs lie within 5% of the median).
  double measured_spread = 0;
  // Fastest measured run: the figure least disturbed by other load on a
  // shared host (what timeit reports), given beside the median.
  double measured_min_step_time_s = 0;
  int runs = 0;                     // measured runs kept
  int outliers_discarded = 0;       // runs over median + 3 * MAD, dropped
  std::vector<double> run_seconds;  // every kept run, in order
  // Per node (NodeId order): median seconds of the node's op (inputs
  // gathered, op run; fusion-group members timed one by one, as they run).
  // Empty unless ExecuteOptions::per_node_times.
  std::vector<double> per_node_seconds;
  // Per plan device: the largest number of bytes of tensors the run held
  // on it at once (inputs, weights, outputs, received copies).
  std::vector<int64_t> peak_memory_bytes;
  // Nodes that ran as their real LibTorch op (free ops such as reshape
  // count as real), of all nodes; and the share of the graph's FLOPs in
  // real ops (1 when the graph has no FLOPs). The rest ran as copies of the
  // node's bytes.
  int64_t real_op_nodes = 0;
  int64_t total_nodes = 0;
  // With ExecuteOptions::setup_only: nodes that did not run at all.
  int64_t not_run_nodes = 0;
  double real_op_flop_fraction = 0;
  // Fusion groups of the plan, and how many of them ran as one fused
  // kernel (the rest ran as one unit, op after op).
  int fused_groups = 0;
  int fused_groups_run_fused = 0;
  int64_t bytes_copied = 0;  // over cross-device copies, per run
  int64_t num_copies = 0;    // cross-device copies per run
  // Things the caller should know (ops run as copies, by op kind with
  // counts; pinning refused; ...).
  std::vector<std::string> warnings;
  // When ExecuteOptions::keep_outputs: per node with no consumers (the
  // graph's outputs), the float64 sum and absolute sum of each output's
  // elements; NodeId order, output order. Equal plans give equal values.
  std::vector<double> output_checksums;
};

// One device an Executor runs plans on.
struct DeviceDescription {
  std::string name;  // "cpu:0", "cuda:1"
  simulator::DeviceKind kind = simulator::DeviceKind::kCpu;
  std::vector<int> cores;  // CPU: the cores its threads are pinned to
  bool pinned = false;     // CPU: pinning succeeded
  int threads = 1;         // intra-op threads
  int64_t memory_bytes = 0;
};

// Runs plans of graphs for real with LibTorch: every node becomes a LibTorch
// op on its plan device, in the plan's priority order, with real copies
// between devices; measures step time and per-node times.
//
// Execute is thread-safe but serialises: one plan runs at a time on an
// Executor (plans share its devices, and overlapping them would corrupt
// both measurements). Describe and HostTopology are thread-safe.
class Executor {
 public:
  // Starts the executors' threads. InvalidArgument for bad counts,
  // FailedPrecondition for CUDA devices asked for without CUDA support.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      const ExecutorOptions& options);

  virtual ~Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `plan` of `graph` (warm-up, then measured runs) and measures it.
  // Errors: InvalidArgument naming the node and field for a plan of the
  // wrong size, a device this Executor does not have, or one that fails
  // simulator::ValidatePlan against HostTopology(); DeadlineExceeded past
  // options.timeout_seconds; Cancelled when options.cancelled reads true;
  // Internal for a LibTorch failure (naming the node). The graph and plan
  // are borrowed for the call only.
  virtual absl::StatusOr<ExecutionResult> Execute(
      const graph::Graph& graph, const simulator::Plan& plan,
      const ExecuteOptions& options) = 0;

  // The devices, in plan-device order.
  virtual std::vector<DeviceDescription> Describe() const = 0;

  // The topology the simulator should use for plans run here: one device
  // per executor, with nominal numbers (gopt calibrate measures real ones).
  virtual simulator::Topology HostTopology() const = 0;

 protected:
  Executor() = default;
};

// Default number of CPU executors on this host (ExecutorOptions::
// cpu_executors = 0): one per hardware thread, at most 8, at least 1.
int DefaultCpuExecutors();

// Whether this build of the executor has the CUDA path (LibTorch with CUDA).
bool ExecutorHasCuda();

// CUDA devices this process sees (0 without the CUDA path).
int CudaDeviceCount();

}  // namespace gopt::worker

#endif  // GOPT_WORKER_EXECUTOR_H_
