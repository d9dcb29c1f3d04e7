#include "graph/tf/functional_control_flow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "google/protobuf/text_format.h"
#include "graph/coverage.h"
#include "graph/graph.h"
#include "graph/tf/graphdef_lowering.h"

namespace gopt::graph::tf {
namespace {

using ::testing::HasSubstr;

// FLOPs of one [64, 64] x [64, 64] MatMul.
constexpr double kMatMulFlops = 2.0 * 64 * 64 * 64;

// The graph inputs every fixture starts from: a counter start, x and w.
constexpr char kInputs[] = R"pb(
  node {
    name: "start"
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
          tensor_shape {}
          int_val: $0
        }
      }
    }
  }
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
          dim { size: 64 }
          dim { size: 64 }
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
          dim { size: 64 }
          dim { size: 64 }
        }
      }
    }
  }
)pb";

// A scalar int32 constant node of a function body.
std::string ConstNodeDef(const std::string& name, int value) {
  return absl::Substitute(
      R"pb(node_def {
             name: "$0"
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
                   tensor_shape {}
                   int_val: $1
                 }
               }
             }
           })pb",
      name, value);
}

// The loop functions over (i: int32, x, w): cond_fn is `i <cmp> limit`
// with limit = `limit` ($1), body_fn returns (i <update> step, x @ w, w).
std::string LoopLibrary(const std::string& cmp, int limit,
                        const std::string& update, int step) {
  return absl::Substitute(
      R"pb(
        function {
          signature {
            name: "cond_fn"
            input_arg { name: "i" type: DT_INT32 }
            input_arg { name: "x" type: DT_FLOAT }
            input_arg { name: "w" type: DT_FLOAT }
            output_arg { name: "out" type: DT_BOOL }
          } $0
          node_def { name: "cmp" op: "$1" input: "i" input: "limit:output:0" }
          ret { key: "out" value: "cmp:z:0" }
        }
        function {
          signature {
            name: "body_fn"
            input_arg { name: "i" type: DT_INT32 }
            input_arg { name: "x" type: DT_FLOAT }
            input_arg { name: "w" type: DT_FLOAT }
            output_arg { name: "i_next" type: DT_INT32 }
            output_arg { name: "x_next" type: DT_FLOAT }
            output_arg { name: "w_out" type: DT_FLOAT }
          } $2
          node_def { name: "next" op: "$3" input: "i" input: "step:output:0" }
          node_def { name: "mm" op: "MatMul" input: "x" input: "w" }
          ret { key: "i_next" value: "next:z:0" }
          ret { key: "x_next" value: "mm:product:0" }
          ret { key: "w_out" value: "w" }
        }
      )pb",
      ConstNodeDef("limit", limit), cmp, ConstNodeDef("step", step), update);
}

// The While node over (start, x, w) calling cond_fn / body_fn.
constexpr char kWhileNode[] = R"pb(
  node {
    name: "loop"
    op: "StatelessWhile"
    input: "start"
    input: "x"
    input: "w"
    attr {
      key: "T"
      value { list { type: DT_INT32 type: DT_FLOAT type: DT_FLOAT } }
    }
    attr {
      key: "cond"
      value { func { name: "cond_fn" } }
    }
    attr {
      key: "body"
      value { func { name: "body_fn" } }
    }
    attr {
      key: "parallel_iterations"
      value { i: 10 }
    }
  }
  node { name: "y" op: "Identity" input: "loop:1" }
)pb";

// for (i = start; i <cmp> limit; i <update>= step) x = x @ w.
std::string WhileGraph(int start, const std::string& cmp, int limit,
                       const std::string& update, int step) {
  return absl::StrCat(absl::Substitute(kInputs, start), kWhileNode, "library {",
                      LoopLibrary(cmp, limit, update, step), "}");
}

tensorflow::GraphDef Parse(const std::string& text) {
  tensorflow::GraphDef graph_def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &graph_def));
  return graph_def;
}

absl::StatusOr<Graph> Lower(const tensorflow::GraphDef& graph_def) {
  ImportOptions options;
  options.source_name = "fixture";
  return LowerGraphDef(graph_def, "graphdef", options, nullptr);
}

absl::StatusOr<Graph> Lower(const std::string& text) {
  return Lower(Parse(text));
}

