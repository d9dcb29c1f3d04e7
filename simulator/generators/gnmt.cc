#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

constexpr int64_t kGnmtVocabulary = 32000;
// GNMT adds residual connections from the third layer up.
constexpr int kFirstResidualLayer = 2;

// Runs one LSTM layer over `inputs` (one [batch, features] tensor per step),
// forward or backward in time; returns the outputs in input order.
std::vector<Tensor> RunLayer(ModelBuilder* b, const std::string& name,
                             const std::vector<Tensor>& inputs, int64_t batch,
                             int64_t hidden, bool reverse) {
  const LstmWeights weights =
      MakeLstmWeights(b, name, b->Dim(inputs[0], -1), hidden);
  LstmState state = ZeroLstmState(b, name, batch, hidden);
  std::vector<Tensor> outputs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t t = reverse ? inputs.size() - 1 - i : i;
    state =
        LstmCell(b, absl::StrCat(name, "/step", t), inputs[t], state, weights);
    outputs[t] = state.h;
  }
  return outputs;
}

}  // namespace

absl::StatusOr<graph::Graph> BuildGnmt(const GeneratorOptions& options) {
  const int64_t batch = options.batch;
  const int64_t steps = options.seq;
  const int64_t hidden = options.hidden;
  const int layers = options.layers;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  const Tensor source =
      b.Input("source_ids", {batch, steps}, graph::DType::kS32);
  const Tensor target =
      b.Input("target_ids", {batch, steps}, graph::DType::kS32);
  const Tensor labels = b.Input("labels", {steps, batch}, graph::DType::kS32);

  // ---- Encoder ----
  std::vector<Tensor> x;
  {
    ModelBuilder::NameScope scope(&b, "encoder");
    const Tensor embedding = b.Weight("embedding", {kGnmtVocabulary, hidden});
    x = b.Unstack(
        "unstack",
        b.Transpose("time_major",
                    b.Gather("embedding_lookup", embedding, source), {1, 0, 2}),
        0);
    if (!b.status().ok()) return b.status();
    const std::vector<Tensor> forward =
        RunLayer(&b, "layer0_fw", x, batch, hidden, false);
    const std::vector<Tensor> backward =
        RunLayer(&b, "layer0_bw", x, batch, hidden, true);
    for (size_t t = 0; t < x.size(); ++t) {
      x[t] = b.Concat(absl::StrCat("layer0_concat/step", t),
                      {forward[t], backward[t]}, 1);
    }
    for (int layer = 1; layer < layers; ++layer) {
      const std::string name = absl::StrCat("layer", layer);
      std::vector<Tensor> y = RunLayer(&b, name, x, batch, hidden, false);
      if (layer >= kFirstResidualLayer) {
        for (size_t t = 0; t < y.size(); ++t) {
          y[t] = b.Add(absl::StrCat(name, "/residual/step", t), y[t], x[t]);
        }
      }
      x = std::move(y);
    }
  }

  // ---- Attention memory: encoder outputs [batch, steps, hidden] ----
  Tensor memory;
  Tensor keys;
  {
    ModelBuilder::NameScope scope(&b, "attention");
    memory = b.Stack("memory", x, 1);
    const Tensor rows =
        b.Reshape("memory_rows", memory, {batch * steps, hidden});
    keys =
        b.Reshape("keys",
                  b.MatMul("keys_projection", rows,
                           b.Weight("memory_layer/kernel", {hidden, hidden})),
                  {batch, steps, hidden});
  }
  const Tensor query_kernel =
      b.Weight("attention/query_layer/kernel", {hidden, hidden});

  // ---- Decoder ----
  ModelBuilder::NameScope decoder_scope(&b, "decoder");
  const Tensor embedding = b.Weight("embedding", {kGnmtVocabulary, hidden});
  const std::vector<Tensor> inputs = b.Unstack(
      "unstack",
      b.Transpose("time_major", b.Gather("embedding_lookup", embedding, target),
                  {1, 0, 2}),
      0);
  const std::vector<Tensor> step_labels =
      b.Unstack("labels_unstack", labels, 0);
  std::vector<LstmWeights> weights;
  std::vector<LstmState> states;
  for (int layer = 0; layer < layers; ++layer) {
    const std::string name = absl::StrCat("layer", layer);
    weights.push_back(MakeLstmWeights(&b, name, 2 * hidden, hidden));
    states.push_back(ZeroLstmState(&b, name, batch, hidden));
  }
  Tensor context = b.Constant("initial_context", {batch, hidden});
  const Tensor softmax_w =
      b.Weight("softmax/kernel", {hidden, kGnmtVocabulary});
  const Tensor softmax_b = b.Weight("softmax/bias", {kGnmtVocabulary});
  std::vector<Tensor> losses;
  for (size_t t = 0; t < inputs.size() && t < step_labels.size(); ++t) {
    ModelBuilder::NameScope step_scope(&b, absl::StrCat("step", t));
    // Bottom layer: input feeding of the previous attention context.
    states[0] = LstmCell(&b, "layer0",
                         b.Concat("input_feeding", {inputs[t], context}, 1),
                         states[0], weights[0]);
    {
      ModelBuilder::NameScope scope(&b, "attention");
      const Tensor query = b.Reshape(
          "query", b.MatMul("query_projection", states[0].h, query_kernel),
          {batch, 1, hidden});
      const Tensor scores = b.MatMul("scores", query, keys, false, true);
      const Tensor alignments = b.Softmax("alignments", scores);
      context =
          b.Reshape("context", b.MatMul("weighted_memory", alignments, memory),
                    {batch, hidden});
    }
    Tensor below = states[0].h;
    for (int layer = 1; layer < layers; ++layer) {
      const std::string name = absl::StrCat("layer", layer);
      states[layer] = LstmCell(
          &b, name, b.Concat(absl::StrCat(name, "_input"), {below, context}, 1),
          states[layer], weights[layer]);
      Tensor output = states[layer].h;
      if (layer >= kFirstResidualLayer) {
        output = b.Add(absl::StrCat(name, "_residual"), output, below);
      }
      below = output;
    }
    const Tensor logits =
        b.BiasAdd("softmax/BiasAdd",
                  b.MatMul("softmax/MatMul", below, softmax_w), softmax_b);
    losses.push_back(
        b.SparseSoftmaxCrossEntropy("xent", logits, step_labels[t]));
  }
  const Tensor loss =
      b.ReduceMean("loss", b.Stack("stack_losses", losses, 0), {0, 1});
  return std::move(b).Finish(loss, OptimizerKind::kAdam);
}

}  // namespace gopt::simulator::generators
