#include "policy/eval/summary.h"

#include <algorithm>
#include <map>

namespace gopt::policy::eval {

std::vector<MethodSummary> SummariseMethods(
    const std::vector<MethodOutcome>& outcomes) {
  std::map<std::string, double> fastest_s;  // per graph, usable plans only
  for (const MethodOutcome& outcome : outcomes) {
    if (!outcome.usable) continue;
    auto [it, inserted] = fastest_s.emplace(outcome.graph, outcome.step_time_s);
    if (!inserted) it->second = std::min(it->second, outcome.step_time_s);
  }
  std::vector<MethodSummary> summaries;
  std::vector<GeometricMean> to_default;
  std::vector<GeometricMean> to_bound;
  for (const MethodOutcome& outcome : outcomes) {
    auto it = std::find_if(
        summaries.begin(), summaries.end(),
        [&](const MethodSummary& s) { return s.method == outcome.method; });
    if (it == summaries.end()) {
      summaries.push_back(MethodSummary{outcome.method});
      to_default.emplace_back();
      to_bound.emplace_back();
      it = summaries.end() - 1;
    }
    if (!outcome.usable) continue;
    const size_t i = it - summaries.begin();
    to_default[i].Add(outcome.ratio_to_default);
    to_bound[i].Add(outcome.ratio_to_lower_bound);
    ++it->graphs;
    if (outcome.step_time_s <= fastest_s[outcome.graph] * (1 + 1e-9)) {
      ++it->wins;
    }
  }
  for (size_t i = 0; i < summaries.size(); ++i) {
    summaries[i].geomean_ratio_to_default = to_default[i].value();
    summaries[i].geomean_ratio_to_lower_bound = to_bound[i].value();
  }
  return summaries;
}

}  // namespace gopt::policy::eval
