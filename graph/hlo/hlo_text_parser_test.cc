#include "graph/hlo/hlo_text_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "graph/hlo/hlo_printer.h"

namespace gopt::graph::hlo {
namespace {

using ::testing::HasSubstr;

const HloInstruction& Find(const HloModule& module, absl::string_view name) {
  for (const HloComputation& computation : module.computations) {
    for (const HloInstruction& instruction : computation.instructions) {
      if (instruction.name == name) return instruction;
    }
  }
  ADD_FAILURE() << "no instruction " << name;
  static const HloInstruction* const kNone = new HloInstruction();
  return *kNone;
}

constexpr absl::string_view kCurrentSyntax = R"(
// A comment before the header.
HloModule current, is_scheduled=true, entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}

add.1 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT sum = f32[] add(x, y)
}

ENTRY main {
  p = f32[2,3]{1,0:T(8,128)} parameter(0)
  zero = f32[] constant(0)
  r = f32[2]{0} reduce(p, zero), dimensions={1}, to_apply=add.1
  t = (f32[2]{0}, f32[2,3]) tuple(r, p)
  ROOT g = f32[2]{0} get-tuple-element(t), index=0
}
)";

TEST(HloTextParserTest, ParsesCurrentSyntax) {
  absl::StatusOr<HloModule> module = ParseHloText(kCurrentSyntax);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->name, "current");
  ASSERT_EQ(module->computations.size(), 2u);
  EXPECT_EQ(module->entry, 1);
  const HloComputation& entry = module->entry_computation();
  EXPECT_EQ(entry.name, "main");
  ASSERT_EQ(entry.instructions.size(), 5u);
  EXPECT_EQ(entry.root, 4);
  const HloInstruction& p = Find(*module, "p");
  EXPECT_EQ(p.shape.ToString(), "f32[2,3]{1,0}");  // tiling dropped
  EXPECT_EQ(p.attributes.parameter_number, 0);
  const HloInstruction& r = Find(*module, "r");
  EXPECT_EQ(r.operands, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(r.called_computations, (std::vector<int32_t>{0}));
  EXPECT_EQ(r.attributes.dimensions, (std::vector<int64_t>{1}));
  const HloInstruction& t = Find(*module, "t");
  EXPECT_TRUE(t.shape.is_tuple);
  EXPECT_EQ(t.shape.ToString(), "(f32[2]{0}, f32[2,3])");
  EXPECT_EQ(Find(*module, "g").attributes.tuple_index, 0);
  EXPECT_EQ(Find(*module, "zero").literal.get(), "0");
}

constexpr absl::string_view kOlderSyntax =
    R"(HloModule older, input_output_alias={ {0}: (1, {}, must-alias) }

%body (arg: (s32[], f32[4])) -> (s32[], f32[4]) {
  %arg = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[4]{0}) %arg), index=0
  %v = f32[4]{0} get-tuple-element((s32[], f32[4]{0}) %arg), index=1
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one), metadata={op_type="add" op_name="jit(f)/add" source_file="a{b}.py" source_line=3}
  ROOT %out = (s32[], f32[4]{0}) tuple(s32[] %next, f32[4]{0} %v), sharding={{replicated}, {maximal device=0}}
}

%cond (arg: (s32[], f32[4])) -> pred[] {
  %arg = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[4]{0}) %arg), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT, frontend_attributes={_xla_x="1"}
}

ENTRY %main.7 (a: s32[], b: f32[4]) -> (s32[], f32[4]) {
  %a = s32[] parameter(0)
  %b = f32[4]{0} parameter(1)
  %init = (s32[], f32[4]{0}, /*index=2*/s32[]) tuple(s32[] %a, f32[4]{0} %b, /*index=2*/s32[] %a)
  %pair = (s32[], f32[4]{0}) tuple(s32[] %a, f32[4]{0} %b)
  ROOT %w = (s32[], f32[4]{0}) while((s32[], f32[4]{0}) %pair), condition=%cond, body=%body, backend_config="{\"known_trip_count\":{\"n\":\"10\"},\"x\":\"}{\"}"
}
)";

