#include "graph/hlo/gopt_export_restore.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/hlo/hlo_importers.h"
#include "graph/hlo/hlo_text_parser.h"

namespace gopt::graph::hlo {
namespace {

using ::testing::ElementsAre;

// "name(operand names)" of each instruction of `computation`, in order,
// with "ROOT " before its root.
std::vector<std::string> Listing(const HloComputation& computation) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < computation.instructions.size(); ++i) {
    const HloInstruction& instruction = computation.instructions[i];
    std::vector<std::string> operands;
    for (int32_t operand : instruction.operands) {
      operands.push_back(computation.instructions[operand].name);
    }
    lines.push_back(
        absl::StrCat(static_cast<int32_t>(i) == computation.root ? "ROOT " : "",
                     instruction.name, "(", absl::StrJoin(operands, ","), ")"));
  }
  return lines;
}

HloModule Restored(absl::string_view text) {
  absl::StatusOr<HloModule> module = ParseHloText(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  const absl::Status restored = RestoreGoptExport(&*module);
  EXPECT_TRUE(restored.ok()) << restored;
  EXPECT_TRUE(ValidateHloModule(*module).ok());
  return *std::move(module);
}

// The error RestoreGoptExport (or the parser, for a value that is no
// index) gives `text`.
absl::Status RestoreError(absl::string_view text) {
  absl::StatusOr<HloModule> module = ParseHloText(text);
  if (!module.ok()) return module.status();
  return RestoreGoptExport(&*module);
}

constexpr absl::string_view kOriginal = R"hlo(HloModule m

ENTRY main {
  p = f32[4]{0} parameter(0)
  e = f32[4]{0} exponential(p)
  n = f32[4]{0} negate(e)
  ROOT t = f32[4]{0} add(n, p)
}
)hlo";

// The graph a restored module lowers to is the original's, node for node.
void ExpectImportsAsTheOriginal(absl::string_view text) {
  std::unique_ptr<Importer> importer = NewHloTextImporter();
  absl::StatusOr<Graph> original = importer->Import(kOriginal, {});
  absl::StatusOr<Graph> restored = importer->Import(text, {});
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(CompareGraphs(*original, *restored).ok())
      << CompareGraphs(*original, *restored);
}

TEST(RestoreGoptExportTest, ReorderedComputationGoesBackToItsOrder) {
  constexpr absl::string_view kScheduled = R"hlo(HloModule m, is_scheduled=true

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  e = f32[4]{0} exponential(p), frontend_attributes={_gopt_priority="3",_gopt_order="1"}
  n = f32[4]{0} negate(e), frontend_attributes={_gopt_order="2"}
  ROOT t = f32[4]{0} add(n, p), frontend_attributes={_gopt_order="3"}
}
)hlo";
  // The same program listed in another order.
  constexpr absl::string_view kReordered = R"hlo(HloModule m, is_scheduled=true

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  e = f32[4]{0} exponential(p), frontend_attributes={_gopt_order="2"}
  ROOT t = f32[4]{0} add(n, p), frontend_attributes={_gopt_order="3"}
  n = f32[4]{0} negate(p), frontend_attributes={_gopt_order="1"}
}
)hlo";
  EXPECT_THAT(Listing(Restored(kScheduled).entry_computation()),
              ElementsAre("p()", "e(p)", "n(e)", "ROOT t(n,p)"));
  EXPECT_THAT(Listing(Restored(kReordered).entry_computation()),
              ElementsAre("p()", "n(p)", "e(p)", "ROOT t(n,p)"));
  ExpectImportsAsTheOriginal(kScheduled);
}

TEST(RestoreGoptExportTest, SingleOutputFusionUnfolds) {
  constexpr absl::string_view kExport = R"hlo(HloModule m

%gopt_fused_computation.0 (param_0.0: f32[4]) -> f32[4] {
  %param_0.0 = f32[4]{0} parameter(0)
  %e = f32[4]{0} exponential(%param_0.0), frontend_attributes={_gopt_priority="1",_gopt_kernel="0",_gopt_order="1"}
  ROOT %n.fused = f32[4]{0} negate(%e), frontend_attributes={_gopt_priority="2",_gopt_kernel="0",_gopt_order="2"}
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  %n = f32[4]{0} fusion(%p), kind=kLoop, calls=%gopt_fused_computation.0, frontend_attributes={_gopt_order="2"}
  ROOT %t = f32[4]{0} add(%n, %p), frontend_attributes={_gopt_order="3"}
}
)hlo";
  const HloModule module = Restored(kExport);
  ASSERT_EQ(module.computations.size(), 1u);
  EXPECT_EQ(module.entry, 0);
  EXPECT_THAT(Listing(module.entry_computation()),
              ElementsAre("p()", "e(p)", "n(e)", "ROOT t(n,p)"));
  EXPECT_EQ(module.entry_computation().instructions[2].opcode, "negate");
  ExpectImportsAsTheOriginal(kExport);
}

