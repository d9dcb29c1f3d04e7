#include "graph/hlo/hlo_proto_reader.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "graph/hlo/hlo_sharding.h"
#include "graph/hlo/hlo_text_parser.h"
#include "graph/hlo/testing/hlo_module_to_proto.h"

namespace gopt::graph::hlo {
namespace {

using ::testing::HasSubstr;

// A module whose entry holds one f32[8,8] parameter 'p' (id 1) carrying
// `sharding` (protobuf text format), compiled for `num_partitions`
// partitions (0: no device assignment).
xla::HloModuleProto ShardedParameterModule(const std::string& sharding,
                                           int32_t num_partitions) {
  xla::HloModuleProto module;
  EXPECT_TRUE(
      google::protobuf::TextFormat::ParseFromString(R"pb(
                                                      name: "m"
                                                      entry_computation_id: 1
                                                      computations {
                                                        name: "e"
                                                        id: 1
                                                        root_id: 1
                                                        instructions {
                                                          name: "p"
                                                          opcode: "parameter"
                                                          id: 1
                                                          shape {
                                                            element_type: F32
                                                            dimensions: [ 8, 8 ]
                                                          }
                                                        }
                                                      }
                                                    )pb",
                                                    &module));
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      sharding, module.mutable_computations(0)
                    ->mutable_instructions(0)
                    ->mutable_sharding()));
  if (num_partitions > 0) {
    module.mutable_device_assignment()->set_computation_count(num_partitions);
  }
  return module;
}

// What the reader keeps of `sharding`: its text spelling, or the error.
absl::StatusOr<std::string> ShardingText(const std::string& sharding,
                                         int32_t num_partitions = 0) {
  absl::StatusOr<HloModule> module =
      HloModuleFromProto(ShardedParameterModule(sharding, num_partitions));
  if (!module.ok()) return module.status();
  return module->entry_computation().instructions[0].sharding.get();
}

TEST(HloProtoReaderTest, ReadsEveryOpShardingTypeAsItsTextSpelling) {
  EXPECT_EQ(*ShardingText("type: REPLICATED"), "{replicated}");
  EXPECT_EQ(*ShardingText("type: MANUAL"), "{manual}");
  EXPECT_EQ(*ShardingText("type: MAXIMAL tile_assignment_dimensions: 1 "
                          "tile_assignment_devices: 3"),
            "{maximal device=3}");
  // V1: an explicit device list.
  EXPECT_EQ(*ShardingText("type: OTHER tile_assignment_dimensions: [2, 2] "
                          "tile_assignment_devices: [0, 2, 1, 3]"),
            "{devices=[2,2]0,2,1,3}");
  // V2: iota(8) reshaped to [2,4] and transposed, replicated on the last
  // tile dimension.
  EXPECT_EQ(*ShardingText("type: OTHER tile_assignment_dimensions: [4, 2] "
                          "iota_reshape_dims: [2, 4] "
                          "iota_transpose_perm: [1, 0] "
                          "replicate_on_last_tile_dim: true"),
            "{devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  // An identity transpose is left out, as XLA prints it.
  EXPECT_EQ(*ShardingText("type: OTHER tile_assignment_dimensions: [8, 1] "
                          "iota_reshape_dims: 8 iota_transpose_perm: 0"),
            "{devices=[8,1]<=[8]}");
  EXPECT_EQ(*ShardingText("type: OTHER tile_assignment_dimensions: "
                          "[2, 1, 2, 2] iota_reshape_dims: 8 "
                          "last_tile_dims: [MANUAL, REPLICATED]"),
            "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(*ShardingText("type: TUPLE tuple_shardings { type: REPLICATED } "
                          "tuple_shardings { type: OTHER "
                          "tile_assignment_dimensions: 2 "
                          "iota_reshape_dims: 2 }"),
            "{{replicated}, {devices=[2]<=[2]}}");
}

TEST(HloProtoReaderTest, SpellingsParseToTheShardingsTheTextGives) {
  // The reader's text goes through the same parser as HLO text, so the
  // partitioner sees the same tiles and devices.
  const std::string text = *ShardingText(
      "type: OTHER tile_assignment_dimensions: [4, 2] "
      "iota_reshape_dims: [2, 4] iota_transpose_perm: [1, 0] "
      "replicate_on_last_tile_dim: true");
  absl::StatusOr<HloSharding> from_proto = ParseHloSharding(text);
  ASSERT_TRUE(from_proto.ok()) << from_proto.status();
  EXPECT_THAT(from_proto->devices,
              ::testing::ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  EXPECT_EQ(from_proto->subgroup_dims, 1);
}

TEST(HloProtoReaderTest, MalformedOpShardingNamesInstructionAndField) {
  auto error = [](const std::string& sharding, int32_t num_partitions) {
    absl::StatusOr<std::string> text = ShardingText(sharding, num_partitions);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument)
        << sharding;
    return std::string(text.status().message());
  };
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: [2, 4] "
                    "tile_assignment_devices: [0, 1, 2, 3, 4, 5]",
                    0),
              HasSubstr("computation 'e' instruction 'p' "
                        "sharding.tile_assignment_devices: 6 devices for the "
                        "8 tiles of [2,4]"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: 4 "
                    "tile_assignment_devices: [0, 1, 2, 7]",
                    4),
              HasSubstr("instruction 'p' sharding.tile_assignment_devices[3]: "
                        "device 7 is out of range [0, 4)"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: 2 "
                    "tile_assignment_devices: [1, 1]",
                    0),
              HasSubstr("tile_assignment_devices[1]: device 1 is listed "
                        "twice"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: 8 "
                    "iota_reshape_dims: [2, 2]",
                    0),
              HasSubstr("sharding.iota_reshape_dims: 4 devices for the 8 "
                        "tiles of [8]"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: 8 "
                    "iota_reshape_dims: 8",
                    4),
              HasSubstr("sharding.iota_reshape_dims: device 7 is out of "
                        "range [0, 4)"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: 4 "
                    "iota_reshape_dims: [2, 2] iota_transpose_perm: [0, 0]",
                    0),
              HasSubstr("sharding.iota_transpose_perm: [0,0] is not a "
                        "permutation of 2 dimensions"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: [2, 0] "
                    "tile_assignment_devices: 0",
                    0),
              HasSubstr("sharding.tile_assignment_dimensions[1]: 0 is not a "
                        "positive size"));
  EXPECT_THAT(error("type: OTHER", 0),
              HasSubstr("sharding.tile_assignment_dimensions: empty"));
  EXPECT_THAT(error("type: MAXIMAL tile_assignment_devices: 4", 4),
              HasSubstr("sharding.tile_assignment_devices[0]: device 4 is "
                        "out of range [0, 4)"));
  EXPECT_THAT(error("type: TUPLE tuple_shardings { type: REPLICATED } "
                    "tuple_shardings { type: OTHER "
                    "tile_assignment_dimensions: 2 "
                    "tile_assignment_devices: 5 }",
                    0),
              HasSubstr("sharding.tuple_shardings[1].tile_assignment_devices:"
                        " 1 devices for the 2 tiles of [2]"));
  EXPECT_THAT(error("type: OTHER tile_assignment_dimensions: 2 "
                    "iota_reshape_dims: 2 last_tile_dims: [MAXIMAL]",
                    0),
              HasSubstr("sharding.last_tile_dims[0]: subgroup type 1 is not"));
}

