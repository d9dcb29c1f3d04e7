#include "graph/tf/training_costs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "google/protobuf/text_format.h"
#include "graph/graph.h"
#include "graph/tf/graphdef_lowering.h"

namespace gopt::graph::tf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<Graph> Lower(const std::string& text,
                            int64_t default_symbolic_dim = 4) {
  tensorflow::GraphDef graph_def;
  if (!google::protobuf::TextFormat::ParseFromString(text, &graph_def)) {
    return absl::InvalidArgumentError("fixture does not parse");
  }
  ImportOptions options;
  options.source_name = "fixture";
  options.default_symbolic_dim = default_symbolic_dim;
  return LowerGraphDef(graph_def, "graphdef", options, nullptr);
}

const Node& NodeNamed(const Graph& graph, const std::string& name) {
  std::optional<NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  return graph.node(id.value_or(0));
}

// A float tensor node (Placeholder or VariableV2) of the given dims.
std::string Tensor(const std::string& op, const std::string& name,
                   const std::string& dims,
                   const std::string& dtype = "DT_FLOAT") {
  std::string shape;
  size_t start = 0;
  while (start <= dims.size()) {
    size_t end = dims.find(',', start);
    if (end == std::string::npos) end = dims.size();
    if (end > start) {
      shape += "dim { size: " + dims.substr(start, end - start) + " } ";
    }
    start = end + 1;
  }
  return "node { name: '" + name + "' op: '" + op +
         "' attr { key: 'dtype' value { type: " + dtype +
         " } } attr { key: 'shape' value { shape { " + shape + "} } } }\n";
}

// An int32 constant of `count` values (a scalar when `count` is 0).
std::string Ints(const std::string& name, const std::string& values,
                 int count) {
  const std::string shape =
      count == 0 ? "" : "dim { size: " + std::to_string(count) + " } ";
  return "node { name: '" + name +
         "' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }"
         " attr { key: 'value' value { tensor { dtype: DT_INT32 "
         "tensor_shape { " +
         shape + "} " + values + " } } } }\n";
}

std::string Scalar(const std::string& name) {
  return "node { name: '" + name +
         "' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }"
         " attr { key: 'value' value { tensor { dtype: DT_FLOAT "
         "tensor_shape { } float_val: 0.5 } } } }\n";
}

std::string Op(const std::string& name, const std::string& op,
               const std::string& inputs, const std::string& attrs = "") {
  std::string text = "node { name: '" + name + "' op: '" + op + "' ";
  size_t start = 0;
  while (start < inputs.size()) {
    size_t end = inputs.find(' ', start);
    if (end == std::string::npos) end = inputs.size();
    text += "input: '" + inputs.substr(start, end - start) + "' ";
    start = end + 1;
  }
  return text + "attr { key: 'T' value { type: DT_FLOAT } } " + attrs + "}\n";
}

// One SGD/Adam/Momentum training step of conv -> bias -> relu -> max pool
// -> dense -> softmax cross-entropy, written the way tf.gradients and
// tf.train optimizers emit it, with an unknown batch (the request's
// default dimension, 4, applies).
std::string ConvNetTrainingStep() {
  const std::string same =
      "attr { key: 'padding' value { s: 'SAME' } } "
      "attr { key: 'strides' value { list { i: 1 i: 1 i: 1 i: 1 } } }";
  const std::string pool =
      "attr { key: 'padding' value { s: 'VALID' } } "
      "attr { key: 'ksize' value { list { i: 1 i: 2 i: 2 i: 1 } } } "
      "attr { key: 'strides' value { list { i: 1 i: 2 i: 2 i: 1 } } }";
  return Tensor("Placeholder", "x", "-1,8,8,3") +
         Tensor("Placeholder", "labels", "-1,10") +
         Tensor("VariableV2", "w", "3,3,3,16") +
         Tensor("VariableV2", "w/m", "3,3,3,16") +
         Tensor("VariableV2", "w/v", "3,3,3,16") +
         Tensor("VariableV2", "b", "16") +
         Tensor("VariableV2", "fc", "256,10") +
         Tensor("VariableV2", "fc/accum", "256,10") + Scalar("lr") +
         Op("w/read", "Identity", "w") + Op("b/read", "Identity", "b") +
         Op("fc/read", "Identity", "fc") +
         Op("conv", "Conv2D", "x w/read", same) +
         Op("bias", "BiasAdd", "conv b/read") + Op("relu", "Relu", "bias") +
         Op("pool", "MaxPool", "relu", pool) +
         Ints("flat/shape", "int_val: -1 int_val: 256", 2) +
         Op("flat", "Reshape", "pool flat/shape") +
         Op("logits", "MatMul", "flat fc/read") +
         Op("xent", "SoftmaxCrossEntropyWithLogits", "logits labels") +
         Op("d_fc", "MatMul", "flat xent:1",
            "attr { key: 'transpose_a' value { b: true } }") +
         Op("d_flat", "MatMul", "xent:1 fc/read",
            "attr { key: 'transpose_b' value { b: true } }") +
         Op("pool/shape", "Shape", "pool") +
         Op("d_pool", "Reshape", "d_flat pool/shape") +
         Op("d_relu", "MaxPoolGrad", "relu pool d_pool", pool) +
         Op("d_bias", "ReluGrad", "d_relu relu") +
         Op("d_b", "BiasAddGrad", "d_bias") +
         Ints("w/shape", "int_val: 3 int_val: 3 int_val: 3 int_val: 16", 4) +
         Op("d_w", "Conv2DBackpropFilter", "x w/shape d_bias", same) +
         Op("x/shape", "Shape", "x") +
         Op("d_x", "Conv2DBackpropInput", "x/shape w/read d_bias", same) +
         Op("adam", "ApplyAdam", "w w/m w/v lr lr lr lr lr lr d_w") +
         Op("sgd", "ApplyGradientDescent", "b lr d_b") +
         Op("momentum", "ApplyMomentum", "fc fc/accum lr d_fc lr");
}

