#include "client/optimize_report.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"

namespace gopt::client {
namespace {

std::string Milliseconds(double seconds) {
  return absl::StrFormat("%.3f ms", seconds * 1e3);
}

std::string Mebibytes(int64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

// The verify=K table: each candidate's prediction beside its measurement.
void AppendVerified(const gopt::v1::OptimizeResponse& response,
                    std::string* text) {
  if (response.verified().empty()) return;
  absl::StrAppendFormat(
      text, "\nverified on workers:\n%-44s %14s %14s %8s %14s\n", "candidate",
      "predicted", "measured", "spread", "fastest run");
  for (const gopt::v1::MeasuredCandidate& row : response.verified()) {
    const bool ok = row.error().empty();
    absl::StrAppendFormat(
        text, "%-44s %14s %14s %8s %14s%s\n", row.method(),
        Milliseconds(row.predicted_step_time_s()),
        ok ? Milliseconds(row.measured_step_time_s()) : "failed",
        ok ? absl::StrFormat("%.1f%%", row.measured_spread() * 100) : "-",
        ok ? Milliseconds(row.measured_min_step_time_s()) : "-",
        row.chosen() ? "  <- chosen" : "");
  }
}

// A row's name as `gopt optimize --policy` takes it: NAME@VERSION for a
// policy's row, the method for a baseline's.
std::string RowLabel(const gopt::v1::MethodResult& row) {
  return row.version().empty() ? row.method()
                               : absl::StrCat(row.method(), "@", row.version());
}

// The chosen plan per device: ops, FLOPs, parameter bytes (the table's
// last lines).
void AppendDeviceSummaries(const gopt::v1::OptimizeResponse& response,
                           std::string* text) {
  if (response.device_summaries().empty()) return;
  absl::StrAppendFormat(text, "\n%-28s %10s %14s %14s\n", "device", "ops",
                        "GFLOPs", "parameters");
  for (const gopt::v1::DeviceSummary& device : response.device_summaries()) {
    absl::StrAppendFormat(
        text, "%-28s %10d %14.3f %14s\n", device.device_name(), device.ops(),
        device.flops() / 1e9, Mebibytes(device.parameter_bytes()));
  }
}

}  // namespace

std::string OptimizeResponseToText(const gopt::v1::OptimizeResponse& response) {
  std::string text = absl::StrFormat(
      "graph: %s (%d nodes)   topology: %s   lower bound: %s\n\n",
      response.graph_name(), response.num_nodes(), response.topology_name(),
      Milliseconds(response.lower_bound_s()));
  std::vector<gopt::v1::MethodResult> rows(response.baselines().begin(),
                                           response.baselines().end());
  for (const auto& row : response.policy_results()) rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    const bool a_ok = a.valid() && !a.oom();
    const bool b_ok = b.valid() && !b.oom();
    if (a_ok != b_ok) return a_ok;
    return a.step_time_s() < b.step_time_s();
  });
  const double base = response.default_step_time_s();
  absl::StrAppendFormat(&text, "%-44s %14s %12s\n", "method", "step time",
                        "vs default");
  absl::StrAppendFormat(&text, "%-44s %14s %12s\n", "default (single device)",
                        Milliseconds(base),
                        response.default_oom() ? "OOM" : "1.00x");
  for (const auto& row : rows) {
    std::string ratio;
    if (!row.valid()) {
      ratio = "invalid";
    } else if (row.oom()) {
      ratio = "OOM";
    } else if (row.step_time_s() > 0 && base > 0) {
      ratio = absl::StrFormat("%.2fx", base / row.step_time_s());
    }
    std::string label = RowLabel(row);
    if (!row.zero_shot_decode().empty()) {
      absl::StrAppend(&label, " (", row.zero_shot_decode(), ")");
    }
    absl::StrAppendFormat(&text, "%-44s %14s %12s\n", label,
                          row.valid() ? Milliseconds(row.step_time_s()) : "-",
                          ratio);
  }
  std::string chosen = response.method();
  for (const auto& row : response.policy_results()) {
    if (row.method() == chosen && !row.version().empty()) {
      chosen = RowLabel(row);
      break;
    }
  }
  absl::StrAppendFormat(&text, "\nchosen: %s, %s", chosen,
                        Milliseconds(response.step_time_s()));
  if (response.speedup_over_default() > 0) {
    absl::StrAppendFormat(&text, ", %.2fx faster than the default",
                          response.speedup_over_default());
  }
  if (response.partial()) absl::StrAppend(&text, " (partial: deadline)");
  absl::StrAppend(&text, "\n");
  AppendVerified(response, &text);
  if (response.ratio_to_lower_bound() > 0) {
    absl::StrAppendFormat(
        &text,
        "lower bound: %s (chosen is %.2fx; no plan within the kernel fusion "
        "rules is faster)\n",
        Milliseconds(response.lower_bound_s()),
        response.ratio_to_lower_bound());
  }
  if (response.fits_in_memory_lower_bound_s() > response.lower_bound_s()) {
    absl::StrAppendFormat(
        &text,
        "lower bound for plans that fit in memory: %s (the weights need more "
        "than one device, so a tensor must cross a link)\n",
        Milliseconds(response.fits_in_memory_lower_bound_s()));
  }
  std::vector<std::string> memory;
  for (int64_t bytes : response.peak_memory_bytes()) {
    memory.push_back(Mebibytes(bytes));
  }
  absl::StrAppend(
      &text, "peak memory per device: ", absl::StrJoin(memory, ", "), "\n");
  for (const std::string& warning : response.warnings()) {
    absl::StrAppend(&text, "warning: ", warning, "\n");
  }
  std::vector<std::string> timings;
  for (const auto& timing : response.timings()) {
    timings.push_back(
        absl::StrFormat("%s %.3f s", timing.stage(), timing.seconds()));
  }
  absl::StrAppend(&text, "timings: ", absl::StrJoin(timings, ", "), "\n");
  AppendDeviceSummaries(response, &text);
  return text;
}

std::string EvaluateResponseToText(const gopt::v1::EvaluateResponse& response) {
  std::string text = absl::StrFormat(
      "graph: %s (%d nodes)\nstep time: %s%s (default %s, lower bound %s)\n",
      response.graph_name(), response.num_nodes(),
      Milliseconds(response.step_time_s()), response.oom() ? " OOM" : "",
      Milliseconds(response.default_step_time_s()),
      Milliseconds(response.lower_bound_s()));
  std::vector<std::string> memory;
  for (int64_t bytes : response.peak_memory_bytes()) {
    memory.push_back(Mebibytes(bytes));
  }
  absl::StrAppend(
      &text, "peak memory per device: ", absl::StrJoin(memory, ", "), "\n");
  absl::StrAppendFormat(&text, "kernels %d, transfers %d (%s)\n",
                        response.num_kernels(), response.num_transfers(),
                        Mebibytes(response.bytes_moved()));
  if (response.measured_step_time_s() > 0) {
    absl::StrAppendFormat(
        &text,
        "measured: %s (spread %.1f%%, fastest run %s, on %s; real ops %.1f%% "
        "of nodes)\n",
        Milliseconds(response.measured_step_time_s()),
        response.measured_spread() * 100,
        Milliseconds(response.measured_min_step_time_s()),
        response.measured_on(), response.real_op_fraction() * 100);
  }
  for (const std::string& warning : response.warnings()) {
    absl::StrAppend(&text, "warning: ", warning, "\n");
  }
  return text;
}

std::string MessageToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

}  // namespace gopt::client
