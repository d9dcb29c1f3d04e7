#ifndef GOPT_SIMULATOR_MIN_BIT_TREE_H_
#define GOPT_SIMULATOR_MIN_BIT_TREE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gopt::simulator {

// A set of integers in [0, size) with O(log64 size) insert and pop-min by
// bit scans: a 64-ary tree of bitmaps. Ready queues use it instead of a
// binary heap, whose data-dependent branches mispredict on every level.
// Reset() reuses the buffers that are large enough, so a tree reused for
// one size does not allocate. Not thread-safe: one per simulation and device.
class MinBitTree {
 public:
  // Empties the set and sizes it for [0, size).
  void Reset(int64_t size) {
    size_t depth = 0;
    int64_t words = std::max<int64_t>(1, (size + 63) / 64);
    while (true) {
      if (levels_.size() <= depth) levels_.emplace_back();
      levels_[depth++].assign(words, 0);
      if (words == 1) break;
      words = (words + 63) / 64;
    }
    levels_.resize(depth);
  }
  bool empty() const { return levels_.back()[0] == 0; }
  void Insert(int64_t value) {
    for (std::vector<uint64_t>& level : levels_) {
      const bool was_empty = level[value / 64] == 0;
      level[value / 64] |= uint64_t{1} << (value % 64);
      if (!was_empty) return;
      value /= 64;
    }
  }
  // Calls `visit(value)` for each value in the set, in increasing order.
  template <typename Visit>
  void ForEach(Visit visit) const {
    const std::vector<uint64_t>& leaves = levels_.front();
    for (size_t w = 0; w < leaves.size(); ++w) {
      for (uint64_t bits = leaves[w]; bits != 0; bits &= bits - 1) {
        visit(static_cast<int64_t>(w * 64 + __builtin_ctzll(bits)));
      }
    }
  }
  // Removes and returns the smallest value; the set must not be empty.
  int64_t PopMin() {
    int64_t index = 0;
    for (size_t l = levels_.size(); l-- > 0;) {
      index = index * 64 + __builtin_ctzll(levels_[l][index]);
    }
    int64_t value = index;
    for (std::vector<uint64_t>& level : levels_) {
      level[value / 64] &= ~(uint64_t{1} << (value % 64));
      if (level[value / 64] != 0) break;
      value /= 64;
    }
    return index;
  }

 private:
  std::vector<std::vector<uint64_t>> levels_;  // leaves first
};

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_MIN_BIT_TREE_H_
