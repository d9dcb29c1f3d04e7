#include "graph/hlo/hlo_importers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "graph/hlo/hlo_lowering.h"
#include "graph/hlo/hlo_printer.h"
#include "graph/hlo/hlo_proto_reader.h"
#include "graph/hlo/hlo_text_parser.h"
#include "tests/util/shared_data.h"
#include "tpu_graphs/tuning.pb.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

struct HloFileFacts {
  const char* path;
  int instructions;  // over all computations
  int nodes;         // entry instructions after inlining calls
  double flops;
};

// Node counts and FLOPs derived independently by a Python script
// (re-parsing the text with regular expressions, not this code): the node
// count is the entry computation's instructions, where each `call` is
// replaced by its callee's non-parameter instructions (recursively); FLOPs
// follow the op catalog's rules (dot 2*out*contracted; convolution
// 2*out*kernel input features*kernel spatial; elementwise/compare/select/
// convert/rng 1 per output element; reduce 1 per input element;
// reduce-window out*window; sort n*ceil(log2 len); scatter 1 per update;
// all-reduce/reduce-scatter 1 per operand element; triangular-solve
// elements(b)*n; calls inlined; custom-call 0), with each while costed as
// (body + condition) times its trip count. No file has a known_trip_count;
// every loop's counter starts at 0 and is compared with a constant (read by
// hand from the conditions): jaxmd 1, 2 (nested in a 6-trip loop, twice),
// jaxrl 5, nux 2 each (4 loops), so FLOPs beyond the loop-free figures
// below come from counting loop bodies that many times. Dots and
// convolutions alone give:
// efficientnet 8.037773e11, jaxmd 0, jaxrl 2.807808e8, llama2 6.167573e13,
// maml 1.292800e6, mixer 5.040707e10, nux 2.834760e8.
constexpr HloFileFacts kHloFiles[] = {
    {"hlo/efficientnet_jax_lambda256.hlo", 2002, 1886, 8.304170e+11},
    {"hlo/jaxmd_apply_fn.hlo", 1041, 187, 1.003260e+05},
    {"hlo/jaxrl_td_target.hlo", 636, 463, 2.857356e+08},
    {"hlo/llama2_ptxla_neuron_train_tp1.hlo", 3517, 3182, 1.048541e+14},
    {"hlo/maml_flax_train_step.hlo", 146, 121, 1.363079e+06},
    {"hlo/mixer_b16_jax_unopt.hlo", 1969, 1765, 5.069017e+10},
    {"hlo/nux_flow_jit_loss9581.hlo", 9468, 1670, 6.238605e+08},
};

TEST(HloImportersTest, EverySharedHloFileImportsWithDerivedCounts) {
  std::unique_ptr<Importer> importer = NewHloTextImporter();
  for (const HloFileFacts& facts : kHloFiles) {
    SCOPED_TRACE(facts.path);
    const std::string text = testing::ReadSharedData(facts.path);
    ASSERT_TRUE(importer->Sniff(text));
    absl::StatusOr<hlo::HloModule> module = hlo::ParseHloText(text);
    ASSERT_TRUE(module.ok()) << module.status();
    int instructions = 0;
    for (const hlo::HloComputation& computation : module->computations) {
      instructions += static_cast<int>(computation.instructions.size());
    }
    EXPECT_EQ(instructions, facts.instructions);
    absl::StatusOr<Graph> graph = importer->Import(text, ImportOptions());
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(graph->format(), "hlo");
    EXPECT_EQ(graph->num_nodes(), facts.nodes);
    EXPECT_NEAR(graph->total_flops(), facts.flops, facts.flops * 0.01);
  }
}

TEST(HloImportersTest, MixerConvolutionAndDotFlopsAreHandChecked) {
  absl::StatusOr<Graph> graph = NewHloTextImporter()->Import(
      testing::ReadSharedData("hlo/mixer_b16_jax_unopt.hlo"), ImportOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  // convolution.153: f32[2,224,224,3] x f32[16,16,3,768] (b01f_01io->b01f,
  // 16x16 window, stride 16) -> f32[2,14,14,768]: 2*14*14*768 = 301,056
  // outputs, each 16*16*3 = 768 multiply-adds: 2 * 301,056 * 768 =
  // 462,422,016 FLOPs.
  const Node& conv = graph->node(*graph->FindNode("convolution.153"));
  EXPECT_EQ(conv.kind, OpKind::kConvolution);
  EXPECT_EQ(conv.flops, 462'422'016);
  EXPECT_TRUE(conv.layout_configurable);
  // dot.206: f32[2,768,196] x f32[196,384], contracting 196 ->
  // f32[2,768,384]: 2 * 589,824 * 196 = 231,211,008 FLOPs.
  const Node& dot = graph->node(*graph->FindNode("dot.206"));
  EXPECT_EQ(dot.kind, OpKind::kDot);
  EXPECT_EQ(dot.flops, 231'211'008);
  EXPECT_EQ(dot.bytes_read, (2 * 768 * 196 + 196 * 384) * 4);
  EXPECT_EQ(dot.bytes_written, 2 * 768 * 384 * 4);
}

// The HloModuleProto inside the TpuGraphs layout file, serialized alone.
std::string LayoutModuleProtoBytes() {
  tpu_graphs::ModuleTuningData data;
  const std::string bytes =
      testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb");
  EXPECT_TRUE(data.ParseFromString(bytes));
  return data.module().SerializeAsString();
}

TEST(HloImportersTest, ProtoAndItsPrintedTextLowerToTheSameGraph) {
  const std::string bytes = LayoutModuleProtoBytes();
  std::unique_ptr<Importer> proto_importer = NewHloProtoImporter();
  ASSERT_TRUE(proto_importer->Sniff(bytes));
  absl::StatusOr<hlo::HloModule> module = hlo::ParseHloModuleProto(bytes);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->computations.size(), 143u);
  size_t instructions = 0;
  for (const hlo::HloComputation& computation : module->computations) {
    instructions += computation.instructions.size();
  }
  EXPECT_EQ(instructions, 3163u);

  const std::string text = hlo::PrintHloModule(*module);
  absl::StatusOr<hlo::HloModule> reparsed = hlo::ParseHloText(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();

  hlo::HloLoweringOptions options;
  absl::StatusOr<Graph> from_proto = hlo::LowerHloModule(*module, options);
  ASSERT_TRUE(from_proto.ok()) << from_proto.status();
  absl::StatusOr<Graph> from_text = hlo::LowerHloModule(*reparsed, options);
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  EXPECT_TRUE(CompareGraphs(*from_proto, *from_text).ok())
      << CompareGraphs(*from_proto, *from_text);
  EXPECT_GT(from_proto->num_nodes(), 0);
  EXPECT_GT(from_proto->total_flops(), 0);

  absl::StatusOr<Graph> imported =
      proto_importer->Import(bytes, ImportOptions());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->format(), "hlo-proto");
  EXPECT_EQ(imported->num_nodes(), from_proto->num_nodes());
}