TEST(TrainingCostsTest, ConvNetStepHasShapesAndHandCountedFlops) {
  absl::StatusOr<Graph> graph = Lower(ConvNetTrainingStep());
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const std::string& warning : graph->warnings()) {
    EXPECT_THAT(warning, Not(HasSubstr("could not be inferred")));
    EXPECT_THAT(warning, Not(HasSubstr("no shape rule")));
    EXPECT_THAT(warning, Not(HasSubstr("bytes only")));
  }
  for (const Node& node : graph->nodes()) {
    EXPECT_FALSE(node.cost_unknown) << node.name;
  }
  auto shape = [&](const std::string& name, int output = 0) {
    return NodeNamed(*graph, name).outputs[output].dims;
  };
  using Dims = std::vector<int64_t>;
  EXPECT_EQ(shape("xent", 0), (Dims{4}));
  EXPECT_EQ(shape("xent", 1), (Dims{4, 10}));
  EXPECT_EQ(shape("d_relu"), (Dims{4, 8, 8, 16}));
  EXPECT_EQ(shape("d_b"), (Dims{16}));
  EXPECT_EQ(shape("d_w"), (Dims{3, 3, 3, 16}));
  EXPECT_EQ(shape("d_x"), (Dims{4, 8, 8, 3}));
  EXPECT_EQ(shape("adam"), (Dims{3, 3, 3, 16}));
  EXPECT_EQ(shape("momentum"), (Dims{256, 10}));

  auto flops = [&](const std::string& name) {
    return NodeNamed(*graph, name).flops;
  };
  // 4*8*8*16 = 4096 conv outputs, each 3*3*3 = 27 multiply-adds.
  EXPECT_DOUBLE_EQ(flops("conv"), 2.0 * 4096 * 27);
  // Both backprops repeat the forward multiply-adds.
  EXPECT_DOUBLE_EQ(flops("d_w"), 2.0 * 4096 * 27);
  EXPECT_DOUBLE_EQ(flops("d_x"), 2.0 * 4096 * 27);
  // 4*4*4*16 = 1024 pooled gradients, windows of 4: 2 * 1024 * 4.
  EXPECT_DOUBLE_EQ(flops("d_relu"), 2.0 * 1024 * 4);
  EXPECT_DOUBLE_EQ(flops("d_bias"), 4096);
  EXPECT_DOUBLE_EQ(flops("d_b"), 4096);
  // 9 operations per logit, 4 x 10 logits.
  EXPECT_DOUBLE_EQ(flops("xent"), 9.0 * 40);
  EXPECT_DOUBLE_EQ(flops("d_fc"), 2.0 * 256 * 10 * 4);
  // Adam 12, SGD 2 and momentum 4 operations per variable element.
  EXPECT_DOUBLE_EQ(flops("adam"), 12.0 * 432);
  EXPECT_DOUBLE_EQ(flops("sgd"), 2.0 * 16);
  EXPECT_DOUBLE_EQ(flops("momentum"), 4.0 * 2560);
  // Adam reads var, m, v and the gradient and writes var, m, v.
  EXPECT_EQ(NodeNamed(*graph, "adam").bytes_read, 4 * 432 * 4);
  EXPECT_EQ(NodeNamed(*graph, "adam").bytes_written, 3 * 432 * 4);
  // The whole step: forward, backward and updates.
  double total = 0;
  for (const Node& node : graph->nodes()) total += node.flops;
  const double forward =
      2.0 * 4096 * 27 + 4096 + 4096 + 1024 * 4 + 2.0 * 4 * 10 * 256 + 9.0 * 40;
  const double backward = 2 * 20480.0 + 8192 + 4096 + 4096 + 2 * 221184.0;
  const double updates = 12.0 * 432 + 2.0 * 16 + 4.0 * 2560;
  EXPECT_DOUBLE_EQ(total, forward + backward + updates);
}

