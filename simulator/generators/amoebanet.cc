#include <array>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

// The operations an AmoebaNet cell chooses from (Real et al. 2019).
enum class CellOp {
  kSepConv3x3,
  kSepConv5x5,
  kSepConv7x7,
  kAvgPool3x3,
  kMaxPool3x3,
  kIdentity,
  kConv1x7Then7x1,
  kDilatedSepConv3x3,
};
constexpr int kNumCellOps = 8;
constexpr int kCombinations = 5;

// One pairwise combination: new state = op_a(state[in_a]) + op_b(state[in_b]).
struct Combination {
  int in_a = 0;
  int in_b = 0;
  CellOp op_a = CellOp::kIdentity;
  CellOp op_b = CellOp::kIdentity;
};
using Genotype = std::array<Combination, kCombinations>;

// Draws a cell wiring. Raw engine output (not std distributions, whose
// mapping is library-specific) keeps graphs identical across toolchains.
Genotype SampleGenotype(std::mt19937_64* rng) {
  Genotype genotype;
  for (int i = 0; i < kCombinations; ++i) {
    const uint64_t states = 2 + i;
    genotype[i].in_a = static_cast<int>((*rng)() % states);
    genotype[i].in_b = static_cast<int>((*rng)() % states);
    genotype[i].op_a = static_cast<CellOp>((*rng)() % kNumCellOps);
    genotype[i].op_b = static_cast<CellOp>((*rng)() % kNumCellOps);
  }
  return genotype;
}

// ReLU, depthwise k x k, pointwise 1x1, batch norm; `repeats` times, the
// first with `stride`.
Tensor SepConv(ModelBuilder* b, absl::string_view name, Tensor x,
               int64_t filters, int k, int stride, int dilation, int repeats) {
  ModelBuilder::NameScope scope(b, name);
  for (int r = 0; r < repeats; ++r) {
    ModelBuilder::NameScope inner(b, absl::StrCat("separable_", r + 1));
    const int64_t channels = b->Dim(x, -1);
    x = b->Unary("Relu", UnaryOp::kRelu, x);
    x = b->DepthwiseConv2D("depthwise", x,
                           b->Weight("depthwise_weights", {k, k, 1, channels}),
                           r == 0 ? stride : 1, Padding::kSame, dilation);
    x = b->Conv2D("pointwise", x,
                  b->Weight("pointwise_weights", {1, 1, channels, filters}), 1,
                  Padding::kSame);
    x = b->BatchNorm("BatchNorm", x, b->Weight("gamma", {filters}),
                     b->Weight("beta", {filters}));
  }
  return x;
}

Tensor ApplyOp(ModelBuilder* b, absl::string_view name, CellOp op, Tensor x,
               int64_t filters, int stride) {
  switch (op) {
    case CellOp::kSepConv3x3:
      return SepConv(b, absl::StrCat(name, "_sep3x3"), x, filters, 3, stride, 1,
                     2);
    case CellOp::kSepConv5x5:
      return SepConv(b, absl::StrCat(name, "_sep5x5"), x, filters, 5, stride, 1,
                     2);
    case CellOp::kSepConv7x7:
      return SepConv(b, absl::StrCat(name, "_sep7x7"), x, filters, 7, stride, 1,
                     2);
    case CellOp::kDilatedSepConv3x3:
      return SepConv(b, absl::StrCat(name, "_dilsep3x3"), x, filters, 3, stride,
                     2, 1);
    case CellOp::kAvgPool3x3:
      return b->Pool(absl::StrCat(name, "_avgpool3x3"), x, PoolKind::kAverage,
                     3, stride, Padding::kSame);
    case CellOp::kMaxPool3x3:
      return b->Pool(absl::StrCat(name, "_maxpool3x3"), x, PoolKind::kMax, 3,
                     stride, Padding::kSame);
    case CellOp::kIdentity:
      if (stride == 1) return x;
      return ConvBn(b, absl::StrCat(name, "_reduce"),
                    b->Unary(absl::StrCat(name, "_relu"), UnaryOp::kRelu, x),
                    filters, 1, 1, stride, Padding::kSame, /*relu=*/false);
    case CellOp::kConv1x7Then7x1: {
      ModelBuilder::NameScope scope(b, absl::StrCat(name, "_1x7_7x1"));
      x = b->Unary("Relu", UnaryOp::kRelu, x);
      const int64_t channels = b->Dim(x, -1);
      x = b->Conv2D("conv_1x7", x,
                    b->Weight("weights_1x7", {1, 7, channels, filters}), stride,
                    Padding::kSame);
      x = b->Conv2D("conv_7x1", x,
                    b->Weight("weights_7x1", {7, 1, filters, filters}), 1,
                    Padding::kSame);
      return b->BatchNorm("BatchNorm", x, b->Weight("gamma", {filters}),
                          b->Weight("beta", {filters}));
    }
  }
  return x;
}

