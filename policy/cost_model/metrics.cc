#include "policy/cost_model/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gopt::policy::cost_model {

double KendallTau(const std::vector<double>& predicted,
                  const std::vector<double>& runtimes) {
  const size_t n = std::min(predicted.size(), runtimes.size());
  double concordant = 0;
  double discordant = 0;
  double tied_predicted = 0;
  double tied_runtime = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double a = predicted[i] - predicted[j];
      const double b = runtimes[i] - runtimes[j];
      if (a == 0 && b == 0) continue;
      if (a == 0) {
        tied_predicted += 1;
      } else if (b == 0) {
        tied_runtime += 1;
      } else if ((a > 0) == (b > 0)) {
        concordant += 1;
      } else {
        discordant += 1;
      }
    }
  }
  const double denominator =
      std::sqrt((concordant + discordant + tied_predicted) *
                (concordant + discordant + tied_runtime));
  return denominator > 0 ? (concordant - discordant) / denominator : 0.0;
}

double TopKSlowdown(const std::vector<double>& predicted,
                    const std::vector<double>& runtimes, int k) {
  if (runtimes.empty()) return 0;
  std::vector<size_t> order(runtimes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return predicted[a] < predicted[b];
  });
  const size_t top = std::min<size_t>(std::max(k, 1), order.size());
  double chosen = runtimes[order[0]];
  for (size_t i = 0; i < top; ++i)
    chosen = std::min(chosen, runtimes[order[i]]);
  const double best = *std::min_element(runtimes.begin(), runtimes.end());
  return (chosen - best) / best;
}

double RandomTopKSlowdown(const std::vector<double>& runtimes, int k) {
  const int n = static_cast<int>(runtimes.size());
  if (n == 0) return 0;
  k = std::min(std::max(k, 1), n);
  std::vector<double> sorted = runtimes;
  std::sort(sorted.begin(), sorted.end());
  // P(the best of a random k-subset is the j-th smallest) =
  // C(n-1-j, k-1) / C(n, k), computed in logs to stay finite.
  auto log_choose = [](int a, int b) {
    return std::lgamma(a + 1.0) - std::lgamma(b + 1.0) -
           std::lgamma(a - b + 1.0);
  };
  const double log_total = log_choose(n, k);
  double expected = 0;
  for (int j = 0; j + k <= n; ++j) {
    const double p = std::exp(log_choose(n - 1 - j, k - 1) - log_total);
    expected += p * (sorted[j] - sorted[0]) / sorted[0];
  }
  return expected;
}

std::vector<double> WithDefaultMargin(const std::vector<double>& scores,
                                      int default_config, double margin) {
  std::vector<double> out = scores;
  if (default_config >= 0 && default_config < static_cast<int>(out.size())) {
    out[default_config] -= margin;
  }
  return out;
}

const std::vector<double>& DefaultMarginGrid() {
  static const auto* grid = new std::vector<double>{
      0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 10.0};
  return *grid;
}

double ChooseDefaultMargin(const std::vector<std::vector<double>>& scores,
                           const std::vector<std::vector<double>>& runtimes,
                           const std::vector<int>& default_configs) {
  const std::vector<double>& grid = DefaultMarginGrid();
  double best_margin = grid.back();
  double best_slowdown = 0;
  // From the largest margin down, so a tie keeps the larger one.
  for (auto it = grid.rbegin(); it != grid.rend(); ++it) {
    double slowdown = 0;
    for (size_t g = 0; g < scores.size(); ++g) {
      slowdown +=
          TopKSlowdown(WithDefaultMargin(scores[g], default_configs[g], *it),
                       runtimes[g], 1);
    }
    if (it == grid.rbegin() || slowdown < best_slowdown) {
      best_slowdown = slowdown;
      best_margin = *it;
    }
  }
  return best_margin;
}

}  // namespace gopt::policy::cost_model
