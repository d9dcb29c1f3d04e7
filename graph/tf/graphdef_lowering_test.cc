#include "graph/tf/graphdef_lowering.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "google/protobuf/text_format.h"
#include "graph/graph.h"
#include "graph/tf/tf_importers.h"

namespace gopt::graph::tf {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// Text-format fixture helpers: a placeholder, a shape-only constant and a
// scalar int32 constant.
std::string Placeholder(const std::string& name, const std::string& dims) {
  return "node { name: '" + name +
         "' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }"
         " attr { key: 'shape' value { shape { " +
         dims + " } } } }\n";
}

std::string Weights(const std::string& name, const std::string& dims) {
  return "node { name: '" + name +
         "' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
         " attr { key: 'value' value { tensor { dtype: DT_FLOAT "
         "tensor_shape { " +
         dims + " } } } } }\n";
}

std::string IntConst(const std::string& name, int value) {
  return "node { name: '" + name +
         "' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
         " attr { key: 'value' value { tensor { dtype: DT_INT32 "
         "tensor_shape { } int_val: " +
         std::to_string(value) + " } } } }\n";
}

absl::StatusOr<Graph> Lower(const std::string& text,
                            ImportOptions options = ImportOptions()) {
  tensorflow::GraphDef graph_def;
  if (!google::protobuf::TextFormat::ParseFromString(text, &graph_def)) {
    return absl::InvalidArgumentError("fixture does not parse");
  }
  options.source_name = "fixture";
  return LowerGraphDef(graph_def, "graphdef", options, nullptr);
}

const Node& NodeNamed(const Graph& graph, const std::string& name) {
  return graph.node(*graph.FindNode(name));
}

TEST(GraphDefLoweringTest, Conv2DNhwcSamePadding) {
  const std::string text =
      Placeholder("x",
                  "dim { size: 1 } dim { size: 8 } dim { size: 8 } "
                  "dim { size: 3 }") +
      Weights("w",
              "dim { size: 3 } dim { size: 3 } dim { size: 3 } "
              "dim { size: 16 }") +
      "node { name: 'conv' op: 'Conv2D' input: 'x' input: 'w' "
      "attr { key: 'T' value { type: DT_FLOAT } } "
      "attr { key: 'padding' value { s: 'SAME' } } "
      "attr { key: 'strides' value { list { i: 1 i: 2 i: 2 i: 1 } } } }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& conv = NodeNamed(*graph, "conv");
  EXPECT_EQ(conv.kind, OpKind::kConvolution);
  EXPECT_EQ(conv.outputs[0], MakeTensorType(DType::kF32, {1, 4, 4, 16}));
  // 2 * (1*4*4*16 outputs) * (3*3 window * 3 input channels).
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 256 * 27);
  const OpAttributes& attrs = conv.attributes;
  ASSERT_TRUE(attrs.has_convolution_dimensions);
  EXPECT_EQ(attrs.convolution().input_feature, 3);
  EXPECT_EQ(attrs.convolution().input_spatial, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(attrs.convolution().kernel_input_feature, 2);
  EXPECT_EQ(attrs.convolution().kernel_output_feature, 3);
  ASSERT_EQ(attrs.window().size(), 2u);
  // SAME: 4 outputs of stride 2 over 8 need (4-1)*2+3-8 = 1 padding cell,
  // which TensorFlow puts at the high end.
  EXPECT_EQ(attrs.window()[0].stride, 2);
  EXPECT_EQ(attrs.window()[0].padding_low, 0);
  EXPECT_EQ(attrs.window()[0].padding_high, 1);
  EXPECT_EQ(attrs.feature_group_count, 1);
  EXPECT_EQ(graph->format(), "graphdef");
}

TEST(GraphDefLoweringTest, DepthwiseNchwExplicitPaddingAndDilation) {
  const std::string text =
      Placeholder("x",
                  "dim { size: 2 } dim { size: 4 } dim { size: 9 } "
                  "dim { size: 9 }") +
      Weights("w",
              "dim { size: 3 } dim { size: 3 } dim { size: 4 } "
              "dim { size: 2 }") +
      "node { name: 'dw' op: 'DepthwiseConv2dNative' input: 'x' input: 'w' "
      "attr { key: 'data_format' value { s: 'NCHW' } } "
      "attr { key: 'padding' value { s: 'EXPLICIT' } } "
      "attr { key: 'explicit_paddings' value { list { i: 0 i: 0 i: 0 i: 0 "
      "i: 1 i: 1 i: 2 i: 2 } } } "
      "attr { key: 'dilations' value { list { i: 1 i: 1 i: 2 i: 2 } } } "
      "attr { key: 'strides' value { list { i: 1 i: 1 i: 1 i: 1 } } } }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& dw = NodeNamed(*graph, "dw");
  // Height: 9 + 1 + 1 - ((3-1)*2+1) + 1 = 7; width: 9 + 4 - 5 + 1 = 9.
  EXPECT_EQ(dw.outputs[0], MakeTensorType(DType::kF32, {2, 8, 7, 9}));
  EXPECT_EQ(dw.attributes.feature_group_count, 4);
  EXPECT_EQ(dw.attributes.convolution().input_feature, 1);
  EXPECT_EQ(dw.attributes.window()[0].window_dilation, 2);
  // Each output reads a 3x3 window of one channel: 2 * 2*8*7*9 * 9.
  EXPECT_DOUBLE_EQ(dw.flops, 2.0 * (2 * 8 * 7 * 9) * 9);
}

TEST(GraphDefLoweringTest, ExplicitPaddingWithoutItsValuesIsRefused) {
  // A crafted file: padding EXPLICIT but no 'explicit_paddings' attribute.
  for (const std::string op : {"Conv2D", "MaxPool"}) {
    const std::string text =
        Placeholder("x",
                    "dim { size: 1 } dim { size: 9 } dim { size: 9 } "
                    "dim { size: 4 } ") +
        Weights("w",
                "dim { size: 3 } dim { size: 3 } dim { size: 4 } "
                "dim { size: 2 }") +
        "node { name: 'op' op: '" + op + "' input: 'x' " +
        (op == "Conv2D" ? "input: 'w' " : "") +
        "attr { key: 'padding' value { s: 'EXPLICIT' } } "
        "attr { key: 'ksize' value { list { i: 1 i: 3 i: 3 i: 1 } } } "
        "attr { key: 'strides' value { list { i: 1 i: 1 i: 1 i: 1 } } } }\n";
    absl::StatusOr<Graph> graph = Lower(text);
    ASSERT_FALSE(graph.ok()) << op;
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument) << op;
    EXPECT_THAT(graph.status().message(),
                ::testing::HasSubstr("explicit_paddings"))
        << op;
  }
}

