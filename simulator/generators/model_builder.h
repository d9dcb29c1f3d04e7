#ifndef GOPT_SIMULATOR_GENERATORS_MODEL_BUILDER_H_
#define GOPT_SIMULATOR_GENERATORS_MODEL_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_attributes.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"

namespace gopt::simulator::generators {

// A handle to one tensor (one output of one node) of a ModelBuilder. Cheap to
// copy; meaningful only for the builder that returned it. A default handle
// (id -1) is what ops return after the builder has recorded an error.
struct Tensor {
  int32_t id = -1;

  bool valid() const { return id >= 0; }
};

// How a convolution or pooling window is padded, TensorFlow style.
enum class Padding {
  kSame,    // output = ceil(input / stride), padding split low/high
  kValid,   // no padding
  kCausal,  // (window - 1) * dilation zeros before, none after (WaveNet)
};

enum class PoolKind { kMax, kAverage };

enum class UnaryOp { kRelu, kTanh, kSigmoid, kGelu, kSqrt };

enum class OptimizerKind {
  kSgdMomentum,  // accum = accum * momentum + g; w -= lr * accum
  kAdam,         // Kingma & Ba, with bias correction folded into lr
};

// A small graph-construction DSL for op-level training-step graphs, written
// once and shared by every model family. Forward ops are recorded on a tape
// as they are added; Finish() then appends the backward pass (one or more
// gradient ops per forward op, TensorFlow style: a dot gives two dots, a
// convolution a backprop-input and a backprop-filter convolution, an
// elementwise op elementwise ops) and a per-weight optimizer update, and
// freezes everything into a graph::Graph.
//
// Every node gets its canonical OpKind, the TensorFlow op name it stands for
// ("Conv2D", "MatMul", "FusedBatchNormGradV3"), attributes (dot dimensions,
// convolution dimensions and window, reduce dimensions, padding) and costs
// from graph::ComputeOpCost on its real operand and output types.
// Convolutions are channels-last (NHWC input, HWIO kernel), as TensorFlow's
// default; a 1-D convolution is a 2-D one with height 1, as tf.nn.conv1d.
// Gradient convolutions take XLA's forms, so backprop-filter costs exactly
// the forward FLOPs and so does backprop-input at stride 1. At stride s > 1
// backprop-input convolves the output gradient dilated by s, which the
// catalog costs densely (s^2 times the forward FLOPs), as it would the same
// convolution imported from HLO; a strided 1x1 convolution instead gets an
// exact 1x1 convolution followed by an interior-padding scatter.
//
// Naming: forward nodes carry the model's names (scoped with NameScope),
// backward nodes live under "gradients/" and optimizer nodes under "train/",
// so the forward part of a graph can be told apart by name.
//
// Errors: shape mismatches are recorded (the first one is kept); every later
// op returns an invalid Tensor and Finish() returns the error. Dim() stays
// safe to call on invalid tensors so model code needs no checks of its own.
//
// Not thread-safe; one builder per graph. Deterministic: the same sequence
// of calls gives the same graph.
class ModelBuilder {
 public:
  // `dtype` is the element type of activations and weights.
  ModelBuilder(std::string graph_name, graph::DType dtype);
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // The first error recorded, or OK.
  const absl::Status& status() const { return status_; }

  // The type of `t`; an empty type (invalid dtype, rank 0) for an invalid
  // tensor.
  const graph::TensorType& type(Tensor t) const;
  // Size of dimension `axis` (negative counts from the end) of `t`; 1 for an
  // invalid tensor or axis.
  int64_t Dim(Tensor t, int axis) const;
  int Rank(Tensor t) const;

  // Prefixes the names of ops added while it lives with "`name`/".
  class NameScope {
   public:
    NameScope(ModelBuilder* builder, absl::string_view name);
    ~NameScope();
    NameScope(const NameScope&) = delete;
    NameScope& operator=(const NameScope&) = delete;

   private:
    ModelBuilder* builder_;
    size_t previous_size_;
  };

  // ---- Leaves -------------------------------------------------------------
  // A non-trainable input fed each step (images, token ids, labels, recurrent
  // memory): a kParameter node "Placeholder". Default dtype: the builder's.
  Tensor Input(absl::string_view name, std::vector<int64_t> dims);
  Tensor Input(absl::string_view name, std::vector<int64_t> dims,
               graph::DType dtype);
  // A trainable weight: a kParameter node "VariableV2" that gets a gradient
  // and an optimizer update in Finish().
  Tensor Weight(absl::string_view name, std::vector<int64_t> dims);
  // A constant (masks, scalars such as 1/sqrt(d)): kConstant "Const".
  Tensor Constant(absl::string_view name, std::vector<int64_t> dims);

