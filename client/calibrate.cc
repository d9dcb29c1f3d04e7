#include "client/calibrate.h"

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "simulator/topology.h"
#include "simulator/topology_proto.h"
#include "util/status_macros.h"
#include "worker/calibration.h"
#include "worker/executor.h"

namespace gopt::client {

absl::Status RunCalibrate(const CalibrateOptions& options, std::ostream& out) {
  if (options.out_path.empty()) {
    return absl::InvalidArgumentError(
        "calibrate: --out=FILE (the topology JSON to write) is required");
  }
  if (!options.only.empty() && options.topology.empty()) {
    return absl::InvalidArgumentError(
        "calibrate: --only needs --topology=FILE (the calibration to update)");
  }
  worker::ExecutorOptions executor_options;
  executor_options.cpu_executors = options.cpu_executors;
  ASSIGN_OR_RETURN(std::unique_ptr<worker::Executor> executor,
                   worker::Executor::Create(executor_options));
  worker::CalibrationOptions calibration;
  calibration.quick = options.quick;
  calibration.min_measure_seconds = options.min_measure_seconds;
  worker::CalibrationResult result;
  if (options.only.empty()) {
    ASSIGN_OR_RETURN(result, worker::Calibrate(*executor, calibration));
  } else {
    ASSIGN_OR_RETURN(simulator::Topology base,
                     simulator::LoadTopology(options.topology));
    ASSIGN_OR_RETURN(result, worker::CalibratePart(*executor, calibration,
                                                   options.only, base));
  }
  RETURN_IF_ERROR(worker::WriteTopologyJson(result.topology, options.out_path));
  if (options.json) {
    nlohmann::json j;
    j["out"] = options.out_path;
    j["devices"] = result.topology.num_devices();
    for (const worker::CalibrationPoint& p : result.points) {
      j["points"].push_back({{"benchmark", p.benchmark},
                             {"op_class", p.op_class},
                             {"flops", p.flops},
                             {"bytes", p.bytes},
                             {"seconds", p.seconds}});
    }
    j["notes"] = result.notes;
    out << j.dump(2) << "\n";
    return absl::OkStatus();
  }
  out << absl::StrFormat("%-36s %-14s %12s %12s %12s\n", "benchmark", "class",
                         "flops", "bytes", "seconds");
  for (const worker::CalibrationPoint& p : result.points) {
    out << absl::StrFormat("%-36s %-14s %12.4g %12d %12.4g\n", p.benchmark,
                           p.op_class, p.flops, p.bytes, p.seconds);
  }
  out << "\n";
  for (const std::string& note : result.notes) out << note << "\n";
  out << "wrote " << options.out_path << " (" << result.topology.num_devices()
      << " devices): use it with --topology=" << options.out_path << "\n";
  return absl::OkStatus();
}

}  // namespace gopt::client