TEST(GraphDefLoweringTest, MatMulTransposeB) {
  const std::string text =
      Placeholder("a", "dim { size: 2 } dim { size: 5 }") +
      Weights("b", "dim { size: 3 } dim { size: 5 }") +
      "node { name: 'mm' op: 'MatMul' input: 'a' input: 'b' "
      "attr { key: 'transpose_b' value { b: true } } }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& mm = NodeNamed(*graph, "mm");
  EXPECT_EQ(mm.kind, OpKind::kDot);
  EXPECT_EQ(mm.outputs[0], MakeTensorType(DType::kF32, {2, 3}));
  EXPECT_EQ(mm.attributes.dot().rhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 2 * 3 * 5);
}

TEST(GraphDefLoweringTest, ReshapeFoldsShapeArithmetic) {
  // shape = Pack(Shape(x)[0], -1): Reshape(x [4,6,5]) -> [4,30].
  const std::string text =
      Placeholder("x", "dim { size: 4 } dim { size: 6 } dim { size: 5 }") +
      "node { name: 'shape' op: 'Shape' input: 'x' }\n"
      "node { name: 'b' op: 'Const' attr { key: 'value' value { tensor { "
      "dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }\n"
      "node { name: 'e' op: 'Const' attr { key: 'value' value { tensor { "
      "dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 } } } }\n"
      "node { name: 'first' op: 'StridedSlice' input: 'shape' input: 'b' "
      "input: 'e' input: 'e' attr { key: 'shrink_axis_mask' value { i: 1 } } "
      "attr { key: 'T' value { type: DT_INT32 } } }\n" +
      IntConst("minus_one", -1) +
      "node { name: 'target' op: 'Pack' input: 'first' input: 'minus_one' "
      "attr { key: 'T' value { type: DT_INT32 } } }\n"
      "node { name: 'r' op: 'Reshape' input: 'x' input: 'target' }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "r").outputs[0],
            MakeTensorType(DType::kF32, {4, 30}));
  EXPECT_EQ(NodeNamed(*graph, "r").kind, OpKind::kReshape);
  EXPECT_TRUE(graph->warnings().empty());
}

