#include "graph/hlo/spmd_partitioner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "graph/hlo/hlo_importers.h"
#include "graph/hlo/testing/hlo_module_to_proto.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

// Imports `text` and checks that the same module read as an
// HloModuleProto (OpSharding, replica groups, device_assignment) gives the
// same graph, or the same error.
absl::StatusOr<Graph> Import(const std::string& text) {
  absl::StatusOr<Graph> graph =
      NewHloTextImporter()->Import(text, ImportOptions());
  absl::StatusOr<Graph> from_proto = hlo::testing::ImportHloTextAsProto(text);
  EXPECT_EQ(graph.status(), from_proto.status());
  if (graph.ok() && from_proto.ok()) {
    EXPECT_EQ(CompareGraphs(*graph, *from_proto), absl::OkStatus());
    EXPECT_EQ(graph->spmd(), from_proto->spmd());
  }
  return graph;
}

const Node& NodeNamed(const Graph& graph, absl::string_view name) {
  const std::optional<NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  static const Node* const kNone = new Node();
  return id.has_value() ? graph.node(*id) : *kNone;
}

int CountKind(const Graph& graph, OpKind kind) {
  int count = 0;
  for (const Node& node : graph.nodes()) count += node.kind == kind;
  return count;
}

// Row-sharded lhs, replicated rhs: each device multiplies its 128 rows.
// Per-shard FLOPs = 2 * 128 * 1024 * 1024 = 268,435,456, the global
// 2 * 1024^3 divided by 8; no communication.
TEST(SpmdPartitionerTest, RowShardedDotCostsOneEighth) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  a = f32[1024,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  b = f32[1024,1024]{1,0} parameter(1), sharding={replicated}
  ROOT d = f32[1024,1024]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "d").flops, 2.0 * 128 * 1024 * 1024);
  EXPECT_EQ(NodeNamed(*graph, "d").outputs[0].dims,
            (std::vector<int64_t>{128, 1024}));
  EXPECT_EQ(NodeNamed(*graph, "a").output_bytes(), 128 * 1024 * 4);
  EXPECT_EQ(NodeNamed(*graph, "b").output_bytes(), 1024 * 1024 * 4);
  EXPECT_EQ(graph->spmd().num_partitions, 8);
  EXPECT_EQ(graph->spmd().collectives_inserted, 0);
  EXPECT_TRUE(graph->spmd().partitioned_by_importer);
  EXPECT_EQ(graph->num_nodes(), 3);
  EXPECT_THAT(graph->warnings(),
              testing::Contains(HasSubstr("SPMD: shardings honoured")));
  // Placement is fixed: one colocation group holds every node.
  ASSERT_EQ(graph->colocation_groups().size(), 1u);
  for (const Node& node : graph->nodes()) EXPECT_EQ(node.colocation_group, 0);
}

// Both operands split along the contracted dimension: each device's dot
// makes a partial f32[1024,1024] (2 * 1024 * 1024 * 128 FLOPs) and an
// all-reduce over the 8 devices sums them: a ring sends 2 * 7/8 of the
// 4 MiB output per device = 7,340,032 bytes, and adds 1,048,576 FLOPs.
TEST(SpmdPartitionerTest, ContractingShardingAllReducesTheOutput) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  a = f32[1024,1024]{1,0} parameter(0), sharding={devices=[1,8]<=[8]}
  b = f32[1024,1024]{1,0} parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT d = f32[1024,1024]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "d").flops, 2.0 * 1024 * 1024 * 128);
  const Node& all_reduce = NodeNamed(*graph, "d.spmd.all-reduce");
  EXPECT_EQ(all_reduce.kind, OpKind::kAllReduce);
  EXPECT_EQ(all_reduce.attributes.collective_group_size, 8);
  EXPECT_EQ(all_reduce.bytes_communicated, 7'340'032);
  EXPECT_EQ(all_reduce.flops, 1024.0 * 1024);
  EXPECT_TRUE(all_reduce.source.empty());
  EXPECT_EQ(graph->spmd().collectives_inserted, 1);
  EXPECT_EQ(graph->total_flops(), 2.0 * 1024 * 1024 * 128 + 1024.0 * 1024);
}

