#include "graph/hlo/hlo_lowering.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/hlo/hlo_text_parser.h"

namespace gopt::graph::hlo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<Graph> Lower(absl::string_view text) {
  absl::StatusOr<HloModule> module = ParseHloText(text);
  if (!module.ok()) return module.status();
  return LowerHloModule(*module, HloLoweringOptions());
}

const Node& NodeNamed(const Graph& graph, absl::string_view name) {
  std::optional<NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << "no node " << name;
  return graph.node(id.value_or(0));
}

TEST(HloLoweringTest, InlinesCalls) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule m
inner {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
outer {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] add(x, y)
  ROOT c = f32[4] call(s), to_apply=inner
}
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  ROOT r = f32[4] call(p, q), to_apply=outer
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  // p, q, r/s, r/c/n: calls and callee parameters vanish.
  ASSERT_EQ(graph->num_nodes(), 4);
  const Node& negate = NodeNamed(*graph, "r/c/n");
  EXPECT_TRUE(negate.attributes.is_root);
  EXPECT_EQ(negate.flops, 4);
  const NodeId add = *graph->FindNode("r/s");
  ASSERT_EQ(graph->in_edges(add).size(), 2u);
  EXPECT_EQ(graph->in_edges(add)[0].src, *graph->FindNode("p"));
  EXPECT_EQ(graph->in_edges(add)[1].src, *graph->FindNode("q"));
  EXPECT_EQ(graph->total_flops(), 8);
}

constexpr absl::string_view kLoop = R"(HloModule loop
body {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[8] get-tuple-element(t), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[8] multiply(v, v)
  ROOT out = (s32[], f32[8]) tuple(j, w)
}
cond {
  t = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  zero = s32[] constant(0)
  v = f32[8] parameter(0)
  init = (s32[], f32[8]) tuple(zero, v)
  loop = (s32[], f32[8]) while(init), condition=cond, body=body, backend_config={"known_trip_count":{"n":"5"}}
  ROOT result = f32[8] get-tuple-element(loop), index=1
}
)";

TEST(HloLoweringTest, WhileIsOneNodeCostedByItsBodyTimesTripCount) {
  absl::StatusOr<Graph> graph = Lower(kLoop);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 5);
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.kind, OpKind::kWhile);
  EXPECT_EQ(loop.attributes.trip_count, 5);
  ASSERT_EQ(loop.subgraphs.size(), 2u);
  const Graph& body = *graph->subgraphs()[loop.subgraphs[0]];
  const Graph& cond = *graph->subgraphs()[loop.subgraphs[1]];
  EXPECT_EQ(body.name(), "body");
  EXPECT_EQ(cond.name(), "cond");
  // Body: add 1 + multiply 8 FLOPs; condition: compare 1 FLOP; 5 trips.
  EXPECT_EQ(body.total_flops(), 9);
  EXPECT_EQ(cond.total_flops(), 1);
  EXPECT_EQ(loop.flops, 50);
  EXPECT_TRUE(graph->warnings().empty());
  // The while's outputs are the tuple's elements; the result reads output 1.
  ASSERT_EQ(loop.outputs.size(), 2u);
  const NodeId result = *graph->FindNode("result");
  ASSERT_EQ(graph->in_edges(result).size(), 1u);
  EXPECT_EQ(graph->in_edges(result)[0].src_output, 1);
  // The while reads its whole tuple operand.
  const NodeId loop_id = *graph->FindNode("loop");
  ASSERT_EQ(graph->in_edges(loop_id).size(), 1u);
  EXPECT_EQ(graph->in_edges(loop_id)[0].src_output, Edge::kAllOutputs);
}

// kLoop without its backend config.
std::string LoopWithoutConfig() {
  std::string text(kLoop);
  const std::string config =
      R"(, backend_config={"known_trip_count":{"n":"5"}})";
  text.erase(text.find(config), config.size());
  return text;
}

TEST(HloLoweringTest, WhileTripCountIsDerivedFromItsCounter) {
  absl::StatusOr<Graph> graph = Lower(LoopWithoutConfig());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.attributes.trip_count, 5);
  EXPECT_EQ(loop.flops, 50);
  EXPECT_TRUE(graph->warnings().empty());
}