// What a current XLA prints (HloModule::ToString with stack frames): module
// settings, the four stack-frame tables, metadata with stack_frame_id,
// frontend attributes, origin, statistics, backend configs as JSON and as
// strings, tiled layouts with memory spaces, control predecessors, an async
// pair with its wrapped computation, custom_call_schedule, shardings, and
// one attribute no XLA prints (skipped with a warning).
constexpr absl::string_view kCurrentXla =
    R"(HloModule jit_step, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, f32[128,128]{1,0})->f32[8,128]{1,0}}, input_output_alias={ {}: (0, {}, may-alias) }, buffer_donor={ (1, {}) }, replica_count=2, num_partitions=4, use_auto_spmd_partitioning=true, spmd_output_sharding={replicated}, allow_spmd_sharding_propagation_to_output={true}, frontend_attributes={fingerprint_before_lhs="abc"}

FileNames
1 "/home/u/model.py"
2 "/usr/lib/python3/site-packages/flax/linen/linear.py"

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
  ROOT %d = f32[8,128]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={default,default}
}

ENTRY %main.7 (x.1: f32[8,128], w.1: f32[128,128]) -> f32[8,128] {
  %x.1 = f32[8,128]{1,0:T(8,128)S(1)} parameter(0), sharding={devices=[4,1]<=[4]}, metadata={op_name="x"}
  %w.1 = f32[128,128]{1,0:T(8,128)(2,1)} parameter(1), sharding={replicated}
  %start = ((f32[8,128]{1,0}, f32[128,128]{1,0}), f32[8,128]{1,0}, u32[]{:S(2)}) async-start(%x.1, %w.1), calls=%wrapped_dot, metadata={op_name="jit(step)/dot_general" stack_frame_id=2}, frontend_attributes={_xla_stream_annotation="1"}
  %update = ((f32[8,128]{1,0}, f32[128,128]{1,0}), f32[8,128]{1,0}, u32[]{:S(2)}) async-update(%start)
  %done = f32[8,128]{1,0} async-done(%update), metadata={op_name="jit(step)/dot_general" stack_frame_id=2}
  %cc = f32[8,128]{1,0} custom-call(%done), custom_call_target="Sharding", custom_call_schedule=SCHEDULE_LATEST, custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, backend_config="opaque \"string\" config"
  %t = f32[8,128]{1,0} tanh(%cc), origin={{"tanh.3"}}, statistics={visualizing_index=1,stat-index-0=0.5}, control-predecessors={%done}, backend_config={"flag_configs":[],"scoped_memory_configs":[{"size":"1"}]}, result_accuracy={tolerance={atol=0,rtol=0,ulps=1}}
  ROOT %s = f32[8,128]{1,0} sinh(%t), metadata={op_name="jit(step)/sinh" source_file="/home/u/model.py" source_line=50}, some_future_attribute={a=1}, another_one=7
}
)";

