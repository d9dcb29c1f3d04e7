#include "simulator/min_bit_tree.h"

#include <random>
#include <set>

#include "gtest/gtest.h"

namespace gopt::simulator {
namespace {

TEST(MinBitTreeTest, PopsInIncreasingOrder) {
  MinBitTree tree;
  tree.Reset(/*size=*/200);
  EXPECT_TRUE(tree.empty());
  for (int64_t value : {130, 5, 64, 63, 199, 0}) tree.Insert(value);
  for (int64_t expected : {0, 5, 63, 64, 130, 199}) {
    ASSERT_FALSE(tree.empty());
    EXPECT_EQ(tree.PopMin(), expected);
  }
  EXPECT_TRUE(tree.empty());
}

TEST(MinBitTreeTest, AgreesWithASetAcrossSizesAndResets) {
  // One tree reset to sizes of one to three levels (and back), as the
  // simulator's per-device queues are from call to call.
  std::mt19937_64 rng(3);
  MinBitTree tree;
  for (int64_t size : {1, 64, 65, 4096, 4097, 300000, 70, 300000}) {
    tree.Reset(size);
    std::set<int64_t> reference;
    for (int step = 0; step < 20000; ++step) {
      if (reference.empty() || rng() % 2 == 0) {
        const int64_t value = static_cast<int64_t>(rng() % size);
        if (reference.insert(value).second) tree.Insert(value);
      } else {
        ASSERT_EQ(tree.PopMin(), *reference.begin()) << "size " << size;
        reference.erase(reference.begin());
      }
      ASSERT_EQ(tree.empty(), reference.empty());
    }
  }
}

}  // namespace
}  // namespace gopt::simulator
