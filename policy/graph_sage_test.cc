#include "policy/graph_sage.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/torch_util.h"

namespace gopt::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 0 -> 2, 1 -> 2, 2 -> 3, 0 -> 3, 0 -> 2 (repeated): node 2's predecessors
// are 0, 1, 0; node 0's successors 2, 3, 2; node 1 has no predecessors.
SageGraph TinyGraph(bool with_mean_matrix) {
  return SageGraph::FromEdges({0, 1, 2, 0, 0}, {2, 2, 3, 3, 2}, 4,
                              with_mean_matrix);
}

std::vector<int64_t> Ids(const torch::Tensor& t) {
  return std::vector<int64_t>(t.data_ptr<int64_t>(),
                              t.data_ptr<int64_t>() + t.numel());
}

// [4, 2] messages with values that make every mean and max distinct.
torch::Tensor TinyMessages() {
  return torch::tensor({1.0f, -2.0f, 4.0f, 8.0f, -3.0f, 5.0f, 6.0f, 0.5f})
      .reshape({4, 2});
}

TEST(SageGraphTest, GroupsEdgesPerDirectionInEdgeOrder) {
  const SageGraph graph = TinyGraph(/*with_mean_matrix=*/false);
  EXPECT_THAT(graph.predecessors.offsets, ElementsAre(0, 0, 0, 3, 5));
  EXPECT_THAT(Ids(graph.predecessors.neighbour), ElementsAre(0, 1, 0, 2, 0));
  EXPECT_THAT(Ids(graph.predecessors.target), ElementsAre(2, 2, 2, 3, 3));
  EXPECT_THAT(graph.successors.offsets, ElementsAre(0, 3, 4, 5, 5));
  EXPECT_THAT(Ids(graph.successors.neighbour), ElementsAre(2, 3, 2, 2, 3));
  // Degrees count repeated edges and are at least 1.
  EXPECT_TRUE(
      torch::equal(graph.predecessors.degree,
                   torch::tensor({1.0f, 1.0f, 3.0f, 2.0f}).view({4, 1})));
  EXPECT_EQ(graph.predecessors.num_nodes(), 4);
  EXPECT_EQ(graph.predecessors.num_edges(), 5);
  EXPECT_FALSE(graph.predecessors.mean_matrix.defined());
}

TEST(SageGraphTest, RefusesEdgesOutsideTheGraph) {
  try {
    SageGraph::FromEdges({0, 4}, {1, 2}, 4, false);
    FAIL() << "an edge from node 4 of a 4-node graph was accepted";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(),
                HasSubstr("edge 1 (4 -> 2) names a node outside [0, 4)"));
  }
  EXPECT_THROW(SageGraph::FromEdges({0}, {}, 4, false), c10::Error);
}

TEST(AggregateRowsTest, MeanAndMaxOfAHandMadeGraph) {
  const SageGraph graph = TinyGraph(false);
  const torch::Tensor m = TinyMessages();
  const torch::Tensor got =
      AggregateRows(m, graph.predecessors, 0, 4, /*with_max=*/true);
  // Node 2: mean of rows 0, 1, 0 = (1+4+1)/3, (-2+8-2)/3; max 4, 8. Node 3:
  // rows 2, 0: mean (-1, 1.5), max (1, 5). Nodes 0 and 1: zeros.
  const torch::Tensor want = torch::tensor({0.0f, 0.0f, 0.0f, 0.0f,         //
                                            0.0f, 0.0f, 0.0f, 0.0f,         //
                                            2.0f, 4.0f / 3.0f, 4.0f, 8.0f,  //
                                            -1.0f, 1.5f, 1.0f, 5.0f})
                                 .reshape({4, 4});
  EXPECT_TRUE(torch::allclose(got, want)) << got;
  // A block of rows reads only its own edges; without max only the mean.
  const torch::Tensor block =
      AggregateRows(m, graph.successors, 1, 3, /*with_max=*/false);
  // Node 1: row 2 = (-3, 5); node 2: row 3 = (6, 0.5).
  EXPECT_TRUE(torch::allclose(
      block, torch::tensor({-3.0f, 5.0f, 6.0f, 0.5f}).reshape({2, 2})))
      << block;
}

TEST(AggregateRowsTest, InferenceMatchesTheDifferentiableKernelBitForBit) {
  // A random multigraph (repeated edges, nodes without neighbours): the
  // loop run without autograd gives the index_add / scatter_reduce result
  // exactly, for whole and partial blocks, with and without the max.
  torch::manual_seed(7);
  const int64_t n = 50;
  const torch::Tensor src = torch::randint(n, {200}, torch::kInt64);
  const torch::Tensor dst = torch::randint(n, {200}, torch::kInt64);
  const SageGraph graph =
      SageGraph::FromEdges(std::vector<int64_t>(src.data_ptr<int64_t>(),
                                                src.data_ptr<int64_t>() + 200),
                           std::vector<int64_t>(dst.data_ptr<int64_t>(),
                                                dst.data_ptr<int64_t>() + 200),
                           n, false);
  const torch::Tensor m = torch::randn({n, 7});
  for (const Neighbours* direction : {&graph.predecessors, &graph.successors}) {
    for (bool with_max : {false, true}) {
      for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, n}, {13, 29}}) {
        torch::Tensor differentiable;
        {
          torch::AutoGradMode grad(true);
          differentiable = AggregateRows(m, *direction, begin, end, with_max);
        }
        torch::NoGradGuard no_grad;
        const torch::Tensor inference =
            AggregateRows(m, *direction, begin, end, with_max);
        EXPECT_TRUE(torch::equal(inference, differentiable))
            << "max " << with_max << " rows " << begin << ".." << end;
      }
    }
  }
}

