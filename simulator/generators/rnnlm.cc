#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/generators/families.h"
#include "simulator/generators/layers.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {
namespace {

constexpr int64_t kRnnlmVocabulary = 32000;

}  // namespace

absl::StatusOr<graph::Graph> BuildRnnLm(const GeneratorOptions& options) {
  const int64_t batch = options.batch;
  const int64_t steps = options.seq;
  const int64_t hidden = options.hidden;
  ModelBuilder b(GeneratedGraphName(options), graph::DType::kF32);
  const Tensor ids = b.Input("ids", {batch, steps}, graph::DType::kS32);
  const Tensor labels = b.Input("labels", {steps, batch}, graph::DType::kS32);
  const Tensor embedding = b.Weight("embedding", {kRnnlmVocabulary, hidden});
  // One gather for the whole segment, then unstacked into time steps, as
  // tf.nn.static_rnn consumes it.
  const Tensor embedded =
      b.Transpose("embedded_time_major",
                  b.Gather("embedding_lookup", embedding, ids), {1, 0, 2});
  std::vector<Tensor> inputs = b.Unstack("unstack", embedded, 0);
  const std::vector<Tensor> step_labels =
      b.Unstack("labels_unstack", labels, 0);
  for (int layer = 0; layer < options.layers; ++layer) {
    const std::string name = absl::StrCat("rnn/layer", layer);
    const LstmWeights weights = MakeLstmWeights(&b, name, hidden, hidden);
    LstmState state = ZeroLstmState(&b, name, batch, hidden);
    for (size_t t = 0; t < inputs.size(); ++t) {
      state = LstmCell(&b, absl::StrCat(name, "/step", t), inputs[t], state,
                       weights);
      inputs[t] = state.h;
    }
  }
  const Tensor softmax_w =
      b.Weight("softmax/kernel", {hidden, kRnnlmVocabulary});
  const Tensor softmax_b = b.Weight("softmax/bias", {kRnnlmVocabulary});
  std::vector<Tensor> losses;
  for (size_t t = 0; t < inputs.size() && t < step_labels.size(); ++t) {
    ModelBuilder::NameScope scope(&b, absl::StrCat("softmax/step", t));
    const Tensor logits = b.BiasAdd(
        "BiasAdd", b.MatMul("MatMul", inputs[t], softmax_w), softmax_b);
    losses.push_back(
        b.SparseSoftmaxCrossEntropy("xent", logits, step_labels[t]));
  }
  const Tensor loss =
      b.ReduceMean("loss", b.Stack("stack_losses", losses, 0), {0, 1});
  return std::move(b).Finish(loss, OptimizerKind::kSgdMomentum);
}

}  // namespace gopt::simulator::generators