TEST(TrainingCostsTest, ResourceVariablesAndInputPipeline) {
  const std::string text =
      "node { name: 'it' op: 'IteratorV2' }\n"
      "node { name: 'next' op: 'IteratorGetNext' input: 'it' "
      "attr { key: 'output_types' value { list { type: DT_FLOAT type: "
      "DT_INT32 } } } attr { key: 'output_shapes' value { list { "
      "shape { dim { size: -1 } dim { size: 32 } } shape { dim { size: -1 } "
      "} } } } }\n"
      "node { name: 'v' op: 'VarHandleOp' attr { key: 'dtype' value { type: "
      "DT_FLOAT } } attr { key: 'shape' value { shape { dim { size: 32 } dim "
      "{ size: 8 } } } } }\n"
      "node { name: 'read' op: 'ReadVariableOp' input: 'v' "
      "attr { key: 'dtype' value { type: DT_FLOAT } } }\n" +
      Op("y", "MatMul", "next read") +
      Op("dw", "MatMul", "next y",
         "attr { key: 'transpose_a' value "
         "{ b: true } }") +
      Scalar("lr") + Op("sgd", "ResourceApplyGradientDescent", "v lr dw") +
      "node { name: 'init' op: 'AssignVariableOp' input: 'v' input: 'read' "
      "attr { key: 'dtype' value { type: DT_FLOAT } } }\n";
  absl::StatusOr<Graph> graph = Lower(text, /*default_symbolic_dim=*/16);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& next = NodeNamed(*graph, "next");
  ASSERT_EQ(next.outputs.size(), 2u);
  EXPECT_EQ(next.outputs[0], MakeTensorType(DType::kF32, {16, 32}));
  EXPECT_EQ(next.outputs[1], MakeTensorType(DType::kS32, {16}));
  EXPECT_FALSE(next.cost_unknown);
  EXPECT_EQ(next.bytes_written, 16 * 32 * 4 + 16 * 4);
  EXPECT_EQ(NodeNamed(*graph, "read").outputs[0],
            MakeTensorType(DType::kF32, {32, 8}));
  EXPECT_EQ(NodeNamed(*graph, "y").outputs[0],
            MakeTensorType(DType::kF32, {16, 8}));
  const Node& sgd = NodeNamed(*graph, "sgd");
  EXPECT_TRUE(sgd.outputs.empty());
  EXPECT_DOUBLE_EQ(sgd.flops, 2.0 * 32 * 8);
  EXPECT_EQ(sgd.bytes_read, 2 * 32 * 8 * 4);
  EXPECT_EQ(sgd.bytes_written, 32 * 8 * 4);
  EXPECT_EQ(NodeNamed(*graph, "init").bytes_written, 32 * 8 * 4);
  for (const std::string& warning : graph->warnings()) {
    EXPECT_THAT(warning, Not(HasSubstr("no shape rule")));
  }
}

TEST(TrainingCostsTest, SparseUpdatesTouchTheGradientRows) {
  // An embedding table of 1000 x 8 updated at 3 rows.
  const std::string text =
      Tensor("VariableV2", "table", "1000,8") +
      Tensor("VariableV2", "accum", "1000,8") + Scalar("lr") +
      Tensor("Placeholder", "rows", "3,8") +
      Tensor("Placeholder", "idx", "3", "DT_INT32") +
      Op("update", "SparseApplyAdagrad", "table accum lr rows idx");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& update = NodeNamed(*graph, "update");
  EXPECT_EQ(update.outputs[0].dims, (std::vector<int64_t>{1000, 8}));
  // Adagrad's 6 operations on each of the 24 gradient elements.
  EXPECT_DOUBLE_EQ(update.flops, 6.0 * 24);
}

