// The HLO exporters (text and HloModuleProto) on small modules written by
// hand: fusion instructions, the schedule as instruction order, SPMD
// programs, batch norms and bad layouts.

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/decisions.h"
#include "graph/fingerprint.h"
#include "graph/import/export_testing.h"
#include "gtest/gtest.h"
#include "simulator/fusion_rules.h"
#include "xla/hlo.pb.h"

namespace gopt::graph {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// The one device the small modules here are placed on.
const std::vector<ExportDevice>& OneGpu() {
  static const auto* const kDevices =
      new std::vector<ExportDevice>{{"gpu:0", "gpu"}};
  return *kDevices;
}

// `plan` written into `contents` by the exporter of `format`, for OneGpu.
absl::StatusOr<ExportResult> ExportOnOneGpu(const BuiltinRegistries& registries,
                                            const std::string& format,
                                            const std::string& contents,
                                            const Graph& graph,
                                            const gopt::v1::Plan& plan) {
  ExportOptions options;
  options.devices = OneGpu();
  return (*registries.exporters.Find(format))
      ->Export(contents, graph, plan, options);
}

// A small module by hand: a group with two outputs (one a dot: kOutput,
// written as a tuple-rooted fusion and get-tuple-elements) and a group
// ending in the root (kLoop, the fusion takes the root's name and id).
TEST(HloProtoFusionTest, OutputsKeepTheirNamesAndIds) {
  const std::string text = R"pb(
    name: "small"
    entry_computation_name: "main"
    entry_computation_id: 7
    computations {
      name: "main"
      id: 7
      root_id: 6
      instructions {
        name: "p0"
        opcode: "parameter"
        id: 1
        parameter_number: 0
        shape {
          element_type: F32
          dimensions: [ 8, 16 ]
          layout { minor_to_major: [ 1, 0 ] }
        }
      }
      instructions {
        name: "p1"
        opcode: "parameter"
        id: 2
        parameter_number: 1
        shape {
          element_type: F32
          dimensions: [ 16, 4 ]
          layout { minor_to_major: [ 1, 0 ] }
        }
      }
      instructions {
        name: "dot"
        opcode: "dot"
        id: 3
        operand_ids: [ 1, 2 ]
        shape {
          element_type: F32
          dimensions: [ 8, 4 ]
          layout { minor_to_major: [ 1, 0 ] }
        }
        dot_dimension_numbers {
          lhs_contracting_dimensions: 1
          rhs_contracting_dimensions: 0
        }
        metadata { op_name: "jit(f)/dot" }
      }
      instructions {
        name: "neg"
        opcode: "negate"
        id: 4
        operand_ids: 3
        shape {
          element_type: F32
          dimensions: [ 8, 4 ]
          layout { minor_to_major: [ 1, 0 ] }
        }
      }
      instructions {
        name: "exp"
        opcode: "exponential"
        id: 5
        operand_ids: 4
        shape {
          element_type: F32
          dimensions: [ 8, 4 ]
          layout { minor_to_major: [ 1, 0 ] }
        }
      }
      instructions {
        name: "mul"
        opcode: "multiply"
        id: 6
        operand_ids: [ 5, 3 ]
        shape {
          element_type: F32
          dimensions: [ 8, 4 ]
          layout { minor_to_major: [ 1, 0 ] }
        }
        metadata { op_name: "jit(f)/mul" }
      }
    }
  )pb";
  xla::HloModuleProto input;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &input));
  const std::string contents = input.SerializeAsString();
  const BuiltinRegistries registries;
  absl::StatusOr<Graph> graph =
      registries.importers.Import(contents, "hlo-proto", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  gopt::v1::Plan plan = PlanFusing(*graph, {"dot", "neg"});
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    const std::string& name = graph->node(id).name;
    if (name == "exp" || name == "mul") plan.set_fusion_group(id, 1);
    plan.set_priority(id, id);
  }
  const Exporter& exporter = **registries.exporters.Find("hlo-proto");
  absl::StatusOr<ExportResult> exported =
      ExportOnOneGpu(registries, "hlo-proto", contents, *graph, plan);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->warnings, ::testing::IsEmpty());
  xla::HloModuleProto module;
  ASSERT_TRUE(module.ParseFromString(exported->contents));
  const std::vector<xla::HloInstructionProto> fusions =
      CheckFusedModule(module);
  ASSERT_EQ(fusions.size(), 2u);
  ASSERT_EQ(module.computations_size(), 3);
  const xla::HloComputationProto& main = module.computations(2);
  EXPECT_EQ(main.name(), "main");
  EXPECT_EQ(main.root_id(), 6);
  std::vector<std::string> names;
  for (const auto& instruction : main.instructions()) {
    names.push_back(absl::StrCat(instruction.name(), ":", instruction.opcode(),
                                 ":", instruction.id()));
  }
  EXPECT_THAT(names, ::testing::ElementsAre(
                         "p0:parameter:1", "p1:parameter:2",
                         "gopt_fusion.0:fusion:12", "dot:get-tuple-element:3",
                         "neg:get-tuple-element:4", "mul:fusion:6"));
  EXPECT_EQ(fusions[0].fusion_kind(), "kOutput");
  EXPECT_EQ(fusions[0].metadata().op_name(), "jit(f)/dot");
  EXPECT_EQ(fusions[1].fusion_kind(), "kLoop");
  EXPECT_EQ(fusions[1].metadata().op_name(), "jit(f)/mul");
  EXPECT_THAT(fusions[1].operand_ids(), ::testing::ElementsAre(4, 3));
  const xla::HloComputationProto& loop = module.computations(1);
  EXPECT_EQ(loop.name(), "gopt_fused_computation.1");
  EXPECT_EQ(loop.program_shape().parameter_names_size(), 2);
  std::vector<std::string> inner;
  for (const auto& instruction : loop.instructions()) {
    inner.push_back(
        absl::StrCat(instruction.name(), ":", instruction.opcode()));
  }
  EXPECT_THAT(inner, ::testing::ElementsAre(
                         "param_0.1:parameter", "param_1.1:parameter",
                         "exp:exponential", "mul.fused:multiply"));

  absl::StatusOr<Graph> again =
      registries.importers.Import(exported->contents, "hlo-proto", {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(TotalFlops(*again), TotalFlops(*graph));
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter.ReadPlan(exported->contents, *again, OneGpu());
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  EXPECT_TRUE(CheckPlanFitsGraph(*again, **read, 1).ok());

  // Exported into again with the same plan: the original graph and plan
  // come back (the bytes differ: the get-tuple-elements the fusion feeds
  // take their outputs' decisions and file positions).
  absl::StatusOr<ExportResult> second =
      ExportOnOneGpu(registries, "hlo-proto", exported->contents, *again, plan);
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<Graph> back =
      registries.importers.Import(second->contents, "hlo-proto", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(GraphFingerprint(*back), GraphFingerprint(*graph));
  absl::StatusOr<std::optional<gopt::v1::Plan>> reread =
      exporter.ReadPlan(second->contents, *back, OneGpu());
  ASSERT_TRUE(reread.ok() && reread->has_value()) << reread.status();
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    EXPECT_EQ((*reread)->fusion_group(id), plan.fusion_group(id)) << id;
    EXPECT_EQ((*reread)->priority(id), plan.priority(id)) << id;
  }
}

// A row-sharded dot over 8 partitions (the SPMD importer costs it per
// shard): the export keeps the module's shardings and reads back the same
// plan, since placement is the module's own.
TEST(HloSpmdExportTest, ShardingsStayAsWrittenAndThePlanReadsBack) {
  const std::string contents = R"hlo(HloModule spmd, num_partitions=8

ENTRY main {
  lhs = f32[1024,1024]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}
  rhs = f32[1024,1024]{1,0} parameter(1), sharding={replicated}
  ROOT dot = f32[1024,1024]{1,0} dot(lhs, rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[8,1]<=[8]}
}
)hlo";
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->spmd().num_partitions, 8);
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    plan.add_device(0);
    plan.add_priority(1 + id % 3);
  }
  const Exporter& exporter = **exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      ExportOnOneGpu(registries, "hlo", contents, *graph, plan);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->contents,
              HasSubstr("parameter(0), sharding={devices=[8,1]<=[8]}"));
  EXPECT_THAT(exported->contents, HasSubstr("sharding={replicated}"));
  EXPECT_THAT(exported->contents, Not(HasSubstr("maximal")));
  EXPECT_THAT(exported->warnings,
              Contains(HasSubstr("its shardings are kept as written")));
  // Not is_scheduled: that would mark the program as partitioned.
  EXPECT_THAT(exported->contents, Not(HasSubstr("is_scheduled")));
  EXPECT_THAT(exported->warnings,
              Contains(HasSubstr("SPMD module before partitioning")));

  absl::StatusOr<Graph> reimported =
      importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(reimported.ok()) << reimported.status();
  absl::StatusOr<std::optional<gopt::v1::Plan>> embedded =
      exporter.ReadPlan(exported->contents, *reimported, OneGpu());
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  ASSERT_TRUE(embedded->has_value());
  ASSERT_EQ((*embedded)->priority_size(), plan.priority_size());
  // Not reordered (no is_scheduled): the same nodes in the same order.
  const gopt::v1::Plan& back = **embedded;
  for (int i = 0; i < plan.priority_size(); ++i) {
    EXPECT_EQ(back.device(i), 0) << i;
    EXPECT_EQ(back.priority(i), plan.priority(i)) << i;
  }
}

