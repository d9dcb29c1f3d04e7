#ifndef GOPT_WORKER_MEASUREMENT_H_
#define GOPT_WORKER_MEASUREMENT_H_

#include <vector>

namespace gopt::worker {

// Measured runs summarised as the autotuners do it.
struct RunSummary {
  double median_s = 0;
  // (p90 - p10) / median of the kept runs (0 with fewer than 2 runs).
  double spread = 0;
  std::vector<double> kept_s;  // the kept runs, in their original order
  int outliers = 0;            // runs discarded
};

// Discards slow outliers (runs over median + 3 * 1.4826 * MAD, the robust
// 3-sigma rule; only the slow side, as interference on a shared host makes
// runs slower, never faster) and summarises the rest. An empty input gives
// a zero summary. Pure function; thread-safe.
RunSummary SummarizeRuns(const std::vector<double>& run_seconds);

// Median of `values` (0 when empty); the mean of the middle two for an even
// count.
double Median(std::vector<double> values);

// The q-quantile (0..1) of `values` by linear interpolation (0 when empty).
double Quantile(std::vector<double> values, double q);

// Spearman's rank correlation between predicted and measured times of the
// plans (or configurations) of one graph: the Pearson correlation of their
// ranks, ties sharing their mean rank (1 = same order). 0 when fewer than
// two values or either side is all tied.
double SpearmanRho(const std::vector<double>& predicted,
                   const std::vector<double>& measured);

// Mean absolute percentage error of `predicted` against `measured`, in
// percent: mean of |p - m| / m over the pairs with m > 0 (0 when none).
double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& measured);

}  // namespace gopt::worker

#endif  // GOPT_WORKER_MEASUREMENT_H_
