#include "worker/measurement.h"

#include <algorithm>
#include <cmath>

namespace gopt::worker {

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * (values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - lo);
}

double Median(std::vector<double> values) {
  return Quantile(std::move(values), 0.5);
}

RunSummary SummarizeRuns(const std::vector<double>& run_seconds) {
  RunSummary summary;
  if (run_seconds.empty()) return summary;
  const double median = Median(run_seconds);
  std::vector<double> deviations;
  for (double r : run_seconds) deviations.push_back(std::abs(r - median));
  const double mad = Median(deviations);
  const double limit = median + 3 * 1.4826 * mad;
  for (double r : run_seconds) {
    if (mad > 0 && r > limit) {
      ++summary.outliers;
    } else {
      summary.kept_s.push_back(r);
    }
  }
  summary.median_s = Median(summary.kept_s);
  if (summary.kept_s.size() >= 2 && summary.median_s > 0) {
    summary.spread =
        (Quantile(summary.kept_s, 0.9) - Quantile(summary.kept_s, 0.1)) /
        summary.median_s;
  }
  return summary;
}

}  // namespace gopt::worker
