#include "policy/eval/summary.h"

#include <vector>

#include "gtest/gtest.h"

namespace gopt::policy::eval {
namespace {

TEST(SummariseMethodsTest, GeomeansWinsAndOrderOfFirstAppearance) {
  const std::vector<MethodOutcome> outcomes = {
      {"a", "single", true, 1.0, 1.0, 4.0}, {"a", "metis", true, 0.5, 0.5, 2.0},
      {"b", "single", true, 2.0, 1.0, 2.0}, {"b", "metis", true, 4.0, 2.0, 4.0},
      {"b", "heft", false, 0, 0, 0},
  };
  const std::vector<MethodSummary> summaries = SummariseMethods(outcomes);
  ASSERT_EQ(summaries.size(), 3u);
  EXPECT_EQ(summaries[0].method, "single");
  EXPECT_EQ(summaries[0].graphs, 2);
  EXPECT_EQ(summaries[0].wins, 1);  // b
  EXPECT_DOUBLE_EQ(summaries[0].geomean_ratio_to_default, 1.0);
  EXPECT_DOUBLE_EQ(summaries[0].geomean_ratio_to_lower_bound, std::sqrt(8.0));
  EXPECT_EQ(summaries[1].method, "metis");
  EXPECT_EQ(summaries[1].wins, 1);  // a
  EXPECT_DOUBLE_EQ(summaries[1].geomean_ratio_to_default, 1.0);
  EXPECT_EQ(summaries[2].method, "heft");
  EXPECT_EQ(summaries[2].graphs, 0);
  EXPECT_EQ(summaries[2].wins, 0);
}

}  // namespace
}  // namespace gopt::policy::eval