  // ---- Compute ------------------------------------------------------------
  // Matrix multiply over the last two dims, leading dims are batch dims and
  // must match: [..., M, K] x [..., K, N] -> [..., M, N], with optional
  // transposes of either operand. "MatMul" for rank 2, else "BatchMatMulV2".
  Tensor MatMul(absl::string_view name, Tensor a, Tensor b,
                bool transpose_a = false, bool transpose_b = false);
  // 2-D convolution, NHWC input and HWIO kernel [kh, kw, Cin, Cout].
  Tensor Conv2D(absl::string_view name, Tensor x, Tensor kernel, int stride,
                Padding padding, int dilation = 1);
  // Depthwise 2-D convolution (channel multiplier 1), kernel [kh, kw, 1, C];
  // XLA's form: feature_group_count = C.
  Tensor DepthwiseConv2D(absl::string_view name, Tensor x, Tensor kernel,
                         int stride, Padding padding, int dilation = 1);
  // Max or average pooling over the spatial dims of an NHWC tensor.
  Tensor Pool(absl::string_view name, Tensor x, PoolKind kind, int window,
              int stride, Padding padding);

  // ---- Elementwise (NumPy broadcasting) -----------------------------------
  Tensor Add(absl::string_view name, Tensor a, Tensor b);
  Tensor Sub(absl::string_view name, Tensor a, Tensor b);
  Tensor Mul(absl::string_view name, Tensor a, Tensor b);
  // x + bias over the last dimension ("BiasAdd").
  Tensor BiasAdd(absl::string_view name, Tensor x, Tensor bias);
  Tensor Unary(absl::string_view name, UnaryOp op, Tensor x);

  // ---- Normalization and softmax ------------------------------------------
  // Training-mode batch norm over all but the last dim ("FusedBatchNormV3");
  // scale and offset are [C].
  Tensor BatchNorm(absl::string_view name, Tensor x, Tensor scale,
                   Tensor offset);
  // Layer norm over the last dim; gamma and beta are [C].
  Tensor LayerNorm(absl::string_view name, Tensor x, Tensor gamma, Tensor beta);
  // Softmax over the last dim.
  Tensor Softmax(absl::string_view name, Tensor x);
  // Per-row cross-entropy of logits [N, V] against s32 labels [N]; returns
  // the loss [N] ("SparseSoftmaxCrossEntropyWithLogits").
  Tensor SparseSoftmaxCrossEntropy(absl::string_view name, Tensor logits,
                                   Tensor labels);

  // ---- Reductions ---------------------------------------------------------
  Tensor ReduceMean(absl::string_view name, Tensor x,
                    std::vector<int64_t> axes);
  Tensor ReduceSum(absl::string_view name, Tensor x, std::vector<int64_t> axes);

  // ---- Data movement ------------------------------------------------------
  Tensor Reshape(absl::string_view name, Tensor x, std::vector<int64_t> dims);
  Tensor Transpose(absl::string_view name, Tensor x,
                   std::vector<int64_t> permutation);
  Tensor Concat(absl::string_view name, absl::Span<const Tensor> inputs,
                int axis);
  // Splits `x` along `axis` into pieces of the given sizes ("SplitV").
  std::vector<Tensor> Split(absl::string_view name, Tensor x, int axis,
                            absl::Span<const int64_t> sizes);
  // x[..., start:start+size, ...] along `axis`.
  Tensor Slice(absl::string_view name, Tensor x, int axis, int64_t start,
               int64_t size);
  // Stacks equal-shaped tensors along a new `axis` ("Pack").
  Tensor Stack(absl::string_view name, absl::Span<const Tensor> inputs,
               int axis);
  // Removes `axis` by slicing `x` into its rows ("Unpack").
  std::vector<Tensor> Unstack(absl::string_view name, Tensor x, int axis);
  // Rows of `table` [V, ...] picked by s32 `indices` ("GatherV2", axis 0):
  // output dims = indices dims + table dims[1:].
  Tensor Gather(absl::string_view name, Tensor table, Tensor indices);

  // Appends the backward pass from the scalar `loss` and `optimizer` updates
  // for every weight that received a gradient, then validates and freezes
  // the graph (format "generated"). Returns the first recorded error,
  // InvalidArgument when `loss` is not a scalar, or GraphBuilder::Build's
  // error. The builder must not be used afterwards.
  absl::StatusOr<graph::Graph> Finish(Tensor loss, OptimizerKind optimizer) &&;

  // Number of nodes added so far.
  int num_nodes() const { return builder_.num_nodes(); }

 private:
  enum class TapeOp : uint8_t {
    kMatMul,
    kConv,
    kPool,
    kAdd,
    kSub,
    kMul,
    kUnary,
    kBatchNorm,
    kLayerNorm,
    kSoftmax,
    kXent,
    kReduceMean,
    kReduceSum,
    kReshape,
    kTranspose,
    kConcat,
    kSplit,
    kSlice,
    kStack,
    kUnstack,
    kGather,
  };

  // One recorded forward op and what its gradient rule needs.
  struct TapeEntry {
    TapeOp op;
    int32_t node = 0;  // forward node (builder index)
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    bool transpose_a = false;
    bool transpose_b = false;
    UnaryOp unary = UnaryOp::kRelu;
    PoolKind pool = PoolKind::kMax;
    int64_t axis = 0;
    int64_t start = 0;
    int stride = 1;
    int dilation = 1;
    bool depthwise = false;
  };