const Node& NodeNamed(const Graph& graph, const std::string& name) {
  std::optional<NodeId> id = graph.FindNode(name);
  EXPECT_TRUE(id.has_value()) << name;
  return graph.node(id.value_or(0));
}

TEST(FunctionalControlFlowTest, WhileCostsItsBodyTimesTheTripCount) {
  // i = 0; i < 5; i += 1: 5 iterations. Each runs the body (MatMul
  // 2*64*64*64 FLOPs + the counter's AddV2, 1 FLOP) and the cond (Less, 1
  // FLOP): 5 * (262144 * 2 + 2) = 2,621,450 FLOPs.
  absl::StatusOr<Graph> graph = Lower(WhileGraph(0, "Less", 5, "AddV2", 1));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 5);  // start, x, w, loop, y
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.kind, OpKind::kWhile);
  EXPECT_EQ(loop.attributes.trip_count, 5);
  EXPECT_FALSE(loop.cost_unknown);
  EXPECT_DOUBLE_EQ(loop.flops, 5 * (kMatMulFlops + 2));
  ASSERT_EQ(loop.subgraphs.size(), 2u);  // body, cond
  const Graph& body = *graph->subgraphs()[loop.subgraphs[0]];
  EXPECT_EQ(body.name(), "body_fn");
  EXPECT_DOUBLE_EQ(body.total_flops(), kMatMulFlops + 1);
  // Outputs: the loop variables (no output_shapes: the body's returns).
  ASSERT_EQ(loop.outputs.size(), 3u);
  EXPECT_EQ(loop.outputs[0], MakeTensorType(DType::kS32, {}));
  EXPECT_EQ(loop.outputs[1], MakeTensorType(DType::kF32, {64, 64}));
  EXPECT_EQ(NodeNamed(*graph, "y").outputs[0],
            MakeTensorType(DType::kF32, {64, 64}));
  // `gopt inspect` counts the loop, with its trip count known.
  const GraphCoverage coverage = ComputeCoverage(*graph);
  EXPECT_EQ(coverage.known_trip_counts.total, 1);
  EXPECT_EQ(coverage.known_trip_counts.count, 1);
  EXPECT_EQ(coverage.ops_lacking_rules.count("StatelessWhile"), 0u);
}

TEST(FunctionalControlFlowTest, TripCountsOfOtherCountedLoops) {
  struct Case {
    int start;
    const char* cmp;
    int limit;
    const char* update;
    int step;
    int64_t trips;
  };
  const Case cases[] = {
      {0, "LessEqual", 5, "AddV2", 1, 6},    // 0..5
      {0, "Less", 10, "Add", 3, 4},          // 0, 3, 6, 9
      {10, "Greater", 0, "Sub", 2, 5},       // 10, 8, 6, 4, 2
      {10, "GreaterEqual", 0, "Sub", 5, 3},  // 10, 5, 0
      {0, "NotEqual", 8, "AddV2", 2, 4},     // 0, 2, 4, 6
      {7, "Less", 5, "AddV2", 1, 0},         // false at entry
  };
  for (const Case& c : cases) {
    absl::StatusOr<Graph> graph =
        Lower(WhileGraph(c.start, c.cmp, c.limit, c.update, c.step));
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(NodeNamed(*graph, "loop").attributes.trip_count, c.trips)
        << c.cmp << " " << c.update;
  }
}

TEST(FunctionalControlFlowTest, UnknownTripCountIsOneIterationWithAWarning) {
  // i != 7 stepping by 2 from 0 never ends: not a counted loop.
  absl::StatusOr<Graph> graph = Lower(WhileGraph(0, "NotEqual", 7, "AddV2", 2));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.attributes.trip_count, -1);
  EXPECT_DOUBLE_EQ(loop.flops, kMatMulFlops + 2);
  EXPECT_THAT(graph->warnings(),
              ::testing::Contains(HasSubstr(
                  "node 'loop' (StatelessWhile): trip count unknown")));
  const GraphCoverage coverage = ComputeCoverage(*graph);
  EXPECT_EQ(coverage.known_trip_counts.total, 1);
  EXPECT_EQ(coverage.known_trip_counts.count, 0);
}

