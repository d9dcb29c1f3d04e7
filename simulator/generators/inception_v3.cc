#include <vector>

#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

constexpr Padding kSame = Padding::kSame;
constexpr Padding kValid = Padding::kValid;

// Conv + batch norm + ReLU, the only conv unit Inception-v3 uses.
Tensor Unit(ModelBuilder* b, absl::string_view name, Tensor x, int64_t filters,
            int kh, int kw, int stride = 1, Padding padding = kSame) {
  return ConvBn(b, name, x, filters, kh, kw, stride, padding, /*relu=*/true);
}

// 35x35 block (Mixed_5b..5d): 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | pool-1x1.
Tensor BlockA(ModelBuilder* b, absl::string_view name, Tensor x,
              int64_t pool_filters) {
  ModelBuilder::NameScope scope(b, name);
  const Tensor b0 = Unit(b, "Branch_0/Conv2d_0a_1x1", x, 64, 1, 1);
  Tensor b1 = Unit(b, "Branch_1/Conv2d_0a_1x1", x, 48, 1, 1);
  b1 = Unit(b, "Branch_1/Conv2d_0b_5x5", b1, 64, 5, 5);
  Tensor b2 = Unit(b, "Branch_2/Conv2d_0a_1x1", x, 64, 1, 1);
  b2 = Unit(b, "Branch_2/Conv2d_0b_3x3", b2, 96, 3, 3);
  b2 = Unit(b, "Branch_2/Conv2d_0c_3x3", b2, 96, 3, 3);
  Tensor b3 =
      b->Pool("Branch_3/AvgPool_0a_3x3", x, PoolKind::kAverage, 3, 1, kSame);
  b3 = Unit(b, "Branch_3/Conv2d_0b_1x1", b3, pool_filters, 1, 1);
  return b->Concat("concat", {b0, b1, b2, b3}, 3);
}

// 35x35 -> 17x17 reduction (Mixed_6a).
Tensor BlockB(ModelBuilder* b, absl::string_view name, Tensor x) {
  ModelBuilder::NameScope scope(b, name);
  const Tensor b0 = Unit(b, "Branch_0/Conv2d_1a_1x1", x, 384, 3, 3, 2, kValid);
  Tensor b1 = Unit(b, "Branch_1/Conv2d_0a_1x1", x, 64, 1, 1);
  b1 = Unit(b, "Branch_1/Conv2d_0b_3x3", b1, 96, 3, 3);
  b1 = Unit(b, "Branch_1/Conv2d_1a_1x1", b1, 96, 3, 3, 2, kValid);
  const Tensor b2 =
      b->Pool("Branch_2/MaxPool_1a_3x3", x, PoolKind::kMax, 3, 2, kValid);
  return b->Concat("concat", {b0, b1, b2}, 3);
}

// 17x17 block with factorized 7x7 convolutions (Mixed_6b..6e).
Tensor BlockC(ModelBuilder* b, absl::string_view name, Tensor x, int64_t c7) {
  ModelBuilder::NameScope scope(b, name);
  const Tensor b0 = Unit(b, "Branch_0/Conv2d_0a_1x1", x, 192, 1, 1);
  Tensor b1 = Unit(b, "Branch_1/Conv2d_0a_1x1", x, c7, 1, 1);
  b1 = Unit(b, "Branch_1/Conv2d_0b_1x7", b1, c7, 1, 7);
  b1 = Unit(b, "Branch_1/Conv2d_0c_7x1", b1, 192, 7, 1);
  Tensor b2 = Unit(b, "Branch_2/Conv2d_0a_1x1", x, c7, 1, 1);
  b2 = Unit(b, "Branch_2/Conv2d_0b_7x1", b2, c7, 7, 1);
  b2 = Unit(b, "Branch_2/Conv2d_0c_1x7", b2, c7, 1, 7);
  b2 = Unit(b, "Branch_2/Conv2d_0d_7x1", b2, c7, 7, 1);
  b2 = Unit(b, "Branch_2/Conv2d_0e_1x7", b2, 192, 1, 7);
  Tensor b3 =
      b->Pool("Branch_3/AvgPool_0a_3x3", x, PoolKind::kAverage, 3, 1, kSame);
  b3 = Unit(b, "Branch_3/Conv2d_0b_1x1", b3, 192, 1, 1);
  return b->Concat("concat", {b0, b1, b2, b3}, 3);
}

