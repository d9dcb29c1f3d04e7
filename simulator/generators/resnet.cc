#include <array>

#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

// Bottleneck block of ResNet v1.5: 1x1 (filters), 3x3 (filters, stride),
// 1x1 (4 * filters), with a projection shortcut when the shape changes.
Tensor Bottleneck(ModelBuilder* b, absl::string_view name, Tensor x,
                  int64_t filters, int stride, bool project) {
  ModelBuilder::NameScope scope(b, name);
  Tensor shortcut = x;
  if (project) {
    shortcut = ConvBn(b, "shortcut", x, 4 * filters, 1, 1, stride,
                      Padding::kSame, /*relu=*/false);
  }
  Tensor y = ConvBn(b, "conv1", x, filters, 1, 1, 1, Padding::kSame, true);
  y = ConvBn(b, "conv2", y, filters, 3, 3, stride, Padding::kSame, true);
  y = ConvBn(b, "conv3", y, 4 * filters, 1, 1, 1, Padding::kSame, false);
  return b->Unary("Relu", UnaryOp::kRelu, b->Add("add", y, shortcut));
}

}  // namespace

absl::StatusOr<graph::Graph> BuildResNet(const GeneratorOptions& options) {
  std::array<int, 4> blocks = {3, 4, 6, 3};
  if (options.layers == 101) blocks = {3, 4, 23, 3};
  if (options.layers == 152) blocks = {3, 8, 36, 3};
  const int64_t batch = options.batch;
  const int64_t size = options.image_size;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  Tensor x = b.Input("images", {batch, size, size, 3});
  const Tensor labels = b.Input("labels", {batch}, graph::DType::kS32);
  x = ConvBn(&b, "conv1", x, 64, 7, 7, 2, Padding::kSame, true);
  x = b.Pool("pool1", x, PoolKind::kMax, 3, 2, Padding::kSame);
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t filters = int64_t{64} << stage;
    for (int block = 0; block < blocks[stage]; ++block) {
      const int stride = stage > 0 && block == 0 ? 2 : 1;
      x = Bottleneck(&b, absl::StrCat("stage", stage + 1, "/block", block + 1),
                     x, filters, stride, /*project=*/block == 0);
    }
  }
  x = b.ReduceMean("avg_pool", x, {1, 2});
  const Tensor logits = Dense(&b, "fc", x, 1000, /*bias=*/true);
  const Tensor loss = b.ReduceMean(
      "loss", b.SparseSoftmaxCrossEntropy("xent", logits, labels), {0});
  return std::move(b).Finish(loss, OptimizerKind::kSgdMomentum);
}

}  // namespace gopt::simulator::generators