TEST(FunctionalControlFlowTest, BoundHeldInALoopInvariantVariable) {
  // What tf.while_loop(maximum_iterations=n) writes: the bound is loop
  // variable 1, which the body passes through, fed by Const n = 6; the cond
  // is LogicalAnd(i < n, x_flag) where the second part is data-dependent.
  const std::string text = absl::StrCat(absl::Substitute(kInputs, 0), R"pb(
    node {
      name: "n"
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
            tensor_shape {}
            int_val: 6
          }
        }
      }
    }
    node {
      name: "loop"
      op: "While"
      input: "start"
      input: "n"
      input: "x"
      input: "w"
      attr {
        key: "cond"
        value { func { name: "cond_fn" } }
      }
      attr {
        key: "body"
        value { func { name: "body_fn" } }
      }
    }
    library {
      function {
        signature {
          name: "cond_fn"
          input_arg { name: "i" type: DT_INT32 }
          input_arg { name: "n" type: DT_INT32 }
          input_arg { name: "x" type: DT_FLOAT }
          input_arg { name: "w" type: DT_FLOAT }
          output_arg { name: "out" type: DT_BOOL }
        }
        node_def { name: "less" op: "Less" input: "i" input: "n" }
        node_def {
          name: "zero"
          op: "Const"
          attr {
            key: "dtype"
            value { type: DT_FLOAT }
          }
          attr {
            key: "value"
            value {
              tensor {
                dtype: DT_FLOAT
                tensor_shape {}
                float_val: 0
              }
            }
          }
        }
        node_def { name: "sum" op: "Sum" input: "x" input: "axes:output:0" }
        node_def {
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
        node_def {
          name: "positive"
          op: "Greater"
          input: "sum:output:0"
          input: "zero:output:0"
        }
        node_def {
          name: "both"
          op: "LogicalAnd"
          input: "less:z:0"
          input: "positive:z:0"
        }
        node_def { name: "out_id" op: "Identity" input: "both:z:0" }
        ret { key: "out" value: "out_id:output:0" }
      }
      function {
        signature {
          name: "body_fn"
          input_arg { name: "i" type: DT_INT32 }
          input_arg { name: "n" type: DT_INT32 }
          input_arg { name: "x" type: DT_FLOAT }
          input_arg { name: "w" type: DT_FLOAT }
          output_arg { name: "i_next" type: DT_INT32 }
          output_arg { name: "n_out" type: DT_INT32 }
          output_arg { name: "x_next" type: DT_FLOAT }
          output_arg { name: "w_out" type: DT_FLOAT }
        }
        node_def {
          name: "one"
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
                tensor_shape {}
                int_val: 1
              }
            }
          }
        }
        node_def { name: "next" op: "AddV2" input: "one:output:0" input: "i" }
        node_def { name: "n_id" op: "Identity" input: "n" }
        node_def { name: "mm" op: "MatMul" input: "x" input: "w" }
        ret { key: "i_next" value: "next:z:0" }
        ret { key: "n_out" value: "n_id:output:0" }
        ret { key: "x_next" value: "mm:product:0" }
        ret { key: "w_out" value: "w" }
      }
    }
  )pb");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.attributes.trip_count, 6);
  // Per iteration: body MatMul + AddV2 (1); cond Less (1), Sum of 64*64
  // elements (a reduction costs one FLOP per input element: 4096), Greater
  // (1) and LogicalAnd (1).
  EXPECT_DOUBLE_EQ(loop.flops, 6 * (kMatMulFlops + 1 + 1 + 4096 + 1 + 1));
  EXPECT_EQ(loop.outputs.size(), 4u);
}