TEST(HloTextParserTest, ParsesWhatCurrentXlaPrints) {
  absl::StatusOr<HloModule> module = ParseHloText(kCurrentXla);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(module->config.is_scheduled);
  EXPECT_EQ(module->config.replica_count, 2);
  EXPECT_EQ(module->config.num_partitions, 4);
  EXPECT_TRUE(module->config.use_auto_spmd_partitioning);
  ASSERT_EQ(module->computations.size(), 2u);
  EXPECT_EQ(module->entry_computation().name, "main.7");
  EXPECT_EQ(module->entry_computation().instructions.size(), 8u);

  const HloInstruction& x = Find(*module, "x.1");
  EXPECT_EQ(x.shape.minor_to_major, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(x.sharding.get(), "{devices=[4,1]<=[4]}");
  EXPECT_EQ(x.metadata.get().op_name, "x");
  const HloInstruction& start = Find(*module, "start");
  EXPECT_EQ(start.metadata.get().op_name, "jit(step)/dot_general");
  EXPECT_EQ(start.metadata.get().stack_frame_id, 2);
  ASSERT_EQ(start.called_computations.size(), 1u);
  EXPECT_EQ(module->computations[start.called_computations[0]].name,
            "wrapped_dot");
  EXPECT_EQ(Find(*module, "cc").backend_config.get(),
            "opaque \"string\" config");
  EXPECT_THAT(Find(*module, "t").backend_config.get(),
              HasSubstr("scoped_memory_configs"));
  const HloMetadata& s = Find(*module, "s").metadata.get();
  EXPECT_EQ(s.source_file, "/home/u/model.py");
  EXPECT_EQ(s.source_line, 50);

  std::string file, function;
  int32_t line = 0;
  ASSERT_TRUE(module->stack_frames.Resolve(2, &file, &function, &line));
  EXPECT_EQ(file, "/usr/lib/python3/site-packages/flax/linen/linear.py");
  EXPECT_EQ(function, "Dense.__call__");
  EXPECT_EQ(line, 255);
  EXPECT_FALSE(module->stack_frames.Resolve(9, &file, &function, &line));

  // Unknown attributes are skipped, one warning each, naming where.
  ASSERT_EQ(module->warnings.size(), 2u);
  EXPECT_THAT(module->warnings[0],
              HasSubstr("unknown instruction attribute 'some_future_attribute'"
                        " skipped (first at line 34 col"));
  EXPECT_THAT(module->warnings[1], HasSubstr("'another_one'"));
}

// TF-XLA clusters print parameter_replication on entry parameters (seen on
// a real GraphSAGE cluster): a known attribute, read past without a warning.
TEST(HloTextParserTest, ReadsParameterReplicationWithoutAWarning) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule cluster_0
ENTRY %main (a: s32[4], b: f32[]) -> s32[4] {
  %a = s32[4]{0} parameter(0), parameter_replication={false}, metadata={op_name="XLA_Args"}
  %b = f32[] parameter(1), parameter_replication={true}
  ROOT %n = s32[4]{0} negate(%a)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(Find(*module, "a").metadata.get().op_name, "XLA_Args");
  EXPECT_THAT(module->warnings, ::testing::IsEmpty());
}

TEST(HloTextParserTest, AComputationNamedLikeATableIsAComputation) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule m
StackFrames {
  ROOT c = f32[] constant(1)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->entry_computation().name, "StackFrames");
}

TEST(HloTextParserTest, AnEmptyTableIsATable) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule m
FunctionNames

StackFrames
1 {file_location_id=1}
ENTRY e {
  ROOT c = f32[] constant(1)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->stack_frames.frames.size(), 1u);
  EXPECT_EQ(module->entry_computation().name, "e");
}

TEST(HloTextParserTest, BadStackFrameTableNamesLineAndColumn) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule m

FileLocations
1 {file_name_id=1 line=}

ENTRY e {
  ROOT c = f32[] constant(1)
}
)");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(),
              HasSubstr("line 4 col 24: expected an attribute value"));

  module = ParseHloText("HloModule m\nFileNames\n1 \"unterminated\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(),
              HasSubstr("line 3 col 3: unterminated string"));

  module = ParseHloText("HloModule m, num_partitions=0\nENTRY e {\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(),
              HasSubstr("line 1 col 29: num_partitions must be at least 1"));
}

TEST(HloTextParserTest, ReadsCurrentNarrowFloatTypesAtTheirWidth) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule m
ENTRY e {
  a = f8e4m3fnuz[16]{0} parameter(0)
  ROOT b = f4e2m1fn[16]{0} convert(a)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(Find(*module, "a").shape.dtype, DType::kF8E4M3FN);
  EXPECT_EQ(Find(*module, "b").shape.dtype, DType::kU4);
}