// XLA never fuses a batch norm: it expands it (BatchNormExpander) before
// fusion. A group holding a batch-norm-inference is written with the
// expansion in the fused computation, which XLA compiles as it is.
TEST(HloFusionExportTest, InferenceBatchNormIsWrittenAsXlaExpandsIt) {
  const std::string contents = R"hlo(HloModule cnn

ENTRY main {
  x = f32[2,8,6,6]{3,2,1,0} parameter(0)
  w = f32[8,8,3,3]{3,2,1,0} parameter(1)
  scale = f32[8]{0} parameter(2)
  offset = f32[8]{0} parameter(3)
  mean = f32[8]{0} parameter(4)
  variance = f32[8]{0} parameter(5)
  conv = f32[2,8,6,6]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  bn = f32[2,8,6,6]{3,2,1,0} batch-norm-inference(conv, scale, offset, mean, variance), epsilon=0.001, feature_index=1, metadata={op_name="bn"}
  zero = f32[] constant(0)
  zeros = f32[2,8,6,6]{3,2,1,0} broadcast(zero), dimensions={}
  ROOT relu = f32[2,8,6,6]{3,2,1,0} maximum(bn, zeros)
}
)hlo";
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = PlanFusing(*graph, {"conv", "bn", "relu"});
  ASSERT_TRUE(simulator::CheckFusionRules(
                  *graph, std::vector<int32_t>(plan.fusion_group().begin(),
                                               plan.fusion_group().end()))
                  .ok());
  const Exporter& exporter = **exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      ExportOnOneGpu(registries, "hlo", contents, *graph, plan);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->warnings, Not(Contains(HasSubstr("fusion group 0"))));
  EXPECT_THAT(exported->contents, Not(HasSubstr("batch-norm")));
  EXPECT_THAT(exported->contents, HasSubstr(R"hlo(
  %bn.epsilon = f32[] constant(0.001)
  %bn.epsilon_broadcast = f32[8]{0} broadcast(%bn.epsilon), dimensions={}
  %bn.variance_epsilon = f32[8]{0} add(%param_5.0, %bn.epsilon_broadcast)
  %bn.rsqrt = f32[8]{0} rsqrt(%bn.variance_epsilon)
  %bn.scale = f32[8]{0} multiply(%param_2.0, %bn.rsqrt)
  %bn.mean_scale = f32[8]{0} multiply(%param_4.0, %bn.scale)
  %bn.shift = f32[8]{0} subtract(%param_3.0, %bn.mean_scale)
  %bn.scale_broadcast = f32[2,8,6,6]{3,2,1,0} broadcast(%bn.scale), dimensions={1}
  %bn.shift_broadcast = f32[2,8,6,6]{3,2,1,0} broadcast(%bn.shift), dimensions={1}
  %bn.scaled = f32[2,8,6,6]{3,2,1,0} multiply(%conv, %bn.scale_broadcast)
  %bn = f32[2,8,6,6]{3,2,1,0} add(%bn.scaled, %bn.shift_broadcast), metadata={op_name="bn"})hlo"));
  EXPECT_THAT(exported->contents,
              HasSubstr("ROOT %relu = f32[2,8,6,6]{3,2,1,0} fusion(%x, %w, "
                        "%scale, %offset, %mean, %variance, %zeros), "
                        "kind=kLoop, calls=%gopt_fused_computation.0"));
  // The import folds the expansion back into the batch norm and unfolds
  // the fusion: the original graph, node for node, and the plan's groups.
  absl::StatusOr<Graph> again = importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  // Every cost-relevant field and edge (names aside), then the names.
  EXPECT_EQ(GraphFingerprint(*again), GraphFingerprint(*graph));
  ASSERT_EQ(again->num_nodes(), graph->num_nodes());
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    EXPECT_EQ(again->node(id).name, graph->node(id).name) << id;
    EXPECT_EQ(again->node(id).kind, graph->node(id).kind) << id;
    EXPECT_EQ(again->node(id).flops, graph->node(id).flops) << id;
    EXPECT_EQ(again->node(id).outputs[0].dims, graph->node(id).outputs[0].dims)
        << id;
  }
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter.ReadPlan(exported->contents, *again, OneGpu());
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  ASSERT_EQ((*read)->fusion_group_size(), plan.fusion_group_size());
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    EXPECT_EQ((*read)->fusion_group(id), plan.fusion_group(id)) << id;
  }
}