// A graph whose node "pick" runs If (then: x @ w, else: relu(x)) or Case
// over three branches (x @ w @ w, x @ w, relu(x)).
std::string BranchGraph(const std::string& op, const std::string& extra) {
  const bool is_case = op == "Case";
  return absl::StrCat(
      absl::Substitute(kInputs, 1),
      absl::Substitute(
          R"pb(
            node {
              name: "pick"
              op: "$0"
              input: "start"
              input: "x"
              input: "w"
              attr {
                key: "Tin"
                value { list { type: DT_FLOAT type: DT_FLOAT } }
              }
              attr {
                key: "Tout"
                value { list { type: DT_FLOAT } }
              } $1 $2
            }
            library {
              function {
                signature {
                  name: "one_matmul"
                  input_arg { name: "x" type: DT_FLOAT }
                  input_arg { name: "w" type: DT_FLOAT }
                  output_arg { name: "y" type: DT_FLOAT }
                }
                node_def { name: "mm" op: "MatMul" input: "x" input: "w" }
                ret { key: "y" value: "mm:product:0" }
              }
              function {
                signature {
                  name: "two_matmuls"
                  input_arg { name: "x" type: DT_FLOAT }
                  input_arg { name: "w" type: DT_FLOAT }
                  output_arg { name: "y" type: DT_FLOAT }
                }
                node_def { name: "mm1" op: "MatMul" input: "x" input: "w" }
                node_def {
                  name: "mm2"
                  op: "MatMul"
                  input: "mm1:product:0"
                  input: "w"
                }
                ret { key: "y" value: "mm2:product:0" }
              }
              function {
                signature {
                  name: "relu_only"
                  input_arg { name: "x" type: DT_FLOAT }
                  input_arg { name: "w" type: DT_FLOAT }
                  output_arg { name: "y" type: DT_FLOAT }
                }
                node_def { name: "r" op: "Relu" input: "x" }
                node_def {
                  name: "row"
                  op: "Slice"
                  input: "r:activations:0"
                  input: "begin:output:0"
                  input: "size:output:0"
                }
                node_def {
                  name: "begin"
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
                        int_val: 0
                      }
                    }
                  }
                }
                node_def {
                  name: "size"
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
                        int_val: 1
                        int_val: 64
                      }
                    }
                  }
                }
                ret { key: "y" value: "row:output:0" }
              }
            }
          )pb",
          op,
          is_case ? R"pb(attr {
                           key: "branches"
                           value {
                             list {
                               func { name: "two_matmuls" }
                               func { name: "one_matmul" }
                               func { name: "relu_only" }
                             }
                           }
                         })pb"
                  : R"pb(attr {
                           key: "then_branch"
                           value { func { name: "one_matmul" } }
                         }
                         attr {
                           key: "else_branch"
                           value { func { name: "relu_only" } }
                         })pb",
          extra));
}

TEST(FunctionalControlFlowTest, IfCostsItsMoreExpensiveBranch) {
  // then: one MatMul (524,288 FLOPs); else: Relu over 64*64 (4,096) and a
  // Slice (0). The plan must fit either: the then branch.
  absl::StatusOr<Graph> graph = Lower(BranchGraph("StatelessIf", ""));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& pick = NodeNamed(*graph, "pick");
  EXPECT_EQ(pick.kind, OpKind::kConditional);
  EXPECT_DOUBLE_EQ(pick.flops, kMatMulFlops);
  EXPECT_EQ(pick.subgraphs.size(), 2u);
  // The branches return [64, 64] and [1, 64]: the larger, with a warning.
  EXPECT_EQ(pick.outputs[0], MakeTensorType(DType::kF32, {64, 64}));
  EXPECT_THAT(graph->warnings(),
              ::testing::Contains(HasSubstr("output 0 differs between "
                                            "branches")));
  EXPECT_EQ(ComputeCoverage(*graph).known_trip_counts.total, 0);
}

TEST(FunctionalControlFlowTest, CaseCostsItsMostExpensiveBranch) {
  // branches: two MatMuls (1,048,576), one MatMul, Relu + Slice.
  absl::StatusOr<Graph> graph = Lower(BranchGraph("Case", ""));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& pick = NodeNamed(*graph, "pick");
  EXPECT_EQ(pick.kind, OpKind::kConditional);
  EXPECT_DOUBLE_EQ(pick.flops, 2 * kMatMulFlops);
  EXPECT_EQ(pick.subgraphs.size(), 3u);
}

TEST(FunctionalControlFlowTest, DeclaredOutputShapesWin) {
  absl::StatusOr<Graph> graph =
      Lower(BranchGraph("If", R"pb(attr {
                                     key: "output_shapes"
                                     value {
                                       list {
                                         shape {
                                           dim { size: 1 }
                                           dim { size: 64 }
                                         }
                                       }
                                     }
                                   })pb"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NodeNamed(*graph, "pick").outputs[0],
            MakeTensorType(DType::kF32, {1, 64}));
  EXPECT_THAT(graph->warnings(),
              ::testing::Not(::testing::Contains(HasSubstr("differs"))));
}

