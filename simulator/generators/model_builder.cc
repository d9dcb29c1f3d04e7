#include "simulator/generators/model_builder.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/op_catalog.h"
#include "graph/shape_inference.h"

namespace gopt::simulator::generators {
namespace {

using graph::DType;
using graph::OpAttributes;
using graph::OpKind;
using graph::TensorType;
using graph::WindowDimension;

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// TensorFlow's padding rule for one windowed dimension.
WindowDimension MakeWindow(int64_t input, int64_t size, int stride,
                           int dilation, Padding padding) {
  WindowDimension window;
  window.size = size;
  window.stride = stride;
  window.window_dilation = dilation;
  const int64_t dilated = (size - 1) * dilation + 1;
  switch (padding) {
    case Padding::kValid:
      break;
    case Padding::kCausal:
      window.padding_low = dilated - 1;
      break;
    case Padding::kSame: {
      const int64_t output = (input + stride - 1) / stride;
      const int64_t total =
          std::max<int64_t>((output - 1) * stride + dilated - input, 0);
      window.padding_low = total / 2;
      window.padding_high = total - total / 2;
      break;
    }
  }
  return window;
}

int64_t NormalizedAxis(int64_t axis, int rank) {
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

graph::ConvolutionDimensions ChannelsLastDims(int spatial) {
  graph::ConvolutionDimensions dims;
  dims.input_batch = 0;
  dims.input_feature = spatial + 1;
  dims.output_batch = 0;
  dims.output_feature = spatial + 1;
  for (int i = 0; i < spatial; ++i) {
    dims.input_spatial.push_back(i + 1);
    dims.output_spatial.push_back(i + 1);
    dims.kernel_spatial.push_back(i);
  }
  dims.kernel_input_feature = spatial;
  dims.kernel_output_feature = spatial + 1;
  return dims;
}

ModelBuilder::NameScope::NameScope(ModelBuilder* builder,
                                   absl::string_view name)
    : builder_(builder), previous_size_(builder->scope_.size()) {
  absl::StrAppend(&builder_->scope_, name, "/");
}

ModelBuilder::NameScope::~NameScope() {
  builder_->scope_.resize(previous_size_);
}

ModelBuilder::ModelBuilder(std::string graph_name, DType dtype)
    : dtype_(dtype), builder_(std::move(graph_name), "generated") {}

const TensorType& ModelBuilder::type(Tensor t) const {
  static const TensorType* const kInvalidType = new TensorType();
  if (!t.valid() || t.id >= static_cast<int32_t>(types_.size())) {
    return *kInvalidType;
  }
  return types_[t.id];
}

int ModelBuilder::Rank(Tensor t) const { return type(t).rank(); }

int64_t ModelBuilder::Dim(Tensor t, int axis) const {
  const TensorType& tt = type(t);
  const int64_t a = NormalizedAxis(axis, tt.rank());
  if (a < 0 || a >= tt.rank()) return 1;
  return tt.dims[a];
}

bool ModelBuilder::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  return false;
}

bool ModelBuilder::Usable(absl::Span<const Tensor> tensors) {
  if (!status_.ok()) return false;
  for (Tensor t : tensors) {
    if (!t.valid() || t.id >= static_cast<int32_t>(values_.size())) {
      return Fail(absl::InvalidArgumentError("op on an invalid tensor"));
    }
  }
  return true;
}

std::string ModelBuilder::ScopedName(absl::string_view name) const {
  return absl::StrCat(scope_, name);
}

std::vector<Tensor> ModelBuilder::Emit(std::string name, absl::string_view op,
                                       OpKind kind,
                                       absl::Span<const Tensor> inputs,
                                       std::vector<TensorType> outputs,
                                       OpAttributes attributes) {
  if (!Usable(inputs)) return {};
  for (const TensorType& output : outputs) {
    if (absl::Status s = graph::ValidateTensorType(output); !s.ok()) {
      Fail(absl::InvalidArgumentError(
          absl::StrCat("node '", name, "': ", s.message())));
      return {};
    }
  }
  // Names are unique: a repeated name gets "_1", "_2", ... as TensorFlow does.
  auto [it, inserted] = name_counts_.try_emplace(name, 0);
  if (!inserted) {
    int& count = it->second;
    std::string candidate;
    do {
      candidate = absl::StrCat(name, "_", ++count);
    } while (name_counts_.contains(candidate));
    name = std::move(candidate);
    name_counts_.emplace(name, 0);
  }

  graph::OpCostQuery query;
  query.kind = kind;
  query.attributes = &attributes;
  for (Tensor t : inputs) query.operands.push_back(&types_[t.id]);
  for (const TensorType& output : outputs) query.outputs.push_back(&output);
  absl::StatusOr<graph::OpCost> cost = graph::ComputeOpCost(query);
  if (!cost.ok()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("node '", name, "': ", cost.status().message())));
    return {};
  }

