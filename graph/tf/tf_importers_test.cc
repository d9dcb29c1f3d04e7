#include "graph/tf/tf_importers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"
#include "graph/graph.h"
#include "tests/util/shared_data.h"

namespace gopt::graph {
namespace {

using ::testing::HasSubstr;

Graph ImportShared(const Importer& importer, const std::string& path) {
  const std::string contents = gopt::testing::ReadSharedData(path);
  EXPECT_TRUE(importer.Sniff(contents)) << path;
  ImportOptions options;
  options.source_name = path;
  absl::StatusOr<Graph> graph = importer.Import(contents, options);
  EXPECT_TRUE(graph.ok()) << path << ": " << graph.status();
  return graph.ok() ? *std::move(graph) : Graph();
}

double FlopsOfKind(const Graph& graph, OpKind kind) {
  double flops = 0;
  for (const Node& node : graph.nodes()) {
    if (node.kind == kind) flops += node.flops;
  }
  return flops;
}

int CountKind(const Graph& graph, OpKind kind) {
  int count = 0;
  for (const Node& node : graph.nodes()) count += node.kind == kind ? 1 : 0;
  return count;
}

const Node& NodeNamed(const Graph& graph, const std::string& name) {
  std::optional<NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  return graph.node(id.value_or(0));
}

// Expected FLOPs of the two KWS graphs come from a separate Python script
// (run once, not part of the build) that decodes each .pb with
// `protoc --decode` against proto/tensorflow/graph.proto, propagates shapes
// through the ops these graphs use and applies the catalog's counting rules
// (2 FLOPs per multiply-add; 1 per element for BiasAdd/Add/Mul/Relu/
// Sigmoid/Tanh; 5 per element for FusedBatchNorm (y only) and Softmax;
// output elements * window for AvgPool; 5*n*log2(n) per length-513
// spectrogram row; DecodeWav and Mfcc have no FLOP count). Its output:
//   kws_DS_CNN_S: 152 nodes, total 6,957,126.8, convolutions 5,312,000
//   (spectrogram 1,131,518.8 = 5 * 1*49*513 * log2 513).
// kws_LSTM_S, per loop iteration (body nodes keep one iteration's cost):
//   spectrogram [1,25,513]: 5 * 12,825 * log2 513      =  577,305.7
//   MatMul [1,108]x[108,576] 124,416 + projection [1,144]x[144,98] 28,224
//     + output [1,98]x[98,12] 2,352                    =  154,992
//   BiasAdd 576 + 5 Add and 6 Mul of [1,144] 1,584 + counter add 1
//     + output add 12                                  =    2,173
//   3 Sigmoid + 2 Tanh of [1,144]                      =      720
//   Softmax 5*12 60, Less 1                            =       61
//   total                                              =  735,251.7
TEST(TfImportersTest, KwsDsCnnImports) {
  const Graph graph =
      ImportShared(*NewGraphDefImporter(), "tf_graphdef/kws_DS_CNN_S.pb");
  EXPECT_EQ(graph.num_nodes(), 152);
  EXPECT_EQ(graph.format(), "graphdef");
  EXPECT_NEAR(graph.total_flops(), 6'957'126.8, 1.0);
  EXPECT_DOUBLE_EQ(FlopsOfKind(graph, OpKind::kConvolution), 5'312'000);
  EXPECT_EQ(CountKind(graph, OpKind::kConvolution), 9);
  EXPECT_TRUE(graph.loops().empty());
  EXPECT_TRUE(graph.warnings().empty());
}

TEST(TfImportersTest, KwsDsCnnFirstConvolutionByHand) {
  const Graph graph =
      ImportShared(*NewGraphDefImporter(), "tf_graphdef/kws_DS_CNN_S.pb");
  // Reshape_1 gives [1,49,10,1] (49 MFCC frames x 10 coefficients); the
  // filter is [10,4,1,64], strides [1,2,2,1], SAME: ceil(49/2) = 25,
  // ceil(10/2) = 5, so the output is [1,25,5,64] = 8,000 elements, each a
  // 10*4*1 = 40-tap dot product: 2 * 8,000 * 40 = 640,000 FLOPs.
  const Node& conv = NodeNamed(graph, "MobileNet/conv_1/Conv2D");
  EXPECT_EQ(conv.kind, OpKind::kConvolution);
  EXPECT_EQ(conv.outputs[0], MakeTensorType(DType::kF32, {1, 25, 5, 64}));
  EXPECT_DOUBLE_EQ(conv.flops, 640'000);
  ASSERT_EQ(conv.attributes.window().size(), 2u);
  EXPECT_EQ(conv.attributes.window()[0].size, 10);
  EXPECT_EQ(conv.attributes.window()[0].stride, 2);
  // SAME over 49 with window 10, stride 2: (25-1)*2 + 10 - 49 = 9 cells.
  EXPECT_EQ(conv.attributes.window()[0].padding_low, 4);
  EXPECT_EQ(conv.attributes.window()[0].padding_high, 5);
  const Node& depthwise =
      NodeNamed(graph, "MobileNet/conv_ds_1/depthwise_conv/depthwise");
  EXPECT_EQ(depthwise.attributes.feature_group_count, 64);
  // 2 * (25*5*64) * 3*3 = 144,000.
  EXPECT_DOUBLE_EQ(depthwise.flops, 144'000);
}

TEST(TfImportersTest, KwsAudioOpsAreCpuOnly) {
  for (const char* path :
       {"tf_graphdef/kws_DS_CNN_S.pb", "tf_graphdef/kws_LSTM_S.pb"}) {
    const Graph graph = ImportShared(*NewGraphDefImporter(), path);
    for (const char* name :
         {"wav_data", "decoded_sample_data", "AudioSpectrogram", "Mfcc"}) {
      EXPECT_EQ(NodeNamed(graph, name).device_constraint,
                DeviceConstraint::kCpuOnly)
          << path << " " << name;
    }
    EXPECT_EQ(NodeNamed(graph, "labels_softmax").device_constraint,
              DeviceConstraint::kAny);
  }
}

TEST(TfImportersTest, KwsLstmImportsWithItsLoop) {
  const Graph graph =
      ImportShared(*NewGraphDefImporter(), "tf_graphdef/kws_LSTM_S.pb");
  EXPECT_EQ(graph.num_nodes(), 117);
  EXPECT_NEAR(graph.total_flops(), 735'251.7, 1.0);
  ASSERT_EQ(graph.loops().size(), 1u);
  const LoopInfo& loop = graph.loops()[0];
  EXPECT_EQ(loop.frame_name, "LSTM-Layer/lstm/rnn/while/while_context");
  // 25 MFCC frames: Less(time, strided_slice(Shape [25,1,10])) from time 0.
  EXPECT_EQ(loop.trip_count, 25);
  EXPECT_EQ(graph.node(loop.merge).name, "LSTM-Layer/lstm/rnn/while/Merge");
  EXPECT_EQ(graph.node(loop.next_iteration).name,
            "LSTM-Layer/lstm/rnn/while/NextIteration");
  EXPECT_EQ(NodeNamed(graph, "LSTM-Layer/lstm/rnn/while/rnn/lstm_cell/MatMul")
                .outputs[0],
            MakeTensorType(DType::kF32, {1, 576}));
  EXPECT_EQ(NodeNamed(graph, "LSTM-Layer/lstm/rnn/while/TensorArrayReadV3")
                .outputs[0],
            MakeTensorType(DType::kF32, {1, 10}));
  EXPECT_TRUE(graph.warnings().empty());
}

// The TF.js models' convolution FLOPs come from another one-off Python
// script that walks model.json: shapes from the signature input and the
// weightsManifest, NHWC propagation through Cast/Sub/Mul/AddV2 (an unknown
// size broadcast against a known one takes it), ResizeBilinear with its
// (weightless) size constant unknown, SAME/VALID windows; per convolution
// 2*out*KH*KW*Cin_per_group plus one op per output element per fused op,
// unknown sizes counted as 1. Output:
//   movenet-multipose: 602 nodes, 80 convolutions, 1,973,681,152 FLOPs.
//   handtrack: 1185 nodes, 123 convolutions, 5,736,392 FLOPs (its image is
//     resized to a size held in a weight, so every feature map's spatial
//     size is unknown and assumed 1).
TEST(TfImportersTest, MovenetImports) {
  const Graph graph =
      ImportShared(*NewTfjsImporter(), "tfjs/movenet-multipose.json");
  EXPECT_EQ(graph.num_nodes(), 602);
  EXPECT_EQ(graph.format(), "tfjs");
  EXPECT_EQ(CountKind(graph, OpKind::kConvolution), 80);
  EXPECT_DOUBLE_EQ(FlopsOfKind(graph, OpKind::kConvolution), 1'973'681'152);
  // The signature's [1,256,256,3] reaches the first convolution.
  EXPECT_EQ(NodeNamed(graph,
                      "StatefulPartitionedCall/center_net_mobile_net_v2fpn_"
                      "feature_extractor/model_1/model/Conv1_relu/Relu6")
                .outputs[0]
                .ToString(),
            "f32[1,128,128,48]");
  // Post-processing sizes depend on weights' values: reported, not guessed.
  ASSERT_FALSE(graph.warnings().empty());
  EXPECT_THAT(graph.warnings()[0], HasSubstr("could not be inferred"));
}

TEST(TfImportersTest, HandtrackImportsWithLoopAndNms) {
  const Graph graph = ImportShared(*NewTfjsImporter(), "tfjs/handtrack.json");
  EXPECT_EQ(graph.num_nodes(), 1185);
  EXPECT_EQ(CountKind(graph, OpKind::kConvolution), 123);
  EXPECT_DOUBLE_EQ(FlopsOfKind(graph, OpKind::kConvolution), 5'736'392);
  ASSERT_EQ(graph.loops().size(), 1u);
  EXPECT_EQ(graph.loops()[0].frame_name, "StatefulPartitionedCall/map/while");
  EXPECT_EQ(graph.loops()[0].trip_count, -1);
  EXPECT_EQ(CountKind(graph, OpKind::kSort), 9);  // 7 NMS + 2 TopKV2
  const Node& nms = NodeNamed(
      graph,
      "StatefulPartitionedCall/Postprocessor/BatchMultiClassNonMaxSuppression/"
      "MultiClassNonMaxSuppression/non_max_suppression_with_scores/"
      "NonMaxSuppressionV5");
  EXPECT_EQ(nms.outputs.size(), 3u);
  bool warned_about_loop = false;
  for (const std::string& warning : graph.warnings()) {
    warned_about_loop =
        warned_about_loop || absl::StrContains(warning, "trip count unknown");
  }
  EXPECT_TRUE(warned_about_loop);
}

TEST(TfImportersTest, TinyTfjsModel) {
  // Const values are absent in model.json: the weight's shape comes from
  // the manifest, the input's unknown size from the signature.
  const std::string json = R"({
    "format": "graph-model",
    "signature": {"inputs": {"x:0": {"name": "x:0", "dtype": "DT_FLOAT",
      "tensorShape": {"dim": [{"size": "1"}, {"size": "6"}, {"size": "6"},
                              {"size": "2"}]}}}},
    "modelTopology": {"node": [
      {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"},
        "shape": {"shape": {"dim": [{"size": "1"}, {"size": "-1"},
                                    {"size": "-1"}, {"size": "2"}]}}}},
      {"name": "w", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"},
        "value": {"tensor": {"dtype": "DT_FLOAT"}}}},
      {"name": "conv", "op": "_FusedConv2D", "input": ["x", "w", "b"],
        "attr": {"padding": {"s": "VkFMSUQ="},
                 "strides": {"list": {"i": ["1", "1", "1", "1"]}},
                 "fused_ops": {"list": {"s": ["Qmlhc0FkZA==", "UmVsdQ=="]}},
                 "num_args": {"i": "1"}, "T": {"type": "DT_FLOAT"}}},
      {"name": "b", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"},
        "value": {"tensor": {"dtype": "DT_FLOAT",
                             "tensorShape": {"dim": [{"size": "4"}]}}}}}
    ], "versions": {"producer": 808}, "library": {}},
    "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": [
      {"name": "w", "shape": [3, 3, 2, 4], "dtype": "float32"},
      {"name": "b", "shape": [4], "dtype": "float32"}]}]
  })";
  std::unique_ptr<Importer> importer = NewTfjsImporter();
  EXPECT_TRUE(importer->Sniff(json));
  EXPECT_FALSE(NewGraphDefImporter()->Sniff(json));
  absl::StatusOr<Graph> graph = importer->Import(json, ImportOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& conv = NodeNamed(*graph, "conv");
  // VALID 3x3 over 6x6: [1,4,4,4]; 2*64*18 + 2 fused ops * 64 = 2,432.
  EXPECT_EQ(conv.outputs[0], MakeTensorType(DType::kF32, {1, 4, 4, 4}));
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 64 * 18 + 2 * 64);
  EXPECT_EQ(NodeNamed(*graph, "w").outputs[0],
            MakeTensorType(DType::kF32, {3, 3, 2, 4}));
  EXPECT_TRUE(graph->warnings().empty());
}