TEST(FunctionalControlFlowTest, NestedLoopsMultiplyTheirTripCounts) {
  // outer_body runs the 3-trip inner loop (i < 3) over x, the outer loop
  // runs 5 times: 15 MatMuls. Inner per trip: MatMul + AddV2 + Less; the
  // outer adds its own AddV2 + Less per trip.
  const std::string text =
      absl::StrCat(absl::Substitute(kInputs, 0), R"pb(
                     node {
                       name: "loop"
                       op: "While"
                       input: "start"
                       input: "x"
                       input: "w"
                       attr {
                         key: "cond"
                         value { func { name: "outer_cond" } }
                       }
                       attr {
                         key: "body"
                         value { func { name: "outer_body" } }
                       }
                     }
                     library { function { signature {
                                 name: "outer_cond"
                                 input_arg { name: "i" type: DT_INT32 }
                                 input_arg { name: "x" type: DT_FLOAT }
                                 input_arg { name: "w" type: DT_FLOAT }
                                 output_arg { name: "out" type: DT_BOOL }
                               }
                   )pb",
                   ConstNodeDef("limit", 5), R"pb(
            node_def { name: "cmp" op: "Less" input: "i" input: "limit:output:0" }
            ret { key: "out" value: "cmp:z:0" }
          }
                                 function {
            signature {
              name: "outer_body"
              input_arg { name: "i" type: DT_INT32 }
              input_arg { name: "x" type: DT_FLOAT }
              input_arg { name: "w" type: DT_FLOAT }
              output_arg { name: "i_next" type: DT_INT32 }
              output_arg { name: "x_next" type: DT_FLOAT }
              output_arg { name: "w_out" type: DT_FLOAT }
            }
      )pb",
                   ConstNodeDef("step", 1), ConstNodeDef("zero", 0), R"pb(
            node_def { name: "next" op: "AddV2" input: "i" input: "step:output:0" }
            node_def {
              name: "inner"
              op: "StatelessWhile"
              input: "zero:output:0"
              input: "x"
              input: "w"
              attr { key: "cond" value { func { name: "cond_fn" } } }
              attr { key: "body" value { func { name: "body_fn" } } }
            }
            ret { key: "i_next" value: "next:z:0" }
            ret { key: "x_next" value: "inner:output:1" }
            ret { key: "w_out" value: "w" }
          }
                   )pb",
                   LoopLibrary("Less", 3, "AddV2", 1), "}");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& loop = NodeNamed(*graph, "loop");
  EXPECT_EQ(loop.attributes.trip_count, 5);
  EXPECT_DOUBLE_EQ(loop.flops, 5 * (3 * (kMatMulFlops + 2) + 2));
  const GraphCoverage coverage = ComputeCoverage(*graph);
  EXPECT_EQ(coverage.known_trip_counts.total, 2);
  EXPECT_EQ(coverage.known_trip_counts.count, 2);
  EXPECT_EQ(loop.outputs[1], MakeTensorType(DType::kF32, {64, 64}));
}

TEST(FunctionalControlFlowTest, LoopInsideACalledFunction) {
  // A StatefulPartitionedCall whose function runs the loop: inlined, the
  // loop keeps its own node ("call/loop") with its bodies.
  const std::string text =
      absl::StrCat(absl::Substitute(kInputs, 0), R"pb(
                     node {
                       name: "call"
                       op: "StatefulPartitionedCall"
                       input: "start"
                       input: "x"
                       input: "w"
                       attr {
                         key: "f"
                         value { func { name: "model" } }
                       }
                     }
                     library { function {
                       signature {
                         name: "model"
                         input_arg { name: "s" type: DT_INT32 }
                         input_arg { name: "x" type: DT_FLOAT }
                         input_arg { name: "w" type: DT_FLOAT }
                         output_arg { name: "y" type: DT_FLOAT }
                       }
                       node_def {
                         name: "loop"
                         op: "While"
                         input: "s"
                         input: "x"
                         input: "w"
                         attr {
                           key: "cond"
                           value { func { name: "cond_fn" } }
                         }
                         attr {
                           key: "body"
                           value { func { name: "body_fn" } }
                         }
                       }
                       ret { key: "y" value: "loop:output:1" }
                     }
                   )pb",
                   LoopLibrary("Less", 4, "AddV2", 1), "}");
  absl::StatusOr<Graph> graph = Lower(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& loop = NodeNamed(*graph, "call/loop");
  EXPECT_EQ(loop.attributes.trip_count, 4);
  EXPECT_DOUBLE_EQ(loop.flops, 4 * (kMatMulFlops + 2));
}

void ExpectError(const tensorflow::GraphDef& graph_def,
                 const std::string& what) {
  absl::StatusOr<Graph> graph = Lower(graph_def);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr(what));
}

