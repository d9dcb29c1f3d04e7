#ifndef GOPT_WORKER_CALIBRATION_H_
#define GOPT_WORKER_CALIBRATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/topology.h"
#include "worker/executor.h"

namespace gopt::worker {

// How much `Calibrate` measures.
struct CalibrationOptions {
  // Fewer and smaller sizes and shorter measurements (tests, smoke runs).
  // Default false: the full set takes about 20-60 s on a 2-core host.
  bool quick = false;
  // Measured time per micro-benchmark (ExecuteOptions::min_measure_seconds).
  // Default 0.05 s.
  double min_measure_seconds = 0.05;
};

// One micro-benchmark measurement.
struct CalibrationPoint {
  std::string benchmark;  // "dot 256x256x256", "copy 1048576 B", ...
  std::string op_class;   // simulator OpCostClassName, or "dispatch"/"copy"
  double flops = 0;
  int64_t bytes = 0;
  double seconds = 0;  // median kernel (or transfer) seconds
  int device = 0;      // the executor device measured (links: the sender)
};

// What calibration measured and the topology fitted from it.
struct CalibrationResult {
  simulator::Topology topology;  // one device per executor device
  std::vector<CalibrationPoint> points;
  // Per fitted quantity, one line saying what was fitted from what
  // ("dot: 1.52e+11 FLOP/s from 5 sizes, intercept 4.1e-06 s").
  std::vector<std::string> notes;
};

// Runs micro-benchmarks through `executor` (so every measurement includes
// what running a plan there costs): matmuls and convolutions by size (fits
// the device's peak and each compute class's efficiency curve),
// elementwise, reduction and transpose by size (memory bandwidth and each
// class's share of it), a chain of tiny ops (per-op dispatch overhead) and,
// with two or more devices, a tensor sent between devices 0 and 1 by size
// (link bandwidth and latency, used for every pair) and two busy chains
// exchanging values (the device time a transfer takes from its sender and
// receiver), and an elementwise chain unfused and as one fusion group
// (whether groups save launches and memory traffic here:
// DeviceProfile::fused_groups_run_op_by_op). Devices of one kind are
// assumed alike: the first device of each kind (device 0 for the CPU
// executors, the first CUDA device) is measured, with sizes fit for it
// (larger on accelerators), and its profile used for every device of that
// kind; links, transfers and fusion are measured from device 0.
// Errors: the executor's (DeadlineExceeded etc.), Internal when a fit is
// degenerate. Takes the executor for the call; not thread-safe with other
// users of it.
absl::StatusOr<CalibrationResult> Calibrate(Executor& executor,
                                            const CalibrationOptions& options);

// The link part of Calibrate (devices 0 and 1 measured, every link set):
// fills `topology`'s links and adds its points and note to `result`.
absl::Status CalibrateLinks(Executor& executor,
                            const CalibrationOptions& options,
                            simulator::Topology* topology,
                            CalibrationResult* result);

// The fusion part of Calibrate (device 0 measured, every device set):
// runs chains of elementwise ops unfused and as one fusion group, and sets
// each device's fused_groups_run_op_by_op to the pricing rule whose
// predicted saving is closer to the measured one; adds its points (class
// "fusion") and note to `result`. Needs `topology`'s other fields fitted.
absl::Status CalibrateFusion(Executor& executor,
                             const CalibrationOptions& options,
                             simulator::Topology* topology,
                             CalibrationResult* result);

// The transfer part of Calibrate (devices 0 and 1 measured, every link
// set): two chains of tiny ops, one per device, each op also reading the
// other chain's value from far enough back that the transfer's latency is
// hidden, against the same chains reading their own values (the fastest
// run of three alternating rounds each); the step-time difference is the
// device time the transfers take. Sets every link's device_overhead_s to
// the value for which the simulator predicts the measured difference; adds
// its points (class "transfer") and note to `result`. Needs `topology`'s
// other fields fitted (CalibrateLinks first).
// FailedPrecondition with fewer than two devices.
absl::Status CalibrateTransferOverhead(Executor& executor,
                                       const CalibrationOptions& options,
                                       simulator::Topology* topology,
                                       CalibrationResult* result);

// Re-measures one part of Calibrate ("links", "transfer-overhead" or
// "fusion") on top of an earlier calibration `base`, whose other fields
// stay; returns the updated topology and that part's points and notes.
// InvalidArgument for another part or when `base` has another device count
// than the executor; the part's errors. Not thread-safe with other users
// of `executor`.
absl::StatusOr<CalibrationResult> CalibratePart(
    Executor& executor, const CalibrationOptions& options,
    absl::string_view part, simulator::Topology base);

// Writes `topology` as gopt.v1.Topology JSON (what --topology=FILE loads).
// Errors name the path.
absl::Status WriteTopologyJson(const simulator::Topology& topology,
                               const std::string& path);

// The least-squares line t = slope * x + intercept minimising relative
// error (weights 1/t^2). Points with t <= 0 are skipped. InvalidArgument with
// fewer than two distinct x. Pure; exposed for tests.
absl::StatusOr<std::pair<double, double>> FitRelativeLine(
    const std::vector<double>& x, const std::vector<double>& t);

// FitRelativeLine, except that a line that does not grow, or that cannot be
// fitted because fewer than two sizes gave a positive time (noise from
// other load on the host), becomes the line through the origin and the
// point of the largest x with a positive time, and `*noisy` is set (left
// alone otherwise). InvalidArgument when no point with x > 0 has a
// positive time. Pure; exposed for tests.
absl::StatusOr<std::pair<double, double>> FitGrowingLine(
    const std::vector<double>& x, const std::vector<double>& t, bool* noisy);

}  // namespace gopt::worker

#endif  // GOPT_WORKER_CALIBRATION_H_