TEST(GraphDefLoweringTest, ControlInputsBecomeControlEdges) {
  const std::string text = Placeholder("x", "dim { size: 2 }") +
                           "node { name: 'init' op: 'NoOp' }\n"
                           "node { name: 'y' op: 'Relu' input: 'x' "
                           "input: '^init' }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const NodeId y = *graph->FindNode("y");
  ASSERT_EQ(graph->in_edges(y).size(), 2u);
  EXPECT_FALSE(graph->in_edges(y)[0].control);
  EXPECT_TRUE(graph->in_edges(y)[1].control);
  EXPECT_EQ(graph->in_edges(y)[1].src, *graph->FindNode("init"));
  EXPECT_TRUE(NodeNamed(*graph, "init").outputs.empty());
}

// for (i = 0; i < 10; i += 1) {} as TF1 control flow.
std::string WhileLoop(const std::string& frame) {
  const std::string frame_attr =
      "attr { key: 'frame_name' value { s: '" + frame + "' } } ";
  return IntConst("start", 0) + IntConst("limit", 10) + IntConst("one", 1) +
         "node { name: 'enter' op: 'Enter' input: 'start' " + frame_attr +
         "attr { key: 'T' value { type: DT_INT32 } } }\n"
         "node { name: 'limit_enter' op: 'Enter' input: 'limit' " +
         frame_attr +
         "attr { key: 'is_constant' value { b: true } } }\n"
         "node { name: 'merge' op: 'Merge' input: 'enter' input: 'next' }\n"
         "node { name: 'less' op: 'Less' input: 'merge' input: "
         "'limit_enter' }\n"
         "node { name: 'cond' op: 'LoopCond' input: 'less' }\n"
         "node { name: 'switch' op: 'Switch' input: 'merge' input: 'cond' }\n"
         "node { name: 'body' op: 'Identity' input: 'switch:1' }\n"
         "node { name: 'one_enter' op: 'Enter' input: 'one' " +
         frame_attr +
         "}\n"
         "node { name: 'add' op: 'AddV2' input: 'body' input: 'one_enter' }\n"
         "node { name: 'next' op: 'NextIteration' input: 'add' }\n"
         "node { name: 'exit' op: 'Exit' input: 'switch' }\n";
}

TEST(GraphDefLoweringTest, WhileLoopBackEdgeCutAndTripCountFound) {
  absl::StatusOr<Graph> graph = Lower(WhileLoop("loop"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->loops().size(), 1u);
  const LoopInfo& loop = graph->loops()[0];
  EXPECT_EQ(loop.frame_name, "loop");
  EXPECT_EQ(graph->node(loop.merge).name, "merge");
  EXPECT_EQ(graph->node(loop.next_iteration).name, "next");
  EXPECT_EQ(loop.trip_count, 10);
  EXPECT_EQ(NodeNamed(*graph, "merge").attributes.trip_count, 10);
  EXPECT_EQ(NodeNamed(*graph, "merge").kind, OpKind::kLoopControl);
  // The NextIteration -> Merge edge is gone; Enter -> Merge stays.
  const NodeId merge = *graph->FindNode("merge");
  ASSERT_EQ(graph->in_edges(merge).size(), 1u);
  EXPECT_EQ(graph->node(graph->in_edges(merge)[0].src).name, "enter");
  EXPECT_TRUE(graph->out_edges(*graph->FindNode("next")).empty());
  EXPECT_TRUE(graph->warnings().empty());
}

TEST(GraphDefLoweringTest, LoopWithoutConstantBoundWarns) {
  std::string text = WhileLoop("loop");
  // Bound the loop by a placeholder instead of a constant.
  const std::string from = "input: 'limit' ";
  text.replace(text.find(from), from.size(), "input: 'n' ");
  text +=
      "node { name: 'n' op: 'Placeholder' attr { key: 'dtype' value { "
      "type: DT_INT32 } } attr { key: 'shape' value { shape { } } } }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->loops().size(), 1u);
  EXPECT_EQ(graph->loops()[0].trip_count, -1);
  ASSERT_FALSE(graph->warnings().empty());
  EXPECT_THAT(graph->warnings()[0], HasSubstr("trip count unknown"));
}

TEST(GraphDefLoweringTest, DanglingInputIsAnError) {
  const std::string text =
      Placeholder("x", "dim { size: 1 }") +
      "node { name: 'conv1/Conv2D' op: 'Conv2D' input: 'x' input: 'w' }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(graph.status().message(),
            "node 'conv1/Conv2D' input 1 names 'w', which is not a node");
}

