#include "graph/hlo/while_trip_count.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "absl/strings/str_replace.h"
#include "graph/hlo/hlo_text_parser.h"

namespace gopt::graph::hlo {
namespace {

// The trip count DeriveWhileTripCount gives the instruction named "loop" of
// the entry computation of `text`.
std::optional<int64_t> TripCountOf(absl::string_view text) {
  absl::StatusOr<HloModule> module = ParseHloText(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return std::nullopt;
  const HloComputation& entry = module->entry_computation();
  for (const HloInstruction& instruction : entry.instructions) {
    if (instruction.name == "loop") {
      return DeriveWhileTripCount(*module, entry, instruction);
    }
  }
  ADD_FAILURE() << "no instruction 'loop'";
  return std::nullopt;
}

// A JAX fori_loop as XLA prints it before optimization: counter at tuple
// element 0 from INIT, compared with BOUND by DIRECTION, stepped by STEP.
constexpr absl::string_view kCountedLoop = R"(HloModule fori
body {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[8] get-tuple-element(t), index=1
  step = s32[] constant(STEP)
  next = s32[] UPDATE(i, step)
  w = f32[8] multiply(v, v)
  ROOT out = (s32[], f32[8]) tuple(next, w)
}
cond {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(BOUND)
  ROOT c = pred[] compare(i, n), direction=DIRECTION
}
ENTRY main {
  init_i = s32[] constant(INIT)
  v = f32[8] parameter(0)
  init = (s32[], f32[8]) tuple(init_i, v)
  loop = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(loop), index=1
}
)";

std::optional<int64_t> CountedLoop(absl::string_view init,
                                   absl::string_view direction,
                                   absl::string_view bound,
                                   absl::string_view update,
                                   absl::string_view step) {
  return TripCountOf(
      absl::StrReplaceAll(kCountedLoop, {{"INIT", init},
                                         {"DIRECTION", direction},
                                         {"BOUND", bound},
                                         {"UPDATE", update},
                                         {"STEP", step}}));
}

TEST(WhileTripCountTest, CountsUpToAConstantBound) {
  EXPECT_EQ(CountedLoop("0", "LT", "5", "add", "1"), 5);
  EXPECT_EQ(CountedLoop("0", "LT", "10", "add", "3"), 4);  // 0 3 6 9
  EXPECT_EQ(CountedLoop("2", "LE", "10", "add", "2"), 5);  // 2 4 6 8 10
  EXPECT_EQ(CountedLoop("0", "NE", "12", "add", "4"), 3);
}

TEST(WhileTripCountTest, CountsDownWithSubtract) {
  EXPECT_EQ(CountedLoop("10", "GT", "0", "subtract", "1"), 10);
  EXPECT_EQ(CountedLoop("10", "GE", "0", "subtract", "5"), 3);  // 10 5 0
  EXPECT_EQ(CountedLoop("10", "GT", "0", "add", "-2"), 5);
}

TEST(WhileTripCountTest, ConditionFalseAtEntryRunsZeroTimes) {
  EXPECT_EQ(CountedLoop("5", "LT", "3", "add", "1"), 0);
}

TEST(WhileTripCountTest, LoopsThatNeverEndOrSkipTheirBoundAreUnknown) {
  EXPECT_EQ(CountedLoop("0", "LT", "5", "add", "0"), std::nullopt);
  EXPECT_EQ(CountedLoop("0", "LT", "5", "subtract", "1"), std::nullopt);
  EXPECT_EQ(CountedLoop("0", "NE", "5", "add", "2"), std::nullopt);
  EXPECT_EQ(CountedLoop("0", "EQ", "5", "add", "1"), std::nullopt);
}

TEST(WhileTripCountTest, ReadsACompareWithTheBoundFirst) {
  std::string text = absl::StrReplaceAll(kCountedLoop, {{"INIT", "0"},
                                                        {"DIRECTION", "GT"},
                                                        {"BOUND", "7"},
                                                        {"UPDATE", "add"},
                                                        {"STEP", "1"}});
  absl::StrReplaceAll({{"compare(i, n)", "compare(n, i)"}}, &text);
  EXPECT_EQ(TripCountOf(text), 7);  // 7 > i  is  i < 7
}

// The bound is tuple element 1, passed through the body unchanged, and the
// initial values reach the while through a get-tuple-element chain.
TEST(WhileTripCountTest, FollowsHoistedBoundsAndGetTupleElementChains) {
  EXPECT_EQ(TripCountOf(R"(HloModule hoisted
body {
  t = (s32[], s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] get-tuple-element(t), index=1
  v = f32[8] get-tuple-element(t), index=2
  one = s32[] constant(1)
  next = s32[] add(one, i)
  ROOT out = (s32[], s32[], f32[8]) tuple(next, n, v)
}
cond {
  t = (s32[], s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] get-tuple-element(t), index=1
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY main {
  start = s32[] constant(3)
  limit = s32[] constant(24)
  v = f32[8] parameter(0)
  pair = (s32[], s32[]) tuple(start, limit)
  nested = ((s32[], s32[]), f32[8]) tuple(pair, v)
  inner = (s32[], s32[]) get-tuple-element(nested), index=0
  i0 = s32[] get-tuple-element(inner), index=0
  n0 = s32[] get-tuple-element(inner), index=1
  n1 = s32[] copy(n0)
  init = (s32[], s32[], f32[8]) tuple(i0, n1, v)
  loop = (s32[], s32[], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(loop), index=2
}
)"),
            21);
}

TEST(WhileTripCountTest, ABoundTheBodyChangesIsUnknown) {
  EXPECT_EQ(TripCountOf(R"(HloModule moving
body {
  t = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] get-tuple-element(t), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  grow = s32[] add(n, one)
  ROOT out = (s32[], s32[]) tuple(next, grow)
}
cond {
  t = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] get-tuple-element(t), index=1
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY main {
  zero = s32[] constant(0)
  ten = s32[] constant(10)
  init = (s32[], s32[]) tuple(zero, ten)
  ROOT loop = (s32[], s32[]) while(init), condition=cond, body=body
}
)"),
            std::nullopt);
}

TEST(WhileTripCountTest, AnInitialValueFromAParameterIsUnknown) {
  EXPECT_EQ(TripCountOf(R"(HloModule dynamic
body {
  t = (s32[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT out = (s32[]) tuple(next)
}
cond {
  t = (s32[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(10)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY main {
  start = s32[] parameter(0)
  init = (s32[]) tuple(start)
  ROOT loop = (s32[]) while(init), condition=cond, body=body
}
)"),
            std::nullopt);
}

// Optimized modules fuse the condition's compare.
TEST(WhileTripCountTest, ReadsAFusedCompare) {
  EXPECT_EQ(TripCountOf(R"(HloModule fused_cond, is_scheduled=true
fused_compare {
  p0 = s32[] parameter(0)
  c = s32[] constant(16)
  ROOT lt = pred[] compare(p0, c), direction=LT
}
body {
  t = (s32[], f32[8]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[8]{0} get-tuple-element(t), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT out = (s32[], f32[8]{0}) tuple(next, v)
}
cond {
  t = (s32[], f32[8]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  ROOT f = pred[] fusion(i), kind=kLoop, calls=fused_compare
}
ENTRY main {
  zero = s32[] constant(0)
  v = f32[8]{0} parameter(0)
  init = (s32[], f32[8]{0}) tuple(zero, v)
  ROOT loop = (s32[], f32[8]{0}) while(init), condition=cond, body=body
}
)"),
            16);
}

}  // namespace
}  // namespace gopt::graph::hlo