TEST(AggregateRowsTest, InferenceKeepsANaNMessageInTheMaxAndMean) {
  // A NaN neighbour value wins the max (as amax) and makes the mean NaN, in
  // the inference loop as in the differentiable kernel.
  const SageGraph graph = TinyGraph(false);
  torch::Tensor m = TinyMessages();
  m[1][0] =
      std::numeric_limits<float>::quiet_NaN();  // node 1: a predecessor of 2
  torch::Tensor differentiable;
  {
    torch::AutoGradMode grad(true);
    differentiable = AggregateRows(m, graph.predecessors, 0, 4, true);
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor inference =
      AggregateRows(m, graph.predecessors, 0, 4, true);
  EXPECT_TRUE(std::isnan(inference[2][0].item<float>()));  // mean
  EXPECT_TRUE(std::isnan(inference[2][2].item<float>()));  // max
  EXPECT_TRUE(torch::equal(inference.isnan(), differentiable.isnan()));
  EXPECT_TRUE(
      torch::equal(inference.nan_to_num(0), differentiable.nan_to_num(0)));
}

TEST(MeanByMatrixTest, AveragesBatchedRowsLikeTheEdgeList) {
  const SageGraph graph = TinyGraph(/*with_mean_matrix=*/true);
  // [4, 3, 2]: three configurations of the messages.
  const torch::Tensor x =
      torch::stack({TinyMessages(), TinyMessages() * 2, TinyMessages() - 1}, 1);
  for (const Neighbours* direction : {&graph.predecessors, &graph.successors}) {
    const torch::Tensor got = MeanByMatrix(x, *direction);
    ASSERT_EQ(got.sizes(), x.sizes());
    for (int64_t c = 0; c < 3; ++c) {
      const torch::Tensor want =
          AggregateRows(x.select(1, c).contiguous(), *direction, 0, 4, false);
      EXPECT_TRUE(torch::allclose(got.select(1, c), want, 1e-5, 1e-6)) << c;
    }
  }
  EXPECT_THROW(MeanByMatrix(x, TinyGraph(false).predecessors), c10::Error);
}

TEST(MeanOfRowsTest, AveragesListedRows) {
  const torch::Tensor x = TinyMessages();
  // Output 0 averages rows 3, 3, 1; output 1 none; output 2 row 2.
  const torch::Tensor got = MeanOfRows(x, {0, 3, 3, 4}, {3, 3, 1, 2});
  const torch::Tensor want =
      torch::tensor({16.0f / 3.0f, 9.0f / 3.0f, 0.0f, 0.0f, -3.0f, 5.0f})
          .reshape({3, 2});
  EXPECT_TRUE(torch::allclose(got, want)) << got;
  EXPECT_THROW(MeanOfRows(x, {0, 1}, {4}), c10::Error);
}

std::vector<std::string> ParameterNames(torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters()) {
    names.push_back(item.key());
  }
  return names;
}

