#include "graph/op_attributes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace gopt::graph {
namespace {

TEST(OpAttributesTest, AbsentAttributesReadAsDefaults) {
  const OpAttributes attrs;
  EXPECT_TRUE(attrs.window().empty());
  EXPECT_TRUE(attrs.dot().lhs_contracting.empty());
  EXPECT_EQ(attrs.convolution().input_feature, 1);
  EXPECT_TRUE(attrs.padding().empty());
  EXPECT_EQ(attrs.custom_call_target(), "");
}

TEST(OpAttributesTest, AbsentEqualsWrittenDefault) {
  OpAttributes written;
  written.mutable_slice_starts()->clear();
  written.mutable_dot();
  EXPECT_EQ(written, OpAttributes());
}

TEST(OpAttributesTest, CopiesAreDeep) {
  OpAttributes original;
  original.mutable_dot()->lhs_contracting = {1};
  original.mutable_padding()->push_back(PaddingDimension{1, 2, 0});
  OpAttributes copy = original;
  copy.mutable_dot()->lhs_contracting = {0};
  (*copy.mutable_padding())[0].high = 5;
  EXPECT_EQ(original.dot().lhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_EQ(original.padding()[0].high, 2);
  EXPECT_FALSE(copy == original);
}

TEST(OpAttributesTest, EqualityComparesOutOfLineValues) {
  OpAttributes a;
  OpAttributes b;
  a.mutable_window()->resize(2);
  EXPECT_FALSE(a == b);
  b.mutable_window()->resize(2);
  EXPECT_TRUE(a == b);
  *a.mutable_comparison() = "LT";
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace gopt::graph