TEST(HloLoweringTest, KnownTripCountInTheBackendConfigWins) {
  std::string text(kLoop);
  text.replace(text.find(R"("n":"5")"), 7, R"("n":"7")");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "loop").attributes.trip_count, 7);
}

TEST(HloLoweringTest, WhileWithoutTripCountIsCostedOnceWithAWarning) {
  // The counter starts at a value known only at run time.
  std::string text = LoopWithoutConfig();
  text.replace(text.find("zero = s32[] constant(0)"), 24,
               "zero = s32[] parameter(1)");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.attributes.trip_count, -1);
  EXPECT_EQ(loop.flops, 10);
  EXPECT_THAT(
      graph->warnings(),
      ElementsAre(HasSubstr("while 'loop' has no known trip count"),
                  "1 of 1 while loops have no known trip count (each costed "
                  "as 1 iteration)"));
}

constexpr absl::string_view kCurrentXla =
    R"(HloModule jit_step, is_scheduled=true, num_partitions=2

FileNames
1 "/home/u/model.py"
2 "/site-packages/flax/linen/linear.py"

FunctionNames
1 "train_step"
2 "Dense.__call__"

FileLocations
1 {file_name_id=1 function_name_id=1 line=42 end_line=42 column=4 end_column=30}
2 {file_name_id=2 function_name_id=2 line=255 end_line=257 column=8 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}

%wrapped_dot (p0: f32[8,128], p1: f32[128,128]) -> f32[8,128] {
  %p0 = f32[8,128]{1,0} parameter(0)
  %p1 = f32[128,128]{1,0} parameter(1)
  ROOT %d = f32[8,128]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (x: f32[8,128], w: f32[128,128]) -> f32[8,128] {
  %x = f32[8,128]{1,0:T(8,128)S(1)} parameter(0), sharding={devices=[2,1]<=[2]}, metadata={op_name="x"}
  %w = f32[128,128]{1,0} parameter(1), sharding={replicated}
  %start = ((f32[8,128]{1,0}, f32[128,128]{1,0}), f32[8,128]{1,0}, u32[]) async-start(%x, %w), calls=%wrapped_dot, metadata={op_name="jit(step)/dot_general" stack_frame_id=2}
  %done = f32[8,128]{1,0} async-done(%start), metadata={op_name="jit(step)/dot_general" stack_frame_id=2}
  ROOT %s = f32[8,128]{1,0} sinh(%done), metadata={op_name="jit(step)/sinh" source_file="/home/u/model.py" source_line=50}, future_attribute=3
}
)";

TEST(HloLoweringTest, NodesKeepOpNameSourceLineAndSharding) {
  absl::StatusOr<Graph> graph = Lower(kCurrentXla);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const NodeMetadata& done = NodeNamed(*graph, "done").metadata.get();
  EXPECT_EQ(done.op_name, "jit(step)/dot_general");
  EXPECT_EQ(done.file, "/site-packages/flax/linen/linear.py");
  EXPECT_EQ(done.function, "Dense.__call__");
  EXPECT_EQ(done.line, 255);
  const NodeMetadata& sinh = NodeNamed(*graph, "s").metadata.get();
  EXPECT_EQ(sinh.file, "/home/u/model.py");
  EXPECT_EQ(sinh.line, 50);
  EXPECT_EQ(NodeNamed(*graph, "x").metadata.get().sharding,
            "{devices=[2,1]<=[2]}");
  EXPECT_EQ(NodeNamed(*graph, "w").metadata.get().sharding, "{replicated}");
  EXPECT_THAT(graph->warnings(),
              ElementsAre(HasSubstr(
                  "unknown instruction attribute 'future_attribute' skipped")));
}

