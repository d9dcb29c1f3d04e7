#ifndef GOPT_POLICY_COST_MODEL_METRICS_H_
#define GOPT_POLICY_COST_MODEL_METRICS_H_

#include <vector>

namespace gopt::policy::cost_model {

// Kendall's tau-b between predicted costs and true runtimes of the
// configurations of one graph (1 = same order, -1 = reversed; ties in either
// count as neither). 0 when fewer than two configurations or all tied.
double KendallTau(const std::vector<double>& predicted,
                  const std::vector<double>& runtimes);

// Top-K slowdown: (best runtime among the K configurations with the lowest
// predicted cost - best runtime overall) / best runtime overall. K is
// clamped to the number of configurations; 0 for an empty set.
double TopKSlowdown(const std::vector<double>& predicted,
                    const std::vector<double>& runtimes, int k);

// The expected top-K slowdown of choosing K configurations uniformly at
// random without replacement (exact, not sampled).
double RandomTopKSlowdown(const std::vector<double>& runtimes, int k);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_METRICS_H_