  graph::Node node;
  node.name = std::move(name);
  node.op = std::string(op);
  node.kind = kind;
  node.outputs = outputs;
  node.attributes = std::move(attributes);
  node.layout_configurable =
      kind == OpKind::kDot || kind == OpKind::kConvolution;
  graph::SetNodeCost(*cost, &node);
  const int index = builder_.AddNode(std::move(node));
  bool requires_grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& input = values_[inputs[i].id];
    builder_.AddEdge(input.node, input.output, index, static_cast<int32_t>(i));
    requires_grad = requires_grad || input.requires_grad;
  }
  std::vector<Tensor> result;
  result.reserve(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    result.push_back(Tensor{static_cast<int32_t>(values_.size())});
    values_.push_back(Value{index, static_cast<int32_t>(o), requires_grad});
    types_.push_back(std::move(outputs[o]));
    gradients_.emplace_back();
  }
  return result;
}

Tensor ModelBuilder::Emit1(std::string name, absl::string_view op, OpKind kind,
                           absl::Span<const Tensor> inputs,
                           std::vector<int64_t> dims, OpAttributes attributes,
                           DType dtype) {
  std::vector<TensorType> outputs;
  outputs.push_back(graph::MakeTensorType(
      dtype == DType::kInvalid ? dtype_ : dtype, std::move(dims)));
  std::vector<Tensor> result = Emit(std::move(name), op, kind, inputs,
                                    std::move(outputs), std::move(attributes));
  return result.empty() ? Tensor{} : result[0];
}

void ModelBuilder::Record(TapeEntry entry) {
  for (Tensor input : entry.inputs) {
    if (values_[input.id].requires_grad) {
      tape_.push_back(std::move(entry));
      return;
    }
  }
}

// ---- Leaves ---------------------------------------------------------------

Tensor ModelBuilder::Leaf(absl::string_view name, absl::string_view op,
                          OpKind kind, std::vector<int64_t> dims, DType dtype,
                          bool requires_grad) {
  OpAttributes attributes;
  if (kind == OpKind::kParameter) {
    attributes.parameter_number = next_parameter_number_++;
  }
  Tensor t = Emit1(ScopedName(name), op, kind, {}, std::move(dims),
                   std::move(attributes), dtype);
  if (t.valid()) values_[t.id].requires_grad = requires_grad;
  return t;
}

Tensor ModelBuilder::Input(absl::string_view name, std::vector<int64_t> dims) {
  return Input(name, std::move(dims), dtype_);
}

Tensor ModelBuilder::Input(absl::string_view name, std::vector<int64_t> dims,
                           DType dtype) {
  return Leaf(name, "Placeholder", OpKind::kParameter, std::move(dims), dtype,
              /*requires_grad=*/false);
}

Tensor ModelBuilder::Weight(absl::string_view name, std::vector<int64_t> dims) {
  Tensor t = Leaf(name, "VariableV2", OpKind::kParameter, std::move(dims),
                  dtype_, /*requires_grad=*/true);
  if (t.valid()) weights_.push_back(t);
  return t;
}

Tensor ModelBuilder::Constant(absl::string_view name,
                              std::vector<int64_t> dims) {
  return Leaf(name, "Const", OpKind::kConstant, std::move(dims), dtype_,
              /*requires_grad=*/false);
}

Tensor ModelBuilder::ScalarConstant(absl::string_view name) {
  auto it = scalar_constants_.find(name);
  if (it != scalar_constants_.end()) return it->second;
  Tensor t = Emit1(std::string(name), "Const", OpKind::kConstant, {}, {});
  scalar_constants_.emplace(std::string(name), t);
  return t;
}

// ---- Compute ----------------------------------------------------------------

Tensor ModelBuilder::MatMulNode(std::string name, Tensor a, Tensor b,
                                bool transpose_a, bool transpose_b) {
  if (!Usable({a, b})) return Tensor{};
  const TensorType& ta = types_[a.id];
  const TensorType& tb = types_[b.id];
  const int rank = ta.rank();
  if (rank < 2 || tb.rank() != rank) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("MatMul '", name, "': operands ", ta.ToString(), " and ",
                     tb.ToString(), " must have the same rank >= 2")));
    return Tensor{};
  }
  OpAttributes attributes;
  attributes.has_dot_dimensions = true;
  for (int i = 0; i < rank - 2; ++i) {
    attributes.mutable_dot()->lhs_batch.push_back(i);
    attributes.mutable_dot()->rhs_batch.push_back(i);
  }
  attributes.mutable_dot()->lhs_contracting.push_back(transpose_a ? rank - 2
                                                                  : rank - 1);
  attributes.mutable_dot()->rhs_contracting.push_back(transpose_b ? rank - 1
                                                                  : rank - 2);
  // DotOutputDims puts lhs free dims before rhs free dims, which is the
  // matmul order for either transpose.
  absl::StatusOr<std::vector<int64_t>> dims =
      graph::DotOutputDims(ta.dims, tb.dims, attributes.dot());
  if (!dims.ok()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("MatMul '", name, "': ", dims.status().message())));
    return Tensor{};
  }
  return Emit1(std::move(name), rank == 2 ? "MatMul" : "BatchMatMulV2",
               OpKind::kDot, {a, b}, *std::move(dims), std::move(attributes));
}