TEST(RestoreGoptExportTest, MultiOutputFusionUnfolds) {
  constexpr absl::string_view kExport = R"hlo(HloModule m

%gopt_fused_computation.0 (param_0.0: f32[4]) -> (f32[4], f32[4]) {
  %param_0.0 = f32[4]{0} parameter(0)
  %e.fused = f32[4]{0} exponential(%param_0.0), frontend_attributes={_gopt_order="1"}
  %n.fused = f32[4]{0} negate(%e.fused), frontend_attributes={_gopt_order="2"}
  ROOT %gopt_tuple.0 = (f32[4]{0}, f32[4]{0}) tuple(%e.fused, %n.fused)
}

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  gopt_fusion.0 = (f32[4]{0}, f32[4]{0}) fusion(p), kind=kLoop, calls=%gopt_fused_computation.0
  n = f32[4]{0} get-tuple-element(gopt_fusion.0), index=1, frontend_attributes={_gopt_order="2"}
  e = f32[4]{0} get-tuple-element(gopt_fusion.0), index=0, frontend_attributes={_gopt_order="1"}
  ROOT t = f32[4]{0} add(n, e), frontend_attributes={_gopt_order="3"}
}
)hlo";
  const HloModule module = Restored(kExport);
  ASSERT_EQ(module.computations.size(), 1u);
  EXPECT_THAT(Listing(module.entry_computation()),
              ElementsAre("p()", "e(p)", "n(e)", "ROOT t(n,e)"));
}

// A computation where only some instructions carry _gopt_order (a user
// edited the file) keeps the order it is written in.
TEST(RestoreGoptExportTest, PartlyMarkedComputationIsLeftAsWritten) {
  const HloModule module = Restored(R"hlo(HloModule m

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  n = f32[4]{0} negate(p), frontend_attributes={_gopt_order="2"}
  e = f32[4]{0} exponential(p)
  ROOT t = f32[4]{0} add(n, e), frontend_attributes={_gopt_order="3"}
}
)hlo");
  EXPECT_THAT(Listing(module.entry_computation()),
              ElementsAre("p()", "n(p)", "e(p)", "ROOT t(n,e)"));
}

// The caller's own fusion (not a gopt fused computation), and a gopt one
// whose instructions do not all carry _gopt_order (as the batch-norm
// expansion the text export writes), stay fusions.
TEST(RestoreGoptExportTest, FusionsGoptCannotUnfoldStayFusions) {
  for (absl::string_view callee :
       {"fused_computation", "gopt_fused_computation.0"}) {
    SCOPED_TRACE(callee);
    const bool gopt = callee != "fused_computation";
    const std::string text =
        absl::StrCat(R"hlo(HloModule m

%)hlo",
                     callee, R"hlo( (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %c = f32[] constant(2))hlo",
                     gopt ? "" : R"(, frontend_attributes={_gopt_order="1"})",
                     R"hlo(
  %b = f32[4]{0} broadcast(%c), dimensions={}, frontend_attributes={_gopt_order="2"}
  ROOT %m.fused = f32[4]{0} multiply(%param_0, %b), frontend_attributes={_gopt_order="3"}
}

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  ROOT m = f32[4]{0} fusion(p), kind=kLoop, calls=%)hlo",
                     callee, R"hlo(, frontend_attributes={_gopt_order="1"}
}
)hlo");
    const HloModule module = Restored(text);
    ASSERT_EQ(module.computations.size(), 2u);
    EXPECT_THAT(Listing(module.entry_computation()),
                ElementsAre("p()", "ROOT m(p)"));
    EXPECT_EQ(module.entry_computation().instructions[1].opcode, "fusion");
    EXPECT_THAT(
        Listing(module.computations[0]),
        ElementsAre("param_0()", "c()", "b(c)", "ROOT m.fused(param_0,b)"));
  }
}

