#include "simulator/generators/layers.h"

namespace gopt::simulator::generators {

Tensor ConvBn(ModelBuilder* b, absl::string_view name, Tensor x,
              int64_t filters, int kh, int kw, int stride, Padding padding,
              bool relu) {
  ModelBuilder::NameScope scope(b, name);
  Tensor kernel = b->Weight("weights", {kh, kw, b->Dim(x, -1), filters});
  Tensor y = b->Conv2D("Conv2D", x, kernel, stride, padding);
  y = b->BatchNorm("BatchNorm", y, b->Weight("gamma", {filters}),
                   b->Weight("beta", {filters}));
  return relu ? b->Unary("Relu", UnaryOp::kRelu, y) : y;
}

Tensor Dense(ModelBuilder* b, absl::string_view name, Tensor x, int64_t units,
             bool bias) {
  ModelBuilder::NameScope scope(b, name);
  Tensor y =
      b->MatMul("MatMul", x, b->Weight("kernel", {b->Dim(x, -1), units}));
  return bias ? b->BiasAdd("BiasAdd", y, b->Weight("bias", {units})) : y;
}

LstmWeights MakeLstmWeights(ModelBuilder* b, absl::string_view name,
                            int64_t input, int64_t hidden) {
  ModelBuilder::NameScope scope(b, name);
  LstmWeights weights;
  weights.kernel = b->Weight("kernel", {input + hidden, 4 * hidden});
  weights.bias = b->Weight("bias", {4 * hidden});
  weights.forget_bias = b->Constant("forget_bias", {});
  return weights;
}

LstmState ZeroLstmState(ModelBuilder* b, absl::string_view name, int64_t batch,
                        int64_t hidden) {
  ModelBuilder::NameScope scope(b, name);
  return LstmState{b->Constant("zero_c", {batch, hidden}),
                   b->Constant("zero_h", {batch, hidden})};
}

LstmState LstmCell(ModelBuilder* b, absl::string_view name, Tensor x,
                   LstmState state, const LstmWeights& weights) {
  ModelBuilder::NameScope scope(b, name);
  const int64_t hidden = b->Dim(state.h, -1);
  const Tensor xh = b->Concat("concat", {x, state.h}, 1);
  const Tensor gates = b->BiasAdd(
      "BiasAdd", b->MatMul("MatMul", xh, weights.kernel), weights.bias);
  const std::vector<Tensor> g =
      b->Split("split", gates, 1, {hidden, hidden, hidden, hidden});
  if (g.size() != 4) return state;
  const Tensor forget = b->Unary("Sigmoid", UnaryOp::kSigmoid,
                                 b->Add("add", g[2], weights.forget_bias));
  const Tensor input_gate = b->Unary("Sigmoid_1", UnaryOp::kSigmoid, g[0]);
  const Tensor candidate = b->Unary("Tanh", UnaryOp::kTanh, g[1]);
  const Tensor c = b->Add("add_1", b->Mul("mul", state.c, forget),
                          b->Mul("mul_1", input_gate, candidate));
  const Tensor output_gate = b->Unary("Sigmoid_2", UnaryOp::kSigmoid, g[3]);
  const Tensor h =
      b->Mul("mul_2", b->Unary("Tanh_1", UnaryOp::kTanh, c), output_gate);
  return LstmState{c, h};
}

Tensor FeedForward(ModelBuilder* b, absl::string_view name, Tensor x,
                   int64_t d_inner, UnaryOp activation) {
  ModelBuilder::NameScope scope(b, name);
  const int64_t d = b->Dim(x, -1);
  Tensor inner = b->Unary("activation", activation,
                          Dense(b, "dense", x, d_inner, /*bias=*/true));
  return Dense(b, "dense_1", inner, d, /*bias=*/true);
}

Tensor LayerNormWithWeights(ModelBuilder* b, absl::string_view name, Tensor x) {
  ModelBuilder::NameScope scope(b, name);
  const int64_t d = b->Dim(x, -1);
  return b->LayerNorm("LayerNorm", x, b->Weight("gamma", {d}),
                      b->Weight("beta", {d}));
}

Tensor SplitHeads(ModelBuilder* b, absl::string_view name, Tensor x,
                  int64_t batch, int64_t length, int64_t heads) {
  ModelBuilder::NameScope scope(b, name);
  Tensor r = b->Reshape("Reshape", x, {batch, length, heads, kHeadSize});
  return b->Transpose("transpose", r, {0, 2, 1, 3});
}

Tensor MergeHeads(ModelBuilder* b, absl::string_view name, Tensor x,
                  int64_t batch, int64_t length, int64_t heads) {
  ModelBuilder::NameScope scope(b, name);
  Tensor t = b->Transpose("transpose", x, {0, 2, 1, 3});
  return b->Reshape("Reshape", t, {batch * length, heads * kHeadSize});
}

}  // namespace gopt::simulator::generators
