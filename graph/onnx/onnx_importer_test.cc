#include "graph/onnx/onnx_importer.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx.pb.h"
#include "tests/util/shared_data.h"

namespace gopt::graph {
namespace {

using ::gopt::onnx::AttributeProto;
using ::gopt::onnx::GraphProto;
using ::gopt::onnx::ModelProto;
using ::gopt::onnx::NodeProto;
using ::gopt::onnx::TensorProto;
using ::gopt::onnx::ValueInfoProto;
using ::testing::HasSubstr;

// Builds small ModelProto fixtures in C++.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("gopt-test");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("fixture");
  }

  GraphProto* graph() { return model_.mutable_graph(); }

  // A dim of 0 or more is a dim_value; -1 is unknown; `symbols` names
  // dim_params by position (non-empty entries win).
  static void SetType(ValueInfoProto* info, const std::string& name,
                      int elem_type, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& symbols = {}) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    auto* shape = tensor->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* dim = shape->add_dim();
      if (i < symbols.size() && !symbols[i].empty()) {
        dim->set_dim_param(symbols[i]);
      } else if (dims[i] >= 0) {
        dim->set_dim_value(dims[i]);
      }
    }
  }

  static void Input(GraphProto* graph, const std::string& name,
                    const std::vector<int64_t>& dims,
                    const std::vector<std::string>& symbols = {},
                    int elem_type = TensorProto::FLOAT) {
    SetType(graph->add_input(), name, elem_type, dims, symbols);
  }
  void Input(const std::string& name, const std::vector<int64_t>& dims,
             const std::vector<std::string>& symbols = {},
             int elem_type = TensorProto::FLOAT) {
    Input(graph(), name, dims, symbols, elem_type);
  }

  static void Output(GraphProto* graph, const std::string& name) {
    graph->add_output()->set_name(name);
  }
  void Output(const std::string& name) { Output(graph(), name); }

  // A float initializer without data (only its shape matters).
  static void Weight(GraphProto* graph, const std::string& name,
                     const std::vector<int64_t>& dims) {
    TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
  }
  void Weight(const std::string& name, const std::vector<int64_t>& dims) {
    Weight(graph(), name, dims);
  }

  // An int64 initializer with values, rank 1 (or a scalar when `scalar`).
  static void Ints(GraphProto* graph, const std::string& name,
                   const std::vector<int64_t>& values, bool scalar = false) {
    TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  void Ints(const std::string& name, const std::vector<int64_t>& values,
            bool scalar = false) {
    Ints(graph(), name, values, scalar);
  }

  // A float initializer with values, rank 1 (or a scalar when `scalar`).
  void Floats(const std::string& name, const std::vector<float>& values,
              bool scalar = false) {
    TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::FLOAT);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) t->add_float_data(v);
  }

  static NodeProto* Node(GraphProto* graph, const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs,
                         const std::string& name = "") {
    NodeProto* node = graph->add_node();
    node->set_op_type(op);
    if (!name.empty()) node->set_name(name);
    for (const auto& in : inputs) node->add_input(in);
    for (const auto& out : outputs) node->add_output(out);
    return node;
  }
  NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs,
                  const std::string& name = "") {
    return Node(graph(), op, inputs, outputs, name);
  }

  static void IntAttr(NodeProto* node, const std::string& name, int64_t v) {
    AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(v);
  }
  static void IntsAttr(NodeProto* node, const std::string& name,
                       const std::vector<int64_t>& v) {
    AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void StringAttr(NodeProto* node, const std::string& name,
                         const std::string& v) {
    AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::STRING);
    a->set_s(v);
  }
  static GraphProto* GraphAttr(NodeProto* node, const std::string& name) {
    AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::GRAPH);
    a->mutable_g()->set_name(name);
    return a->mutable_g();
  }

  std::string Serialize() const { return model_.SerializeAsString(); }

 private:
  ModelProto model_;
};

absl::StatusOr<Graph> Import(const std::string& bytes,
                             const ImportOptions& options = ImportOptions()) {
  return NewOnnxImporter()->Import(bytes, options);
}

const Node& NodeNamed(const Graph& graph, const std::string& name) {
  std::optional<NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << "no node " << name;
  return graph.node(id.value_or(0));
}