TEST(HloImportersTest, SniffersTellTheFormatsApart) {
  const std::string text =
      testing::ReadSharedData("hlo/maml_flax_train_step.hlo");
  const std::string proto = LayoutModuleProtoBytes();
  const std::string layout =
      testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb");
  const std::string tile =
      testing::ReadSharedData("tpugraphs/op_tuning_data.pb");
  std::unique_ptr<Importer> hlo_text = NewHloTextImporter();
  std::unique_ptr<Importer> hlo_proto = NewHloProtoImporter();
  std::unique_ptr<Importer> tpugraphs = NewTpuGraphsImporter();
  EXPECT_EQ(hlo_text->format(), "hlo");
  EXPECT_EQ(hlo_proto->format(), "hlo-proto");
  EXPECT_EQ(tpugraphs->format(), "tpugraphs");
  EXPECT_TRUE(hlo_text->Sniff(text));
  EXPECT_FALSE(hlo_text->Sniff(proto));
  EXPECT_FALSE(hlo_text->Sniff(layout));
  EXPECT_TRUE(hlo_proto->Sniff(proto));
  EXPECT_FALSE(hlo_proto->Sniff(text));
  EXPECT_FALSE(hlo_proto->Sniff(layout));
  EXPECT_FALSE(hlo_proto->Sniff(tile));
  EXPECT_TRUE(tpugraphs->Sniff(layout));
  EXPECT_TRUE(tpugraphs->Sniff(tile));
  EXPECT_FALSE(tpugraphs->Sniff(proto));
  EXPECT_FALSE(tpugraphs->Sniff(text));
}

TEST(HloImportersTest, TpuGraphsImporterGivesOneNodePerModuleForTileData) {
  absl::StatusOr<Graph> graph = NewTpuGraphsImporter()->Import(
      testing::ReadSharedData("tpugraphs/op_tuning_data.pb"), ImportOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->format(), "tpugraphs");
  EXPECT_EQ(graph->num_nodes(), 15);
  EXPECT_EQ(graph->subgraphs().size(), 15u);
  EXPECT_EQ(graph->num_edges(), 0);
}

TEST(HloImportersTest, TpuGraphsImporterMarksConfigurableNodesFromTheFile) {
  absl::StatusOr<Graph> graph = NewTpuGraphsImporter()->Import(
      testing::ReadSharedData("tpugraphs/module_tuning_data_layout.pb"),
      ImportOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  int configurable = 0;
  for (const Node& node : graph->nodes()) {
    configurable += node.layout_configurable ? 1 : 0;
  }
  // 59 of the 62 configurable nodes are in the entry computation; the other
  // three sit in while bodies.
  EXPECT_EQ(configurable, 59);
}

TEST(HloImportersTest, CorruptInputIsAnErrorNotACrash) {
  const std::string text = testing::ReadSharedData("hlo/jaxrl_td_target.hlo");
  std::unique_ptr<Importer> importer = NewHloTextImporter();
  // Flip bytes across the file; each import must return (ok or error).
  for (size_t i = 0; i < text.size(); i += 997) {
    std::string corrupt = text;
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    importer->Import(corrupt, ImportOptions()).IgnoreError();
  }
  std::string bytes = LayoutModuleProtoBytes();
  std::unique_ptr<Importer> proto_importer = NewHloProtoImporter();
  for (size_t i = 0; i < bytes.size(); i += 4999) {
    std::string corrupt = bytes;
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    proto_importer->Import(corrupt, ImportOptions()).IgnoreError();
  }
  absl::StatusOr<Graph> graph =
      proto_importer->Import("\x0a\x02hi\x1a\x05garbage", ImportOptions());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gopt::graph
