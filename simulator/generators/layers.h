#ifndef GOPT_SIMULATOR_GENERATORS_LAYERS_H_
#define GOPT_SIMULATOR_GENERATORS_LAYERS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "simulator/generators/model_builder.h"

namespace gopt::simulator::generators {

// Building blocks shared by the model families, written on ModelBuilder.
// Each adds its ops under NameScope(`name`) and creates its own weights
// unless they are passed in (recurrent cells share weights across steps).
// Errors are recorded in the builder (see ModelBuilder).

// Convolution without bias, batch norm, and optionally ReLU (the conv unit
// of ResNet and Inception). NHWC input; kernel [kh, kw, Cin, filters].
Tensor ConvBn(ModelBuilder* b, absl::string_view name, Tensor x,
              int64_t filters, int kh, int kw, int stride, Padding padding,
              bool relu);

// x [N, in] times a new weight [in, units], plus a new bias when `bias`.
Tensor Dense(ModelBuilder* b, absl::string_view name, Tensor x, int64_t units,
             bool bias);

// The state of one LSTM layer at one time step, each [batch, hidden].
struct LstmState {
  Tensor c;
  Tensor h;
};

// The weights of one LSTM layer, shared by all its unrolled steps.
struct LstmWeights {
  Tensor kernel;       // [input + hidden, 4 * hidden], gates i, j, f, o
  Tensor bias;         // [4 * hidden]
  Tensor forget_bias;  // scalar constant added to the forget gate
};

// Creates the weights of an LSTM layer reading `input` features.
LstmWeights MakeLstmWeights(ModelBuilder* b, absl::string_view name,
                            int64_t input, int64_t hidden);

// One step of TensorFlow's BasicLSTMCell: concat(x, h) · kernel + bias,
// split into gates, c' = c·σ(f + forget_bias) + σ(i)·tanh(j),
// h' = tanh(c')·σ(o). 14 forward ops.
LstmState LstmCell(ModelBuilder* b, absl::string_view name, Tensor x,
                   LstmState state, const LstmWeights& weights);

// A zero LSTM state [batch, hidden] (constants, no gradient).
LstmState ZeroLstmState(ModelBuilder* b, absl::string_view name, int64_t batch,
                        int64_t hidden);

// Position-wise feed-forward block on rows x [rows, d]: dense(d_inner) with
// `activation`, dense(d), as in Transformer, BERT and Transformer-XL.
Tensor FeedForward(ModelBuilder* b, absl::string_view name, Tensor x,
                   int64_t d_inner, UnaryOp activation);

// Layer norm over the last dim with new gamma/beta weights.
Tensor LayerNormWithWeights(ModelBuilder* b, absl::string_view name, Tensor x);

// Splits rows [batch * length, heads * 64] into heads:
// [batch, heads, length, 64].
Tensor SplitHeads(ModelBuilder* b, absl::string_view name, Tensor x,
                  int64_t batch, int64_t length, int64_t heads);

// Inverse of SplitHeads: [batch, heads, length, 64] -> [batch * length, d].
Tensor MergeHeads(ModelBuilder* b, absl::string_view name, Tensor x,
                  int64_t batch, int64_t length, int64_t heads);

// Width of one attention head in the attention families.
inline constexpr int64_t kHeadSize = 64;

}  // namespace gopt::simulator::generators

#endif  // GOPT_SIMULATOR_GENERATORS_LAYERS_H_