bool HasWarning(const Graph& graph, absl::string_view text) {
  for (const std::string& warning : graph.warnings()) {
    if (absl::StrContains(warning, text)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Small fixtures.

TEST(OnnxImporterTest, ConvBecomesNchwConvolution) {
  ModelBuilder m;
  m.Input("x", {1, 3, 32, 32});
  m.Weight("w", {8, 3, 3, 3});
  m.Weight("b", {8});
  NodeProto* conv = m.Node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  ModelBuilder::IntsAttr(conv, "strides", {2, 2});
  ModelBuilder::IntsAttr(conv, "pads", {1, 1, 1, 1});
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 3 nodes for x, w, b plus the Conv.
  EXPECT_EQ(graph->num_nodes(), 4);
  const Node& node = NodeNamed(*graph, "conv");
  EXPECT_EQ(node.kind, OpKind::kConvolution);
  EXPECT_EQ(node.outputs[0], MakeTensorType(DType::kF32, {1, 8, 16, 16}));
  EXPECT_TRUE(node.attributes.has_convolution_dimensions);
  EXPECT_EQ(node.attributes.convolution().kernel_output_feature, 0);
  EXPECT_EQ(node.attributes.convolution().kernel_input_feature, 1);
  EXPECT_EQ(node.attributes.convolution().input_spatial,
            (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(node.attributes.window().size(), 2u);
  EXPECT_EQ(node.attributes.window()[0].stride, 2);
  EXPECT_EQ(node.attributes.window()[0].padding_low, 1);
  // 2 * (1*8*16*16 outputs) * (3 input channels * 3*3 window).
  EXPECT_DOUBLE_EQ(node.flops, 2.0 * 8 * 16 * 16 * 3 * 9);
  EXPECT_TRUE(node.attributes.is_root);
  EXPECT_EQ(graph->in_edges(*graph->FindNode("conv")).size(), 3u);
}

TEST(OnnxImporterTest, DepthwiseConvWithSameUpperPadding) {
  ModelBuilder m;
  m.Input("x", {1, 8, 15, 15});
  m.Weight("w", {8, 1, 3, 3});
  NodeProto* conv = m.Node("Conv", {"x", "w"}, {"y"}, "dw");
  ModelBuilder::IntAttr(conv, "group", 8);
  ModelBuilder::IntsAttr(conv, "strides", {2, 2});
  ModelBuilder::StringAttr(conv, "auto_pad", "SAME_UPPER");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = NodeNamed(*graph, "dw");
  // ceil(15 / 2) = 8; total padding (8-1)*2 + 3 - 15 = 2, split 1/1.
  EXPECT_EQ(node.outputs[0].dims, (std::vector<int64_t>{1, 8, 8, 8}));
  EXPECT_EQ(node.attributes.feature_group_count, 8);
  EXPECT_EQ(node.attributes.window()[1].padding_low, 1);
  EXPECT_EQ(node.attributes.window()[1].padding_high, 1);
  EXPECT_DOUBLE_EQ(node.flops, 2.0 * 8 * 8 * 8 * 1 * 9);
}

TEST(OnnxImporterTest, ConvTransposeWithOutputPadding) {
  ModelBuilder m;
  m.Input("x", {1, 4, 5, 5});
  m.Weight("w", {4, 2, 3, 3});
  NodeProto* node = m.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  ModelBuilder::IntsAttr(node, "strides", {2, 2});
  ModelBuilder::IntsAttr(node, "pads", {1, 1, 1, 1});
  ModelBuilder::IntsAttr(node, "output_padding", {1, 1});
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& up = NodeNamed(*graph, "up");
  // 2*(5-1) + 1 + 3 - 1 - 1 = 10.
  EXPECT_EQ(up.outputs[0].dims, (std::vector<int64_t>{1, 2, 10, 10}));
  EXPECT_EQ(up.attributes.window()[0].base_dilation, 2);
  EXPECT_TRUE(up.attributes.window()[0].reversal);
  // Dense over the dilated input: 2 * 200 outputs * 4 input channels * 9.
  EXPECT_DOUBLE_EQ(up.flops, 2.0 * 200 * 4 * 9);
}

TEST(OnnxImporterTest, GemmWithTransposedB) {
  ModelBuilder m;
  m.Input("a", {2, 64});
  m.Weight("b", {10, 64});
  m.Weight("c", {10});
  NodeProto* gemm = m.Node("Gemm", {"a", "b", "c"}, {"y"}, "fc");
  ModelBuilder::IntAttr(gemm, "transB", 1);
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& fc = NodeNamed(*graph, "fc");
  EXPECT_EQ(fc.kind, OpKind::kDot);
  EXPECT_EQ(fc.outputs[0].dims, (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(fc.attributes.dot().lhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_EQ(fc.attributes.dot().rhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_DOUBLE_EQ(fc.flops, 2.0 * 2 * 10 * 64);
}

TEST(OnnxImporterTest, BatchedMatMulAndBroadcastingAdd) {
  ModelBuilder m;
  m.Input("a", {8, 1, 6});
  m.Input("b", {7, 1});
  m.Input("p", {3, 4, 5});
  m.Weight("q", {5, 6});
  m.Node("Add", {"a", "b"}, {"sum"}, "add");
  m.Node("MatMul", {"p", "q"}, {"prod"}, "mm");
  m.Output("sum");
  m.Output("prod");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& add = NodeNamed(*graph, "add");
  EXPECT_EQ(add.kind, OpKind::kElementwiseBinary);
  EXPECT_EQ(add.outputs[0].dims, (std::vector<int64_t>{8, 7, 6}));
  EXPECT_DOUBLE_EQ(add.flops, 8 * 7 * 6);
  const Node& mm = NodeNamed(*graph, "mm");
  EXPECT_EQ(mm.outputs[0].dims, (std::vector<int64_t>{3, 4, 6}));
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 3 * 4 * 6 * 5);
}

TEST(OnnxImporterTest, FoldsShapeGatherConcatReshapeChain) {
  ModelBuilder m(/*opset=*/13);
  m.Input("x", {2, 3, 4});
  m.Ints("zero", {0}, /*scalar=*/true);
  m.Ints("axes0", {0});
  m.Ints("minus_one", {-1});
  m.Node("Shape", {"x"}, {"shape"});
  NodeProto* gather = m.Node("Gather", {"shape", "zero"}, {"batch"});
  ModelBuilder::IntAttr(gather, "axis", 0);
  m.Node("Unsqueeze", {"batch", "axes0"}, {"batch1"});
  NodeProto* concat = m.Node("Concat", {"batch1", "minus_one"}, {"target"});
  ModelBuilder::IntAttr(concat, "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"flat"}, "reshape");
  m.Ints("keep", {0, 0, -1});
  m.Node("Reshape", {"x", "keep"}, {"same"}, "reshape_zero");
  m.Output("flat");
  m.Output("same");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Unnamed nodes get "<op_type>_<index>".
  EXPECT_EQ(NodeNamed(*graph, "Shape_0").kind, OpKind::kShapeOf);
  EXPECT_EQ(NodeNamed(*graph, "reshape").outputs[0].dims,
            (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(NodeNamed(*graph, "reshape_zero").outputs[0].dims,
            (std::vector<int64_t>{2, 3, 4}));
}

TEST(OnnxImporterTest, SliceStartsAsInputsAndPadsAsInput) {
  ModelBuilder m(/*opset=*/13);
  m.Input("x", {1, 3, 10, 10});
  m.Ints("starts", {1, -4});
  m.Ints("ends", {INT64_MAX, INT64_MAX});
  m.Ints("axes", {2, 3});
  m.Ints("steps", {2, 1});
  m.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"}, "slice");
  m.Ints("pads", {0, 0, 1, 2, 0, 0, 3, 4});
  m.Node("Pad", {"s", "pads"}, {"p"}, "pad");
  m.Output("p");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Rows 1,3,5,7,9 and the last 4 columns.
  EXPECT_EQ(NodeNamed(*graph, "slice").outputs[0].dims,
            (std::vector<int64_t>{1, 3, 5, 4}));
  EXPECT_EQ(NodeNamed(*graph, "pad").outputs[0].dims,
            (std::vector<int64_t>{1, 3, 9, 10}));
}

TEST(OnnxImporterTest, OldOpsetAttributesForSliceAndReduce) {
  ModelBuilder m(/*opset=*/9);
  m.Input("x", {4, 6, 8});
  NodeProto* slice = m.Node("Slice", {"x"}, {"s"}, "slice");
  ModelBuilder::IntsAttr(slice, "starts", {1});
  ModelBuilder::IntsAttr(slice, "ends", {3});
  ModelBuilder::IntsAttr(slice, "axes", {1});
  NodeProto* reduce = m.Node("ReduceMean", {"s"}, {"r"}, "mean");
  ModelBuilder::IntsAttr(reduce, "axes", {-1});
  ModelBuilder::IntAttr(reduce, "keepdims", 0);
  m.Output("r");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "slice").outputs[0].dims,
            (std::vector<int64_t>{4, 2, 8}));
  const Node& mean = NodeNamed(*graph, "mean");
  EXPECT_EQ(mean.kind, OpKind::kReduce);
  EXPECT_EQ(mean.outputs[0].dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(mean.attributes.dimensions, (std::vector<int64_t>{2}));
}

TEST(OnnxImporterTest, LstmIsRnnWithXWROperands) {
  ModelBuilder m;
  m.Input("x", {5, 2, 16});
  m.Weight("w", {2, 4 * 32, 16});
  m.Weight("r", {2, 4 * 32, 32});
  NodeProto* lstm =
      m.Node("LSTM", {"x", "w", "r"}, {"y", "y_h", "y_c"}, "lstm");
  ModelBuilder::IntAttr(lstm, "hidden_size", 32);
  ModelBuilder::StringAttr(lstm, "direction", "bidirectional");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = NodeNamed(*graph, "lstm");
  EXPECT_EQ(node.kind, OpKind::kRnn);
  EXPECT_EQ(node.outputs[0].dims, (std::vector<int64_t>{5, 2, 2, 32}));
  EXPECT_EQ(node.outputs[2].dims, (std::vector<int64_t>{2, 2, 32}));
  // directions * seq * (2*batch*4H*(I+H) + 8*batch*4H).
  EXPECT_DOUBLE_EQ(node.flops,
                   2.0 * 5 * (2.0 * 2 * 128 * (16 + 32) + 8.0 * 2 * 128));
}

// If with a run-time condition: both branches are attached, the node costs
// the worse one, and the outer value the branches read becomes an edge.
TEST(OnnxImporterTest, IfWithRuntimeConditionCostsWorstBranch) {
  ModelBuilder m;
  m.Input("cond", {}, {}, TensorProto::BOOL);
  m.Input("x", {4, 8});
  m.Weight("w", {8, 8});
  NodeProto* node = m.Node("If", {"cond"}, {"y"}, "if");
  GraphProto* then_branch = ModelBuilder::GraphAttr(node, "then_branch");
  ModelBuilder::Node(then_branch, "MatMul", {"x", "w"}, {"t"}, "mm");
  ModelBuilder::Output(then_branch, "t");
  GraphProto* else_branch = ModelBuilder::GraphAttr(node, "else_branch");
  ModelBuilder::Node(else_branch, "Relu", {"x"}, {"e"}, "relu");
  ModelBuilder::Output(else_branch, "e");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& if_node = NodeNamed(*graph, "if");
  EXPECT_EQ(if_node.kind, OpKind::kConditional);
  ASSERT_EQ(if_node.subgraphs.size(), 2u);
  EXPECT_EQ(if_node.outputs[0].dims, (std::vector<int64_t>{4, 8}));
  const Graph& then_graph = *graph->subgraphs()[if_node.subgraphs[0]];
  // x and w captured as OuterScope parameters, plus the MatMul.
  EXPECT_EQ(then_graph.num_nodes(), 3);
  EXPECT_EQ(NodeNamed(then_graph, "x").op, "OuterScope");
  EXPECT_DOUBLE_EQ(if_node.flops, 2.0 * 4 * 8 * 8);
  // cond, then the captured x and w.
  EXPECT_EQ(graph->in_edges(*graph->FindNode("if")).size(), 3u);
}

TEST(OnnxImporterTest, IfWithFoldedConditionTakesItsBranch) {
  ModelBuilder m;
  m.Input("x", {1, 8});
  m.Node("Shape", {"x"}, {"shape"});
  m.Ints("zero", {0}, /*scalar=*/true);
  m.Ints("one", {1}, /*scalar=*/true);
  m.Node("Gather", {"shape", "zero"}, {"dim0"});
  m.Node("Equal", {"dim0", "one"}, {"is_one"});
  NodeProto* node = m.Node("If", {"is_one"}, {"y"}, "if");
  GraphProto* then_branch = ModelBuilder::GraphAttr(node, "then_branch");
  ModelBuilder::Ints(then_branch, "axes", {0});
  ModelBuilder::Node(then_branch, "Squeeze", {"x", "axes"}, {"t"});
  ModelBuilder::Output(then_branch, "t");
  GraphProto* else_branch = ModelBuilder::GraphAttr(node, "else_branch");
  ModelBuilder::Node(else_branch, "Identity", {"x"}, {"e"});
  ModelBuilder::Output(else_branch, "e");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "if").outputs[0].dims, (std::vector<int64_t>{8}));

  ImportOptions batch4;
  ModelBuilder m4;
  m4.Input("x", {4, 8});
  *m4.graph()->mutable_node() = m.graph()->node();
  *m4.graph()->mutable_initializer() = m.graph()->initializer();
  m4.Output("y");
  absl::StatusOr<Graph> graph4 = Import(m4.Serialize());
  ASSERT_TRUE(graph4.ok()) << graph4.status();
  EXPECT_EQ(NodeNamed(*graph4, "if").outputs[0].dims,
            (std::vector<int64_t>{4, 8}));
  // The Squeeze of a dimension that is 4 cannot import: the untaken branch
  // is dropped with a warning.
  EXPECT_EQ(NodeNamed(*graph4, "if").subgraphs.size(), 1u);
  EXPECT_TRUE(HasWarning(*graph4, "then_branch not kept"));
}

GraphProto* AddCounterBody(NodeProto* loop) {
  GraphProto* body = ModelBuilder::GraphAttr(loop, "body");
  ModelBuilder::Input(body, "i", {}, {}, TensorProto::INT64);
  ModelBuilder::Input(body, "cond_in", {}, {}, TensorProto::BOOL);
  ModelBuilder::Input(body, "v_in", {-1, -1});
  ModelBuilder::Node(body, "Identity", {"cond_in"}, {"cond_out"});
  ModelBuilder::Node(body, "MatMul", {"v_in", "w"}, {"v_out"}, "step");
  ModelBuilder::Output(body, "cond_out");
  ModelBuilder::Output(body, "v_out");
  return body;
}

TEST(OnnxImporterTest, LoopWithConstantTripCount) {
  ModelBuilder m;
  m.Input("v", {2, 16});
  m.Weight("w", {16, 16});
  m.Ints("m", {5}, /*scalar=*/true);
  NodeProto* loop = m.Node("Loop", {"m", "", "v"}, {"v_final"}, "loop");
  AddCounterBody(loop);
  m.Output("v_final");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = NodeNamed(*graph, "loop");
  EXPECT_EQ(node.kind, OpKind::kWhile);
  EXPECT_EQ(node.attributes.trip_count, 5);
  EXPECT_EQ(node.outputs[0].dims, (std::vector<int64_t>{2, 16}));
  ASSERT_EQ(node.subgraphs.size(), 1u);
  const Graph& body = *graph->subgraphs()[node.subgraphs[0]];
  EXPECT_DOUBLE_EQ(NodeNamed(body, "step").flops, 2.0 * 2 * 16 * 16);
  EXPECT_DOUBLE_EQ(node.flops, 5 * body.total_flops());
}

TEST(OnnxImporterTest, LoopWithRuntimeTripCountWarnsAndCostsOnce) {
  ModelBuilder m;
  m.Input("m", {}, {}, TensorProto::INT64);
  m.Input("v", {2, 16});
  m.Weight("w", {16, 16});
  NodeProto* loop = m.Node("Loop", {"m", "", "v"}, {"v_final"}, "loop");
  AddCounterBody(loop);
  m.Output("v_final");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = NodeNamed(*graph, "loop");
  EXPECT_EQ(node.attributes.trip_count, -1);
  EXPECT_DOUBLE_EQ(node.flops, 2.0 * 2 * 16 * 16);
  EXPECT_TRUE(HasWarning(*graph, "trip count unknown"));
}

TEST(OnnxImporterTest, SymbolicBatchTakesRequestedValue) {
  ModelBuilder m;
  m.Input("x", {-1, 3, 8, 8}, {"N"});
  m.Weight("w", {4, 3, 3, 3});
  m.Node("Conv", {"x", "w"}, {"y"}, "conv");
  m.Output("y");
  absl::StatusOr<Graph> one = Import(m.Serialize());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(HasWarning(*one, "symbolic dimension 'N' set to 1 (default)"));
  ImportOptions options;
  options.symbolic_dims["N"] = 16;
  absl::StatusOr<Graph> sixteen = Import(m.Serialize(), options);
  ASSERT_TRUE(sixteen.ok()) << sixteen.status();
  EXPECT_EQ(NodeNamed(*sixteen, "conv").outputs[0].dims,
            (std::vector<int64_t>{16, 4, 6, 6}));
  EXPECT_DOUBLE_EQ(sixteen->total_flops(), 16 * one->total_flops());
  EXPECT_TRUE(HasWarning(*sixteen, "'N' set to 16 (from the request)"));
}

TEST(OnnxImporterTest, UnknownDimensionUsesDefaultWithWarning) {
  ModelBuilder m;
  m.Input("x", {-1, 4});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y");
  ImportOptions options;
  options.default_symbolic_dim = 3;
  absl::StatusOr<Graph> graph = Import(m.Serialize(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "x").outputs[0].dims,
            (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(HasWarning(*graph, "tensor 'x' has unknown dimensions"));
}

TEST(OnnxImporterTest, UnsupportedOpWithDeclaredShapeIsOpaque) {
  ModelBuilder m;
  m.Input("x", {2, 3});
  m.Node("FancyCustomOp", {"x"}, {"y"}, "custom");
  ModelBuilder::SetType(m.graph()->add_value_info(), "y", TensorProto::FLOAT,
                        {2, 5});
  m.Node("Relu", {"y"}, {"z"});
  m.Output("z");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = NodeNamed(*graph, "custom");
  EXPECT_EQ(node.kind, OpKind::kOther);
  EXPECT_TRUE(node.cost_unknown);
  EXPECT_EQ(node.outputs[0].dims, (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(HasWarning(*graph, "opaque op"));
}

// ---------------------------------------------------------------------------
// Errors.

TEST(OnnxImporterTest, UnsupportedOpWithoutDeclaredShapeIsAnError) {
  ModelBuilder m;
  m.Input("x", {2, 3});
  m.Node("FancyCustomOp", {"x"}, {"y"}, "custom");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'custom' (FancyCustomOp): op type "
                        "'FancyCustomOp' is not supported"));
}

TEST(OnnxImporterTest, DanglingInputNamesNodeAndTensor) {
  ModelBuilder m;
  m.Input("x", {1, 3, 8, 8});
  m.Node("Conv", {"x", "W9"}, {"y"}, "Conv_12");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'Conv_12' (Conv) input 1 names tensor 'W9', "
                        "which no node, initializer or graph input produces"));
}

TEST(OnnxImporterTest, DeclaredShapeContradictingInferenceIsAnError) {
  ModelBuilder m;
  m.Input("x", {1, 3, 8, 8});
  m.Weight("w", {4, 3, 3, 3});
  m.Node("Conv", {"x", "w"}, {"y"}, "conv");
  ModelBuilder::SetType(m.graph()->add_value_info(), "y", TensorProto::FLOAT,
                        {1, 4, 8, 8});
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'conv' (Conv) output 0 tensor 'y' is inferred "
                        "as f32[1,4,6,6]"));
  EXPECT_THAT(graph.status().message(), HasSubstr("dimension 2 = 8"));
}

TEST(OnnxImporterTest, KernelShapeOfWrongLengthIsAnError) {
  ModelBuilder m;
  m.Input("x", {1, 3, 8, 8});
  m.Weight("w", {4, 3, 3, 3});
  NodeProto* conv = m.Node("Conv", {"x", "w"}, {"y"}, "x_conv");
  ModelBuilder::IntsAttr(conv, "kernel_shape", {3, 3, 3});
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'x_conv' (Conv): attribute 'kernel_shape' has 3 "
                        "values for a rank-4 input"));
}

TEST(OnnxImporterTest, CycleIsAnError) {
  ModelBuilder m;
  m.Input("x", {2});
  m.Node("Add", {"x", "b"}, {"a"}, "first");
  m.Node("Relu", {"a"}, {"b"}, "second");
  m.Output("b");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("cycle"));
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'first' (Add)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'second' (Relu)"));
}

TEST(OnnxImporterTest, DuplicateOutputNameIsAnError) {
  ModelBuilder m;
  m.Input("x", {2});
  m.Node("Relu", {"x"}, {"y"}, "one");
  m.Node("Neg", {"x"}, {"y"}, "two");
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("tensor 'y' is produced twice: by node 'one' (Relu) "
                        "and by node 'two' (Neg)"));
}

TEST(OnnxImporterTest, AbsurdDimsAreRejected) {
  ModelBuilder m;
  m.Input("x", {2});
  m.Weight("huge", {int64_t{1} << 40, int64_t{1} << 40});
  m.Node("Relu", {"huge"}, {"y"});
  m.Output("y");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("initializer 'huge'"));

  ModelBuilder reshape;
  reshape.Input("x", {2});
  reshape.Ints("shape", {INT64_MAX, INT64_MAX});
  reshape.Node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  reshape.Output("y");
  graph = Import(reshape.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'fill'"));
}

TEST(OnnxImporterTest, ExtremeAttributeValuesAreHandled) {
  ModelBuilder m;
  m.Input("x", {1, 4, 10, 10});
  m.Ints("starts", {INT64_MIN, INT64_MAX});
  m.Ints("ends", {INT64_MAX, INT64_MIN});
  m.Ints("axes", {2, 3});
  m.Ints("steps", {INT64_MAX, -INT64_MAX});
  m.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"}, "slice");
  m.Output("s");
  absl::StatusOr<Graph> graph = Import(m.Serialize());
  ASSERT_TRUE(graph.ok()) << graph.status();
  // One element from each end.
  EXPECT_EQ(NodeNamed(*graph, "slice").outputs[0].dims,
            (std::vector<int64_t>{1, 4, 1, 1}));

  ModelBuilder conv;
  conv.Input("x", {1, 4, 10, 10});
  conv.Weight("w", {4, 1, 3, 3});
  NodeProto* node = conv.Node("Conv", {"x", "w"}, {"y"}, "conv");
  ModelBuilder::IntAttr(node, "group", INT64_MAX);
  conv.Output("y");
  graph = Import(conv.Serialize());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'conv' (Conv): attribute 'group'"));
}

TEST(OnnxImporterTest, MissingOpsetIsAnError) {
  ModelProto model;
  model.set_ir_version(8);
  model.mutable_graph()->set_name("g");
  absl::StatusOr<Graph> graph = Import(model.SerializeAsString());
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("opset_import"));
}

TEST(OnnxImporterTest, SniffAcceptsModelProtoOnly) {
  auto importer = NewOnnxImporter();
  ModelBuilder m;
  m.Input("x", {2});
  m.Output("x");
  EXPECT_TRUE(importer->Sniff(m.Serialize()));
  EXPECT_TRUE(importer->Sniff(
      gopt::testing::ReadSharedData("onnx/light_squeezenet.onnx")));
  EXPECT_FALSE(importer->Sniff(""));
  EXPECT_FALSE(importer->Sniff("HloModule m\nENTRY e { }"));
  // A GraphDef / HloModuleProto starts with a length-delimited field 1.
  EXPECT_FALSE(
      importer->Sniff(std::string("\x0a\x03"
                                  "abc\x12\x01x",
                                  8)));
  // ir_version then something that is not a ModelProto field.
  EXPECT_FALSE(importer->Sniff(std::string("\x08\x07\x48\x01", 4)));
}

// Truncations and byte flips of a real file import or fail cleanly.
TEST(OnnxImporterTest, CorruptedBytesNeverCrash) {
  const std::string original =
      gopt::testing::ReadSharedData("onnx/light_squeezenet.onnx");
  ASSERT_FALSE(original.empty());
  auto importer = NewOnnxImporter();
  for (size_t length = 0; length < original.size(); length += 97) {
    (void)importer->Import(original.substr(0, length), ImportOptions());
  }
  uint32_t state = 12345;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = original;
    for (int flips = 0; flips < 4; ++flips) {
      state = state * 1664525u + 1013904223u;
      bytes[state % bytes.size()] = static_cast<char>(state >> 24);
    }
    (void)importer->Import(bytes, ImportOptions());
  }
}