TEST(HloProtoReaderTest, DeviceAssignmentGivesThePartitionCount) {
  xla::HloModuleProto proto = ShardedParameterModule("type: REPLICATED", 8);
  proto.mutable_device_assignment()->set_replica_count(2);
  absl::StatusOr<HloModule> module = HloModuleFromProto(proto);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->config.num_partitions, 8);
  EXPECT_EQ(module->config.replica_count, 2);
  EXPECT_FALSE(module->config.is_scheduled);

  proto.mutable_device_assignment()->set_computation_count(-1);
  EXPECT_THAT(HloModuleFromProto(proto).status().message(),
              HasSubstr("module 'm' device_assignment.computation_count: -1 "
                        "is not a count"));
}

// Parses HLO `text`, writes it as an HloModuleProto, lets `edit` change
// the proto, and reads it back.
absl::StatusOr<HloModule> ThroughProto(
    const std::string& text,
    const std::function<void(xla::HloModuleProto*)>& edit = nullptr) {
  absl::StatusOr<HloModule> parsed = ParseHloText(text);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<xla::HloModuleProto> proto =
      testing::HloModuleToProto(*parsed);
  if (!proto.ok()) return proto.status();
  if (edit) edit(&*proto);
  return HloModuleFromProto(*proto);
}

// The all-reduce of a text module, with its groups set by `groups`
// (HloInstructionProto text format).
absl::StatusOr<int64_t> GroupSize(const std::string& groups) {
  absl::StatusOr<HloModule> module = ThroughProto(
      R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[64]{0} parameter(0)
  ROOT r = f32[64]{0} all-reduce(p), to_apply=add
}
)",
      [&](xla::HloModuleProto* proto) {
        EXPECT_TRUE(google::protobuf::TextFormat::MergeFromString(
            groups, proto->mutable_computations(1)->mutable_instructions(1)));
      });
  if (!module.ok()) return module.status();
  return module->entry_computation()
      .instructions[1]
      .attributes.collective_group_size;
}

TEST(HloProtoReaderTest, ReadsEveryReplicaGroupForm) {
  EXPECT_EQ(*GroupSize(""), 0);  // every device in one group
  EXPECT_EQ(*GroupSize("replica_groups { replica_ids: [0, 1, 2, 3] } "
                       "replica_groups { replica_ids: [4, 5, 6, 7] }"),
            4);
  EXPECT_EQ(*GroupSize("collective_device_list { replica_groups { "
                       "replica_ids: [0, 2] } replica_groups { "
                       "replica_ids: [1, 3] } }"),
            2);
  // [4,2]<=[8]: four groups of two.
  EXPECT_EQ(*GroupSize("collective_device_list { iota_replica_group_list { "
                       "num_replica_groups: 4 num_devices_per_group: 2 "
                       "iota_reshape_dims: 8 iota_transpose_perm: 0 } }"),
            2);
  EXPECT_THAT(
      GroupSize("replica_groups { replica_ids: [0, -1] }").status().message(),
      HasSubstr("computation 'e' instruction 'r' "
                "replica_groups[0].replica_ids[1]: device -1 is out "
                "of range"));
}

TEST(HloProtoReaderTest, ScalarIntegerLiteralsAreKeptForTripCounts) {
  absl::StatusOr<HloModule> module = ThroughProto(R"(HloModule m
ENTRY e {
  n = s32[] constant(-7)
  b = pred[] constant(true)
  ROOT t = (s32[], pred[]) tuple(n, b)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->entry_computation().instructions[0].literal.get(), "-7");
  EXPECT_EQ(module->entry_computation().instructions[1].literal.get(), "true");
}

TEST(HloProtoReaderTest, AScheduleMakesAScheduledModule) {
  absl::StatusOr<HloModule> module =
      ThroughProto(R"(HloModule m, is_scheduled=true
ENTRY e {
  p = f32[8]{0} parameter(0)
  ROOT n = f32[8]{0} negate(p)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(module->config.is_scheduled);
}

}  // namespace
}  // namespace gopt::graph::hlo