TEST(TrainingCostsTest, GradientShapeArithmeticFolds) {
  // The gradient of a broadcasting Add and of a Sum over axis 1, as
  // tf.gradients writes them.
  const std::string text =
      Ints("s0", "int_val: 4 int_val: 1 int_val: 3", 3) +
      Ints("s1", "int_val: 5 int_val: 1", 2) +
      "node { name: 'bga' op: 'BroadcastGradientArgs' input: 's0' input: "
      "'s1' attr { key: 'T' value { type: DT_INT32 } } }\n" +
      Ints("perm", "int_val: 2 int_val: 0 int_val: 1", 3) +
      "node { name: 'inv' op: 'InvertPermutation' input: 'perm' "
      "attr { key: 'T' value { type: DT_INT32 } } }\n" +
      Ints("idx0", "int_val: 0 int_val: 2", 2) + Ints("idx1", "int_val: 1", 1) +
      Ints("dat0", "int_val: 7 int_val: 9", 2) + Ints("dat1", "int_val: 1", 1) +
      "node { name: 'stitch' op: 'DynamicStitch' input: 'idx0' input: "
      "'idx1' input: 'dat0' input: 'dat1' attr { key: 'T' value { type: "
      "DT_INT32 } } }\n" +
      Tensor("Placeholder", "data", "6,5") + Ints("ids", "int_val: 0", 6) +
      Ints("n", "int_val: 3", 0) +
      Op("seg", "UnsortedSegmentSum", "data ids n");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // [4,1,3] against [5,1] -> [4,5,3]: s0 is reduced along 1, s1 along 0
  // and 2.
  const Node& bga = NodeNamed(*graph, "bga");
  EXPECT_EQ(bga.outputs[0].dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(bga.outputs[1].dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(NodeNamed(*graph, "inv").outputs[0].dims,
            (std::vector<int64_t>{3}));
  // Indices {0, 2} and {1} stitch 3 rows.
  EXPECT_EQ(NodeNamed(*graph, "stitch").outputs[0].dims,
            (std::vector<int64_t>{3}));
  const Node& seg = NodeNamed(*graph, "seg");
  EXPECT_EQ(seg.outputs[0].dims, (std::vector<int64_t>{3, 5}));
  EXPECT_DOUBLE_EQ(seg.flops, 30);
}

TEST(TrainingCostsTest, BatchNormGradAndSparseLoss) {
  const std::string text =
      Tensor("Placeholder", "dy", "2,4,4,8") +
      Tensor("Placeholder", "x", "2,4,4,8") +
      Tensor("VariableV2", "scale", "8") +
      Op("bng", "FusedBatchNormGradV3", "dy x scale scale scale scale") +
      Tensor("Placeholder", "logits", "6,100") +
      Tensor("Placeholder", "labels", "6", "DT_INT32") +
      Op("loss", "SparseSoftmaxCrossEntropyWithLogits", "logits labels");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& bng = NodeNamed(*graph, "bng");
  ASSERT_EQ(bng.outputs.size(), 5u);
  EXPECT_EQ(bng.outputs[0].dims, (std::vector<int64_t>{2, 4, 4, 8}));
  EXPECT_EQ(bng.outputs[1].dims, (std::vector<int64_t>{8}));
  EXPECT_EQ(bng.outputs[2].dims, (std::vector<int64_t>{8}));
  EXPECT_DOUBLE_EQ(bng.flops, 8.0 * 256);
  const Node& loss = NodeNamed(*graph, "loss");
  EXPECT_EQ(loss.outputs[0].dims, (std::vector<int64_t>{6}));
  EXPECT_EQ(loss.outputs[1].dims, (std::vector<int64_t>{6, 100}));
  EXPECT_DOUBLE_EQ(loss.flops, 5.0 * 600 + 3.0 * 6);
}

TEST(TrainingCostsTest, OptimizerNamesCoverEveryKernelFamily) {
  for (absl::string_view name :
       {"GradientDescent", "Momentum", "KerasMomentum", "Adam",
        "AdamWithAmsgrad", "RMSProp", "CenteredRMSProp", "Adagrad", "AdagradV2",
        "Ftrl", "FtrlV2"}) {
    EXPECT_THAT(OptimizerNames(), ::testing::Contains(name));
    EXPECT_EQ(TrainingOpKind(absl::StrCat("ResourceApply", name)),
              OpKind::kElementwiseBinary);
  }
  EXPECT_FALSE(TrainingOpKind("Conv2D").has_value());
}

}  // namespace
}  // namespace gopt::graph::tf
