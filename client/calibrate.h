#ifndef GOPT_CLIENT_CALIBRATE_H_
#define GOPT_CLIENT_CALIBRATE_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace gopt::client {

// `gopt calibrate`: measures this host's executors and writes the fitted
// topology.
struct CalibrateOptions {
  std::string out_path;   // --out: the topology JSON (required)
  int cpu_executors = 0;  // --executors: 0 = one per hardware thread
  bool quick = false;     // --quick: fewer, smaller benchmarks
  double min_measure_seconds = 0.05;  // --min_measure_seconds per benchmark
  bool json = false;                  // --json: the points and notes as JSON
  // --only: re-measure one part ("links", "transfer-overhead" or "fusion")
  // on top of --topology's calibration instead of everything. Default empty
  // (everything).
  std::string only;
  std::string topology;  // --topology: the calibration --only updates
};

// Runs gopt::worker::Calibrate (or CalibratePart with --only, which
// needs --topology) on a new executor, writes the topology to
// options.out_path (what --topology=FILE loads) and prints what was measured
// and fitted to `out` (a table, or JSON with options.json). Errors:
// InvalidArgument without --out; the executor's and calibration's errors;
// PermissionDenied when the file cannot be written.
absl::Status RunCalibrate(const CalibrateOptions& options, std::ostream& out);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_CALIBRATE_H_
