#include "simulator/generators/generators.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/importer.h"
#include "graph/native/graph_proto.h"
#include "graph/native/native_importer.h"
#include "gtest/gtest.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::simulator::generators {
namespace {

using graph::Graph;
using graph::Node;
using ::testing::HasSubstr;

GeneratorOptions Options(std::string family) {
  GeneratorOptions options;
  options.family = std::move(family);
  return options;
}

Graph Generate(const GeneratorOptions& options) {
  absl::StatusOr<Graph> graph = GenerateModelGraph(options);
  EXPECT_TRUE(graph.ok()) << options.family << ": " << graph.status();
  return graph.ok() ? *std::move(graph) : Graph();
}

bool IsForward(const Node& node) {
  return !absl::StartsWith(node.name, "gradients/") &&
         !absl::StartsWith(node.name, "train/");
}

double ForwardFlops(const Graph& graph) {
  double flops = 0;
  for (const Node& node : graph.nodes()) {
    if (IsForward(node)) flops += node.flops;
  }
  return flops;
}

std::string Serialize(const Graph& graph) {
  absl::StatusOr<std::string> bytes = graph::SerializeGraph(graph, false);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

TEST(GeneratorsTest, FamiliesAreTheEightOfTheGoPaper) {
  EXPECT_THAT(
      GeneratorFamilies(),
      ::testing::ElementsAre("amoebanet", "bert", "gnmt", "inception_v3",
                             "resnet50", "rnnlm", "transformer_xl", "wavenet"));
}

// Every family at small sizes: builds, validates, has a forward, backward
// and optimizer part, and round-trips through the gopt format unchanged.
TEST(GeneratorsTest, EveryFamilyGeneratesAndRoundTrips) {
  for (const std::string& family : GeneratorFamilies()) {
    SCOPED_TRACE(family);
    GeneratorOptions options = Options(family);
    options.batch = 2;
    const Graph graph = Generate(options);
    ASSERT_GT(graph.num_nodes(), 500);
    EXPECT_EQ(graph.format(), "generated");
    int forward = 0;
    int backward = 0;
    int optimizer = 0;
    for (const Node& node : graph.nodes()) {
      forward += IsForward(node);
      backward += absl::StartsWith(node.name, "gradients/");
      optimizer += absl::StartsWith(node.name, "train/");
      for (const graph::TensorType& type : node.outputs) {
        EXPECT_NE(type.dtype, graph::DType::kInvalid) << node.name;
      }
    }
    // Parameters, constants and reshapes have no gradient op; most other
    // forward ops have one or more.
    EXPECT_GT(backward, forward / 2);
    EXPECT_GT(optimizer, 0);
    const std::string bytes = Serialize(graph);
    absl::StatusOr<Graph> imported =
        graph::NewGoptImporter()->Import(bytes, graph::ImportOptions());
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_TRUE(graph::CompareGraphs(graph, *imported).ok())
        << graph::CompareGraphs(graph, *imported);
  }
}

// The importer's compute_costs mode recosts every node from its kind,
// attributes and the types on its in-edges: the generated costs must be
// exactly the catalog's for the graph as wired.
TEST(GeneratorsTest, CostsAreTheCatalogsForTheGraphAsWired) {
  for (const std::string& family : GeneratorFamilies()) {
    SCOPED_TRACE(family);
    GeneratorOptions options = Options(family);
    options.batch = 2;
    const Graph graph = Generate(options);
    gopt::v1::Graph proto = graph::GraphToProto(graph);
    proto.set_compute_costs(true);
    absl::StatusOr<Graph> recosted =
        graph::GraphFromProto(proto, graph::GraphLimits());
    ASSERT_TRUE(recosted.ok()) << recosted.status();
    EXPECT_TRUE(graph::CompareGraphs(graph, *recosted).ok())
        << graph::CompareGraphs(graph, *recosted);
  }
}

TEST(GeneratorsTest, ResNet50ForwardIsAboutEightGflopsAtBatchOne) {
  GeneratorOptions options = Options("resnet50");
  options.batch = 1;
  const Graph graph = Generate(options);
  // ~4.1 GMACs (ResNet-50 v1.5 at 224x224) = ~8.2 GFLOP.
  const double forward = ForwardFlops(graph);
  EXPECT_NEAR(forward, 8.2e9, 0.82e9);
  // Backward = two convolutions/dots per forward one, so the step is about
  // 3x forward; a little more, because a strided backprop-input convolution
  // is costed densely over its dilated input (XLA's form), see the header.
  const double ratio = graph.total_flops() / forward;
  EXPECT_GT(ratio, 2.9);
  EXPECT_LT(ratio, 3.3);
}

TEST(GeneratorsTest, ResNet50FirstConvolutionHasHandCheckedFlops) {
  GeneratorOptions options = Options("resnet50");
  options.batch = 1;
  const Graph graph = Generate(options);
  // 7x7x3 -> 64 at stride 2: 112 * 112 * 64 outputs * 147 MACs.
  const std::optional<graph::NodeId> conv = graph.FindNode("conv1/Conv2D");
  ASSERT_TRUE(conv.has_value());
  EXPECT_DOUBLE_EQ(graph.node(*conv).flops, 2.0 * 112 * 112 * 64 * 147);
  const std::optional<graph::NodeId> filter =
      graph.FindNode("gradients/conv1/Conv2D_grad/Conv2DBackpropFilter");
  ASSERT_TRUE(filter.has_value());
  EXPECT_DOUBLE_EQ(graph.node(*filter).flops, graph.node(*conv).flops);
  // The images need no gradient.
  EXPECT_FALSE(graph.FindNode("gradients/conv1/Conv2D_grad/Conv2DBackpropInput")
                   .has_value());
}

TEST(GeneratorsTest, RecurrentFamiliesGrowLinearlyWithTheUnroll) {
  for (const char* family : {"rnnlm", "gnmt"}) {
    SCOPED_TRACE(family);
    GeneratorOptions options = Options(family);
    options.batch = 4;
    options.hidden = 64;
    options.seq = 10;
    const int n10 = Generate(options).num_nodes();
    options.seq = 20;
    const int n20 = Generate(options).num_nodes();
    options.seq = 40;
    const int n40 = Generate(options).num_nodes();
    EXPECT_EQ(n40 - n20, 2 * (n20 - n10));
  }
}

TEST(GeneratorsTest, GnmtLayerCountsScaleTheGraph) {
  GeneratorOptions options = Options("gnmt");
  options.seq = 16;
  int previous = 0;
  for (int layers : {2, 4, 8}) {
    options.layers = layers;
    const int nodes = Generate(options).num_nodes();
    EXPECT_GT(nodes, previous) << layers;
    previous = nodes;
  }
}

TEST(GeneratorsTest, Gnmt80kPresetHasAtLeast80000Nodes) {
  absl::StatusOr<GeneratorPreset> preset = FindGeneratorPreset("gnmt8-80k");
  ASSERT_TRUE(preset.ok()) << preset.status();
  const Graph graph = Generate(preset->options);
  EXPECT_GE(graph.num_nodes(), 80000);
  EXPECT_LE(graph.num_nodes(), 100000);
}

TEST(GeneratorsTest, SameOptionsGiveByteIdenticalGraphs) {
  for (const std::string& family : GeneratorFamilies()) {
    GeneratorOptions options = Options(family);
    options.batch = 2;
    options.seed = 7;
    EXPECT_EQ(Serialize(Generate(options)), Serialize(Generate(options)))
        << family;
  }
}

TEST(GeneratorsTest, AmoebaNetSeedPicksTheCellWiring) {
  GeneratorOptions options = Options("amoebanet");
  options.layers = 1;
  options.batch = 2;
  options.seed = 1;
  const Graph one = Generate(options);
  options.seed = 2;
  const Graph two = Generate(options);
  EXPECT_NE(Serialize(one), Serialize(two));
  EXPECT_FALSE(graph::CompareGraphs(one, two).ok());
}

TEST(GeneratorsTest, PresetsHaveUniqueNamesAndValidOptions) {
  std::vector<std::string> names;
  for (const GeneratorPreset& preset : GeneratorPresets()) {
    EXPECT_THAT(names, ::testing::Not(::testing::Contains(preset.name)));
    names.push_back(preset.name);
    EXPECT_TRUE(ResolveGeneratorOptions(preset.options).ok()) << preset.name;
    EXPECT_FALSE(preset.description.empty());
  }
  for (const std::string& family : GeneratorFamilies()) {
    bool fits = false;
    bool oom = false;
    for (const GeneratorPreset& preset : GeneratorPresets()) {
      if (preset.options.family != family) continue;
      (preset.single_v100_oom ? oom : fits) = true;
    }
    EXPECT_TRUE(fits && oom) << family;
  }
}

// The documented expectation of every preset: the framework default (all on
// device 0 of v100x4-nvlink) is OOM exactly for the large presets.
TEST(GeneratorsTest, LargePresetsDoNotFitOneV100AndSmallOnesDo) {
  absl::StatusOr<Topology> topology = PresetTopology("v100x4-nvlink");
  ASSERT_TRUE(topology.ok()) << topology.status();
  RooflineCostModel cost_model;
  for (const GeneratorPreset& preset : GeneratorPresets()) {
    SCOPED_TRACE(preset.name);
    const Graph graph = Generate(preset.options);
    Simulator simulator(graph, *topology, cost_model);
    SimulationOptions options;
    options.record_timeline = false;
    absl::StatusOr<SimulationResult> result =
        simulator.Simulate(DefaultPlan(graph), options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->oom, preset.single_v100_oom)
        << "peak " << result->peak_memory_bytes[0] << " bytes, "
        << graph.num_nodes() << " nodes";
  }
}

TEST(GeneratorsTest, UnknownFamilyListsTheValidOnes) {
  absl::StatusOr<Graph> graph = GenerateModelGraph(Options("lenet"));
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("'lenet'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("gnmt"));
  EXPECT_THAT(graph.status().message(), HasSubstr("wavenet"));
}

TEST(GeneratorsTest, OutOfRangeOptionsAreRejected) {
  struct Case {
    GeneratorOptions options;
    const char* message;
  };
  auto with = [](std::string family, int layers, int batch, int seq, int hidden,
                 int image_size) {
    GeneratorOptions o = Options(std::move(family));
    o.layers = layers;
    o.batch = batch;
    o.seq = seq;
    o.hidden = hidden;
    o.image_size = image_size;
    return o;
  };
  const Case cases[] = {
      {with("gnmt", 1, 0, 0, 0, 0), "'layers' is 1"},
      {with("gnmt", 0, -3, 0, 0, 0), "'batch' is -3"},
      {with("rnnlm", 0, 0, 5000, 0, 0), "'seq' is 5000"},
      {with("resnet50", 0, 0, 16, 0, 0), "'seq' does not apply to resnet50"},
      {with("resnet50", 34, 0, 0, 0, 0), "50, 101 or 152"},
      {with("bert", 0, 0, 0, 100, 0), "multiple of 64"},
      {with("inception_v3", 0, 0, 0, 0, 64), "'image_size' is 64"},
      {with("inception_v3", 3, 0, 0, 0, 0), "'layers' does not apply"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Graph> graph = GenerateModelGraph(c.options);
    ASSERT_FALSE(graph.ok()) << c.message;
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
}

TEST(GeneratorsTest, ResolveFillsFamilyDefaults) {
  absl::StatusOr<GeneratorOptions> resolved =
      ResolveGeneratorOptions(Options("bert"));
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->layers, 12);
  EXPECT_EQ(resolved->hidden, 768);
  EXPECT_EQ(resolved->seq, 128);
  EXPECT_EQ(resolved->image_size, 0);
}

TEST(GeneratorsTest, UnknownPresetIsNotFound) {
  absl::StatusOr<GeneratorPreset> preset = FindGeneratorPreset("gnmt9");
  ASSERT_FALSE(preset.ok());
  EXPECT_EQ(preset.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(preset.status().message(), HasSubstr("gnmt8-80k"));
}

}  // namespace
}  // namespace gopt::simulator::generators