TEST(GraphDefLoweringTest, CycleOutsideLoopsIsAnError) {
  const std::string text =
      "node { name: 'a' op: 'Identity' input: 'b' }\n"
      "node { name: 'b' op: 'Relu' input: 'a' }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("cycle outside TF1 while loops"));
  EXPECT_THAT(graph.status().message(), HasSubstr("'a'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("'b'"));
}

TEST(GraphDefLoweringTest, StridesOfWrongLengthIsAnError) {
  const std::string text =
      Placeholder("x",
                  "dim { size: 1 } dim { size: 8 } dim { size: 8 } "
                  "dim { size: 3 }") +
      Weights("w",
              "dim { size: 3 } dim { size: 3 } dim { size: 3 } "
              "dim { size: 16 }") +
      "node { name: 'x2' op: 'Conv2D' input: 'x' input: 'w' "
      "attr { key: 'padding' value { s: 'SAME' } } "
      "attr { key: 'strides' value { list { i: 1 i: 2 i: 1 } } } }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "node 'x2' attr 'strides' has 3 values, expected 4");
}

TEST(GraphDefLoweringTest, OverflowingShapeIsAnError) {
  const std::string text = Placeholder(
      "huge", "dim { size: 1099511627776 } dim { size: 1099511627776 }");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'huge' output 0"));
}

TEST(GraphDefLoweringTest, ReadingAMissingOutputIsAnError) {
  const std::string text = Placeholder("x", "dim { size: 4 }") +
                           "node { name: 'y' op: 'Relu' input: 'x:3' }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'y' input 0 reads output 3 of 'x'"));
}

TEST(GraphDefLoweringTest, DataDependentShapesTakeTheDefaultDimension) {
  const std::string text = Placeholder("x", "dim { size: 6 }") +
                           "node { name: 'w' op: 'Where' input: 'x' }\n";
  ImportOptions options;
  options.default_symbolic_dim = 3;
  absl::StatusOr<Graph> graph = Lower(text, options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "w").outputs[0],
            MakeTensorType(DType::kS64, {3, 1}));
  ASSERT_EQ(graph->warnings().size(), 1u);
  EXPECT_THAT(graph->warnings()[0], HasSubstr("'w'"));
}

TEST(GraphDefLoweringTest, ColocationAndHostOnlyOps) {
  const std::string text =
      "node { name: 'wav' op: 'Placeholder' attr { key: 'dtype' value { "
      "type: DT_STRING } } }\n"
      "node { name: 'decoded' op: 'DecodeWav' input: 'wav' "
      "attr { key: 'desired_samples' value { i: 16000 } } "
      "attr { key: 'desired_channels' value { i: 1 } } }\n"
      "node { name: 'read' op: 'Identity' input: 'decoded' "
      "attr { key: '_class' value { list { s: 'loc:@decoded' } } } }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "decoded").device_constraint,
            DeviceConstraint::kCpuOnly);
  EXPECT_EQ(NodeNamed(*graph, "wav").device_constraint,
            DeviceConstraint::kCpuOnly);
  EXPECT_EQ(NodeNamed(*graph, "read").device_constraint,
            DeviceConstraint::kAny);
  ASSERT_EQ(graph->colocation_groups().size(), 1u);
  EXPECT_EQ(graph->colocation_groups()[0], "decoded");
  EXPECT_EQ(NodeNamed(*graph, "read").colocation_group, 0);
  EXPECT_EQ(NodeNamed(*graph, "decoded").colocation_group, 0);
  EXPECT_EQ(NodeNamed(*graph, "decoded").outputs.size(), 2u);
}

