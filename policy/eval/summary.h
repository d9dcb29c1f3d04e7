#ifndef GOPT_POLICY_EVAL_SUMMARY_H_
#define GOPT_POLICY_EVAL_SUMMARY_H_

#include <cmath>
#include <string>
#include <vector>

// Summaries of method comparisons over many graphs: geometric means of
// step-time ratios, and wins. One home for every comparison's summary
// (`gopt bench`, `gopt-train eval`).
namespace gopt::policy::eval {

// The geometric mean of positive ratios, accumulated one at a time (as the
// mean of their logarithms, so that long products neither overflow nor
// underflow). Not thread-safe.
class GeometricMean {
 public:
  // Adds one ratio (> 0).
  void Add(double ratio) {
    log_sum_ += std::log(ratio);
    ++count_;
  }
  int count() const { return count_; }
  // The geometric mean; 0 when nothing was added.
  double value() const { return count_ > 0 ? std::exp(log_sum_ / count_) : 0; }

 private:
  double log_sum_ = 0;
  int count_ = 0;
};

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