// A file gopt exported before can be exported into again (a build that
// feeds gopt its own output): the fusions go back to their members first,
// so the same plan gives the same bytes, and a new plan a valid file.
constexpr absl::string_view kTwoGroups = R"hlo(HloModule twice

ENTRY main {
  x = f32[8,4]{1,0} parameter(0)
  w = f32[4,4]{1,0} parameter(1)
  d = f32[8,4]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n = f32[8,4]{1,0} negate(d)
  e = f32[8,4]{1,0} exponential(n)
  m = f32[8,4]{1,0} multiply(e, n), metadata={op_name="jit(f)/mul"}
  ROOT t = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(m, e)
}
)hlo";

TEST(HloFusionExportTest, ExportingIntoAnExportGivesTheSameFile) {
  const BuiltinRegistries registries;
  const std::string contents(kTwoGroups);
  absl::StatusOr<Graph> graph =
      registries.importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  gopt::v1::Plan plan = PlanFusing(*graph, {"d", "n"});
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    const std::string& name = graph->node(id).name;
    if (name == "e" || name == "m") plan.set_fusion_group(id, 1);
    plan.set_priority(id, graph->num_nodes() - id);
  }
  absl::StatusOr<ExportResult> first =
      ExportOnOneGpu(registries, "hlo", contents, *graph, plan);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_THAT(first->contents, HasSubstr("calls=%gopt_fused_computation.1"));
  absl::StatusOr<Graph> again =
      registries.importers.Import(first->contents, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(GraphFingerprint(*again), GraphFingerprint(*graph));
  absl::StatusOr<ExportResult> second =
      ExportOnOneGpu(registries, "hlo", first->contents, *again, plan);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->contents, first->contents);
  // Another plan (nothing fused) into the export: the members are back in
  // main, and the file imports to the original graph.
  gopt::v1::Plan unfused = plan;
  for (int i = 0; i < unfused.fusion_group_size(); ++i) {
    unfused.set_fusion_group(i, -1);
  }
  absl::StatusOr<ExportResult> third =
      ExportOnOneGpu(registries, "hlo", first->contents, *again, unfused);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_THAT(third->contents, Not(HasSubstr("gopt_fused_computation")));
  absl::StatusOr<Graph> back =
      registries.importers.Import(third->contents, "hlo", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(GraphFingerprint(*back), GraphFingerprint(*graph));
}

