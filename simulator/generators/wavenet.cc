#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

constexpr int64_t kQuantizationLevels = 256;  // 8-bit mu-law
// Dilations 1, 2, ..., 512, then again from 1 (the paper's stacks of 10).
constexpr int kDilationCycle = 10;

// A 1-D convolution as tf.nn.conv1d runs it: a 2-D convolution on
// [batch, 1, time, channels] with a [1, width, in, out] kernel.
Tensor CausalConv(ModelBuilder* b, absl::string_view name, Tensor x,
                  int64_t width, int64_t channels, int dilation) {
  ModelBuilder::NameScope scope(b, name);
  const Tensor kernel =
      b->Weight("kernel", {1, width, b->Dim(x, -1), channels});
  return b->Conv2D("conv1d", x, kernel, 1, Padding::kCausal, dilation);
}

}  // namespace

absl::StatusOr<graph::Graph> BuildWaveNet(const GeneratorOptions& options) {
  const int64_t batch = options.batch;
  const int64_t samples = options.seq;
  const int64_t residual = options.hidden;
  const int64_t dilation_channels = options.hidden;
  const int64_t skip = 4 * options.hidden;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  const Tensor audio =
      b.Input("audio_one_hot", {batch, 1, samples, kQuantizationLevels});
  const Tensor labels =
      b.Input("labels", {batch * samples}, graph::DType::kS32);
  Tensor x = CausalConv(&b, "causal_layer", audio, 2, residual, 1);
  Tensor skip_sum;
  for (int layer = 0; layer < options.layers; ++layer) {
    ModelBuilder::NameScope scope(&b,
                                  absl::StrCat("dilated_stack/layer", layer));
    const int dilation = 1 << (layer % kDilationCycle);
    const Tensor filter =
        b.Unary("tanh", UnaryOp::kTanh,
                CausalConv(&b, "filter", x, 2, dilation_channels, dilation));
    const Tensor gate =
        b.Unary("sigmoid", UnaryOp::kSigmoid,
                CausalConv(&b, "gate", x, 2, dilation_channels, dilation));
    const Tensor z = b.Mul("gated", filter, gate);
    const Tensor skip_out = CausalConv(&b, "skip", z, 1, skip, 1);
    x = b.Add("residual_add", x, CausalConv(&b, "dense", z, 1, residual, 1));
    skip_sum =
        skip_sum.valid() ? b.Add("skip_add", skip_sum, skip_out) : skip_out;
  }
  Tensor out = b.Unary("postprocess/relu1", UnaryOp::kRelu, skip_sum);
  out = CausalConv(&b, "postprocess/conv1", out, 1, skip, 1);
  out = b.Unary("postprocess/relu2", UnaryOp::kRelu, out);
  out = CausalConv(&b, "postprocess/conv2", out, 1, kQuantizationLevels, 1);
  const Tensor logits =
      b.Reshape("logits", out, {batch * samples, kQuantizationLevels});
  const Tensor loss = b.ReduceMean(
      "loss", b.SparseSoftmaxCrossEntropy("xent", logits, labels), {0});
  return std::move(b).Finish(loss, OptimizerKind::kAdam);
}

}  // namespace gopt::simulator::generators
