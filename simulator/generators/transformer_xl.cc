#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

constexpr int64_t kTransformerXlVocabulary = 32000;

// Transformer-XL's relative shift of positional scores [B, n, T, K]: pad one
// zero column, view as [B, n, K + 1, T], drop the first row, view back.
Tensor RelativeShift(ModelBuilder* b, Tensor scores, int64_t batch,
                     int64_t heads, int64_t length, int64_t context) {
  ModelBuilder::NameScope scope(b, "rel_shift");
  const Tensor zeros = b->Constant("zero_pad", {batch, heads, length, 1});
  Tensor x = b->Concat("pad", {zeros, scores}, 3);
  x = b->Reshape("Reshape", x, {batch, heads, context + 1, length});
  x = b->Slice("Slice", x, 2, 1, context);
  return b->Reshape("Reshape_1", x, {batch, heads, length, context});
}

}  // namespace

absl::StatusOr<graph::Graph> BuildTransformerXl(
    const GeneratorOptions& options) {
  const int64_t batch = options.batch;
  const int64_t length = options.seq;
  const int64_t memory = options.seq;
  const int64_t context = length + memory;
  const int64_t d = options.hidden;
  const int64_t heads = d / kHeadSize;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  const Tensor ids = b.Input("ids", {batch, length}, graph::DType::kS32);
  const Tensor labels = b.Input("labels", {batch * length}, graph::DType::kS32);
  const Tensor embedding = b.Weight("embedding", {kTransformerXlVocabulary, d});
  const Tensor positions = b.Input("pos_emb", {context, d});
  const Tensor mask = b.Constant("attn_mask", {length, context});
  const Tensor scale = b.Constant("scale", {});
  const Tensor r_w_bias = b.Weight("r_w_bias", {heads, 1, kHeadSize});
  const Tensor r_r_bias = b.Weight("r_r_bias", {heads, 1, kHeadSize});
  Tensor h = b.Reshape("embedded", b.Gather("embedding_lookup", embedding, ids),
                       {batch * length, d});
  for (int layer = 0; layer < options.layers; ++layer) {
    ModelBuilder::NameScope scope(&b, absl::StrCat("layer_", layer));
    // The previous segment's hidden states: fed in, no gradient.
    const Tensor mem = b.Input("memory", {batch, memory, d});
    const Tensor cat = b.Reshape(
        "cat_rows",
        b.Concat("cat", {mem, b.Reshape("h_3d", h, {batch, length, d})}, 1),
        {batch * context, d});
    Tensor attention_out;
    {
      ModelBuilder::NameScope attn(&b, "rel_attn");
      const Tensor q = SplitHeads(&b, "q", Dense(&b, "q", h, d, false), batch,
                                  length, heads);
      const Tensor k = SplitHeads(&b, "k", Dense(&b, "k", cat, d, false), batch,
                                  context, heads);
      const Tensor v = SplitHeads(&b, "v", Dense(&b, "v", cat, d, false), batch,
                                  context, heads);
      const Tensor r =
          b.Transpose("r_heads",
                      b.Reshape("r_3d", Dense(&b, "r", positions, d, false),
                                {context, heads, kHeadSize}),
                      {1, 0, 2});
      const Tensor ac =
          b.MatMul("AC", b.Add("rw_head_q", q, r_w_bias), k, false, true);
      Tensor rr_q = b.Transpose("rr_head_q_t", b.Add("rr_head_q", q, r_r_bias),
                                {1, 0, 2, 3});
      rr_q =
          b.Reshape("rr_head_q_rows", rr_q, {heads, batch * length, kHeadSize});
      Tensor bd = b.MatMul("BD", rr_q, r, false, true);
      bd = b.Transpose("BD_t",
                       b.Reshape("BD_4d", bd, {heads, batch, length, context}),
                       {1, 0, 2, 3});
      bd = RelativeShift(&b, bd, batch, heads, length, context);
      Tensor score = b.Mul("scale", b.Add("score", ac, bd), scale);
      score = b.Add("mask", score, mask);
      const Tensor prob = b.Softmax("prob", score);
      const Tensor vec = MergeHeads(&b, "vec", b.MatMul("attn_vec", prob, v),
                                    batch, length, heads);
      attention_out = Dense(&b, "o", vec, d, false);
    }
    h = LayerNormWithWeights(&b, "attn_norm",
                             b.Add("attn_res", h, attention_out));
    const Tensor ff = FeedForward(&b, "ff", h, 4 * d, UnaryOp::kRelu);
    h = LayerNormWithWeights(&b, "ff_norm", b.Add("ff_res", h, ff));
  }
  // Output softmax tied to the input embedding.
  const Tensor logits = b.MatMul("logits", h, embedding, false, true);
  const Tensor loss = b.ReduceMean(
      "loss", b.SparseSoftmaxCrossEntropy("xent", logits, labels), {0});
  return std::move(b).Finish(loss, OptimizerKind::kAdam);
}

}  // namespace gopt::simulator::generators
