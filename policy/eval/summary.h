#ifndef GOPT_POLICY_EVAL_SUMMARY_H_
#define GOPT_POLICY_EVAL_SUMMARY_H_

#include <string>
#include <vector>

#include "util/geometric_mean.h"

// Summaries of method comparisons over many graphs: geometric means of
// step-time ratios, and wins. One home for every comparison's summary
// (`gopt bench`, `gopt-train eval`).
namespace gopt::policy::eval {

// One method's result on one graph, as a summary needs it.
struct MethodOutcome {
  std::string graph;
  std::string method;
  bool usable = false;  // a valid plan that fits memory
  double step_time_s = 0;
  double ratio_to_default = 0;
  double ratio_to_lower_bound = 0;
};

// One method over every graph where it gave a usable plan.
struct MethodSummary {
  std::string method;
  int graphs = 0;  // with a usable plan
  // Graphs where its step time is the fastest of every method's (within a
  // relative 1e-9; ties count for every tied method).
  int wins = 0;
  double geomean_ratio_to_default = 0;
  double geomean_ratio_to_lower_bound = 0;
};

// Summaries of `outcomes` (any order; grouped by graph for the wins), one
// per method in the order the methods first appear; a method without a
// usable plan on any graph has graphs == 0.
std::vector<MethodSummary> SummariseMethods(
    const std::vector<MethodOutcome>& outcomes);

}  // namespace gopt::policy::eval

#endif  // GOPT_POLICY_EVAL_SUMMARY_H_