TEST(HloFusionExportTest, EditedExportIsFailedPrecondition) {
  const BuiltinRegistries registries;
  const std::string contents(kTwoGroups);
  absl::StatusOr<Graph> graph =
      registries.importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = PlanFusing(*graph, {"d", "n"});
  absl::StatusOr<ExportResult> first =
      ExportOnOneGpu(registries, "hlo", contents, *graph, plan);
  ASSERT_TRUE(first.ok()) << first.status();
  // A hand-added instruction in the fused computation, without _gopt_order.
  std::string edited = first->contents;
  const size_t at = edited.find("  %param_0.0 = ");
  ASSERT_NE(at, std::string::npos);
  edited.insert(at, "  %extra = f32[] constant(1)\n");
  absl::StatusOr<Graph> again = registries.importers.Import(edited, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<ExportResult> second = ExportOnOneGpu(
      registries, "hlo", edited, *again, PlanFusing(*again, {"d", "n"}));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("does not unfold exactly"));
}

// A batch-norm-training (or -grad) cannot be written that way (its outputs
// leave through get-tuple-elements): its group stays attributes, with a
// warning that says why.
TEST(HloFusionExportTest, TrainingBatchNormGroupStaysAttributes) {
  const std::string contents = R"hlo(HloModule train

ENTRY main {
  x = f32[2,8,6,6]{3,2,1,0} parameter(0)
  scale = f32[8]{0} parameter(1)
  offset = f32[8]{0} parameter(2)
  twice = f32[2,8,6,6]{3,2,1,0} add(x, x)
  bn = (f32[2,8,6,6]{3,2,1,0}, f32[8]{0}, f32[8]{0}) batch-norm-training(twice, scale, offset), epsilon=0.001, feature_index=1
  ROOT y = f32[2,8,6,6]{3,2,1,0} get-tuple-element(bn), index=0
}
)hlo";
  const BuiltinRegistries registries;
  const ImporterRegistry& importers = registries.importers;
  const ExporterRegistry& exporters = registries.exporters;
  absl::StatusOr<Graph> graph = importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const gopt::v1::Plan plan = PlanFusing(*graph, {"twice", "bn"});
  absl::StatusOr<ExportResult> exported =
      ExportOnOneGpu(registries, "hlo", contents, *graph, plan);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->warnings,
              Contains("fusion group 0 (twice, bn) is written as frontend "
                       "attribute _gopt_kernel only, not as a fusion "
                       "instruction: 'bn' is a batch-norm-training, which XLA "
                       "expands before fusion and never fuses"));
  EXPECT_THAT(exported->contents, Not(HasSubstr("fusion(")));
  EXPECT_THAT(exported->contents, HasSubstr("batch-norm-training(twice"));
}

