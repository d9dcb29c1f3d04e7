#include "util/huge_pages.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gopt {
namespace {

TEST(HugePagesTest, AdviceKeepsContents) {
  std::vector<int64_t> values(/*count=*/3 << 20);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<int64_t>(i);
  AdviseHugePagesForCapacity(values);
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], static_cast<int64_t>(i)) << i;
  }
}

TEST(HugePagesTest, SmallAndEmptyRegionsAreIgnored) {
  std::vector<char> small(/*count=*/100, 'x');
  AdviseHugePagesForCapacity(small);
  AdviseHugePages(nullptr, kHugePageAdviceMinBytes * 2);
  std::vector<int> empty;
  AdviseHugePagesForCapacity(empty);
  EXPECT_EQ(small[99], 'x');
}

TEST(HugePagesTest, ReservedCapacityIsUsableAfterAdvice) {
  std::vector<int32_t> values;
  values.reserve(/*count=*/4 << 20);
  AdviseHugePagesForCapacity(values);
  for (int32_t i = 0; i < (4 << 20); ++i) values.push_back(i);
  EXPECT_EQ(values.back(), (4 << 20) - 1);
  EXPECT_EQ(values.front(), 0);
}

}  // namespace
}  // namespace gopt