// Split by rows, wanted by columns: an all-to-all over 8 devices moves
// 7/8 of each 512 KiB shard (f32[128,1024]) = 458,752 bytes per device;
// the negate then works on f32[1024,128] (131,072 FLOPs).
TEST(SpmdPartitionerTest, RowsToColumnsIsAnAllToAll) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[1024,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT n = f32[1024,1024]{1,0} negate(p), sharding={devices=[1,8]<=[8]}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& all_to_all = NodeNamed(*graph, "p.spmd.all-to-all");
  EXPECT_EQ(all_to_all.kind, OpKind::kAllToAll);
  EXPECT_EQ(all_to_all.bytes_communicated, 458'752);
  EXPECT_EQ(all_to_all.outputs[0].dims, (std::vector<int64_t>{1024, 128}));
  EXPECT_EQ(NodeNamed(*graph, "n").flops, 1024.0 * 128);
}

// The inserted all-reduce holds the representative device for its ring
// over the mesh's links: 7,340,032 bytes at the slowest link's bandwidth
// plus 2 * (8 - 1) = 14 latencies, beyond its kernel.
TEST(SpmdPartitionerTest, InsertedAllReduceIsPricedOnTheMeshLinks) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  a = f32[1024,1024]{1,0} parameter(0), sharding={devices=[1,8]<=[8]}
  b = f32[1024,1024]{1,0} parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT d = f32[1024,1024]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto topology = simulator::PresetTopology("h100x8-nvlink");
  ASSERT_TRUE(topology.ok());
  simulator::RooflineCostModel cost_model;
  simulator::Simulator sim(*graph, *topology, cost_model);
  auto run = sim.Simulate(simulator::DefaultPlan(*graph, *topology));
  ASSERT_TRUE(run.ok()) << run.status();
  const NodeId all_reduce = *graph->FindNode("d.spmd.all-reduce");
  const simulator::Link& link = topology->link(0, 1);
  EXPECT_GE(run->node_end_s[all_reduce] - run->node_start_s[all_reduce],
            7'340'032 / link.bandwidth_bytes_per_s + 14 * link.latency_s);
  EXPECT_TRUE(simulator::UnmetDeviceConstraints(*graph, *topology).empty());
  // On one CPU there is no mesh to price: the response says so.
  auto host = simulator::PresetTopology("cpu-host");
  ASSERT_TRUE(host.ok());
  EXPECT_THAT(simulator::UnmetDeviceConstraints(*graph, *host),
              testing::Contains(HasSubstr("SPMD mesh of 8 devices")));
}

// A sharded operand of a replicated add is all-gathered: 7/8 of the
// 4 MiB result per device = 3,670,016 bytes.
TEST(SpmdPartitionerTest, ReplicatedConsumerAllGathers) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  p = f32[1024,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  q = f32[1024,1024]{1,0} parameter(1)
  ROOT s = f32[1024,1024]{1,0} add(p, q), sharding={replicated}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& all_gather = NodeNamed(*graph, "p.spmd.all-gather");
  EXPECT_EQ(all_gather.kind, OpKind::kAllGather);
  EXPECT_EQ(all_gather.bytes_communicated, 3'670'016);
  EXPECT_EQ(NodeNamed(*graph, "s").flops, 1024.0 * 1024);
}

// Weight gradient of a batch-sharded layer wanted sharded like the weight
// (FSDP): the dot contracts the split batch (each device: 2 * 512 * 1024
// * 32 = 33,554,432 FLOPs on f32[32,512] x f32[32,1024]) and a
// reduce-scatter sums and splits the 2 MiB partial: 7/8 of it =
// 1,835,008 bytes per device, leaving f32[64,1024].
TEST(SpmdPartitionerTest, SplitPartialSumsReduceScatter) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  x = f32[256,512]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  dy = f32[256,1024]{1,0} parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT dw = f32[512,1024]{1,0} dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}, sharding={devices=[8,1]<=[8]}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "dw").flops, 2.0 * 512 * 1024 * 32);
  const Node& scatter = NodeNamed(*graph, "dw.spmd.reduce-scatter");
  EXPECT_EQ(scatter.kind, OpKind::kReduceScatter);
  EXPECT_EQ(scatter.bytes_communicated, 1'835'008);
  EXPECT_EQ(scatter.outputs[0].dims, (std::vector<int64_t>{64, 1024}));
}