  struct Value {
    int32_t node = 0;
    int32_t output = 0;
    bool requires_grad = false;
  };

  // Adds a node named scope + `name` (made unique) with data edges from
  // `inputs` and the given outputs, costed by ComputeOpCost. Returns one
  // tensor per output (empty after an error).
  std::vector<Tensor> Emit(std::string name, absl::string_view op,
                           graph::OpKind kind, absl::Span<const Tensor> inputs,
                           std::vector<graph::TensorType> outputs,
                           graph::OpAttributes attributes = {});
  // Emit for a single output.
  Tensor Emit1(std::string name, absl::string_view op, graph::OpKind kind,
               absl::Span<const Tensor> inputs, std::vector<int64_t> dims,
               graph::OpAttributes attributes = {},
               graph::DType dtype = graph::DType::kInvalid);
  Tensor Leaf(absl::string_view name, absl::string_view op, graph::OpKind kind,
              std::vector<int64_t> dims, graph::DType dtype,
              bool requires_grad);
  // Records `entry` on the tape when any input requires a gradient.
  void Record(TapeEntry entry);
  bool Fail(absl::Status status);
  bool Usable(absl::Span<const Tensor> tensors);
  std::string ScopedName(absl::string_view name) const;

  // Shared forward implementations (also used by the backward pass).
  Tensor MatMulNode(std::string name, Tensor a, Tensor b, bool transpose_a,
                    bool transpose_b);
  Tensor ConvNode(std::string name, absl::string_view op, Tensor x,
                  Tensor kernel, int stride, Padding padding, int dilation,
                  bool depthwise);
  Tensor Binary(absl::string_view name, absl::string_view op, TapeOp tape_op,
                Tensor a, Tensor b);
  Tensor ElementwiseNode(std::string name, absl::string_view op,
                         graph::OpKind kind, absl::Span<const Tensor> inputs);
  Tensor ReduceNode(std::string name, absl::string_view op, Tensor x,
                    std::vector<int64_t> axes);
  Tensor ReshapeNode(std::string name, Tensor x, std::vector<int64_t> dims);
  Tensor TransposeNode(std::string name, Tensor x,
                       std::vector<int64_t> permutation);
  Tensor ConcatNode(std::string name, absl::string_view op,
                    absl::Span<const Tensor> inputs, int axis, bool stack);
  // Concat (stack = false) or Stack (true) with its tape entry.
  Tensor JoinAlongAxis(absl::string_view name, absl::Span<const Tensor> inputs,
                       int axis, bool stack);
  std::vector<Tensor> SplitNode(std::string name, absl::string_view op,
                                Tensor x, int axis,
                                absl::Span<const int64_t> sizes, bool unstack);
  Tensor ZerosLike(std::string name, Tensor like);
  Tensor ScalarConstant(absl::string_view name);

  // Backward pass: Backprop dispatches on the tape op to one function per
  // op (model_builder_backprop.cc); each adds the gradients of the entry's
  // inputs from `dy`, the gradients of its outputs (invalid where none).
  void Backprop(const TapeEntry& entry);
  bool NeedsGradient(const TapeEntry& entry, size_t input) const;
  void BackpropMatMul(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropConv(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropPool(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropAddSub(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropMul(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropUnary(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropNorm(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropSoftmax(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropXent(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropReduce(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropReshape(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropTranspose(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropConcat(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropSplit(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropSlice(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void BackpropGather(const TapeEntry& entry, const std::vector<Tensor>& dy);
  void AccumulateGradient(Tensor value, Tensor gradient);
  // Sums `gradient` down to the dims of `target` (undoing broadcasting).
  Tensor ReduceToShapeOf(std::string name, Tensor gradient, Tensor target);
  std::string GradName(const TapeEntry& entry, absl::string_view suffix) const;
  void ApplyOptimizer(Tensor weight, Tensor gradient, OptimizerKind optimizer);

  graph::DType dtype_;
  absl::Status status_;
  graph::GraphBuilder builder_;
  std::vector<Value> values_;
  std::vector<graph::TensorType> types_;  // per value
  std::vector<TapeEntry> tape_;
  std::vector<Tensor> weights_;
  std::vector<Tensor> gradients_;  // per value; invalid = none yet
  absl::flat_hash_map<std::string, int> name_counts_;
  absl::flat_hash_map<std::string, Tensor> scalar_constants_;
  std::string scope_;
  int64_t next_parameter_number_ = 0;
};

// NHWC input / HWIO kernel dimension numbers for `spatial` spatial dims.
graph::ConvolutionDimensions ChannelsLastDims(int spatial);

}  // namespace gopt::simulator::generators

#endif  // GOPT_SIMULATOR_GENERATORS_MODEL_BUILDER_H_
