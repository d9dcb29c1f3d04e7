#include "graph/tf/function_inlining.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "google/protobuf/text_format.h"
#include "graph/graph.h"
#include "graph/tf/graphdef_lowering.h"

namespace gopt::graph::tf {
namespace {

using ::testing::HasSubstr;

tensorflow::GraphDef Parse(const std::string& text) {
  tensorflow::GraphDef graph_def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &graph_def));
  return graph_def;
}

// A TF2-style graph: x [8, 32] and a resource-free weight feed a
// StatefulPartitionedCall of `dense`, whose body calls `act` through a
// PartitionedCall and returns (relu(x @ w), the matmul's shape).
constexpr char kTwoLevelCall[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value {
        shape {
          dim { size: 8 }
          dim { size: 32 }
        }
      }
    }
  }
  node {
    name: "w"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value {
        shape {
          dim { size: 32 }
          dim { size: 16 }
        }
      }
    }
  }
  node {
    name: "model"
    op: "StatefulPartitionedCall"
    input: "x"
    input: "w"
    attr {
      key: "f"
      value { func { name: "dense" } }
    }
    attr {
      key: "Tout"
      value { list { type: DT_FLOAT type: DT_INT32 } }
    }
  }
  node {
    name: "loss"
    op: "Sum"
    input: "model"
    input: "axes"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "axes"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape { dim { size: 2 } }
          int_val: 0
          int_val: 1
        }
      }
    }
  }
  node { name: "shape_out" op: "Identity" input: "model:1" }
  library {
    function {
      signature {
        name: "dense"
        input_arg { name: "inp" type: DT_FLOAT }
        input_arg { name: "kernel" type_attr: "T" }
        output_arg { name: "out" type: DT_FLOAT }
        output_arg { name: "shape" type: DT_INT32 }
      }
      node_def {
        name: "mm"
        op: "MatMul"
        input: "inp"
        input: "kernel"
        attr {
          key: "T"
          value { placeholder: "T" }
        }
      }
      node_def {
        name: "call_act"
        op: "PartitionedCall"
        input: "mm:product:0"
        attr {
          key: "f"
          value { func { name: "act" } }
        }
        attr {
          key: "Tout"
          value { list { type: DT_FLOAT } }
        }
      }
      node_def { name: "sh" op: "Shape" input: "mm:product:0" }
      ret { key: "out" value: "call_act:output:0" }
      ret { key: "shape" value: "sh:output:0" }
    }
    function {
      signature {
        name: "act"
        input_arg { name: "v" type: DT_FLOAT }
        output_arg { name: "r" type: DT_FLOAT }
      }
      node_def { name: "relu" op: "Relu" input: "v" }
      ret { key: "r" value: "relu:activations:0" }
    }
  }
)pb";

TEST(FunctionInliningTest, InlinesNestedCallsUnderTheCallersName) {
  tensorflow::GraphDef graph_def = Parse(kTwoLevelCall);
  (*graph_def.mutable_node(2)->mutable_attr())["f"]
      .mutable_func()
      ->mutable_attr()
      ->insert({"T", [] {
                  tensorflow::AttrValue t;
                  t.set_type(tensorflow::DT_FLOAT);
                  return t;
                }()});
  absl::StatusOr<std::optional<tensorflow::GraphDef>> inlined =
      InlineFunctionCalls(graph_def, /*max_nodes=*/1000);
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  ASSERT_TRUE(inlined->has_value());
  std::vector<std::string> names;
  for (const auto& node : (*inlined)->node()) names.push_back(node.name());
  EXPECT_THAT(
      names, ::testing::IsSupersetOf({"model/inp", "model/kernel", "model/mm",
                                      "model/call_act/v", "model/call_act/relu",
                                      "model/call_act", "model/sh", "model"}));

  ImportOptions options;
  options.source_name = "fixture";
  absl::StatusOr<Graph> graph =
      LowerGraphDef(graph_def, "graphdef", options, nullptr);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& mm = graph->node(*graph->FindNode("model/mm"));
  EXPECT_EQ(mm.outputs[0], MakeTensorType(DType::kF32, {8, 16}));
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 8 * 16 * 32);
  const Node& model = graph->node(*graph->FindNode("model"));
  ASSERT_EQ(model.outputs.size(), 2u);
  EXPECT_EQ(model.outputs[0], MakeTensorType(DType::kF32, {8, 16}));
  EXPECT_EQ(model.outputs[1], MakeTensorType(DType::kS32, {2}));
  EXPECT_EQ(graph->node(*graph->FindNode("model/call_act/relu")).flops, 128);
}

TEST(FunctionInliningTest, GraphsWithoutCallsAreLeftAlone) {
  tensorflow::GraphDef graph_def = Parse(
      "node { name: 'a' op: 'NoOp' } library { function { signature { name: "
      "'unused' } } }");
  absl::StatusOr<std::optional<tensorflow::GraphDef>> inlined =
      InlineFunctionCalls(graph_def, 1000);
  ASSERT_TRUE(inlined.ok());
  EXPECT_FALSE(inlined->has_value());
}

TEST(FunctionInliningTest, BadCallsAreRefusedNamingTheCall) {
  // Too few inputs for the signature.
  tensorflow::GraphDef graph_def = Parse(kTwoLevelCall);
  graph_def.mutable_node(2)->mutable_input()->RemoveLast();
  absl::StatusOr<std::optional<tensorflow::GraphDef>> inlined =
      InlineFunctionCalls(graph_def, 1000);
  ASSERT_FALSE(inlined.ok());
  EXPECT_THAT(inlined.status().message(), HasSubstr("call 'model'"));
  EXPECT_THAT(inlined.status().message(), HasSubstr("argument 'kernel'"));

  // A function that calls itself.
  graph_def = Parse(
      "node { name: 'c' op: 'PartitionedCall' attr { key: 'f' value { func { "
      "name: 'loop' } } } } library { function { signature { name: 'loop' } "
      "node_def { name: 'again' op: 'loop' } } }");
  inlined = InlineFunctionCalls(graph_def, 1000);
  ASSERT_FALSE(inlined.ok());
  EXPECT_THAT(inlined.status().message(), HasSubstr("recursion"));

  // A return naming no body node.
  graph_def = Parse(kTwoLevelCall);
  (*graph_def.mutable_library()->mutable_function(1)->mutable_ret())["r"] =
      "missing:y:0";
  inlined = InlineFunctionCalls(graph_def, 1000);
  ASSERT_FALSE(inlined.ok());
  EXPECT_THAT(inlined.status().message(), HasSubstr("'missing:y:0'"));

  // The node limit counts inlined bodies.
  inlined = InlineFunctionCalls(Parse(kTwoLevelCall), /*max_nodes=*/5);
  ASSERT_FALSE(inlined.ok());
  EXPECT_EQ(inlined.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gopt::graph::tf