// Only the device order differs: a collective-permute sends the whole
// f32[2] shard (8 bytes).
TEST(SpmdPartitionerTest, NewDeviceOrderIsAPermute) {
  auto graph = Import(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[8]{0} parameter(0), sharding={devices=[4]0,1,2,3}
  ROOT n = f32[8]{0} negate(p), sharding={devices=[4]3,2,1,0}
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& permute = NodeNamed(*graph, "p.spmd.collective-permute");
  EXPECT_EQ(permute.kind, OpKind::kCollectivePermute);
  EXPECT_EQ(permute.bytes_communicated, 8);
}

// Shard shapes of every sharding form.
TEST(SpmdPartitionerTest, EveryShardingFormSplitsAsWritten) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  a = f32[64,32]{1,0} parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  b = f32[8,8]{1,0} parameter(1), sharding={devices=[2,2,2]0,2,1,3,4,6,5,7 last_tile_dim_replicate}
  c = f32[8,6]{1,0} parameter(2), sharding={maximal device=3}
  d = f32[8,6]{1,0} parameter(3), sharding={manual}
  e = f32[16,6]{1,0} parameter(4), sharding={devices=[2,1,4]<=[8] last_tile_dims={manual}}
  f = f32[9]{0} parameter(5), sharding={devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  ROOT t = (f32[64,32]{1,0}, f32[8,8]{1,0}, f32[8,6]{1,0}, f32[8,6]{1,0}, f32[16,6]{1,0}, f32[9]{0}) tuple(a, b, c, d, e, f)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto dims = [&](absl::string_view name) {
    return NodeNamed(*graph, name).outputs[0].dims;
  };
  EXPECT_EQ(dims("a"), (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(dims("b"), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(dims("c"), (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(dims("d"), (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(dims("e"), (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(dims("f"), (std::vector<int64_t>{3}));  // ceil(9 / 4)
  EXPECT_EQ(graph->spmd().collectives_inserted, 0);
}

// Operands split along dimensions an op passes through keep their split:
// transpose, broadcast, reshape and reduces that keep the split dimension
// need no communication.
TEST(SpmdPartitionerTest, PassThroughOpsKeepTheSplit) {
  auto graph = Import(R"(HloModule m, num_partitions=4
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[64,32]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  t = f32[32,64]{1,0} transpose(p), dimensions={1,0}
  r = f32[32,8,8]{2,1,0} reshape(t)
  b = f32[32,8,8,2]{3,2,1,0} broadcast(r), dimensions={0,1,2}
  z = f32[] constant(0)
  kept = f32[64]{0} reduce(t, z), dimensions={0}, to_apply=add
  ROOT over = f32[64]{0} reduce(p, z), dimensions={1}, to_apply=add
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto dims = [&](absl::string_view name) {
    return NodeNamed(*graph, name).outputs[0].dims;
  };
  EXPECT_EQ(dims("t"), (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(dims("r"), (std::vector<int64_t>{32, 2, 8}));
  EXPECT_EQ(dims("b"), (std::vector<int64_t>{32, 2, 8, 2}));
  EXPECT_EQ(dims("kept"), (std::vector<int64_t>{16}));
  EXPECT_EQ(dims("over"), (std::vector<int64_t>{16}));
  EXPECT_EQ(CountKind(*graph, OpKind::kAllReduce), 0);
  EXPECT_EQ(graph->spmd().collectives_inserted, 0);
}

// Values made from nothing the mesh splits take their users' split, as
// the partitioner's sharding propagation gives them: the bias broadcast,
// the causal mask built from iotas and the zeros are made as 8 x 1024
// shards, with no full-size value and no slice.
TEST(SpmdPartitionerTest, SourcelessValuesAreMadeSplitAsTheirUsersNeed) {
  auto graph = Import(R"(HloModule m, num_partitions=8
ENTRY e {
  x = f32[64,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  bias = f32[1024]{0} parameter(1), sharding={replicated}
  b = f32[64,1024]{1,0} broadcast(bias), dimensions={1}
  y = f32[64,1024]{1,0} add(x, b)
  i0 = s32[64,1024]{1,0} iota(), iota_dimension=0
  i1 = s32[64,1024]{1,0} iota(), iota_dimension=1
  mask = pred[64,1024]{1,0} compare(i0, i1), direction=GE
  z = f32[] constant(0)
  zeros = f32[64,1024]{1,0} broadcast(z), dimensions={}
  ROOT masked = f32[64,1024]{1,0} select(mask, y, zeros)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (absl::string_view name : {"b", "i0", "i1", "mask", "zeros", "masked"}) {
    EXPECT_EQ(NodeNamed(*graph, name).outputs[0].dims,
              (std::vector<int64_t>{8, 1024}))
        << name;
  }
  EXPECT_EQ(NodeNamed(*graph, "bias").outputs[0].dims,
            (std::vector<int64_t>{1024}));
  // One comparison per element of the shard.
  EXPECT_EQ(NodeNamed(*graph, "mask").flops, 8.0 * 1024);
  EXPECT_EQ(CountKind(*graph, OpKind::kSlice), 0);
  EXPECT_EQ(graph->spmd().collectives_inserted, 0);
}

// A value made from nothing that two users need split differently is made
// once per split; the second is a synthetic copy.
TEST(SpmdPartitionerTest, SourcelessValueUsedAtTwoSplitsIsMadeTwice) {
  auto graph = Import(R"(HloModule m, num_partitions=4
ENTRY e {
  rows = f32[64,64]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  cols = f32[64,64]{1,0} parameter(1), sharding={devices=[1,4]<=[4]}
  c = f32[64,64]{1,0} constant({...})
  a = f32[64,64]{1,0} add(rows, c)
  b = f32[64,64]{1,0} add(cols, c)
  ROOT t = (f32[64,64]{1,0}, f32[64,64]{1,0}) tuple(a, b)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "c").outputs[0].dims,
            (std::vector<int64_t>{16, 64}));
  const Node& copy = NodeNamed(*graph, "c.spmd.split");
  EXPECT_EQ(copy.outputs[0].dims, (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(CountKind(*graph, OpKind::kSlice), 0);
  EXPECT_EQ(graph->spmd().collectives_inserted, 0);
}

// The root is made whole even when a user made it split first.
TEST(SpmdPartitionerTest, SourcelessRootIsMadeAsItIs) {
  auto graph = Import(R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[64,64]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT i = f32[64,64]{1,0} iota(), iota_dimension=0
  a = f32[64,64]{1,0} add(x, i)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "i").outputs[0].dims,
            (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(NodeNamed(*graph, "i.spmd.split").outputs[0].dims,
            (std::vector<int64_t>{64, 64}));
}

// A chain of sourceless values longer than the deferral bound is made in
// the forward pass past the bound (Make recurses through the chain).
TEST(SpmdPartitionerTest, LongSourcelessChainsStayBounded) {
  std::string text = R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[64]{0} parameter(0), sharding={devices=[4]<=[4]}
  v0 = f32[64]{0} iota(), iota_dimension=0
)";
  constexpr int kLength = 5000;
  for (int k = 1; k <= kLength; ++k) {
    absl::StrAppend(&text, "  v", k, " = f32[64]{0} negate(v", k - 1, ")\n");
  }
  absl::StrAppend(&text, "  ROOT y = f32[64]{0} add(x, v", kLength, ")\n}\n");
  auto graph = Import(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "y").outputs[0].dims, (std::vector<int64_t>{16}));
  EXPECT_EQ(NodeNamed(*graph, "v1").outputs[0].dims,
            (std::vector<int64_t>{64}));
}

// A reduce over the split dimension sums partial results: 64 * 8 FLOPs
// per device, then an all-reduce of the f32[64] result over 4 devices:
// 2 * 3/4 * 256 bytes = 384 per device.
TEST(SpmdPartitionerTest, ReduceOverTheSplitDimensionAllReduces) {
  auto graph = Import(R"(HloModule m, num_partitions=4
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[64,32]{1,0} parameter(0), sharding={devices=[1,4]<=[4]}
  z = f32[] constant(0)
  ROOT sum = f32[64]{0} reduce(p, z), dimensions={1}, to_apply=add
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "sum").flops, 64.0 * 8);
  const Node& all_reduce = NodeNamed(*graph, "sum.spmd.all-reduce");
  EXPECT_EQ(all_reduce.attributes.collective_group_size, 4);
  EXPECT_EQ(all_reduce.bytes_communicated, 384);
}

// A loop body is partitioned with the shardings its loop carries: the
// body's dot runs on the shard too.
TEST(SpmdPartitionerTest, WhileBodiesArePartitioned) {
  auto graph = Import(R"(HloModule m, num_partitions=8
body {
  s = (s32[], f32[1024,256]{1,0}, f32[256,256]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[1024,256]{1,0} get-tuple-element(s), index=1
  w = f32[256,256]{1,0} get-tuple-element(s), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  y = f32[1024,256]{1,0} dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (s32[], f32[1024,256]{1,0}, f32[256,256]{1,0}) tuple(next, y, w)
}
cond {
  s = (s32[], f32[1024,256]{1,0}, f32[256,256]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  zero = s32[] constant(0)
  h0 = f32[1024,256]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  w0 = f32[256,256]{1,0} parameter(1), sharding={replicated}
  init = (s32[], f32[1024,256]{1,0}, f32[256,256]{1,0}) tuple(zero, h0, w0)
  ROOT loop = (s32[], f32[1024,256]{1,0}, f32[256,256]{1,0}) while(init), condition=cond, body=body
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 4 iterations of 2 * 128 * 256 * 256 FLOPs, plus the counter's adds
  // and compares.
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.attributes.trip_count, 4);
  EXPECT_EQ(loop.flops, 4 * (2.0 * 128 * 256 * 256 + 1 + 1));
}

// Called computations and branches run on the shards they are passed:
// negate / abs of f32[16,32] (512 FLOPs) instead of f32[64,32].
TEST(SpmdPartitionerTest, CallsAndBranchesRunOnShards) {
  auto graph = Import(R"(HloModule m, num_partitions=4
f {
  x = f32[64,32]{1,0} parameter(0)
  ROOT n = f32[64,32]{1,0} negate(x)
}
t {
  x = f32[64,32]{1,0} parameter(0)
  ROOT n = f32[64,32]{1,0} negate(x)
}
g {
  x = f32[64,32]{1,0} parameter(0)
  ROOT a = f32[64,32]{1,0} abs(x)
}
ENTRY e {
  p = f32[64,32]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  q = pred[] parameter(1)
  c = f32[64,32]{1,0} call(p), to_apply=f
  ROOT b = f32[64,32]{1,0} conditional(q, c, c), true_computation=t, false_computation=g
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "c/n").flops, 16.0 * 32);
  EXPECT_EQ(NodeNamed(*graph, "b").flops, 16.0 * 32);
  EXPECT_EQ(NodeNamed(*graph, "b").outputs[0].dims,
            (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(graph->spmd().collectives_inserted, 0);
}

// A module that came partitioned (scheduled, explicit collectives) keeps
// its shapes; the graph still says it is one device's program.
TEST(SpmdPartitionerTest, PartitionedModulesKeepTheirShapes) {
  auto graph = Import(R"(HloModule m, is_scheduled=true, num_partitions=8
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[128,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT r = f32[128,1024]{1,0} all-reduce(p), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=add
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "p").outputs[0].dims,
            (std::vector<int64_t>{128, 1024}));
  EXPECT_EQ(graph->spmd().num_partitions, 8);
  EXPECT_FALSE(graph->spmd().partitioned_by_importer);
  // The explicit all-reduce's group comes from replica_groups: a ring of 8
  // sends 2 * 7/8 of the 512 KiB buffer = 917,504 bytes per device.
  EXPECT_EQ(NodeNamed(*graph, "r").attributes.collective_group_size, 8);
  EXPECT_EQ(NodeNamed(*graph, "r").bytes_communicated, 917'504);
  EXPECT_THAT(graph->warnings(),
              testing::Contains(HasSubstr("partitioned already")));
}

TEST(SpmdPartitionerTest, ModulesWithoutShardingsAreUntouched) {
  auto graph = Import(R"(HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  ROOT n = f32[8]{0} negate(p)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->spmd().num_partitions, 1);
  EXPECT_TRUE(graph->colocation_groups().empty());
}

TEST(SpmdPartitionerTest, ShardingThatDoesNotFitItsShapeIsAnError) {
  auto graph = Import(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[8]{0} parameter(0), sharding={devices=[2,2]<=[4]}
  ROOT n = f32[8]{0} negate(p)
}
)");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("instruction 'p': sharding tiles 2 dimensions"));
}

// FSDP: 96 layers of f32[16384,16384] weights (1 GiB each, 96 GiB in all)
// sharded 8 ways. The global program holds 96 GiB of weights and cannot
// fit an 80 GB H100; one device's program holds 12 GiB of weight shards
// plus the one layer it has gathered (1 GiB) and fits.
std::string FsdpModule(bool sharded) {
  const std::string weight = sharded ? ", sharding={devices=[8,1]<=[8]}" : "";
  std::string text =
      absl::StrCat("HloModule fsdp", sharded ? ", num_partitions=8" : "",
                   "\nENTRY e {\n  h0 = f32[64,16384]{1,0} "
                   "parameter(0)",
                   sharded ? ", sharding={devices=[8,1]<=[8]}" : "", "\n");
  for (int i = 0; i < 96; ++i) {
    absl::StrAppend(&text, "  w", i, " = f32[16384,16384]{1,0} parameter(",
                    i + 1, ")", weight, "\n");
    absl::StrAppend(&text, i == 95 ? "  ROOT " : "  ", "h", i + 1,
                    " = f32[64,16384]{1,0} dot(h", i, ", w", i,
                    "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n");
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

TEST(SpmdPartitionerTest, FsdpFitsPerDeviceWhereTheGlobalProgramCannot) {
  auto topology = simulator::PresetTopology("h100x8-nvlink");
  ASSERT_TRUE(topology.ok());
  simulator::RooflineCostModel cost_model;
  auto global = Import(FsdpModule(/*sharded=*/false));
  ASSERT_TRUE(global.ok()) << global.status();
  simulator::Simulator global_sim(*global, *topology, cost_model);
  auto global_run = global_sim.Simulate(simulator::DefaultPlan(*global));
  ASSERT_TRUE(global_run.ok()) << global_run.status();
  EXPECT_TRUE(global_run->oom);

  auto shard = Import(FsdpModule(/*sharded=*/true));
  ASSERT_TRUE(shard.ok()) << shard.status();
  // Each layer all-gathers its weight: 96 all-gathers of 7/8 GiB.
  EXPECT_EQ(shard->spmd().collectives_inserted, 96);
  EXPECT_EQ(NodeNamed(*shard, "w0.spmd.all-gather").bytes_communicated,
            int64_t{7} << 27);
  // Per device: the batch is split too, 2 * 8 * 16384 * 16384 per layer.
  EXPECT_EQ(NodeNamed(*shard, "h1").flops, 2.0 * 8 * 16384 * 16384);
  simulator::Simulator shard_sim(*shard, *topology, cost_model);
  auto shard_run = shard_sim.Simulate(simulator::DefaultPlan(*shard));
  ASSERT_TRUE(shard_run.ok()) << shard_run.status();
  EXPECT_FALSE(shard_run->oom);
  EXPECT_LT(shard_run->peak_memory_bytes[0], int64_t{14} << 30);
  // The gathers hold the device on the NVLink ring: each all-gather's
  // link time is part of the step.
  EXPECT_GT(
      shard_run->step_time_s,
      96 * (7.0 * (1 << 27)) / topology->link(0, 1).bandwidth_bytes_per_s);
}

}  // namespace
}  // namespace gopt::graph