Tensor ModelBuilder::MatMul(absl::string_view name, Tensor a, Tensor b,
                            bool transpose_a, bool transpose_b) {
  Tensor y = MatMulNode(ScopedName(name), a, b, transpose_a, transpose_b);
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kMatMul, values_[y.id].node, {a, b}, {y}};
  entry.transpose_a = transpose_a;
  entry.transpose_b = transpose_b;
  Record(std::move(entry));
  return y;
}

Tensor ModelBuilder::ConvNode(std::string name, absl::string_view op, Tensor x,
                              Tensor kernel, int stride, Padding padding,
                              int dilation, bool depthwise) {
  if (!Usable({x, kernel})) return Tensor{};
  const TensorType& tx = types_[x.id];
  const TensorType& tk = types_[kernel.id];
  if (tx.rank() != 4 || tk.rank() != 4) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("convolution '", name, "': input ", tx.ToString(),
                     " and kernel ", tk.ToString(), " must have rank 4")));
    return Tensor{};
  }
  OpAttributes attributes;
  attributes.has_convolution_dimensions = true;
  *attributes.mutable_convolution() = ChannelsLastDims(2);
  for (int i = 0; i < 2; ++i) {
    attributes.mutable_window()->push_back(
        MakeWindow(tx.dims[i + 1], tk.dims[i], stride, dilation, padding));
  }
  if (depthwise) attributes.feature_group_count = tx.dims[3];
  absl::StatusOr<std::vector<int64_t>> dims = graph::ConvolutionOutputDims(
      tx.dims, tk.dims, attributes.convolution(), attributes.window(),
      attributes.feature_group_count, attributes.batch_group_count);
  if (!dims.ok()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("convolution '", name, "': ", dims.status().message())));
    return Tensor{};
  }
  return Emit1(std::move(name), op, OpKind::kConvolution, {x, kernel},
               *std::move(dims), std::move(attributes));
}

Tensor ModelBuilder::Conv2D(absl::string_view name, Tensor x, Tensor kernel,
                            int stride, Padding padding, int dilation) {
  Tensor y = ConvNode(ScopedName(name), "Conv2D", x, kernel, stride, padding,
                      dilation, /*depthwise=*/false);
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kConv, values_[y.id].node, {x, kernel}, {y}};
  entry.stride = stride;
  entry.dilation = dilation;
  Record(std::move(entry));
  return y;
}

Tensor ModelBuilder::DepthwiseConv2D(absl::string_view name, Tensor x,
                                     Tensor kernel, int stride, Padding padding,
                                     int dilation) {
  if (Usable({x, kernel}) && types_[kernel.id].rank() == 4 &&
      types_[kernel.id].dims[2] != 1) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        "depthwise convolution '", ScopedName(name), "': kernel ",
        types_[kernel.id].ToString(), " must have input features 1")));
  }
  Tensor y = ConvNode(ScopedName(name), "DepthwiseConv2dNative", x, kernel,
                      stride, padding, dilation, /*depthwise=*/true);
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kConv, values_[y.id].node, {x, kernel}, {y}};
  entry.stride = stride;
  entry.dilation = dilation;
  entry.depthwise = true;
  Record(std::move(entry));
  return y;
}

Tensor ModelBuilder::Pool(absl::string_view name, Tensor x, PoolKind kind,
                          int window, int stride, Padding padding) {
  if (!Usable({x})) return Tensor{};
  const std::string full_name = ScopedName(name);
  const TensorType& tx = types_[x.id];
  if (tx.rank() != 4) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        "pool '", full_name, "': input ", tx.ToString(), " is not NHWC")));
    return Tensor{};
  }
  OpAttributes attributes;
  std::vector<int64_t> dims = tx.dims;
  for (int d = 0; d < 4; ++d) {
    const bool spatial = d == 1 || d == 2;
    WindowDimension w = spatial
                            ? MakeWindow(tx.dims[d], window, stride, 1, padding)
                            : WindowDimension{};
    absl::StatusOr<int64_t> size = graph::WindowedOutputSize(tx.dims[d], w);
    if (!size.ok()) {
      Fail(absl::InvalidArgumentError(
          absl::StrCat("pool '", full_name, "': ", size.status().message())));
      return Tensor{};
    }
    dims[d] = *size;
    attributes.mutable_window()->push_back(w);
  }
  Tensor y =
      Emit1(full_name, kind == PoolKind::kMax ? "MaxPool" : "AvgPool",
            OpKind::kReduceWindow, {x}, std::move(dims), std::move(attributes));
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kPool, values_[y.id].node, {x}, {y}};
  entry.pool = kind;
  Record(std::move(entry));
  return y;
}

