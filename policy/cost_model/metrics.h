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

// A default margin (log-runtime units): how much lower than the default
// configuration's score another configuration's score must be before the
// model's choice leaves the default. Applied by lowering the default's score
// by the margin; `default_config` < 0 (no default) leaves `scores` as they
// are.
//
//   // scores {0.00, -0.03}, default 0, margin 0.05 -> {-0.05, -0.03}
std::vector<double> WithDefaultMargin(const std::vector<double>& scores,
                                      int default_config, double margin);

// The margins ChooseDefaultMargin tries: 0 to 0.5 and 10 (in effect
// "always the default").
const std::vector<double>& DefaultMarginGrid();

// The margin of DefaultMarginGrid() whose top-1 choice (see
// WithDefaultMargin) has the lowest mean top-1 slowdown over the groups
// (`scores[g]`, `runtimes[g]`, `default_configs[g]`); ties go to the larger
// margin. Groups without a default count the same under every margin. 10
// (the largest) for no groups.
double ChooseDefaultMargin(const std::vector<std::vector<double>>& scores,
                           const std::vector<std::vector<double>>& runtimes,
                           const std::vector<int>& default_configs);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_POLICY_COST_MODEL_METRICS_H_