// ReLU, 1x1 conv (with `stride`), batch norm: brings a cell input to
// `filters` channels and the cell's resolution.
Tensor Project(ModelBuilder* b, absl::string_view name, Tensor x,
               int64_t filters, int stride) {
  return ConvBn(b, name,
                b->Unary(absl::StrCat(name, "_relu"), UnaryOp::kRelu, x),
                filters, 1, 1, stride, Padding::kSame, /*relu=*/false);
}

// A NASNet-style cell on (prev, prev_prev). A reduction cell halves the
// resolution (ops on the cell inputs use stride 2). The output concatenates
// the new states no combination consumed.
Tensor Cell(ModelBuilder* b, absl::string_view name, Tensor prev,
            Tensor prev_prev, int64_t filters, bool reduction,
            const Genotype& genotype) {
  ModelBuilder::NameScope scope(b, name);
  // After a reduction, prev_prev has twice prev's resolution.
  const int prev_prev_stride = b->Dim(prev_prev, 1) > b->Dim(prev, 1) ? 2 : 1;
  std::vector<Tensor> states = {
      Project(b, "prev_prev", prev_prev, filters, prev_prev_stride),
      Project(b, "prev", prev, filters, 1)};
  std::vector<bool> used(2 + kCombinations, false);
  for (int i = 0; i < kCombinations; ++i) {
    const Combination& c = genotype[i];
    const int stride_a = reduction && c.in_a < 2 ? 2 : 1;
    const int stride_b = reduction && c.in_b < 2 ? 2 : 1;
    const std::string comb = absl::StrCat("comb", i);
    const Tensor a = ApplyOp(b, absl::StrCat(comb, "/left"), c.op_a,
                             states[c.in_a], filters, stride_a);
    const Tensor bb = ApplyOp(b, absl::StrCat(comb, "/right"), c.op_b,
                              states[c.in_b], filters, stride_b);
    used[c.in_a] = true;
    used[c.in_b] = true;
    states.push_back(b->Add(absl::StrCat(comb, "/add"), a, bb));
  }
  std::vector<Tensor> outputs;
  for (int i = 2; i < 2 + kCombinations; ++i) {
    if (!used[i]) outputs.push_back(states[i]);
  }
  return b->Concat("concat", outputs, 3);
}

}  // namespace

absl::StatusOr<graph::Graph> BuildAmoebaNet(const GeneratorOptions& options) {
  std::mt19937_64 rng(options.seed);
  const Genotype normal = SampleGenotype(&rng);
  const Genotype reduce = SampleGenotype(&rng);
  const int64_t batch = options.batch;
  const int64_t size = options.image_size;
  const int64_t filters = options.hidden;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  const Tensor images = b.Input("images", {batch, size, size, 3});
  const Tensor labels = b.Input("labels", {batch}, graph::DType::kS32);
  Tensor stem = ConvBn(&b, "stem", images, filters, 3, 3, 2, Padding::kSame,
                       /*relu=*/false);
  // Two reduction cells in the stem, as NASNet/AmoebaNet on ImageNet.
  Tensor prev_prev = stem;
  Tensor prev = Cell(&b, "stem_cell1", stem, stem, filters / 2, true, reduce);
  int cell = 0;
  {
    Tensor next =
        Cell(&b, "stem_cell2", prev, prev_prev, filters, true, reduce);
    prev_prev = prev;
    prev = next;
  }
  int64_t stack_filters = filters;
  for (int stack = 0; stack < 3; ++stack) {
    if (stack > 0) {
      stack_filters *= 2;
      Tensor next = Cell(&b, absl::StrCat("reduction_cell", stack), prev,
                         prev_prev, stack_filters, true, reduce);
      prev_prev = prev;
      prev = next;
    }
    for (int n = 0; n < options.layers; ++n) {
      Tensor next = Cell(&b, absl::StrCat("cell", cell++), prev, prev_prev,
                         stack_filters, false, normal);
      prev_prev = prev;
      prev = next;
    }
  }
  Tensor x = b.Unary("final_relu", UnaryOp::kRelu, prev);
  x = b.ReduceMean("global_pool", x, {1, 2});
  const Tensor logits = Dense(&b, "logits", x, 1000, /*bias=*/true);
  const Tensor loss = b.ReduceMean(
      "loss", b.SparseSoftmaxCrossEntropy("xent", logits, labels), {0});
  return std::move(b).Finish(loss, OptimizerKind::kSgdMomentum);
}

}  // namespace gopt::simulator::generators
