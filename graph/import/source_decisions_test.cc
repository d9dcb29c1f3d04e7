// Every importer records the source element of each node, and a plan made
// source-consistent gives every node of one source element the element's
// one decision.

#include <random>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "graph/decisions.h"
#include "graph/import/builtin_importers.h"
#include "gtest/gtest.h"
#include "tests/util/shared_data.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Graph> Import(const std::string& contents,
                             const std::string& format,
                             const std::string& shared_file = "") {
  ImporterRegistry importers;
  RegisterBuiltinImporters(&importers);
  ImportOptions options;
  for (const auto& [name, value] : testing::SharedDataDims(shared_file)) {
    options.symbolic_dims[name] = value;
  }
  return importers.Import(contents, format, options);
}

// Checks the decisions of a random source-consistent plan: one per source
// element, and every node of the element agrees with it.
void CheckConsistentDecisions(const Graph& graph, int num_devices) {
  std::mt19937 rng(40);
  gopt::v1::Plan plan;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    plan.add_device(static_cast<int32_t>(rng() % num_devices));
    plan.add_priority(static_cast<int32_t>(rng() % 16));
    plan.add_fusion_group(id % 3 == 0 ? id : -1);
  }
  MakePlanSourceConsistent(graph, &plan);
  const std::vector<std::string> names = {"d0", "d1", "d2"};
  const std::vector<SourceGroup> groups = GroupBySource(graph);
  const std::vector<gopt::v1::NodeDecision> decisions =
      DecisionsBySource(graph, plan, names);
  ASSERT_EQ(decisions.size(), groups.size());
  absl::flat_hash_set<std::tuple<std::string, std::string, bool>> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    const gopt::v1::NodeDecision& decision = decisions[g];
    EXPECT_TRUE(
        seen.insert({decision.scope(), decision.name(), decision.is_tensor()})
            .second)
        << "two decisions for '" << decision.name() << "'";
    EXPECT_EQ(decision.device_name(), names[decision.device()]);
    EXPECT_EQ(decision.ir_nodes(), static_cast<int>(groups[g].nodes.size()));
    for (NodeId id : groups[g].nodes) {
      EXPECT_EQ(plan.device(id), decision.device()) << graph.node(id).name;
      EXPECT_EQ(plan.priority(id), decision.priority()) << graph.node(id).name;
      EXPECT_EQ(plan.fusion_group(id), decision.kernel())
          << graph.node(id).name;
    }
  }
}

TEST(SourceDecisionsTest, HloInstructionOfAComputationCalledTwice) {
  absl::StatusOr<Graph> graph = Import(R"(HloModule m
inner {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
ENTRY main {
  p = f32[4] parameter(0)
  c1 = f32[4] call(p), to_apply=inner
  ROOT c2 = f32[4] call(c1), to_apply=inner
}
)",
                                       "hlo");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& first = graph->node(*graph->FindNode("c1/n"));
  EXPECT_EQ(first.source, (SourceElement{"inner", "n", false}));
  EXPECT_EQ(graph->node(*graph->FindNode("p")).source,
            (SourceElement{"main", "p", false}));
  const std::vector<SourceGroup> groups = GroupBySource(*graph);
  ASSERT_EQ(groups.size(), 2u);  // main/p, inner/n (twice)
  EXPECT_EQ(groups[1].nodes.size(), 2u);
  CheckConsistentDecisions(*graph, /*num_devices=*/3);
}

TEST(SourceDecisionsTest, HloRealGraphsRecordEveryInstruction) {
  for (const char* file :
       {"hlo/maml_flax_train_step.hlo", "hlo/nux_flow_jit_loss9581.hlo",
        "hlo/llama2_ptxla_neuron_train_tp1.hlo"}) {
    absl::StatusOr<Graph> graph = Import(testing::ReadSharedData(file), "hlo");
    ASSERT_TRUE(graph.ok()) << file << ": " << graph.status();
    for (const Node& node : graph->nodes()) {
      EXPECT_FALSE(node.source.empty()) << file << ": " << node.name;
    }
    CheckConsistentDecisions(*graph, /*num_devices=*/2);
  }
}