// A TF1 training graph: the variable's initializer (RandomUniform scaled by
// a constant, assigned once by 'init') is one-time work at zero FLOPs; the
// step's MatMul, its scaling and the update assigned from the variable keep
// theirs.
TEST(GraphDefLoweringTest, VariableInitializersAreOneTimeWork) {
  const std::string float_attr = " attr { key: 'T' value { type: DT_FLOAT } }";
  const std::string text =
      Placeholder("x", "dim { size: 2 } dim { size: 4 }") +
      "node { name: 'w' op: 'VariableV2' "
      "attr { key: 'dtype' value { type: DT_FLOAT } } "
      "attr { key: 'shape' value { shape { dim { size: 4 } dim { size: 4 } } "
      "} } }\n"
      "node { name: 'w/shape' op: 'Const' "
      "attr { key: 'dtype' value { type: DT_INT32 } } "
      "attr { key: 'value' value { tensor { dtype: DT_INT32 "
      "tensor_shape { dim { size: 2 } } int_val: 4 int_val: 4 } } } }\n"
      "node { name: 'w/random' op: 'RandomUniform' input: 'w/shape' "
      "attr { key: 'T' value { type: DT_INT32 } } "
      "attr { key: 'dtype' value { type: DT_FLOAT } } }\n" +
      Weights("scale", "") +
      "node { name: 'w/scaled' op: 'Mul' input: 'w/random' input: 'scale'" +
      float_attr +
      " }\n"
      "node { name: 'w/Assign' op: 'Assign' input: 'w' input: 'w/scaled'" +
      float_attr +
      " }\n"
      "node { name: 'init' op: 'NoOp' input: '^w/Assign' }\n"
      "node { name: 'w/read' op: 'Identity' input: 'w'" +
      float_attr +
      " }\n"
      "node { name: 'y' op: 'MatMul' input: 'x' input: 'w/read'" +
      float_attr +
      " }\n"
      "node { name: 'y/scaled' op: 'Mul' input: 'y' input: 'scale'" +
      float_attr +
      " }\n"
      "node { name: 'w/decayed' op: 'Mul' input: 'w/read' input: 'scale'" +
      float_attr +
      " }\n"
      "node { name: 'w/update' op: 'Assign' input: 'w' input: 'w/decayed'" +
      float_attr + " }\n";
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const double random_flops = NodeNamed(*graph, "w/random").flops;
  const double scaled_flops = NodeNamed(*graph, "w/scaled").flops;
  EXPECT_EQ(random_flops, 0);
  EXPECT_EQ(scaled_flops, 0);
  EXPECT_GT(NodeNamed(*graph, "w/scaled").bytes_written, 0);
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "y").flops, 2.0 * 2 * 4 * 4);
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "y/scaled").flops, 2.0 * 4);
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "w/decayed").flops, 4.0 * 4);
  EXPECT_THAT(graph->warnings(),
              Contains(HasSubstr("2 node(s) only compute variables' initial "
                                 "values")));
}

TEST(GraphDefLoweringTest, TextFormatGoesThroughTheImporter) {
  std::unique_ptr<Importer> importer = NewGraphDefImporter();
  const std::string text = "# a comment\n" +
                           Placeholder("x", "dim { size: 2 } dim { size: 3 }") +
                           "node { name: 'y' op: 'Softmax' input: 'x' }\n";
  EXPECT_TRUE(importer->Sniff(text));
  absl::StatusOr<Graph> graph = importer->Import(text, ImportOptions());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "y").kind, OpKind::kSoftmax);
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "y").flops, 5.0 * 6);

  absl::StatusOr<Graph> broken =
      importer->Import("node { name: 'x' op: }", ImportOptions());
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("line 1"));
}

}  // namespace
}  // namespace gopt::graph::tf