// The schedule in HLO text: is_scheduled=true and each computation's
// instructions in execution order (highest priority first among the ready
// ones); gopt's parser reads the reordered module, the priorities read
// back, and exporting the export again keeps one is_scheduled flag.
TEST(HloTextScheduleTest, InstructionOrderIsTheSchedule) {
  const std::string contents =
      R"hlo(HloModule sched, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY main {
  p = f32[4]{0} parameter(0)
  a = f32[4]{0} negate(p)
  b = f32[4]{0} exponential(p)
  c = f32[4]{0} abs(p)
  e = f32[4]{0} sine(p)
  ROOT d = f32[4]{0} add(a, b)
}
)hlo";
  const BuiltinRegistries registries;
  absl::StatusOr<Graph> graph =
      registries.importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const absl::flat_hash_map<std::string, int32_t> priority = {
      {"p", 0}, {"a", 1}, {"b", 5}, {"c", 3}, {"e", 3}, {"d", 0}};
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    plan.add_device(0);
    plan.add_priority(priority.at(graph->node(id).name));
  }
  const Exporter& exporter = **registries.exporters.Find("hlo");
  absl::StatusOr<ExportResult> exported =
      ExportOnOneGpu(registries, "hlo", contents, *graph, plan);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_THAT(exported->warnings, ::testing::IsEmpty());
  EXPECT_TRUE(absl::StartsWith(
      exported->contents,
      "HloModule sched, is_scheduled=true, entry_computation_layout="));
  // b (5), then c and e (3, in module order), a (1), d (0, after a and b).
  std::vector<std::string> order;
  for (absl::string_view line : absl::StrSplit(exported->contents, '\n')) {
    absl::ConsumePrefix(&line, "  ");
    absl::ConsumePrefix(&line, "ROOT ");
    if (line.size() > 2 && line[1] == ' ' && line[2] == '=') {
      order.emplace_back(line.substr(0, 1));
    }
  }
  EXPECT_THAT(order, ::testing::ElementsAre("p", "b", "c", "e", "a", "d"));
  absl::StatusOr<Graph> again =
      registries.importers.Import(exported->contents, "hlo", {});
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      exporter.ReadPlan(exported->contents, *again, OneGpu());
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  for (NodeId id = 0; id < again->num_nodes(); ++id) {
    EXPECT_EQ((*read)->priority(id), priority.at(again->node(id).name));
  }
  absl::StatusOr<ExportResult> twice =
      ExportOnOneGpu(registries, "hlo", exported->contents, *again, **read);
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_TRUE(absl::StartsWith(
      twice->contents,
      "HloModule sched, is_scheduled=true, entry_computation_layout="));
  EXPECT_EQ(twice->contents, exported->contents);
}

// A _gopt_layout that is no layout of the instruction's shape is
// INVALID_ARGUMENT naming the instruction.
TEST(HloLayoutReadTest, BadLayoutNamesTheInstruction) {
  const std::string contents = R"hlo(HloModule bad

ENTRY main {
  p = f32[2,3] parameter(0), frontend_attributes={_gopt_priority="0"}
  ROOT a = f32[2,3] negate(p), frontend_attributes={_gopt_priority="1",_gopt_layout="5,0"}
}
)hlo";
  const BuiltinRegistries registries;
  absl::StatusOr<Graph> graph =
      registries.importers.Import(contents, "hlo", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::optional<gopt::v1::Plan>> read =
      (*registries.exporters.Find("hlo"))->ReadPlan(contents, *graph, {});
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(),
              HasSubstr("instruction 'a' of 'main' layout {5,0}: expected a "
                        "permutation of the 2 dimensions"));
}

}  // namespace
}  // namespace gopt::graph