TEST(SourceDecisionsTest, OnnxNodesInitializersAndInputs) {
  for (const char* file :
       {"onnx/light_squeezenet.onnx", "onnx/silero_vad_legacy.onnx",
        "onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx"}) {
    absl::StatusOr<Graph> graph =
        Import(testing::ReadSharedData(file), "onnx", file);
    ASSERT_TRUE(graph.ok()) << file << ": " << graph.status();
    int tensors = 0;
    for (const Node& node : graph->nodes()) {
      EXPECT_FALSE(node.source.empty()) << file << ": " << node.name;
      tensors += node.source.is_tensor;
    }
    EXPECT_GT(tensors, 0) << file;
    CheckConsistentDecisions(*graph, /*num_devices=*/3);
  }
}

TEST(SourceDecisionsTest, OnnxUnnamedNodeIsNamedByItsFirstOutput) {
  // A model with one unnamed Relu node: x -> Relu -> y (IR 7, opset 13).
  std::string model;
  // Hand-encoded ModelProto keeps the test free of the onnx package.
  auto field = [](int number, const std::string& payload) {
    std::string out;
    out.push_back(static_cast<char>(number << 3 | 2));
    out.push_back(static_cast<char>(payload.size()));
    return out + payload;
  };
  auto varint = [](int number, int value) {
    std::string out;
    out.push_back(static_cast<char>(number << 3));
    out.push_back(static_cast<char>(value));
    return out;
  };
  const std::string shape =
      field(1, varint(1, 4));  // TensorShapeProto.dim { dim_value: 4 }
  const std::string type =
      field(1, varint(1, 1) + field(2, shape));  // tensor_type f32 [4]
  const std::string node = field(1, "x") + field(2, "y") + field(4, "Relu");
  const std::string graph = field(1, node) + field(2, "g") +
                            field(11, field(1, "x") + field(2, type)) +
                            field(12, field(1, "y") + field(2, type));
  model = varint(1, 7) + field(7, graph) + field(8, varint(2, 13));
  absl::StatusOr<Graph> imported = Import(model, "onnx");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<std::string> sources;
  for (const Node& n : imported->nodes()) sources.push_back(n.source.name);
  EXPECT_THAT(sources, ::testing::ElementsAre("x", "y"));
  EXPECT_TRUE(imported->node(0).source.is_tensor);
  EXPECT_FALSE(imported->node(1).source.is_tensor);
}

TEST(SourceDecisionsTest, TfNodesByNodeDefName) {
  for (const auto& [file, format] :
       {std::pair<const char*, const char*>{"tf_graphdef/kws_LSTM_S.pb",
                                            "graphdef"},
        {"tfjs/handtrack.json", "tfjs"}}) {
    absl::StatusOr<Graph> graph = Import(testing::ReadSharedData(file), format);
    ASSERT_TRUE(graph.ok()) << file << ": " << graph.status();
    for (const Node& node : graph->nodes()) {
      EXPECT_EQ(node.source.name, node.name) << file;
    }
    CheckConsistentDecisions(*graph, /*num_devices=*/2);
  }
}

TEST(SourceDecisionsTest, MixedSourcesWarnAboutMadeUpNodes) {
  GraphBuilder builder("g", "onnx");
  Node a;
  a.name = "a";
  a.source.name = "a";
  a.outputs = {MakeTensorType(DType::kF32, {2})};
  Node b = a;
  b.name = "made_up";
  b.source = {};
  const int first = builder.AddNode(a);
  const int second = builder.AddNode(b);
  builder.AddEdge(first, 0, second, 0);
  absl::StatusOr<Graph> graph = std::move(builder).Build(GraphLimits());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->warnings().size(), 1u);
  EXPECT_THAT(graph->warnings()[0], HasSubstr("1 node(s) have no source"));
  EXPECT_THAT(graph->warnings()[0], HasSubstr("made_up"));
}

}  // namespace
}  // namespace gopt::graph
