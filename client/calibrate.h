#ifndef GOPT_CLIENT_CALIBRATE_H_
#define GOPT_CLIENT_CALIBRATE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

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

  // --learn: after calibrating, measure many plans of many graphs and train
  // the learned runtime model (docs/runtime-model.md); the topology written
  // to --out references it (gopt.v1.Topology.runtime_model).
  bool learn = false;
  // --learn_dir: the measurements (worker/runtime_dataset.h); a second run
  // with the same directory resumes. Default: OUT without ".json" +
  // ".runtime-data".
  std::string learn_dir;
  // --learn_graphs: graph files measured and trained on, beside the
  // built-in generated training-step graphs (LearnGeneratedGraphs).
  std::vector<std::string> learn_graphs;
  // --held_out: graph files measured and judged, never trained on.
  std::vector<std::string> held_out;
  // --learn_generated: measure the generated graphs too (default true;
  // false: only --learn_graphs and --held_out).
  bool learn_generated = true;
  int learn_plans = 0;  // --learn_plans: plans per graph (0 = all 20)
  uint64_t seed = 1;    // --seed: plans and model initialisation
};

// The generated graphs `gopt calibrate --learn` measures by default: small
// training steps (forward, backward, update) of every generator family,
// sized so a step runs in milliseconds on a CPU executor. With `quick`,
// two tiny ones.
std::vector<std::pair<std::string, std::string>> LearnGeneratedGraphs(
    bool quick);

// Runs gopt::worker::Calibrate (or CalibratePart with --only, which
// needs --topology) on a new executor, writes the topology to
// options.out_path (what --topology=FILE loads) and prints what was measured
// and fitted to `out` (a table, or JSON with options.json). Errors:
// InvalidArgument without --out; the executor's and calibration's errors;
// PermissionDenied when the file cannot be written.
absl::Status RunCalibrate(const CalibrateOptions& options, std::ostream& out);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_CALIBRATE_H_