// ---- Elementwise
// --------------------------------------------------------------

Tensor ModelBuilder::ElementwiseNode(std::string name, absl::string_view op,
                                     OpKind kind,
                                     absl::Span<const Tensor> inputs) {
  if (!Usable(inputs) || inputs.empty()) return Tensor{};
  std::vector<int64_t> dims = types_[inputs[0].id].dims;
  for (size_t i = 1; i < inputs.size(); ++i) {
    absl::StatusOr<std::vector<int64_t>> merged =
        graph::BroadcastDims(dims, types_[inputs[i].id].dims);
    if (!merged.ok()) {
      Fail(absl::InvalidArgumentError(
          absl::StrCat(op, " '", name, "': ", merged.status().message())));
      return Tensor{};
    }
    dims = *std::move(merged);
  }
  return Emit1(std::move(name), op, kind, inputs, std::move(dims));
}

Tensor ModelBuilder::Binary(absl::string_view name, absl::string_view op,
                            TapeOp tape_op, Tensor a, Tensor b) {
  Tensor y =
      ElementwiseNode(ScopedName(name), op, OpKind::kElementwiseBinary, {a, b});
  if (!y.valid()) return y;
  Record(TapeEntry{tape_op, values_[y.id].node, {a, b}, {y}});
  return y;
}

Tensor ModelBuilder::Add(absl::string_view name, Tensor a, Tensor b) {
  return Binary(name, "AddV2", TapeOp::kAdd, a, b);
}

Tensor ModelBuilder::Sub(absl::string_view name, Tensor a, Tensor b) {
  return Binary(name, "Sub", TapeOp::kSub, a, b);
}

Tensor ModelBuilder::Mul(absl::string_view name, Tensor a, Tensor b) {
  return Binary(name, "Mul", TapeOp::kMul, a, b);
}

Tensor ModelBuilder::BiasAdd(absl::string_view name, Tensor x, Tensor bias) {
  if (Usable({x, bias}) &&
      (types_[bias.id].rank() != 1 || types_[bias.id].dims[0] != Dim(x, -1))) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        "BiasAdd '", ScopedName(name), "': bias ", types_[bias.id].ToString(),
        " does not match the last dim of ", types_[x.id].ToString())));
  }
  return Binary(name, "BiasAdd", TapeOp::kAdd, x, bias);
}

Tensor ModelBuilder::Unary(absl::string_view name, UnaryOp op, Tensor x) {
  absl::string_view op_name = "Relu";
  OpKind kind = OpKind::kElementwiseUnary;
  switch (op) {
    case UnaryOp::kRelu:
      break;
    case UnaryOp::kTanh:
      op_name = "Tanh";
      kind = OpKind::kTranscendental;
      break;
    case UnaryOp::kSigmoid:
      op_name = "Sigmoid";
      kind = OpKind::kTranscendental;
      break;
    case UnaryOp::kGelu:
      op_name = "Gelu";
      kind = OpKind::kTranscendental;
      break;
    case UnaryOp::kSqrt:
      op_name = "Sqrt";
      kind = OpKind::kTranscendental;
      break;
  }
  Tensor y = ElementwiseNode(ScopedName(name), op_name, kind, {x});
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kUnary, values_[y.id].node, {x}, {y}};
  entry.unary = op;
  Record(std::move(entry));
  return y;
}

// ---- Normalization ----------------------------------------------------------

Tensor ModelBuilder::BatchNorm(absl::string_view name, Tensor x, Tensor scale,
                               Tensor offset) {
  if (!Usable({x, scale, offset})) return Tensor{};
  const int64_t channels = Dim(x, -1);
  for (Tensor p : {scale, offset}) {
    if (types_[p.id].dims != std::vector<int64_t>{channels}) {
      Fail(absl::InvalidArgumentError(absl::StrCat(
          "batch norm '", ScopedName(name), "': parameter ",
          types_[p.id].ToString(), " does not match ", channels, " channels")));
      return Tensor{};
    }
  }
  std::vector<TensorType> outputs = {types_[x.id],
                                     graph::MakeTensorType(dtype_, {channels}),
                                     graph::MakeTensorType(dtype_, {channels})};
  std::vector<Tensor> y =
      Emit(ScopedName(name), "FusedBatchNormV3", OpKind::kNormalization,
           {x, scale, offset}, std::move(outputs));
  if (y.empty()) return Tensor{};
  Record(TapeEntry{
      TapeOp::kBatchNorm, values_[y[0].id].node, {x, scale, offset}, y});
  return y[0];
}