TEST(HloLoweringTest, AsyncStartIsTheOpItWraps) {
  absl::StatusOr<Graph> graph = Lower(kCurrentXla);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& start = NodeNamed(*graph, "start");
  EXPECT_EQ(start.kind, OpKind::kDot);
  EXPECT_EQ(start.flops, 2.0 * 8 * 128 * 128);
  ASSERT_EQ(start.subgraphs.size(), 1u);
  const Node& done = NodeNamed(*graph, "done");
  EXPECT_EQ(done.kind, OpKind::kIdentity);
  EXPECT_EQ(done.flops, 0);
  // sinh: one transcendental per element.
  EXPECT_EQ(NodeNamed(*graph, "s").kind, OpKind::kTranscendental);
  EXPECT_EQ(graph->total_flops(), 2.0 * 8 * 128 * 128 + 8 * 128);
}

// A module the SPMD partitioner already split 8 ways (the shape of a real
// JAX Megatron feed-forward dump: x[4,1024] @ ff1[1024,4096] @ ff2[4096,1024]
// over a 2x4 mesh): shapes are per device, so costs are per device.
TEST(HloLoweringTest, PartitionedModuleIsCostedPerDevice) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule jit_f, num_partitions=8
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY main {
  x = s32[2,256]{1,0} parameter(0), sharding={devices=[2,4]<=[8]}
  ff1 = s32[1024,1024]{1,0} parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  ff2 = s32[1024,1024]{1,0} parameter(2), sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  ag = s32[2,1024]{1,0} all-gather(x), channel_id=1, replica_groups=[2,4]<=[8], dimensions={1}, use_global_device_ids=true
  d0 = s32[2,1024]{1,0} dot(ag, ff1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = s32[2,1024]{1,0} dot(d0, ff2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT ar = s32[2,1024]{1,0} all-reduce(d1), channel_id=2, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=add
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Global: 2 * 4*1024*4096 * 2 dots = 67,108,864 FLOPs; per device / 8.
  const double global_dot_flops = 2.0 * 4 * 1024 * 4096 * 2;
  EXPECT_EQ(NodeNamed(*graph, "d0").flops + NodeNamed(*graph, "d1").flops,
            global_dot_flops / 8);
  // replica_groups=[2,4]<=[8]: rings of 4 devices. All-gather sends 3/4 of
  // its output (2x1024 s32 = 8 KiB), all-reduce 2 * 3/4 of its operand.
  EXPECT_EQ(NodeNamed(*graph, "ag").attributes.collective_group_size, 4);
  EXPECT_EQ(NodeNamed(*graph, "ag").bytes_communicated, 3 * 2 * 1024);
  EXPECT_EQ(NodeNamed(*graph, "ar").bytes_communicated, 2 * 3 * 2 * 1024);
  EXPECT_EQ(NodeNamed(*graph, "ff1").metadata.get().sharding,
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
}

TEST(HloLoweringTest, FusionIsPreFusedWithItsBodyAsSubgraph) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule fused
fused_computation {
  a = f32[16,32] parameter(0)
  b = f32[32,8] parameter(1)
  d = f32[16,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[16,8] exponential(d)
}
ENTRY main {
  x = f32[16,32] parameter(0)
  y = f32[32,8] parameter(1)
  ROOT f = f32[16,8] fusion(x, y), kind=kOutput, calls=fused_computation
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->num_nodes(), 3);
  const Node& fusion = NodeNamed(*graph, "f");
  EXPECT_EQ(fusion.kind, OpKind::kFusion);
  // dot 2*16*8*32 = 8192, exponential 128.
  EXPECT_EQ(fusion.flops, 8192 + 128);
  // Own operands and output only: (512 + 256 + 128) * 4 bytes.
  EXPECT_EQ(fusion.bytes_read, (512 + 256) * 4);
  EXPECT_EQ(fusion.bytes_written, 128 * 4);
  ASSERT_EQ(fusion.subgraphs.size(), 1u);
  EXPECT_EQ(graph->subgraphs()[fusion.subgraphs[0]]->num_nodes(), 4);
  EXPECT_TRUE(fusion.layout_configurable == false);
}

TEST(HloLoweringTest, ScalarComputationsAreAttributesAndTuplesSplit) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[4,6] parameter(0)
  z = f32[] constant(0)
  r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
  t = (f32[4], (f32[4,6], f32[])) tuple(r, (f32[4,6], f32[]) tuple.1)
  tuple.1 = (f32[4,6], f32[]) tuple(p, z)
  inner = (f32[4,6], f32[]) get-tuple-element(t), index=1
  ROOT g = f32[] get-tuple-element(inner), index=1
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 7);
  EXPECT_TRUE(graph->subgraphs().empty());
  EXPECT_EQ(NodeNamed(*graph, "r").flops, 24);
  const Node& t = NodeNamed(*graph, "t");
  ASSERT_EQ(t.outputs.size(), 2u);
  EXPECT_TRUE(t.outputs[1].is_tuple());
  const NodeId t_id = *graph->FindNode("t");
  // t reads the whole nested tuple; inner reads t's output 1.
  EXPECT_EQ(graph->in_edges(t_id)[1].src_output, Edge::kAllOutputs);
  const NodeId inner = *graph->FindNode("inner");
  EXPECT_EQ(graph->in_edges(inner)[0].src_output, 1);
  EXPECT_EQ(NodeNamed(*graph, "inner").outputs.size(), 2u);
  EXPECT_TRUE(NodeNamed(*graph, "g").attributes.is_root);
}

TEST(HloLoweringTest, CustomCallIsBytesOnlyWithOneWarningPerTarget) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] custom-call(p), custom_call_target="Foo"
  b = f32[4] custom-call(a), custom_call_target="Foo"
  ROOT c = f32[4] custom-call(b), custom_call_target="Bar", backend_config="{}"
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& a = NodeNamed(*graph, "a");
  EXPECT_TRUE(a.cost_unknown);
  EXPECT_EQ(a.bytes_read, 16);
  EXPECT_EQ(a.attributes.custom_call_target(), "Foo");
  EXPECT_THAT(graph->warnings(),
              ElementsAre(HasSubstr("'Foo'"), HasSubstr("'Bar'")));
}