TEST(FunctionalControlFlowTest, BadBodiesAreInvalidArgumentNamingNodeAndAttr) {
  // Nodes: start, x, w, loop, y; library: cond_fn, body_fn.
  const tensorflow::GraphDef good = Parse(WhileGraph(0, "Less", 5, "AddV2", 1));
  auto loop_attr = [](tensorflow::GraphDef* graph_def) {
    return graph_def->mutable_node(3)->mutable_attr();
  };
  auto t_types = [&](tensorflow::GraphDef* graph_def, int count) {
    auto* types = (*loop_attr(graph_def))["T"].mutable_list()->mutable_type();
    types->Truncate(count);
  };

  tensorflow::GraphDef bad = good;
  (*loop_attr(&bad))["body"].mutable_func()->set_name("nope");
  ExpectError(bad,
              "node 'loop' (StatelessWhile) attr 'body' (function 'nope'): "
              "function 'nope' is not in the graph's library");

  bad = good;  // one input fewer than the signature takes
  bad.mutable_node(3)->mutable_input()->RemoveLast();
  t_types(&bad, 2);
  ExpectError(bad,
              "node 'loop' (StatelessWhile) attr 'body' (function "
              "'body_fn'): call 'body_fn' of function 'body_fn' has 2 data "
              "inputs");

  bad = good;  // T disagrees with the inputs
  t_types(&bad, 1);
  ExpectError(bad, "node 'loop' (StatelessWhile) attr 'T' lists 1 types for 3");

  bad = good;  // the body returns fewer values than the loop carries
  tensorflow::FunctionDef* body = bad.mutable_library()->mutable_function(1);
  body->mutable_signature()->mutable_output_arg()->RemoveLast();
  body->mutable_ret()->erase("w_out");
  ExpectError(bad,
              "node 'loop' (StatelessWhile) attr 'body' (function 'body_fn') "
              "returns 2 value(s); the node needs 3");

  bad = good;
  loop_attr(&bad)->erase("cond");
  ExpectError(bad, "node 'loop' (StatelessWhile) attr 'cond' is missing");

  bad = good;  // the body runs the loop again: recursion
  tensorflow::NodeDef* mm =
      bad.mutable_library()->mutable_function(1)->mutable_node_def(2);
  ASSERT_EQ(mm->name(), "mm");
  mm->set_op("While");
  mm->clear_input();
  for (const char* input : {"i", "x", "w"}) mm->add_input(input);
  *mm->mutable_attr() = *loop_attr(&bad);
  ExpectError(bad,
              "node 'loop' (StatelessWhile) attr 'body' (function 'body_fn'): "
              "node 'body_fn/mm' (While) attr 'body' (function 'body_fn'): "
              "function 'body_fn' calls itself (body_fn -> body_fn): "
              "recursion");

  // An If without inputs.
  ExpectError(Parse(R"pb(
                node {
                  name: "pick"
                  op: "If"
                  attr {
                    key: "Tout"
                    value { list { type: DT_FLOAT } }
                  }
                })pb"),
              "node 'pick' (If) has no input 'cond'");

  // A branch returning two values for one Tout.
  bad = Parse(BranchGraph("If", ""));
  tensorflow::FunctionDef* branch = bad.mutable_library()->mutable_function(0);
  ASSERT_EQ(branch->signature().name(), "one_matmul");
  branch->mutable_signature()->add_output_arg()->set_name("z");
  (*branch->mutable_ret())["z"] = "mm:product:0";
  ExpectError(bad,
              "node 'pick' (If) attr 'then_branch' (function 'one_matmul') "
              "returns 2 value(s); the node needs 1");
}

}  // namespace
}  // namespace gopt::graph::tf