Tensor ModelBuilder::LayerNorm(absl::string_view name, Tensor x, Tensor gamma,
                               Tensor beta) {
  if (!Usable({x, gamma, beta})) return Tensor{};
  const int64_t channels = Dim(x, -1);
  for (Tensor p : {gamma, beta}) {
    if (types_[p.id].dims != std::vector<int64_t>{channels}) {
      Fail(absl::InvalidArgumentError(absl::StrCat(
          "layer norm '", ScopedName(name), "': parameter ",
          types_[p.id].ToString(), " does not match ", channels, " channels")));
      return Tensor{};
    }
  }
  std::vector<int64_t> rows(types_[x.id].dims.begin(),
                            types_[x.id].dims.end() - 1);
  std::vector<TensorType> outputs = {types_[x.id],
                                     graph::MakeTensorType(dtype_, rows),
                                     graph::MakeTensorType(dtype_, rows)};
  std::vector<Tensor> y =
      Emit(ScopedName(name), "LayerNorm", OpKind::kNormalization,
           {x, gamma, beta}, std::move(outputs));
  if (y.empty()) return Tensor{};
  Record(TapeEntry{
      TapeOp::kLayerNorm, values_[y[0].id].node, {x, gamma, beta}, y});
  return y[0];
}

Tensor ModelBuilder::Softmax(absl::string_view name, Tensor x) {
  if (!Usable({x})) return Tensor{};
  Tensor y = Emit1(ScopedName(name), "Softmax", OpKind::kSoftmax, {x},
                   types_[x.id].dims);
  if (!y.valid()) return y;
  Record(TapeEntry{TapeOp::kSoftmax, values_[y.id].node, {x}, {y}});
  return y;
}

Tensor ModelBuilder::SparseSoftmaxCrossEntropy(absl::string_view name,
                                               Tensor logits, Tensor labels) {
  if (!Usable({logits, labels})) return Tensor{};
  const TensorType& tl = types_[logits.id];
  if (tl.rank() != 2 ||
      types_[labels.id].dims != std::vector<int64_t>{tl.dims[0]}) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        "cross entropy '", ScopedName(name), "': logits ", tl.ToString(),
        " and labels ", types_[labels.id].ToString(), " do not match")));
    return Tensor{};
  }
  // Like TensorFlow's kernel: the loss and its gradient w.r.t. the logits
  // come out of the forward op together.
  std::vector<TensorType> outputs = {
      graph::MakeTensorType(dtype_, {tl.dims[0]}), tl};
  std::vector<Tensor> y =
      Emit(ScopedName(name), "SparseSoftmaxCrossEntropyWithLogits",
           OpKind::kSoftmax, {logits, labels}, std::move(outputs));
  if (y.empty()) return Tensor{};
  Record(TapeEntry{TapeOp::kXent, values_[y[0].id].node, {logits, labels}, y});
  return y[0];
}

// ---- Reductions
// ---------------------------------------------------------------

Tensor ModelBuilder::ReduceNode(std::string name, absl::string_view op,
                                Tensor x, std::vector<int64_t> axes) {
  if (!Usable({x})) return Tensor{};
  absl::StatusOr<std::vector<int64_t>> dims =
      graph::ReduceOutputDims(types_[x.id].dims, axes, /*keep_dims=*/false);
  if (!dims.ok()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat(op, " '", name, "': ", dims.status().message())));
    return Tensor{};
  }
  OpAttributes attributes;
  for (int64_t& axis : axes) axis = NormalizedAxis(axis, Rank(x));
  attributes.dimensions = std::move(axes);
  return Emit1(std::move(name), op, OpKind::kReduce, {x}, *std::move(dims),
               std::move(attributes));
}

Tensor ModelBuilder::ReduceMean(absl::string_view name, Tensor x,
                                std::vector<int64_t> axes) {
  Tensor y = ReduceNode(ScopedName(name), "Mean", x, std::move(axes));
  if (!y.valid()) return y;
  Record(TapeEntry{TapeOp::kReduceMean, values_[y.id].node, {x}, {y}});
  return y;
}

Tensor ModelBuilder::ReduceSum(absl::string_view name, Tensor x,
                               std::vector<int64_t> axes) {
  Tensor y = ReduceNode(ScopedName(name), "Sum", x, std::move(axes));
  if (!y.valid()) return y;
  Record(TapeEntry{TapeOp::kReduceSum, values_[y.id].node, {x}, {y}});
  return y;
}

// ---- Data movement ----------------------------------------------------------

Tensor ModelBuilder::ReshapeNode(std::string name, Tensor x,
                                 std::vector<int64_t> dims) {
  if (!Usable({x})) return Tensor{};
  const int64_t elements =
      std::accumulate(dims.begin(), dims.end(), int64_t{1},
                      [](int64_t a, int64_t b) { return a * b; });
  if (elements != types_[x.id].num_elements()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("Reshape '", name, "': ", types_[x.id].ToString(),
                     " cannot become ", DimsString(dims))));
    return Tensor{};
  }
  return Emit1(std::move(name), "Reshape", OpKind::kReshape, {x},
               std::move(dims), {}, types_[x.id].dtype);
}