// The GO network's configuration: messages, mean and max, FiLM, LayerNorm
// after the residual.
TEST(SageLayerTest, GoConfigurationMatchesItsFormula) {
  SageLayer layer = WithTorchSeed(7, [] {
    return SageLayer(SageLayerOptions(4).message(2).max(true).condition(3));
  });
  EXPECT_THAT(ParameterNames(*layer),
              ElementsAre("message.weight", "message.bias", "combine.weight",
                          "combine.bias", "norm.weight", "norm.bias",
                          "film.projection.weight", "film.projection.bias"));
  EXPECT_EQ(layer->named_parameters()["combine.weight"].sizes(),
            torch::IntArrayRef({4, 4 + 4 * 2}));
  // A non-zero FiLM so that it takes part.
  {
    torch::NoGradGuard no_grad;
    layer->named_parameters()["film.projection.weight"].fill_(0.1);
  }
  const SageGraph graph = TinyGraph(false);
  const torch::Tensor h = WithTorchSeed(8, [] { return torch::randn({4, 4}); });
  const torch::Tensor g = torch::tensor({{0.5f, -1.0f, 2.0f}});
  torch::Tensor got = layer->forward(h, graph, g);

  auto params = layer->named_parameters();
  const torch::Tensor m = torch::nn::functional::linear(
      h, params["message.weight"], params["message.bias"]);
  const torch::Tensor joined =
      torch::cat({h, AggregateRows(m, graph.predecessors, 0, 4, true),
                  AggregateRows(m, graph.successors, 0, 4, true)},
                 1);
  const torch::Tensor z = torch::relu(torch::nn::functional::linear(
      joined, params["combine.weight"], params["combine.bias"]));
  const torch::Tensor gamma_beta = torch::nn::functional::linear(
      g, params["film.projection.weight"], params["film.projection.bias"]);
  const torch::Tensor film =
      z * (1 + gamma_beta.narrow(1, 0, 4)) + gamma_beta.narrow(1, 4, 4);
  const torch::Tensor want = torch::layer_norm(
      h + film, {4}, params["norm.weight"], params["norm.bias"]);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << got - want;

  // Row blocks (shared among threads without gradient) change nothing.
  SageLayer blocked = WithTorchSeed(7, [] {
    return SageLayer(
        SageLayerOptions(4).message(2).max(true).condition(3).row_block(1));
  });
  {
    torch::NoGradGuard no_grad;
    blocked->named_parameters()["film.projection.weight"].fill_(0.1);
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor by_rows = blocked->forward(h, graph, g);
  EXPECT_TRUE(torch::allclose(by_rows, want, 1e-5, 1e-6)) << by_rows - want;
}

// The cost model's configuration: no message projection, mean only, no
// FiLM, LayerNorm inside the branch, the product split by column block.
TEST(SageLayerTest, CostModelConfigurationMatchesItsFormula) {
  SageLayer layer = WithTorchSeed(3, [] {
    return SageLayer(SageLayerOptions(4)
                         .message(0)
                         .max(false)
                         .norm(SageNorm::kInBranch)
                         .split_products(true));
  });
  EXPECT_THAT(ParameterNames(*layer),
              ElementsAre("combine.weight", "combine.bias", "norm.weight",
                          "norm.bias"));
  const SageGraph graph = TinyGraph(true);
  // [4 nodes, 2 configurations, 4].
  const torch::Tensor x = WithTorchSeed(4, [] {
    return torch::randn({4, 2, 4});
  });
  const torch::Tensor mean_in = MeanByMatrix(x, graph.predecessors);
  const torch::Tensor mean_out = MeanByMatrix(x, graph.successors);
  const torch::Tensor got =
      layer->Update(x, {mean_in, mean_out}, torch::Tensor());
  auto params = layer->named_parameters();
  const torch::Tensor update = torch::nn::functional::linear(
      torch::cat({x, mean_in, mean_out}, -1), params["combine.weight"],
      params["combine.bias"]);
  const torch::Tensor want =
      x + torch::relu(torch::layer_norm(update, {4}, params["norm.weight"],
                                        params["norm.bias"]));
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << got - want;

  // Undefined parts are zeros; widths that do not add up are refused.
  const torch::Tensor zeros = torch::zeros_like(x);
  EXPECT_TRUE(torch::equal(
      layer->Update(x, {torch::Tensor(), torch::Tensor()}, torch::Tensor()),
      layer->Update(x, {zeros, zeros}, torch::Tensor())));
  EXPECT_THROW(layer->Update(x, {mean_in}, torch::Tensor()), c10::Error);
  // Messages are the states themselves.
  EXPECT_TRUE(torch::equal(layer->Messages(x), x));
}

TEST(SageLayerTest, IdentityActivationAndSplitProductsOfTheGoLayout) {
  SageLayer concatenated = WithTorchSeed(5, [] {
    return SageLayer(SageLayerOptions(3).message(2).max(true).activation(
        SageActivation::kIdentity));
  });
  SageLayer split = WithTorchSeed(5, [] {
    return SageLayer(SageLayerOptions(3)
                         .message(2)
                         .max(true)
                         .activation(SageActivation::kIdentity)
                         .split_products(true));
  });
  const SageGraph graph = TinyGraph(false);
  const torch::Tensor h = WithTorchSeed(6, [] { return torch::randn({4, 3}); });
  const torch::Tensor a = concatenated->forward(h, graph, torch::Tensor());
  const torch::Tensor b = split->forward(h, graph, torch::Tensor());
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6)) << a - b;
  // Without activation: LayerNorm(h + W [h, parts] + b).
  auto params = concatenated->named_parameters();
  const torch::Tensor m = concatenated->Messages(h);
  const torch::Tensor update = torch::nn::functional::linear(
      torch::cat({h, AggregateRows(m, graph.predecessors, 0, 4, true),
                  AggregateRows(m, graph.successors, 0, 4, true)},
                 1),
      params["combine.weight"], params["combine.bias"]);
  const torch::Tensor want = torch::layer_norm(
      h + update, {3}, params["norm.weight"], params["norm.bias"]);
  EXPECT_TRUE(torch::allclose(a, want, 1e-5, 1e-6)) << a - want;
}

}  // namespace
}  // namespace gopt::policy