TEST(HloTextParserTest, ParsesOlderSyntax) {
  absl::StatusOr<HloModule> module = ParseHloText(kOlderSyntax);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->entry_computation().name, "main.7");
  const HloInstruction& w = Find(*module, "w");
  EXPECT_EQ(w.opcode, "while");
  // Body first, then condition, as XLA orders them.
  EXPECT_EQ(w.called_computations, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(w.backend_config.get(),
            R"({"known_trip_count":{"n":"10"},"x":"}{"})");
  EXPECT_EQ(Find(*module, "init").shape.tuple_shapes.size(), 3u);
  EXPECT_EQ(Find(*module, "init").operands, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(Find(*module, "lt").attributes.comparison(), "LT");
  EXPECT_EQ(Find(*module, "next").operands, (std::vector<int32_t>{1, 3}));
}

TEST(HloTextParserTest, ParsesConvolutionDotSliceAndPadAttributes) {
  absl::StatusOr<HloModule> module = ParseHloText(R"(HloModule attrs
ENTRY e {
  in = f32[1,8,8,3] parameter(0)
  k = f32[3,3,3,16] parameter(1)
  c = f32[1,4,4,16] convolution(in, k), window={size=3x3 stride=2x2 pad=1_1x0_-1 lhs_dilate=1x1 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1
  m = f32[4,16] reshape(c)
  n = f32[16,5] parameter(2)
  d = f32[4,5] dot(m, n), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[2,2] slice(d), slice={[0:4:2], [1:3]}
  z = f32[] constant(0)
  ROOT p = f32[5,7] pad(s, z), padding=1_2x0_1_2
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  const OpAttributes& c = Find(*module, "c").attributes;
  ASSERT_EQ(c.window().size(), 2u);
  EXPECT_EQ(c.window()[0].size, 3);
  EXPECT_EQ(c.window()[0].stride, 2);
  EXPECT_EQ(c.window()[1].padding_low, 0);
  EXPECT_EQ(c.window()[1].padding_high, -1);
  EXPECT_EQ(c.window()[0].window_dilation, 2);
  EXPECT_TRUE(c.window()[1].reversal);
  ASSERT_TRUE(c.has_convolution_dimensions);
  EXPECT_EQ(c.convolution().input_batch, 0);
  EXPECT_EQ(c.convolution().input_feature, 3);
  EXPECT_EQ(c.convolution().input_spatial, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.convolution().kernel_input_feature, 2);
  EXPECT_EQ(c.convolution().kernel_output_feature, 3);
  EXPECT_EQ(c.convolution().kernel_spatial, (std::vector<int64_t>{0, 1}));
  const OpAttributes& d = Find(*module, "d").attributes;
  EXPECT_TRUE(d.has_dot_dimensions);
  EXPECT_EQ(d.dot().lhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_EQ(d.dot().rhs_contracting, (std::vector<int64_t>{0}));
  const OpAttributes& s = Find(*module, "s").attributes;
  EXPECT_EQ(s.slice_starts(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.slice_limits(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(s.slice_strides(), (std::vector<int64_t>{2, 1}));
  const OpAttributes& p = Find(*module, "p").attributes;
  ASSERT_EQ(p.padding().size(), 2u);
  EXPECT_EQ(p.padding()[0], (PaddingDimension{1, 2, 0}));
  EXPECT_EQ(p.padding()[1], (PaddingDimension{0, 1, 2}));
}

TEST(HloTextParserTest, UndefinedOperandNamesLineAndColumn) {
  absl::StatusOr<HloModule> module = ParseHloText(
      "HloModule m\n"
      "ENTRY main {\n"
      "  x = f32[] parameter(0)\n"
      "  ROOT add.3 = f32[] add(x, foo)\n"
      "}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(module.status().message(),
            "hlo text line 4 col 29: instruction '%add.3' operand 1 '%foo' is "
            "not defined in computation 'main'");
}

TEST(HloTextParserTest, RejectsBadShape) {
  absl::StatusOr<HloModule> module = ParseHloText(
      "HloModule m\nENTRY main {\n  ROOT x = f33[2] parameter(0)\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(),
              HasSubstr("line 3 col 12: expected a shape, found 'f33'"));
}

TEST(HloTextParserTest, RejectsOverflowingDimensions) {
  absl::StatusOr<HloModule> module = ParseHloText(
      "HloModule m\nENTRY main {\n"
      "  ROOT x = f32[99999999999,99999999999] parameter(0)\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("line 3 col 12"));
  EXPECT_THAT(module.status().message(), HasSubstr("more than 2^50"));
  module = ParseHloText(
      "HloModule m\nENTRY main {\n"
      "  ROOT x = f32[99999999999999999999] parameter(0)\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("overflows 64 bits"));
}

TEST(HloTextParserTest, RejectsTruncatedText) {
  const std::string text(kOlderSyntax);
  // Every prefix must fail cleanly (or, for the full text, succeed).
  for (size_t size = 0; size < text.size(); size += 7) {
    absl::StatusOr<HloModule> module = ParseHloText(text.substr(0, size));
    EXPECT_FALSE(module.ok()) << "prefix of " << size << " bytes parsed";
  }
  absl::StatusOr<HloModule> module =
      ParseHloText(text.substr(0, text.find("ROOT %lt")));
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("hlo text line"));
}

TEST(HloTextParserTest, RejectsDeeplyNestedTuples) {
  std::string shape;
  for (int i = 0; i < 200; ++i) shape += "(";
  shape += "f32[]";
  for (int i = 0; i < 200; ++i) shape += ")";
  absl::StatusOr<HloModule> module = ParseHloText(
      "HloModule m\nENTRY main {\n  ROOT x = " + shape + " parameter(0)\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(), HasSubstr("nested deeper"));
}

TEST(HloTextParserTest, RejectsUndefinedComputation) {
  absl::StatusOr<HloModule> module = ParseHloText(
      "HloModule m\nENTRY main {\n  x = f32[] parameter(0)\n"
      "  ROOT c = f32[] call(x), to_apply=%missing\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(module.status().message(),
              HasSubstr("line 4 col 36: instruction '%c' calls undefined "
                        "computation '%missing'"));
}

TEST(HloTextParserTest, SniffsHloText) {
  EXPECT_TRUE(LooksLikeHloText("HloModule m\n"));
  EXPECT_TRUE(LooksLikeHloText("  // c\n/* d */ HloModule m, x=1\n"));
  EXPECT_FALSE(LooksLikeHloText("HloModules m\n"));
  EXPECT_FALSE(LooksLikeHloText("ir_version: 7"));
  EXPECT_FALSE(LooksLikeHloText(""));
}

TEST(HloTextParserTest, PrintedModuleParsesToTheSameModule) {
  absl::StatusOr<HloModule> module = ParseHloText(kOlderSyntax);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintHloModule(*module);
  absl::StatusOr<HloModule> again = ParseHloText(printed);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
  ASSERT_EQ(again->computations.size(), module->computations.size());
  for (size_t c = 0; c < module->computations.size(); ++c) {
    const HloComputation& a = module->computations[c];
    const HloComputation& b = again->computations[c];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.root, b.root);
    ASSERT_EQ(a.instructions.size(), b.instructions.size());
    for (size_t i = 0; i < a.instructions.size(); ++i) {
      const HloInstruction& x = a.instructions[i];
      const HloInstruction& y = b.instructions[i];
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(x.opcode, y.opcode);
      EXPECT_EQ(x.shape, y.shape);
      EXPECT_EQ(x.operands, y.operands);
      EXPECT_EQ(x.called_computations, y.called_computations);
      EXPECT_TRUE(x.attributes == y.attributes) << x.name;
      EXPECT_EQ(x.backend_config.get(), y.backend_config.get());
    }
  }
  EXPECT_EQ(PrintHloModule(*again), printed);
}

}  // namespace
}  // namespace gopt::graph::hlo