// Hostile variations of a gopt fusion stay fusions, without a crash: a
// restored name the caller already has, a member reading the exporter's
// tuple root, and a member with a reduce region (which does unfold).
TEST(RestoreGoptExportTest, EditedGoptFusionsStayFusions) {
  const HloModule clash = Restored(R"hlo(HloModule m

%gopt_fused_computation.0 (param_0.0: f32[4]) -> f32[4] {
  %param_0.0 = f32[4]{0} parameter(0)
  %p = f32[4]{0} exponential(%param_0.0), frontend_attributes={_gopt_order="1"}
  ROOT %n.fused = f32[4]{0} negate(%p), frontend_attributes={_gopt_order="2"}
}

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  ROOT n = f32[4]{0} fusion(p), kind=kLoop, calls=%gopt_fused_computation.0, frontend_attributes={_gopt_order="2"}
}
)hlo");
  EXPECT_EQ(clash.computations.size(), 2u);
  const HloModule tuple_read = Restored(R"hlo(HloModule m

%gopt_fused_computation.0 (param_0.0: f32[4]) -> (f32[4], f32[4]) {
  %param_0.0 = f32[4]{0} parameter(0)
  %e.fused = f32[4]{0} exponential(%param_0.0), frontend_attributes={_gopt_order="1"}
  %x = f32[4]{0} get-tuple-element(%gopt_tuple.0), index=0, frontend_attributes={_gopt_order="2"}
  ROOT %gopt_tuple.0 = (f32[4]{0}, f32[4]{0}) tuple(%e.fused, %e.fused)
}

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  gopt_fusion.0 = (f32[4]{0}, f32[4]{0}) fusion(p), kind=kLoop, calls=%gopt_fused_computation.0
  ROOT e = f32[4]{0} get-tuple-element(gopt_fusion.0), index=0, frontend_attributes={_gopt_order="1"}
}
)hlo");
  EXPECT_EQ(tuple_read.computations.size(), 2u);
  const HloModule reduce = Restored(R"hlo(HloModule m

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%gopt_fused_computation.0 (param_0.0: f32[4], param_1.0: f32[]) -> f32[1] {
  %param_0.0 = f32[4]{0} parameter(0)
  %param_1.0 = f32[] parameter(1)
  %r = f32[] reduce(%param_0.0, %param_1.0), dimensions={0}, to_apply=%sum, frontend_attributes={_gopt_order="2"}
  ROOT %t.fused = f32[1]{0} reshape(%r), frontend_attributes={_gopt_order="3"}
}

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="0"}
  z = f32[] constant(0), frontend_attributes={_gopt_order="1"}
  ROOT t = f32[1]{0} fusion(p, z), kind=kInput, calls=%gopt_fused_computation.0, frontend_attributes={_gopt_order="3"}
}
)hlo");
  ASSERT_EQ(reduce.computations.size(), 2u);
  EXPECT_EQ(reduce.entry, 1);
  EXPECT_THAT(Listing(reduce.entry_computation()),
              ElementsAre("p()", "z()", "r(p,z)", "ROOT t(r)"));
  EXPECT_THAT(reduce.entry_computation().instructions[2].called_computations,
              ElementsAre(0));
}

constexpr absl::string_view kBadOrderTemplate = R"hlo(HloModule m

ENTRY main {
  p = f32[4]{0} parameter(0), frontend_attributes={_gopt_order="P"}
  n = f32[4]{0} negate(p), frontend_attributes={_gopt_order="N"}
  ROOT e = f32[4]{0} exponential(n), frontend_attributes={_gopt_order="E"}
}
)hlo";

absl::Status BadOrder(absl::string_view p, absl::string_view n,
                      absl::string_view e) {
  std::string text(kBadOrderTemplate);
  for (auto [key, value] :
       {std::pair{"\"P\"", p}, {"\"N\"", n}, {"\"E\"", e}}) {
    text.replace(text.find(key), 3, absl::StrCat("\"", value, "\""));
  }
  return RestoreError(text);
}

TEST(RestoreGoptExportTest, BadOrderIsInvalidArgumentNamingTheInstruction) {
  EXPECT_TRUE(BadOrder("0", "1", "2").ok());
  const struct {
    const char* p;
    const char* n;
    const char* e;
    const char* message;
  } kCases[] = {
      {"0", "one", "2",
       "hlo text line 5 col 61: computation 'main' instruction 'n' frontend "
       "attribute _gopt_order: \"one\" is not a number"},
      {"0", "1", "4294967296",
       "hlo text line 6 col 71: computation 'main' instruction 'e' frontend "
       "attribute _gopt_order: 4294967296 is out of range (an instruction "
       "index, 0 to 2147483647)"},
      {"0", "1", "3",
       "computation 'main' instruction 'e' frontend attribute _gopt_order: 3 "
       "is out of range (the computation can have had at most 3 "
       "instructions)"},
      {"0", "1", "1",
       "computation 'main' instruction 'e' frontend attribute _gopt_order: 1 "
       "is also the position of instruction 'n'"},
      {"1", "0", "2",
       "computation 'main' instruction 'n' frontend attribute _gopt_order: 0 "
       "puts it before its operand 'p' (1)"},
  };
  for (const auto& c : kCases) {
    const absl::Status status = BadOrder(c.p, c.n, c.e);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(std::string(status.message()), c.message);
  }
}

TEST(ParseExportPositionTest, ReadsAnIndex) {
  EXPECT_EQ(*ParseExportPosition("7", "x"), 7);
  EXPECT_EQ(ParseExportPosition("-1", "x").status().message(),
            "x frontend attribute _gopt_order: -1 is out of range (an "
            "instruction index, 0 to 2147483647)");
}

}  // namespace
}  // namespace gopt::graph::hlo