Tensor ModelBuilder::Reshape(absl::string_view name, Tensor x,
                             std::vector<int64_t> dims) {
  Tensor y = ReshapeNode(ScopedName(name), x, std::move(dims));
  if (!y.valid()) return y;
  Record(TapeEntry{TapeOp::kReshape, values_[y.id].node, {x}, {y}});
  return y;
}

Tensor ModelBuilder::TransposeNode(std::string name, Tensor x,
                                   std::vector<int64_t> permutation) {
  if (!Usable({x})) return Tensor{};
  absl::StatusOr<std::vector<int64_t>> dims =
      graph::TransposeOutputDims(types_[x.id].dims, permutation);
  if (!dims.ok()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("Transpose '", name, "': ", dims.status().message())));
    return Tensor{};
  }
  OpAttributes attributes;
  attributes.dimensions = std::move(permutation);
  return Emit1(std::move(name), "Transpose", OpKind::kTranspose, {x},
               *std::move(dims), std::move(attributes));
}

Tensor ModelBuilder::Transpose(absl::string_view name, Tensor x,
                               std::vector<int64_t> permutation) {
  Tensor y = TransposeNode(ScopedName(name), x, permutation);
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kTranspose, values_[y.id].node, {x}, {y}};
  Record(std::move(entry));
  return y;
}

Tensor ModelBuilder::ConcatNode(std::string name, absl::string_view op,
                                absl::Span<const Tensor> inputs, int axis,
                                bool stack) {
  if (!Usable(inputs) || inputs.empty()) return Tensor{};
  std::vector<int64_t> dims = types_[inputs[0].id].dims;
  const int rank = static_cast<int>(dims.size()) + (stack ? 1 : 0);
  const int64_t a = NormalizedAxis(axis, rank);
  if (a < 0 || a >= rank) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        op, " '", name, "': axis ", axis, " outside rank ", rank)));
    return Tensor{};
  }
  if (stack) {
    dims.insert(dims.begin() + a, 0);
  } else {
    dims[a] = 0;
  }
  for (Tensor t : inputs) {
    std::vector<int64_t> d = types_[t.id].dims;
    if (stack) d.insert(d.begin() + a, 1);
    bool match = d.size() == dims.size();
    for (size_t i = 0; match && i < d.size(); ++i) {
      match = static_cast<int64_t>(i) == a || d[i] == dims[i];
    }
    if (!match) {
      Fail(absl::InvalidArgumentError(
          absl::StrCat(op, " '", name, "': ", types_[t.id].ToString(),
                       " does not match ", types_[inputs[0].id].ToString())));
      return Tensor{};
    }
    dims[a] += d[a];
  }
  OpAttributes attributes;
  attributes.dimensions = {a};
  return Emit1(std::move(name), op, OpKind::kConcatenate, inputs,
               std::move(dims), std::move(attributes));
}

Tensor ModelBuilder::Concat(absl::string_view name,
                            absl::Span<const Tensor> inputs, int axis) {
  return JoinAlongAxis(name, inputs, axis, /*stack=*/false);
}

Tensor ModelBuilder::Stack(absl::string_view name,
                           absl::Span<const Tensor> inputs, int axis) {
  return JoinAlongAxis(name, inputs, axis, /*stack=*/true);
}

Tensor ModelBuilder::JoinAlongAxis(absl::string_view name,
                                   absl::Span<const Tensor> inputs, int axis,
                                   bool stack) {
  Tensor y = ConcatNode(ScopedName(name), stack ? "Pack" : "ConcatV2", inputs,
                        axis, stack);
  if (!y.valid()) return y;
  TapeEntry entry{stack ? TapeOp::kStack : TapeOp::kConcat,
                  values_[y.id].node,
                  std::vector<Tensor>(inputs.begin(), inputs.end()),
                  {y}};
  entry.axis = NormalizedAxis(axis, Rank(y));
  Record(std::move(entry));
  return y;
}

std::vector<Tensor> ModelBuilder::SplitNode(std::string name,
                                            absl::string_view op, Tensor x,
                                            int axis,
                                            absl::Span<const int64_t> sizes,
                                            bool unstack) {
  if (!Usable({x})) return {};
  const TensorType& tx = types_[x.id];
  const int64_t a = NormalizedAxis(axis, tx.rank());
  if (a < 0 || a >= tx.rank()) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        op, " '", name, "': axis ", axis, " outside ", tx.ToString())));
    return {};
  }
  std::vector<int64_t> pieces(sizes.begin(), sizes.end());
  if (unstack) pieces.assign(tx.dims[a], 1);
  const int64_t total =
      std::accumulate(pieces.begin(), pieces.end(), int64_t{0});
  if (total != tx.dims[a]) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat(op, " '", name, "': sizes ", DimsString(pieces),
                     " do not add up to dim ", a, " of ", tx.ToString())));
    return {};
  }
  std::vector<TensorType> outputs;
  outputs.reserve(pieces.size());
  for (int64_t size : pieces) {
    std::vector<int64_t> dims = tx.dims;
    if (unstack) {
      dims.erase(dims.begin() + a);
    } else {
      dims[a] = size;
    }
    outputs.push_back(graph::MakeTensorType(tx.dtype, std::move(dims)));
  }
  OpAttributes attributes;
  attributes.dimensions = {a};
  return Emit(std::move(name), op, OpKind::kSlice, {x}, std::move(outputs),
              std::move(attributes));
}