// 17x17 -> 8x8 reduction (Mixed_7a).
Tensor BlockD(ModelBuilder* b, absl::string_view name, Tensor x) {
  ModelBuilder::NameScope scope(b, name);
  Tensor b0 = Unit(b, "Branch_0/Conv2d_0a_1x1", x, 192, 1, 1);
  b0 = Unit(b, "Branch_0/Conv2d_1a_3x3", b0, 320, 3, 3, 2, kValid);
  Tensor b1 = Unit(b, "Branch_1/Conv2d_0a_1x1", x, 192, 1, 1);
  b1 = Unit(b, "Branch_1/Conv2d_0b_1x7", b1, 192, 1, 7);
  b1 = Unit(b, "Branch_1/Conv2d_0c_7x1", b1, 192, 7, 1);
  b1 = Unit(b, "Branch_1/Conv2d_1a_3x3", b1, 192, 3, 3, 2, kValid);
  const Tensor b2 =
      b->Pool("Branch_2/MaxPool_1a_3x3", x, PoolKind::kMax, 3, 2, kValid);
  return b->Concat("concat", {b0, b1, b2}, 3);
}

// 8x8 block with expanded filter banks (Mixed_7b, 7c).
Tensor BlockE(ModelBuilder* b, absl::string_view name, Tensor x) {
  ModelBuilder::NameScope scope(b, name);
  const Tensor b0 = Unit(b, "Branch_0/Conv2d_0a_1x1", x, 320, 1, 1);
  const Tensor b1 = Unit(b, "Branch_1/Conv2d_0a_1x1", x, 384, 1, 1);
  const Tensor b1a = Unit(b, "Branch_1/Conv2d_0b_1x3", b1, 384, 1, 3);
  const Tensor b1b = Unit(b, "Branch_1/Conv2d_0c_3x1", b1, 384, 3, 1);
  Tensor b2 = Unit(b, "Branch_2/Conv2d_0a_1x1", x, 448, 1, 1);
  b2 = Unit(b, "Branch_2/Conv2d_0b_3x3", b2, 384, 3, 3);
  const Tensor b2a = Unit(b, "Branch_2/Conv2d_0c_1x3", b2, 384, 1, 3);
  const Tensor b2b = Unit(b, "Branch_2/Conv2d_0d_3x1", b2, 384, 3, 1);
  Tensor b3 =
      b->Pool("Branch_3/AvgPool_0a_3x3", x, PoolKind::kAverage, 3, 1, kSame);
  b3 = Unit(b, "Branch_3/Conv2d_0b_1x1", b3, 192, 1, 1);
  return b->Concat("concat", {b0, b1a, b1b, b2a, b2b, b3}, 3);
}

}  // namespace

absl::StatusOr<graph::Graph> BuildInceptionV3(const GeneratorOptions& options) {
  const int64_t batch = options.batch;
  const int64_t size = options.image_size;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  Tensor x = b.Input("images", {batch, size, size, 3});
  const Tensor labels = b.Input("labels", {batch}, graph::DType::kS32);
  {
    ModelBuilder::NameScope scope(&b, "InceptionV3");
    x = Unit(&b, "Conv2d_1a_3x3", x, 32, 3, 3, 2, kValid);
    x = Unit(&b, "Conv2d_2a_3x3", x, 32, 3, 3, 1, kValid);
    x = Unit(&b, "Conv2d_2b_3x3", x, 64, 3, 3);
    x = b.Pool("MaxPool_3a_3x3", x, PoolKind::kMax, 3, 2, kValid);
    x = Unit(&b, "Conv2d_3b_1x1", x, 80, 1, 1, 1, kValid);
    x = Unit(&b, "Conv2d_4a_3x3", x, 192, 3, 3, 1, kValid);
    x = b.Pool("MaxPool_5a_3x3", x, PoolKind::kMax, 3, 2, kValid);
    x = BlockA(&b, "Mixed_5b", x, 32);
    x = BlockA(&b, "Mixed_5c", x, 64);
    x = BlockA(&b, "Mixed_5d", x, 64);
    x = BlockB(&b, "Mixed_6a", x);
    x = BlockC(&b, "Mixed_6b", x, 128);
    x = BlockC(&b, "Mixed_6c", x, 160);
    x = BlockC(&b, "Mixed_6d", x, 160);
    x = BlockC(&b, "Mixed_6e", x, 192);
    x = BlockD(&b, "Mixed_7a", x);
    x = BlockE(&b, "Mixed_7b", x);
    x = BlockE(&b, "Mixed_7c", x);
    x = b.ReduceMean("AvgPool", x, {1, 2});
  }
  const Tensor logits = Dense(&b, "Logits", x, 1000, /*bias=*/true);
  const Tensor loss = b.ReduceMean(
      "loss", b.SparseSoftmaxCrossEntropy("xent", logits, labels), {0});
  return std::move(b).Finish(loss, OptimizerKind::kSgdMomentum);
}

}  // namespace gopt::simulator::generators
