#include "client/simulate_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gopt::client {

nlohmann::json SimulateReportToJson(const SimulateReport& report) {
  const simulator::SimulationResult& r = report.result;
  return {{"graph", report.graph},
          {"topology", report.topology},
          {"method", report.method},
          {"nodes", report.nodes},
          {"step_time_s", r.step_time_s},
          {"lower_bound_s", report.lower_bound_s},
          {"oom", r.oom},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"device_busy_s", r.device_busy_s},
          {"bytes_moved", r.bytes_moved},
          {"transfers", r.num_transfers},
          {"kernels", r.num_kernels},
          {"layout_copy_s", r.layout_copy_s},
          {"critical_path_nodes", r.critical_path.size()},
          {"critical_path_busy_s", r.critical_path_busy_s},
          {"simulation_seconds", report.simulation_seconds},
          {"repeats", report.repeats}};
}

std::string SimulateReportToText(const SimulateReport& report) {
  const simulator::SimulationResult& r = report.result;
  std::string out;
  absl::StrAppend(&out, absl::StrFormat("%-22s %s (%d nodes)\n", "graph",
                                        report.graph, report.nodes));
  absl::StrAppend(&out,
                  absl::StrFormat("%-22s %s\n", "topology", report.topology));
  absl::StrAppend(&out, absl::StrFormat("%-22s %s\n", "method", report.method));
  absl::StrAppend(&out, absl::StrFormat("%-22s %.6g ms%s\n", "step time",
                                        r.step_time_s * 1e3,
                                        r.oom ? "  (OOM: plan invalid)" : ""));
  absl::StrAppend(&out,
                  absl::StrFormat("%-22s %.6g ms (step / bound = %.3f)\n",
                                  "lower bound", report.lower_bound_s * 1e3,
                                  report.lower_bound_s > 0
                                      ? r.step_time_s / report.lower_bound_s
                                      : 0.0));
  absl::StrAppend(
      &out, absl::StrFormat("%-22s %d kernels, %d transfers, %.3f MB moved\n",
                            "work", r.num_kernels, r.num_transfers,
                            static_cast<double>(r.bytes_moved) / 1e6));
  absl::StrAppend(&out, absl::StrFormat("%-22s %d nodes, %.6g ms busy\n",
                                        "critical path", r.critical_path.size(),
                                        r.critical_path_busy_s * 1e3));
  absl::StrAppend(
      &out, absl::StrFormat("%-22s %.3f ms (median of %d)\n", "simulation took",
                            report.simulation_seconds * 1e3, report.repeats));
  absl::StrAppend(&out, absl::StrFormat("\n  %-8s %12s %8s %14s\n", "device",
                                        "busy ms", "util", "peak MiB"));
  for (size_t d = 0; d < r.device_busy_s.size(); ++d) {
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "  %-8d %12.4f %7.1f%% %14.2f\n", d, r.device_busy_s[d] * 1e3,
            r.step_time_s > 0 ? 100 * r.device_busy_s[d] / r.step_time_s : 0,
            static_cast<double>(r.peak_memory_bytes[d]) / (1 << 20)));
  }
  return out;
}

}  // namespace gopt::client
