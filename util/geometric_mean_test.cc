#include "util/geometric_mean.h"

#include "gtest/gtest.h"

namespace gopt {
namespace {

TEST(GeometricMeanTest, OfRatios) {
  GeometricMean mean;
  EXPECT_EQ(mean.value(), 0);
  mean.Add(2.0);
  mean.Add(8.0);
  EXPECT_EQ(mean.count(), 2);
  EXPECT_DOUBLE_EQ(mean.value(), 4.0);
}

}  // namespace
}  // namespace gopt