std::vector<Tensor> ModelBuilder::Split(absl::string_view name, Tensor x,
                                        int axis,
                                        absl::Span<const int64_t> sizes) {
  std::vector<Tensor> y =
      SplitNode(ScopedName(name), "SplitV", x, axis, sizes, false);
  if (y.empty()) return y;
  TapeEntry entry{TapeOp::kSplit, values_[y[0].id].node, {x}, y};
  entry.axis = NormalizedAxis(axis, Rank(x));
  Record(std::move(entry));
  return y;
}

std::vector<Tensor> ModelBuilder::Unstack(absl::string_view name, Tensor x,
                                          int axis) {
  std::vector<Tensor> y =
      SplitNode(ScopedName(name), "Unpack", x, axis, {}, true);
  if (y.empty()) return y;
  TapeEntry entry{TapeOp::kUnstack, values_[y[0].id].node, {x}, y};
  entry.axis = NormalizedAxis(axis, Rank(x));
  Record(std::move(entry));
  return y;
}

Tensor ModelBuilder::Slice(absl::string_view name, Tensor x, int axis,
                           int64_t start, int64_t size) {
  if (!Usable({x})) return Tensor{};
  const std::string full_name = ScopedName(name);
  const TensorType& tx = types_[x.id];
  const int64_t a = NormalizedAxis(axis, tx.rank());
  if (a < 0 || a >= tx.rank() || start < 0 || size < 0 ||
      start + size > tx.dims[a]) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("Slice '", full_name, "': [", start, ", ", start + size,
                     ") along axis ", axis, " of ", tx.ToString())));
    return Tensor{};
  }
  OpAttributes attributes;
  std::vector<int64_t> dims = tx.dims;
  for (int d = 0; d < tx.rank(); ++d) {
    attributes.mutable_slice_starts()->push_back(d == a ? start : 0);
    attributes.mutable_slice_limits()->push_back(d == a ? start + size
                                                        : tx.dims[d]);
    attributes.mutable_slice_strides()->push_back(1);
  }
  dims[a] = size;
  Tensor y = Emit1(full_name, "Slice", OpKind::kSlice, {x}, std::move(dims),
                   std::move(attributes), tx.dtype);
  if (!y.valid()) return y;
  TapeEntry entry{TapeOp::kSlice, values_[y.id].node, {x}, {y}};
  entry.axis = a;
  entry.start = start;
  Record(std::move(entry));
  return y;
}

Tensor ModelBuilder::Gather(absl::string_view name, Tensor table,
                            Tensor indices) {
  if (!Usable({table, indices})) return Tensor{};
  const TensorType& tt = types_[table.id];
  if (tt.rank() < 1) {
    Fail(absl::InvalidArgumentError(absl::StrCat("Gather '", ScopedName(name),
                                                 "': table ", tt.ToString(),
                                                 " is a scalar")));
    return Tensor{};
  }
  std::vector<int64_t> dims = types_[indices.id].dims;
  dims.insert(dims.end(), tt.dims.begin() + 1, tt.dims.end());
  OpAttributes attributes;
  attributes.dimensions = {0};
  Tensor y =
      Emit1(ScopedName(name), "GatherV2", OpKind::kGather, {table, indices},
            std::move(dims), std::move(attributes), tt.dtype);
  if (!y.valid()) return y;
  Record(TapeEntry{TapeOp::kGather, values_[y.id].node, {table, indices}, {y}});
  return y;
}

// ---- Backward pass
// ------------------------------------------------------------

std::string ModelBuilder::GradName(const TapeEntry& entry,
                                   absl::string_view suffix) const {
  return absl::StrCat("gradients/", builder_.node(entry.node).name, "_grad/",
                      suffix);
}

Tensor ModelBuilder::ZerosLike(std::string name, Tensor like) {
  return Emit1(std::move(name), "Fill", OpKind::kBroadcast, {}, type(like).dims,
               {}, type(like).dtype);
}