// ---------------------------------------------------------------------------
// Shapes computed from Shape of an input (dynamic-length exports): with the
// input dims given they fold, so Pad and Reshape get concrete sizes.

// x[batch, time] padded up to a multiple of the hop, framed, then flattened
// again: Shape -> Gather -> Mod/Sub -> Unsqueeze -> Concat -> Pad, and
// Shape -> Slice -> ReduceProd -> Concat -> Reshape.
std::string DynamicLengthFramingModel() {
  ModelBuilder m(/*opset=*/13);
  m.Input("x", {-1, -1}, {"batch", "time"});
  m.Ints("hop", {160}, /*scalar=*/true);
  m.Ints("one", {1}, /*scalar=*/true);
  m.Ints("axes0", {0});
  m.Ints("zeros3", {0, 0, 0});
  m.Ints("begin0", {0});
  m.Ints("end1", {1});
  m.Ints("end_max", {INT64_MAX});
  m.Ints("frame_tail", {-1, 160});
  m.Node("Shape", {"x"}, {"shape"});
  NodeProto* gather = m.Node("Gather", {"shape", "one"}, {"time"});
  ModelBuilder::IntAttr(gather, "axis", 0);
  m.Node("Mod", {"time", "hop"}, {"rest"});
  m.Node("Sub", {"hop", "rest"}, {"missing"});
  m.Node("Mod", {"missing", "hop"}, {"pad_amount"});
  m.Node("Unsqueeze", {"pad_amount", "axes0"}, {"pad_amount1"});
  NodeProto* pads = m.Node("Concat", {"zeros3", "pad_amount1"}, {"pads"});
  ModelBuilder::IntAttr(pads, "axis", 0);
  m.Node("Pad", {"x", "pads"}, {"padded"}, "pad");
  m.Node("Shape", {"padded"}, {"padded_shape"});
  m.Node("Slice", {"padded_shape", "begin0", "end1"}, {"batch1"});
  NodeProto* target =
      m.Node("Concat", {"batch1", "frame_tail"}, {"frame_shape"});
  ModelBuilder::IntAttr(target, "axis", 0);
  m.Node("Reshape", {"padded", "frame_shape"}, {"frames"}, "frames");
  m.Node("Shape", {"frames"}, {"frames_shape"});
  m.Node("Slice", {"frames_shape", "end1", "end_max"}, {"per_example"});
  m.Node("ReduceProd", {"per_example"}, {"flat_size"});
  NodeProto* flat = m.Node("Concat", {"batch1", "flat_size"}, {"flat_shape"});
  ModelBuilder::IntAttr(flat, "axis", 0);
  m.Node("Reshape", {"frames", "flat_shape"}, {"flat"}, "flat");
  m.Output("flat");
  return m.Serialize();
}