TEST(TfImportersTest, TfjsErrorsNameTheProblem) {
  std::unique_ptr<Importer> importer = NewTfjsImporter();
  absl::StatusOr<Graph> not_json =
      importer->Import("{\"modelTopology\": [", ImportOptions());
  EXPECT_EQ(not_json.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Graph> no_topology =
      importer->Import("{\"format\": \"graph-model\"}", ImportOptions());
  EXPECT_THAT(no_topology.status().message(), HasSubstr("modelTopology"));
  std::string deep = "{\"modelTopology\": ";
  for (int i = 0; i < 10000; ++i) deep += "[";
  absl::StatusOr<Graph> nested = importer->Import(deep, ImportOptions());
  EXPECT_THAT(nested.status().message(), HasSubstr("nests deeper"));
}

TEST(TfImportersTest, SniffingTellsFormatsApart) {
  std::unique_ptr<Importer> graphdef = NewGraphDefImporter();
  std::unique_ptr<Importer> tfjs = NewTfjsImporter();
  for (const char* path :
       {"onnx/light_resnet50.onnx", "onnx/silero_vad_legacy.onnx",
        "hlo/maml_flax_train_step.hlo", "tfjs/handtrack.json",
        "tpugraphs/module_tuning_data_layout.pb",
        "tpugraphs/op_tuning_data.pb"}) {
    EXPECT_FALSE(graphdef->Sniff(gopt::testing::ReadSharedData(path))) << path;
  }
  for (const char* path :
       {"onnx/light_resnet50.onnx", "hlo/maml_flax_train_step.hlo",
        "tf_graphdef/kws_LSTM_S.pb"}) {
    EXPECT_FALSE(tfjs->Sniff(gopt::testing::ReadSharedData(path))) << path;
  }
  EXPECT_FALSE(graphdef->Sniff(""));
  EXPECT_FALSE(graphdef->Sniff("nodes { }"));
}

TEST(TfImportersTest, CorruptedGraphDefsFailCleanly) {
  const std::string contents =
      gopt::testing::ReadSharedData("tf_graphdef/kws_LSTM_S.pb");
  std::unique_ptr<Importer> importer = NewGraphDefImporter();
  // Truncations and byte flips at many offsets: every import must return
  // (most with an error), never crash.
  for (size_t cut = 0; cut < contents.size(); cut += 997) {
    (void)importer->Import(contents.substr(0, cut), ImportOptions());
    std::string flipped = contents;
    flipped[cut] = static_cast<char>(flipped[cut] ^ 0x5a);
    (void)importer->Import(flipped, ImportOptions());
  }
  absl::StatusOr<Graph> garbage = importer->Import(
      std::string("\x0a\xff\xff\xff\xff\x0f", 6), ImportOptions());
  EXPECT_FALSE(garbage.ok());
}

}  // namespace
}  // namespace gopt::graph
