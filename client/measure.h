#ifndef GOPT_CLIENT_MEASURE_H_
#define GOPT_CLIENT_MEASURE_H_

// `gopt measure FILE`: one plan of a graph run for real on a worker (this
// process's executors, gopt-worker processes, or gopt-server's pool) beside
// the simulator's prediction.

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/local_commands.h"
#include "engine/plan_measurer.h"

namespace gopt::client {

// What `gopt measure` runs. Defaults are the command's flag defaults.
struct MeasureOptions {
  std::string path;       // the graph file (required)
  GraphReadOptions read;  // --format, --dim, --default_dim, --max_nodes
  // Preset or topology JSON file (e.g. from `gopt calibrate`); its devices
  // must be the worker's (cpu-host: this host's two CPU executors).
  std::string topology = "cpu-host";
  // The plan: a baseline method (PLACEMENT[+SCHEDULING[+FUSION]], or
  // best-baseline), or a plan JSON file, which wins when set.
  std::string method = "single";
  std::string plan_path;
  uint64_t seed = 0;  // randomised baselines
  // gopt-server HOST:PORT to measure on (its worker pool); "" = here.
  std::string server;
  // Without server: where the plan runs, as gopt-server's --workers
  // ("local" = executors in this process; HOST:PORT,... of gopt-workers).
  std::string workers = "local";
  double timeout_seconds = 120;  // the whole measurement
  bool json = false;
};

// Makes the plan, simulates it and measures it; writes predicted and
// measured step time, spread and real-op fraction to `out` (text, or one
// JSON object with predicted_step_time_s, measured_step_time_s,
// measured_spread, real_op_fraction, real_op_flop_fraction, measured_on,
// warnings). Errors: NotFound / InvalidArgument for the file, topology,
// method or plan; Unavailable (after the report) when the plan could not be
// measured; the server's codes with --server.
absl::Status RunMeasure(const MeasureOptions& options, std::ostream& out);

// The PlanMeasurer behind the CLI's in-process engine for `--workers`
// ("local" or a gopt-server --workers value). InvalidArgument for a bad
// value; the executor's errors.
absl::StatusOr<std::shared_ptr<engine::PlanMeasurer>> MakeCliMeasurer(
    const std::string& workers);

}  // namespace gopt::client

#endif  // GOPT_CLIENT_MEASURE_H_