void ModelBuilder::AccumulateGradient(Tensor value, Tensor gradient) {
  if (!value.valid() || !gradient.valid()) return;
  if (!values_[value.id].requires_grad) return;
  const Tensor partial = gradients_[value.id];
  if (!partial.valid()) {
    gradients_[value.id] = gradient;
    return;
  }
  // A running sum keeps one partial gradient alive instead of all of them
  // (TensorFlow's AddN over every contribution of an unrolled weight would
  // hold `seq` of them at once).
  const Tensor sum = ElementwiseNode(
      absl::StrCat("gradients/", builder_.node(values_[value.id].node).name,
                   "/AddN"),
      "AddN", OpKind::kElementwiseBinary, {partial, gradient});
  gradients_[value.id] = sum;
}

Tensor ModelBuilder::ReduceToShapeOf(std::string name, Tensor gradient,
                                     Tensor target) {
  if (!Usable({gradient, target})) return Tensor{};
  const std::vector<int64_t> out = types_[gradient.id].dims;
  const std::vector<int64_t> want = types_[target.id].dims;
  if (out == want) return gradient;
  const int offset = static_cast<int>(out.size() - want.size());
  std::vector<int64_t> axes;
  for (int i = 0; i < static_cast<int>(out.size()); ++i) {
    const int j = i - offset;
    if (j < 0 || (want[j] == 1 && out[i] != 1)) axes.push_back(i);
  }
  Tensor sum = ReduceNode(name + "/Sum", "Sum", gradient, std::move(axes));
  if (type(sum).dims == want) return sum;
  return ReshapeNode(name + "/Reshape", sum, want);
}

void ModelBuilder::ApplyOptimizer(Tensor weight, Tensor gradient,
                                  OptimizerKind optimizer) {
  const std::string prefix =
      absl::StrCat("train/", builder_.node(values_[weight.id].node).name, "/");
  const std::vector<int64_t> dims = types_[weight.id].dims;
  const OpKind kBinary = OpKind::kElementwiseBinary;
  auto slot = [&](absl::string_view name) {
    return Emit1(prefix + std::string(name), "VariableV2", OpKind::kParameter,
                 {}, dims);
  };
  auto binary = [&](absl::string_view name, absl::string_view op, Tensor a,
                    Tensor b) {
    return ElementwiseNode(prefix + std::string(name), op, kBinary, {a, b});
  };
  const Tensor lr = ScalarConstant("train/learning_rate");
  if (optimizer == OptimizerKind::kSgdMomentum) {
    const Tensor momentum = ScalarConstant("train/momentum");
    const Tensor accum = slot("Momentum");
    const Tensor scaled = binary("mul", "Mul", accum, momentum);
    const Tensor updated = binary("add", "AddV2", scaled, gradient);
    const Tensor step = binary("mul_1", "Mul", lr, updated);
    binary("sub", "Sub", weight, step);
    return;
  }
  const Tensor beta1 = ScalarConstant("train/beta1");
  const Tensor beta2 = ScalarConstant("train/beta2");
  const Tensor one_minus_beta1 = ScalarConstant("train/one_minus_beta1");
  const Tensor one_minus_beta2 = ScalarConstant("train/one_minus_beta2");
  const Tensor epsilon = ScalarConstant("train/epsilon");
  const Tensor m = slot("Adam");
  const Tensor v = slot("Adam_1");
  const Tensor m_new =
      binary("add", "AddV2", binary("mul", "Mul", m, beta1),
             binary("mul_1", "Mul", gradient, one_minus_beta1));
  const Tensor square = ElementwiseNode(prefix + "Square", "Square",
                                        OpKind::kElementwiseUnary, {gradient});
  const Tensor v_new =
      binary("add_1", "AddV2", binary("mul_2", "Mul", v, beta2),
             binary("mul_3", "Mul", square, one_minus_beta2));
  const Tensor root = ElementwiseNode(prefix + "Sqrt", "Sqrt",
                                      OpKind::kTranscendental, {v_new});
  const Tensor update = binary("truediv", "RealDiv", m_new,
                               binary("add_2", "AddV2", root, epsilon));
  binary("sub", "Sub", weight, binary("mul_4", "Mul", lr, update));
}

absl::StatusOr<graph::Graph> ModelBuilder::Finish(Tensor loss,
                                                  OptimizerKind optimizer) && {
  if (!status_.ok()) return status_;
  if (!Usable({loss})) return status_;
  if (types_[loss.id].rank() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the loss must be a scalar, not ", types_[loss.id].ToString()));
  }
  gradients_[loss.id] =
      Emit1("gradients/Fill", "Fill", OpKind::kBroadcast, {}, {});
  for (auto it = tape_.rbegin(); it != tape_.rend() && status_.ok(); ++it) {
    Backprop(*it);
  }
  for (Tensor weight : weights_) {
    if (!status_.ok()) break;
    if (gradients_[weight.id].valid()) {
      ApplyOptimizer(weight, gradients_[weight.id], optimizer);
    }
  }
  if (!status_.ok()) return status_;
  return std::move(builder_).Build(graph::GraphLimits());
}

}  // namespace gopt::simulator::generators
