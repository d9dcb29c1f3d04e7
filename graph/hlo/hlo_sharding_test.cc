#include "graph/hlo/hlo_sharding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gopt::graph::hlo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HloSharding Parse(absl::string_view text) {
  absl::StatusOr<HloSharding> sharding = ParseHloSharding(text);
  EXPECT_TRUE(sharding.ok()) << sharding.status();
  return sharding.value_or(HloSharding());
}

TEST(HloShardingTest, ReadsTheSimpleKinds) {
  EXPECT_EQ(Parse("{replicated}").kind, HloSharding::Kind::kReplicated);
  EXPECT_EQ(Parse("{manual}").kind, HloSharding::Kind::kManual);
  EXPECT_EQ(Parse("{unknown}").kind, HloSharding::Kind::kUnknown);
  const HloSharding maximal = Parse("{maximal device=3}");
  EXPECT_EQ(maximal.kind, HloSharding::Kind::kMaximal);
  EXPECT_EQ(maximal.device, 3);
  EXPECT_EQ(Parse(R"({replicated metadata={op_name="a"}})").kind,
            HloSharding::Kind::kReplicated);
}

TEST(HloShardingTest, ReadsIotaAndExplicitDeviceLists) {
  const HloSharding iota = Parse("{devices=[8,1]<=[8]}");
  EXPECT_EQ(iota.kind, HloSharding::Kind::kTiled);
  EXPECT_THAT(iota.tile_dims, ElementsAre(8, 1));
  EXPECT_THAT(iota.devices, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(iota.ShardDims({1024, 512}), ElementsAre(128, 512));
  // [2,4] transposed to [4,2]: devices 0,4,1,5,2,6,3,7.
  const HloSharding transposed = Parse("{devices=[4,2]<=[2,4]T(1,0)}");
  EXPECT_THAT(transposed.devices, ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  const HloSharding listed = Parse("{devices=[2,2]0,2,1,3}");
  EXPECT_THAT(listed.devices, ElementsAre(0, 2, 1, 3));
  EXPECT_THAT(listed.ShardDims({5, 8}), ElementsAre(3, 4));
}

TEST(HloShardingTest, SubgroupDimensionsAreNotArrayDimensions) {
  // From a real JAX SPMD dump: split 4 ways along dim 1, replicated twice.
  const HloSharding partial =
      Parse("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(partial.subgroup_dims, 1);
  EXPECT_THAT(partial.ShardDims({1024, 1024}), ElementsAre(1024, 256));
  const HloSharding manual =
      Parse("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(manual.subgroup_dims, 2);
  EXPECT_THAT(manual.subgroup_types, ElementsAre("manual", "replicated"));
  EXPECT_THAT(manual.ShardDims({6, 6}), ElementsAre(3, 6));
  EXPECT_TRUE(partial.subgroup_types.empty());
}

TEST(HloShardingTest, ReadsTupleShardings) {
  const HloSharding tuple = Parse("{{replicated}, {devices=[2]0,1}}");
  ASSERT_EQ(tuple.kind, HloSharding::Kind::kTuple);
  ASSERT_EQ(tuple.elements.size(), 2u);
  EXPECT_EQ(tuple.elements[1].kind, HloSharding::Kind::kTiled);
}

TEST(HloShardingTest, BadShardingsAreErrorsNamingTheOffset) {
  EXPECT_THAT(ParseHloSharding("{devices=[2,2]0,1,2}").status().message(),
              HasSubstr("expected 4 devices"));
  EXPECT_THAT(ParseHloSharding("{devices=[4]<=[8]}").status().message(),
              HasSubstr("iota of 8 devices for 4 tiles"));
  EXPECT_THAT(
      ParseHloSharding("{devices=[2,2]<=[2,2]T(0,0)}").status().message(),
      HasSubstr("not a permutation"));
  EXPECT_THAT(ParseHloSharding("{sideways}").status().message(),
              HasSubstr("at offset 1: expected replicated"));
  EXPECT_FALSE(ParseHloSharding("{devices=[99999999999]<=[1]}").ok());
  EXPECT_FALSE(ParseHloSharding("{replicated").ok());
}

TEST(ReplicaGroupSizeTest, ExplicitAndIotaGroups) {
  EXPECT_EQ(ReplicaGroupSize("{{0,1,2,3},{4,5,6,7}}"), 4);
  EXPECT_EQ(ReplicaGroupSize("{{0}}"), 1);
  EXPECT_EQ(ReplicaGroupSize("{ {0, 2}, {1, 3} }"), 2);
  EXPECT_EQ(ReplicaGroupSize("[2,4]<=[8]"), 4);
  EXPECT_EQ(ReplicaGroupSize("[1,8]<=[4,2]T(1,0)"), 8);
  EXPECT_EQ(ReplicaGroupSize("{}"), 0);
  EXPECT_EQ(ReplicaGroupSize("{{0,x}}"), 0);
  EXPECT_EQ(ReplicaGroupSize("{{0,1"), 0);
  EXPECT_EQ(ReplicaGroupSize(""), 0);
}

}  // namespace
}  // namespace gopt::graph::hlo