TEST(HloLoweringTest, DeclaredDotShapeMustMatchOperands) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  ROOT dot.3 = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "instruction 'dot.3': declared shape f32[2,5] but the operands "
            "give f32[2,4]");
}

TEST(HloLoweringTest, RejectsInstructionCycles) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule m
ENTRY main {
  a = f32[2] add(b, b)
  ROOT b = f32[2] negate(a)
}
)");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("computation 'main' has a cycle through instruction"));
}

TEST(HloLoweringTest, RejectsComputationCallCycles) {
  absl::StatusOr<Graph> graph = Lower(R"(HloModule m
f {
  x = f32[] parameter(0)
  ROOT y = f32[] call(x), to_apply=g
}
g {
  x = f32[] parameter(0)
  ROOT y = f32[] call(x), to_apply=f
}
ENTRY main {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=f
}
)");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("a cycle"));
}

TEST(HloLoweringTest, LayoutConfigurableByOpcodeUnlessGiven) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule m
ENTRY main {
  p = f32[4,6] parameter(0)
  r = f32[24] reshape(p)
  ROOT n = f32[24] negate(r)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Graph> graph = LowerHloModule(*module, HloLoweringOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(NodeNamed(*graph, "r").layout_configurable);
  EXPECT_FALSE(NodeNamed(*graph, "n").layout_configurable);

  HloLoweringOptions options;
  options.layout_configurable.emplace();
  options.layout_configurable->insert({0, 2});
  graph = LowerHloModule(*module, options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE(NodeNamed(*graph, "r").layout_configurable);
  EXPECT_TRUE(NodeNamed(*graph, "n").layout_configurable);
}

TEST(HloLoweringTest, ReadsKnownTripCount) {
  EXPECT_EQ(KnownTripCount(R"({"known_trip_count":{"n":"12"}})"), 12);
  EXPECT_EQ(KnownTripCount(R"({"known_trip_count": {"n": 7}})"), 7);
  EXPECT_EQ(KnownTripCount("{}"), std::nullopt);
  EXPECT_EQ(KnownTripCount(R"({"known_trip_count":{"n":"x"}})"), std::nullopt);
  EXPECT_EQ(
      KnownTripCount(R"({"known_trip_count":{"n":"99999999999999999999999"}})"),
      std::nullopt);
}

}  // namespace
}  // namespace gopt::graph::hlo