TEST(OnnxImporterTest, PadAndReshapeFromShapeOfInputFoldWithGivenDims) {
  ImportOptions options;
  options.symbolic_dims["batch"] = 2;
  options.symbolic_dims["time"] = 1000;
  absl::StatusOr<Graph> graph = Import(DynamicLengthFramingModel(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 1000 samples pad to 1120 = 7 frames of 160.
  EXPECT_EQ(NodeNamed(*graph, "pad").outputs[0].dims,
            (std::vector<int64_t>{2, 1120}));
  EXPECT_EQ(NodeNamed(*graph, "frames").outputs[0].dims,
            (std::vector<int64_t>{2, 7, 160}));
  EXPECT_EQ(NodeNamed(*graph, "flat").outputs[0].dims,
            (std::vector<int64_t>{2, 1120}));
}

TEST(OnnxImporterTest, PadFromShapeOfInputFollowsTheGivenLength) {
  ImportOptions options;
  options.symbolic_dims["batch"] = 1;
  options.symbolic_dims["time"] = 1600;
  absl::StatusOr<Graph> graph = Import(DynamicLengthFramingModel(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Already a multiple of the hop: no padding.
  EXPECT_EQ(NodeNamed(*graph, "frames").outputs[0].dims,
            (std::vector<int64_t>{1, 10, 160}));
}

// An STFT front end: the frame count comes from float arithmetic on the
// length (Cast -> Div -> Ceil -> Cast), the padding from Split/Squeeze of
// the shape and Max, the padded length from a three-input Sum, the window
// count from ReduceMax of the padded shape.
TEST(OnnxImporterTest, StftFrontEndShapeArithmeticFolds) {
  ModelBuilder m(/*opset=*/13);
  m.Input("audio", {-1, -1}, {"batch", "samples"});
  m.Floats("hop_f", {256.0f}, /*scalar=*/true);
  m.Ints("hop", {256}, /*scalar=*/true);
  m.Ints("zero", {0}, /*scalar=*/true);
  m.Ints("zero1", {0});
  m.Ints("axes0", {0});
  m.Ints("zeros3", {0, 0, 0});
  m.Ints("split_sizes", {1, 1});
  m.Ints("window", {512});
  m.Node("Shape", {"audio"}, {"shape"});
  NodeProto* split = m.Node("Split", {"shape", "split_sizes"}, {"b1", "n1"});
  ModelBuilder::IntAttr(split, "axis", 0);
  m.Node("Squeeze", {"n1", "axes0"}, {"n"});
  NodeProto* cast = m.Node("Cast", {"n"}, {"n_f"});
  ModelBuilder::IntAttr(cast, "to", TensorProto::FLOAT);
  m.Node("Div", {"n_f", "hop_f"}, {"frames_f"});
  m.Node("Ceil", {"frames_f"}, {"frames_ceil"});
  NodeProto* back = m.Node("Cast", {"frames_ceil"}, {"frames"});
  ModelBuilder::IntAttr(back, "to", TensorProto::INT64);
  m.Node("Mul", {"frames", "hop"}, {"covered"});
  m.Node("Sub", {"covered", "n"}, {"short_by"});
  m.Node("Max", {"short_by", "zero"}, {"right"});
  m.Node("Unsqueeze", {"right", "axes0"}, {"right1"});
  NodeProto* pads = m.Node("Concat", {"zeros3", "right1"}, {"pads"});
  ModelBuilder::IntAttr(pads, "axis", 0);
  NodeProto* pad = m.Node("Pad", {"audio", "pads"}, {"padded"}, "pad");
  ModelBuilder::StringAttr(pad, "mode", "reflect");
  m.Node("Sum", {"n1", "right1", "zero1"}, {"padded_length"});
  m.Node("Shape", {"padded"}, {"padded_shape"});
  NodeProto* longest =
      m.Node("ReduceMax", {"padded_shape"}, {"longest"}, "longest");
  ModelBuilder::IntAttr(longest, "keepdims", 1);
  m.Node("Div", {"longest", "window"}, {"windows"});
  NodeProto* target = m.Node("Concat", {"b1", "windows", "window"}, {"target"});
  ModelBuilder::IntAttr(target, "axis", 0);
  m.Node("Reshape", {"padded", "target"}, {"framed"}, "framed");
  m.Node("Reshape", {"padded", "padded_length"}, {"joined"}, "joined");
  m.Output("framed");
  m.Output("joined");
  ImportOptions options;
  options.symbolic_dims["batch"] = 1;
  options.symbolic_dims["samples"] = 1000;
  absl::StatusOr<Graph> graph = Import(m.Serialize(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // ceil(1000 / 256) = 4 frames cover 1024 samples: 24 padded at the end;
  // 1024 / 512 = 2 windows.
  EXPECT_EQ(NodeNamed(*graph, "pad").outputs[0].dims,
            (std::vector<int64_t>{1, 1024}));
  EXPECT_EQ(NodeNamed(*graph, "framed").outputs[0].dims,
            (std::vector<int64_t>{1, 2, 512}));
  EXPECT_EQ(NodeNamed(*graph, "joined").outputs[0].dims,
            (std::vector<int64_t>{1024}));
}

// Pad amounts that depend on data (a graph input's values): the Pad gets
// the request's dimension as its amounts, with a warning naming it, instead
// of refusing the model.
TEST(OnnxImporterTest, DataDependentPadsAreBoundedWithAWarning) {
  ModelBuilder m(/*opset=*/13);
  m.Input("x", {-1, 100}, {"batch"});
  m.Input("extra", {1}, {}, TensorProto::INT64);
  m.Ints("zeros3", {0, 0, 0});
  NodeProto* concat = m.Node("Concat", {"zeros3", "extra"}, {"pads"});
  ModelBuilder::IntAttr(concat, "axis", 0);
  m.Node("Pad", {"x", "pads"}, {"padded"}, "pad");
  m.Node("Relu", {"padded"}, {"y"}, "relu");
  m.Output("y");
  ImportOptions options;
  options.symbolic_dims["batch"] = 2;
  options.default_symbolic_dim = 3;
  absl::StatusOr<Graph> graph = Import(m.Serialize(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 3 on each side of both dimensions.
  EXPECT_EQ(NodeNamed(*graph, "pad").outputs[0].dims,
            (std::vector<int64_t>{8, 106}));
  EXPECT_EQ(NodeNamed(*graph, "pad").kind, OpKind::kPad);
  EXPECT_FALSE(NodeNamed(*graph, "pad").cost_unknown);
  EXPECT_DOUBLE_EQ(NodeNamed(*graph, "relu").flops, 8.0 * 106);
  EXPECT_TRUE(HasWarning(*graph,
                         "node 'pad' (Pad): input 'pads' is computed at run "
                         "time, so the output shape is unknown at import; "
                         "bounded by assuming input 1 = [3,3,3,3] (the "
                         "request's dimension 3), giving f32[8,106]"));
}

TEST(OnnxImporterTest, DataDependentReshapeAndConstantOfShapeAreBounded) {
  ModelBuilder m(/*opset=*/13);
  m.Input("x", {4, 6});
  m.Input("target", {3}, {}, TensorProto::INT64);
  m.Node("Reshape", {"x", "target"}, {"r"}, "reshape");
  m.Node("ConstantOfShape", {"target"}, {"c"}, "fill");
  m.Output("r");
  m.Output("c");
  ImportOptions options;
  options.default_symbolic_dim = 5;
  absl::StatusOr<Graph> graph = Import(m.Serialize(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // The element count is kept: [1, 1, 24].
  EXPECT_EQ(NodeNamed(*graph, "reshape").outputs[0].dims,
            (std::vector<int64_t>{1, 1, 24}));
  EXPECT_EQ(NodeNamed(*graph, "fill").outputs[0].dims,
            (std::vector<int64_t>{5, 5, 5}));
  EXPECT_TRUE(HasWarning(*graph, "node 'reshape' (Reshape)"));
  EXPECT_TRUE(HasWarning(*graph, "node 'fill' (ConstantOfShape)"));
}

// Shapes computed inside If and Loop bodies: a branch pads by an amount
// folded from the Shape of an outer input (the request's dims decide it);
// a loop body's Range up to the iteration counter is data-dependent and
// bounded by the request's dimension.
TEST(OnnxImporterTest, RuntimeShapesAcrossIfAndLoopBodies) {
  ModelBuilder m(/*opset=*/13);
  m.Input("cond", {}, {}, TensorProto::BOOL);
  m.Input("x", {1, -1}, {"", "samples"});
  m.Ints("trips", {4}, /*scalar=*/true);
  NodeProto* branch = m.Node("If", {"cond"}, {"y"}, "if");
  GraphProto* then_branch = ModelBuilder::GraphAttr(branch, "then_branch");
  ModelBuilder::Ints(then_branch, "one", {1}, /*scalar=*/true);
  ModelBuilder::Ints(then_branch, "zeros", {0, 0, 0});
  ModelBuilder::Ints(then_branch, "axes0", {0});
  ModelBuilder::Node(then_branch, "Shape", {"x"}, {"shape"});
  ModelBuilder::Node(then_branch, "Gather", {"shape", "one"}, {"n"});
  ModelBuilder::Node(then_branch, "Unsqueeze", {"n", "axes0"}, {"n1"});
  NodeProto* pads =
      ModelBuilder::Node(then_branch, "Concat", {"zeros", "n1"}, {"pads"});
  ModelBuilder::IntAttr(pads, "axis", 0);
  ModelBuilder::Node(then_branch, "Pad", {"x", "pads"}, {"t"}, "then_pad");
  ModelBuilder::Output(then_branch, "t");
  GraphProto* else_branch = ModelBuilder::GraphAttr(branch, "else_branch");
  ModelBuilder::Node(else_branch, "Concat", {"x", "x"}, {"e"});
  ModelBuilder::IntAttr(else_branch->mutable_node(0), "axis", 1);
  ModelBuilder::Output(else_branch, "e");

  NodeProto* loop = m.Node("Loop", {"trips", ""}, {"ranges"}, "loop");
  GraphProto* body = ModelBuilder::GraphAttr(loop, "body");
  ModelBuilder::Input(body, "i", {}, {}, TensorProto::INT64);
  ModelBuilder::Input(body, "cond_in", {}, {}, TensorProto::BOOL);
  ModelBuilder::Ints(body, "start", {0}, /*scalar=*/true);
  ModelBuilder::Ints(body, "step", {1}, /*scalar=*/true);
  ModelBuilder::Node(body, "Identity", {"cond_in"}, {"cond_out"});
  ModelBuilder::Node(body, "Range", {"start", "i", "step"}, {"r"}, "range");
  ModelBuilder::Output(body, "cond_out");
  ModelBuilder::Output(body, "r");
  m.Output("y");
  m.Output("ranges");
  ImportOptions options;
  options.symbolic_dims["samples"] = 160;
  options.default_symbolic_dim = 7;
  absl::StatusOr<Graph> graph = Import(m.Serialize(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // Pads [0, 0, 0, 160] from the Shape of the outer x: [1, 160] -> [1, 320],
  // the same as the else branch's concatenation.
  EXPECT_EQ(NodeNamed(*graph, "if").outputs[0].dims,
            (std::vector<int64_t>{1, 320}));
  EXPECT_EQ(NodeNamed(*graph, "loop").outputs[0].dims,
            (std::vector<int64_t>{4, 7}));
  EXPECT_TRUE(HasWarning(*graph, "node 'range' (Range)"));
}

// ---------------------------------------------------------------------------
// Real models from ../shared/data/onnx.
//
// Node counts are ONNX nodes + initializers + graph inputs not backed by an
// initializer (each becomes one gopt node; subgraph nodes are not counted).
//
// Expected FLOPs come from an independent Python script (run once; it reads
// the protobuf wire format by hand, propagates shapes for the ops these
// files use and applies op_catalog.h's rules: convolution 2*out*Cin/g*k,
// dot 2*out*K, batch-norm/softmax 5 per element, pools out*window,
// elementwise 1 per element). It printed:
//   light_resnet50       nodes=415 total_flops=8250978184
//   light_shufflenet     nodes=446 total_flops=270819576
//   light_squeezenet     nodes=105 total_flops=704038808
//   ch_ppocr (48x192)    nodes=471 total_flops=37993572
//   ch_ppocr (batch 4)   nodes=471 total_flops=151974270

absl::StatusOr<Graph> ImportShared(const std::string& path,
                                   const ImportOptions& options = {}) {
  return Import(gopt::testing::ReadSharedData(path), options);
}

TEST(OnnxImporterTest, LightResnet50) {
  absl::StatusOr<Graph> graph = ImportShared("onnx/light_resnet50.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 415 nodes (239 ConstantOfShape weights) + 269 initializers + 1 input.
  EXPECT_EQ(graph->num_nodes(), 685);
  EXPECT_NEAR(graph->total_flops(), 8250978184.0, 0.01 * 8250978184.0);
  // conv1: x f32[1,3,224,224], w [64,3,7,7], stride 2, pads 3:
  // out = (224 + 3 + 3 - 7) / 2 + 1 = 112, so y is [1,64,112,112] and
  // flops = 2 * (64*112*112) * (3*7*7) = 2 * 802816 * 147 = 236027904.
  const Node& conv1 = NodeNamed(*graph, "n0");
  EXPECT_EQ(conv1.op, "Conv");
  EXPECT_EQ(conv1.outputs[0].dims, (std::vector<int64_t>{1, 64, 112, 112}));
  EXPECT_DOUBLE_EQ(conv1.flops, 236027904.0);
  // The ConstantOfShape weights have literal shapes: constants, not work.
  const Node& weight = NodeNamed(*graph, "ConstantOfShape_0");
  EXPECT_EQ(weight.kind, OpKind::kConstant);
  EXPECT_EQ(weight.outputs[0].dims, (std::vector<int64_t>{64, 3, 7, 7}));
}

TEST(OnnxImporterTest, LightShufflenet) {
  absl::StatusOr<Graph> graph = ImportShared("onnx/light_shufflenet.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 446 + 281 + 1);
  EXPECT_NEAR(graph->total_flops(), 270819576.0, 0.01 * 270819576.0);
}

TEST(OnnxImporterTest, LightSqueezenet) {
  absl::StatusOr<Graph> graph = ImportShared("onnx/light_squeezenet.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 105 + 52 + 1);
  EXPECT_NEAR(graph->total_flops(), 704038808.0, 0.01 * 704038808.0);
}

TEST(OnnxImporterTest, PaddleOcrClassifierNeedsItsImageSize) {
  // Height and width are symbolic; at the default of 1 the final 2x2
  // MaxPool does not fit, which the error says.
  absl::StatusOr<Graph> tiny =
      ImportShared("onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx");
  ASSERT_FALSE(tiny.ok());
  EXPECT_THAT(tiny.status().message(), HasSubstr("node 'p2o.MaxPool.0'"));

  ImportOptions options;
  options.symbolic_dims["p2o.DynamicDimension.1"] = 48;
  options.symbolic_dims["p2o.DynamicDimension.2"] = 192;
  absl::StatusOr<Graph> graph =
      ImportShared("onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx", options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 471 nodes (250 Constant) + no initializers + 1 input.
  EXPECT_EQ(graph->num_nodes(), 472);
  EXPECT_NEAR(graph->total_flops(), 37993572.0, 0.01 * 37993572.0);
  // The Shape -> Cast -> Slice -> Concat -> Reshape flatten folded.
  EXPECT_EQ(NodeNamed(*graph, "p2o.Reshape.36").outputs[0].dims,
            (std::vector<int64_t>{1, 200}));

  options.symbolic_dims["p2o.DynamicDimension.0"] = 4;
  absl::StatusOr<Graph> batch4 =
      ImportShared("onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx", options);
  ASSERT_TRUE(batch4.ok()) << batch4.status();
  EXPECT_NEAR(batch4->total_flops(), 151974270.0, 0.01 * 151974270.0);
}

// Silero VAD: the top level is Equal(sr, 16000) -> If; each branch is a full
// model (16 kHz / 8 kHz) whose nested Ifs hold the LSTMs.
//
// Hand derivation at sequence = 512 samples, batch = 1: the reflect Pad
// (initializer '165' = [0,0,0,96, 0,0,0,96]) makes 512 + 192 = 704 samples;
// the STFT Conv (w [258,1,256], stride 64) gives (704-256)/64 + 1 = 8 frames
// and 2 * 258*8 * 1*256 = 1056768 FLOPs. The 16 kHz encoder has three
// stride-2 convs (8 -> 4 -> 2 -> 1 frames), the 8 kHz one two (-> 2 frames).
// Each LSTM (input 64, hidden 64, 4 gates, batch 1) costs per step
// 2*1*256*(64+64) + 8*1*256 = 67584 FLOPs; two layers: 135168 (16 kHz,
// T = 1) and 270336 (8 kHz, T = 2).
const Node* FindKind(const Graph& graph, OpKind kind) {
  for (const Node& node : graph.nodes()) {
    if (node.kind == kind) return &node;
  }
  return nullptr;
}

TEST(OnnxImporterTest, SileroVadIfSubgraphsAndLstms) {
  ImportOptions options;
  options.symbolic_dims["sequence"] = 512;
  absl::StatusOr<Graph> graph =
      ImportShared("onnx/silero_vad_legacy.onnx", options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 2 nodes (Equal, If) + 69 initializers + 4 inputs (input, sr, h, c).
  EXPECT_EQ(graph->num_nodes(), 75);
  const Node& top_if = NodeNamed(*graph, "If_25");
  EXPECT_EQ(top_if.kind, OpKind::kConditional);
  ASSERT_EQ(top_if.subgraphs.size(), 2u);
  const Graph& khz16 = *graph->subgraphs()[top_if.subgraphs[0]];
  const Graph& khz8 = *graph->subgraphs()[top_if.subgraphs[1]];
  EXPECT_DOUBLE_EQ(NodeNamed(khz16, "Conv_73").flops, 1056768.0);
  EXPECT_EQ(NodeNamed(khz16, "Conv_73").outputs[0].dims,
            (std::vector<int64_t>{1, 258, 8}));
  EXPECT_DOUBLE_EQ(NodeNamed(khz8, "If_651").flops, 270336.0);
  // The LSTM If's condition (h has 2 layers) folds: the taken branch costs.
  const Node& lstm_if = NodeNamed(khz16, "If_177");
  EXPECT_DOUBLE_EQ(lstm_if.flops, 135168.0);
  const Graph& lstm_branch = *khz16.subgraphs()[lstm_if.subgraphs[0]];
  const Node* lstm = FindKind(lstm_branch, OpKind::kRnn);
  ASSERT_NE(lstm, nullptr);
  EXPECT_EQ(lstm->op, "LSTM");
  EXPECT_DOUBLE_EQ(lstm->flops, 67584.0);
  // sr is a run-time input: the top If costs its worse (8 kHz) branch.
  EXPECT_DOUBLE_EQ(top_if.flops, khz8.total_flops());
  EXPECT_GT(khz8.total_flops(), khz16.total_flops());
  EXPECT_DOUBLE_EQ(graph->total_flops(), top_if.flops + 1);
}

TEST(OnnxImporterTest, SileroVadFlopsScaleWithSymbolicBatch) {
  ImportOptions options;
  options.symbolic_dims["sequence"] = 512;
  absl::StatusOr<Graph> one =
      ImportShared("onnx/silero_vad_legacy.onnx", options);
  options.symbolic_dims["batch"] = 4;
  absl::StatusOr<Graph> four =
      ImportShared("onnx/silero_vad_legacy.onnx", options);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_TRUE(HasWarning(*four, "symbolic dimension 'batch' set to 4"));
  // Everything but a few scalar condition ops is per example.
  EXPECT_NEAR(four->total_flops() / one->total_flops(), 4.0, 1e-5);
}

TEST(OnnxImporterTest, SileroVadDefaultSequenceIsTooShort) {
  absl::StatusOr<Graph> graph = ImportShared("onnx/silero_vad_legacy.onnx");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'Conv_73' (Conv): convolution spatial "
                        "dimension 0: window of size 256 does not fit"));
}

}  // namespace
}  // namespace gopt::graph
