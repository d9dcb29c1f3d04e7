#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

constexpr int64_t kBertVocabulary = 30522;

// One encoder layer on rows h [batch * length, d].
Tensor EncoderLayer(ModelBuilder* b, absl::string_view name, Tensor h,
                    Tensor mask, Tensor scale, int64_t batch, int64_t length) {
  ModelBuilder::NameScope scope(b, name);
  const int64_t d = b->Dim(h, -1);
  const int64_t heads = d / kHeadSize;
  Tensor attention;
  {
    ModelBuilder::NameScope attn(b, "attention/self");
    const Tensor q = SplitHeads(b, "query", Dense(b, "query", h, d, true),
                                batch, length, heads);
    const Tensor k =
        SplitHeads(b, "key", Dense(b, "key", h, d, true), batch, length, heads);
    const Tensor v = SplitHeads(b, "value", Dense(b, "value", h, d, true),
                                batch, length, heads);
    Tensor scores =
        b->Mul("scale", b->MatMul("scores", q, k, false, true), scale);
    scores = b->Add("mask", scores, mask);
    const Tensor probs = b->Softmax("Softmax", scores);
    attention = MergeHeads(b, "context", b->MatMul("context", probs, v), batch,
                           length, heads);
  }
  attention = Dense(b, "attention/output", attention, d, true);
  h = LayerNormWithWeights(b, "attention/output",
                           b->Add("attention/residual", attention, h));
  const Tensor ff = FeedForward(b, "ffn", h, 4 * d, UnaryOp::kGelu);
  return LayerNormWithWeights(b, "output", b->Add("output/residual", ff, h));
}

}  // namespace

absl::StatusOr<graph::Graph> BuildBert(const GeneratorOptions& options) {
  const int64_t batch = options.batch;
  const int64_t length = options.seq;
  const int64_t d = options.hidden;
  // 15% of the tokens are predicted (20 of 128, as BERT's max_predictions).
  const int64_t predictions = (length * 15 + 99) / 100;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  const Tensor ids = b.Input("input_ids", {batch, length}, graph::DType::kS32);
  const Tensor segments =
      b.Input("segment_ids", {batch, length}, graph::DType::kS32);
  const Tensor mask = b.Input("attention_mask", {batch, 1, 1, length});
  const Tensor mlm_positions =
      b.Input("masked_lm_positions", {batch * predictions}, graph::DType::kS32);
  const Tensor mlm_labels =
      b.Input("masked_lm_ids", {batch * predictions}, graph::DType::kS32);
  const Tensor nsp_labels =
      b.Input("next_sentence_labels", {batch}, graph::DType::kS32);
  const Tensor scale = b.Constant("attention_scale", {});

  Tensor word_embeddings;
  Tensor h;
  {
    ModelBuilder::NameScope scope(&b, "bert/embeddings");
    word_embeddings = b.Weight("word_embeddings", {kBertVocabulary, d});
    const Tensor tokens = b.Gather("word_lookup", word_embeddings, ids);
    const Tensor types =
        b.Gather("token_type_lookup", b.Weight("token_type_embeddings", {2, d}),
                 segments);
    const Tensor positions = b.Weight("position_embeddings", {length, d});
    h = b.Add("add_1", b.Add("add", tokens, types), positions);
    h = LayerNormWithWeights(&b, "LayerNorm",
                             b.Reshape("rows", h, {batch * length, d}));
  }
  for (int layer = 0; layer < options.layers; ++layer) {
    h = EncoderLayer(&b, absl::StrCat("bert/encoder/layer_", layer), h, mask,
                     scale, batch, length);
  }
  Tensor mlm_loss;
  {
    ModelBuilder::NameScope scope(&b, "cls/predictions");
    Tensor x = b.Gather("gather_masked", h, mlm_positions);
    x = b.Unary("gelu", UnaryOp::kGelu, Dense(&b, "transform", x, d, true));
    x = LayerNormWithWeights(&b, "transform/LayerNorm", x);
    const Tensor logits = b.BiasAdd(
        "BiasAdd", b.MatMul("MatMul", x, word_embeddings, false, true),
        b.Weight("output_bias", {kBertVocabulary}));
    mlm_loss = b.ReduceMean(
        "loss", b.SparseSoftmaxCrossEntropy("xent", logits, mlm_labels), {0});
  }
  Tensor nsp_loss;
  {
    ModelBuilder::NameScope scope(&b, "cls/seq_relationship");
    Tensor first = b.Reshape(
        "first_token",
        b.Slice("slice", b.Reshape("h_3d", h, {batch, length, d}), 1, 0, 1),
        {batch, d});
    first =
        b.Unary("pooler", UnaryOp::kTanh, Dense(&b, "pooler", first, d, true));
    const Tensor logits = Dense(&b, "output", first, 2, true);
    nsp_loss = b.ReduceMean(
        "loss", b.SparseSoftmaxCrossEntropy("xent", logits, nsp_labels), {0});
  }
  const Tensor loss = b.Add("total_loss", mlm_loss, nsp_loss);
  return std::move(b).Finish(loss, OptimizerKind::kAdam);
}

}  // namespace gopt::simulator::generators
