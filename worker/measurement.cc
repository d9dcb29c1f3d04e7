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

namespace {

// Ranks 0..n-1 by value; tied values share their mean rank.
std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) {
      ++j;
    }
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = (i + j) / 2.0;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

double SpearmanRho(const std::vector<double>& predicted,
                   const std::vector<double>& measured) {
  const size_t n = std::min(predicted.size(), measured.size());
  if (n < 2) return 0;
  const std::vector<double> a =
      Ranks(std::vector<double>(predicted.begin(), predicted.begin() + n));
  const std::vector<double> b =
      Ranks(std::vector<double>(measured.begin(), measured.begin() + n));
  const double mean = (n - 1) / 2.0;  // both rank sets average this
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < n; ++i) {
    cov += (a[i] - mean) * (b[i] - mean);
    va += (a[i] - mean) * (a[i] - mean);
    vb += (b[i] - mean) * (b[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0.0;
}

double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured) {
  const size_t n = std::min(predicted.size(), measured.size());
  double sum = 0;
  int count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(measured[i] > 0)) continue;
    sum += std::abs(predicted[i] - measured[i]) / measured[i];
    ++count;
  }
  return count > 0 ? 100 * sum / count : 0.0;
}

}  // namespace gopt::worker
