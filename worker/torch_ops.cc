#include "worker/torch_ops.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <numeric>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gopt::worker::internal {
namespace {

using graph::Node;
using graph::OpKind;

// The op's source-format name, lower case, letters and digits only
// ("Relu6" -> "relu6", "shift-left" -> "shiftleft").
std::string NormalizedOpName(const Node& node) {
  std::string name;
  for (char c : node.op) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name.push_back(static_cast<char>(std::tolower(c)));
    }
  }
  return name;
}

const at::Tensor& Input(const std::vector<at::Tensor>& inputs, size_t i,
                        const Node& node) {
  TORCH_CHECK(i < inputs.size(), "node '", node.name, "' needs input ", i,
              ", has ", inputs.size());
  return inputs[i];
}

at::ScalarType OutputScalarType(const Node& node) {
  TORCH_CHECK(!node.outputs.empty(), "node '", node.name, "' has no output");
  return TorchScalarType(node.outputs[0].dtype);
}

// `t` as a floating type (transcendental ops on integers).
at::Tensor AsFloating(const at::Tensor& t) {
  return at::isFloatingType(t.scalar_type()) ||
                 at::isComplexType(t.scalar_type())
             ? t
             : t.to(at::kFloat);
}

at::Tensor UnaryOp(const std::string& name, const at::Tensor& x) {
  const at::Tensor f = AsFloating(x);
  if (name == "relu") return at::relu(x);
  if (name == "relu6") return at::clamp(x, 0, 6);
  if (absl::StrContains(name, "leakyrelu")) return at::leaky_relu(f, 0.01);
  if (name == "elu") return at::elu(f);
  if (name == "selu") return at::selu(f);
  if (name == "gelu") return at::gelu(f);
  if (absl::StrContains(name, "hardsigmoid")) return at::hardsigmoid(f);
  if (absl::StrContains(name, "hardswish")) return at::hardswish(f);
  if (absl::StrContains(name, "sigmoid") || name == "logistic") {
    return at::sigmoid(f);
  }
  if (name == "tanh") return at::tanh(f);
  if (name == "exp" || name == "exponential") return at::exp(f);
  if (name == "expm1" || name == "exponentialminusone") return at::expm1(f);
  if (name == "log") return at::log(at::abs(f));
  if (name == "log1p" || name == "logplusone") return at::log1p(at::abs(f));
  if (name == "sqrt") return at::sqrt(at::abs(f));
  if (name == "rsqrt") return at::rsqrt(at::abs(f));
  if (name == "erf") return at::erf(f);
  if (name == "sin" || name == "sine") return at::sin(f);
  if (name == "cos" || name == "cosine") return at::cos(f);
  if (name == "softplus") return at::softplus(f);
  if (name == "neg" || name == "negate") return at::neg(x);
  if (name == "abs") return at::abs(x);
  if (name == "floor") return at::floor(f);
  if (name == "ceil") return at::ceil(f);
  if (name == "round" || absl::StartsWith(name, "roundnearest")) {
    return at::round(f);
  }
  if (name == "sign") return at::sign(x);
  if (name == "not" || name == "logicalnot") return at::logical_not(x);
  if (name == "reciprocal" || name == "inv") return at::reciprocal(f);
  if (name == "square") return at::mul(x, x);
  if (name == "isfinite") return at::isfinite(f);
  if (at::isFloatingType(x.scalar_type())) return at::tanh(x);
  return at::neg(x);
}

at::Tensor BinaryOp(const std::string& name, const at::Tensor& a,
                    const at::Tensor& b) {
  if (absl::StartsWith(name, "sub")) return at::sub(a, b);
  if (absl::StartsWith(name, "mul")) return at::mul(a, b);
  if (absl::StartsWith(name, "div") || name == "realdiv") {
    return at::div(AsFloating(a), at::add(at::abs(AsFloating(b)), 1));
  }
  if (absl::StartsWith(name, "max")) return at::maximum(a, b);
  if (absl::StartsWith(name, "min")) return at::minimum(a, b);
  if (absl::StartsWith(name, "pow")) {
    return at::pow(at::abs(AsFloating(a)), AsFloating(b));
  }
  if (absl::StartsWith(name, "rem") || name == "mod" || name == "floormod") {
    return at::remainder(AsFloating(a), at::add(at::abs(AsFloating(b)), 1));
  }
  if (name == "and" || name == "logicaland") {
    return a.scalar_type() == at::kBool ? at::logical_and(a, b)
                                        : at::bitwise_and(a, b);
  }
  if (name == "or" || name == "logicalor") {
    return a.scalar_type() == at::kBool ? at::logical_or(a, b)
                                        : at::bitwise_or(a, b);
  }
  if (name == "xor") return at::bitwise_xor(a, b);
  if (name == "atan2") return at::atan2(AsFloating(a), AsFloating(b));
  if (absl::StrContains(name, "squareddifference")) {
    const at::Tensor d = at::sub(a, b);
    return at::mul(d, d);
  }
  if (a.scalar_type() == at::kBool) return at::logical_or(a, b);
  return at::add(a, b);
}

at::Tensor CompareOp(const Node& node, const std::string& name,
                     const at::Tensor& a, const at::Tensor& b) {
  std::string direction = node.attributes.comparison();
  for (char& c : direction) c = static_cast<char>(std::toupper(c));
  if (direction.empty()) {
    if (absl::StrContains(name, "greaterorequal")) direction = "GE";
    if (absl::StrContains(name, "lessorequal")) direction = "LE";
    if (name == "greater") direction = "GT";
    if (name == "less") direction = "LT";
    if (absl::StrContains(name, "notequal")) direction = "NE";
  }
  if (direction == "GE") return at::ge(a, b);
  if (direction == "LE") return at::le(a, b);
  if (direction == "GT") return at::gt(a, b);
  if (direction == "LT") return at::lt(a, b);
  if (direction == "NE") return at::ne(a, b);
  return at::eq(a, b);
}

at::Tensor ElementwiseOp(const Node& node,
                         const std::vector<at::Tensor>& inputs) {
  const std::string name = NormalizedOpName(node);
  const at::ScalarType out = OutputScalarType(node);
  switch (node.kind) {
    case OpKind::kElementwiseUnary:
    case OpKind::kTranscendental:
      if (inputs.size() >= 2) return BinaryOp(name, inputs[0], inputs[1]);
      return UnaryOp(name, Input(inputs, 0, node));
    case OpKind::kElementwiseBinary: {
      if (inputs.size() == 1) return UnaryOp(name, inputs[0]);
      at::Tensor acc = BinaryOp(name, Input(inputs, 0, node), inputs[1]);
      for (size_t i = 2; i < inputs.size(); ++i) {
        acc = BinaryOp(name, acc, inputs[i]);
      }
      return acc;
    }
    case OpKind::kCompare:
      return CompareOp(node, name, Input(inputs, 0, node),
                       Input(inputs, 1, node));
    case OpKind::kSelect:
      return at::where(Input(inputs, 0, node).to(at::kBool),
                       Input(inputs, 1, node).to(out),
                       Input(inputs, 2, node).to(out));
    case OpKind::kClamp: {
      // XLA: clamp(min, operand, max); ONNX/TF: Clip(x, min, max).
      const bool xla = inputs.size() == 3 && node.op == "clamp";
      const at::Tensor& x = Input(inputs, xla ? 1 : 0, node);
      at::Tensor y = x;
      if (inputs.size() >= 2) y = at::maximum(y, inputs[xla ? 0 : 1].to(out));
      if (inputs.size() >= 3) y = at::minimum(y, inputs[2].to(out));
      return inputs.size() == 1 ? at::clamp(x, 0, 6) : y;
    }
    case OpKind::kConvert:
      return Input(inputs, 0, node).to(out);
    default:
      TORCH_CHECK(false, "not an elementwise kind");
  }
}

// The dims of `rank` not in `a` or `b`, ascending.
std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() &&
        std::find(b.begin(), b.end(), d) == b.end()) {
      free.push_back(d);
    }
  }
  return free;
}

int64_t Product(const at::Tensor& t, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= t.size(d);
  return p;
}

std::vector<int64_t> Concat(std::vector<int64_t> a,
                            const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// XLA dot with its dimension numbers: batch x free(lhs) x free(rhs), as
// one batched matrix multiply.
at::Tensor DotOp(const Node& node, const std::vector<at::Tensor>& inputs) {
  const at::ScalarType out = OutputScalarType(node);
  const at::Tensor lhs = Input(inputs, 0, node).to(out);
  const at::Tensor rhs = Input(inputs, 1, node).to(out);
  const graph::DotDimensions& dd = node.attributes.dot();
  at::Tensor result;
  if (node.attributes.has_dot_dimensions &&
      dd.lhs_batch.size() == dd.rhs_batch.size()) {
    const std::vector<int64_t> lhs_free =
        FreeDims(lhs.dim(), dd.lhs_batch, dd.lhs_contracting);
    const std::vector<int64_t> rhs_free =
        FreeDims(rhs.dim(), dd.rhs_batch, dd.rhs_contracting);
    const at::Tensor l =
        lhs.permute(Concat(Concat(dd.lhs_batch, lhs_free), dd.lhs_contracting))
            .reshape({Product(lhs, dd.lhs_batch), Product(lhs, lhs_free),
                      Product(lhs, dd.lhs_contracting)});
    const at::Tensor r =
        rhs.permute(Concat(Concat(dd.rhs_batch, dd.rhs_contracting), rhs_free))
            .reshape({Product(rhs, dd.rhs_batch),
                      Product(rhs, dd.rhs_contracting),
                      Product(rhs, rhs_free)});
    result = at::bmm(l, r);
  } else {
    result = at::matmul(lhs, rhs);
  }
  if (inputs.size() >= 3) {
    // ONNX Gemm's C: broadcast onto the product.
    result = result.reshape(TorchShape(node.outputs[0])) + inputs[2].to(out);
  }
  return result;
}

// Inserts base_dilation - 1 zeros between the elements of `x` along `dim`.
at::Tensor DilateBase(const at::Tensor& x, int64_t dim, int64_t dilation) {
  if (dilation <= 1 || x.size(dim) == 0) return x;
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[dim] = (sizes[dim] - 1) * dilation + 1;
  at::Tensor y = at::zeros(sizes, x.options());
  y.slice(dim, 0, sizes[dim], dilation).copy_(x);
  return y;
}

std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  return inverse;
}

// XLA convolution: permutes to NC(spatial) / OI(spatial), applies lhs
// (base) dilation and asymmetric padding explicitly, runs at::convolution
// with strides, rhs (window) dilation and feature groups, and permutes the
// result to the output's dimension order.
at::Tensor ConvolutionOp(const Node& node,
                         const std::vector<at::Tensor>& inputs) {
  const at::ScalarType out = OutputScalarType(node);
  const graph::OpAttributes& attrs = node.attributes;
  TORCH_CHECK(attrs.batch_group_count == 1, "batch_group_count > 1");
  const graph::ConvolutionDimensions& cd = attrs.convolution();
  const auto& window = attrs.window();
  const size_t k = cd.input_spatial.size();
  TORCH_CHECK(k >= 1 && k <= 3 && window.size() == k &&
                  cd.kernel_spatial.size() == k &&
                  cd.output_spatial.size() == k,
              "convolution needs 1 to 3 spatial dims with one window each");
  at::Tensor x = Input(inputs, 0, node)
                     .to(out)
                     .permute(Concat({cd.input_batch, cd.input_feature},
                                     cd.input_spatial));
  at::Tensor w =
      Input(inputs, 1, node)
          .to(out)
          .permute(Concat({cd.kernel_output_feature, cd.kernel_input_feature},
                          cd.kernel_spatial));
  std::vector<int64_t> stride, dilation, pads, flips;
  for (size_t i = 0; i < k; ++i) {
    x = DilateBase(x, 2 + i, window[i].base_dilation);
    stride.push_back(window[i].stride);
    dilation.push_back(window[i].window_dilation);
    if (window[i].reversal) flips.push_back(2 + i);
  }
  for (size_t i = k; i-- > 0;) {
    pads.push_back(window[i].padding_low);
    pads.push_back(window[i].padding_high);
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p; })) {
    x = at::constant_pad_nd(x, pads, 0);
  }
  if (!flips.empty()) w = w.flip(flips);
  const int64_t groups = attrs.feature_group_count;
  if (groups > 1 && w.size(1) == x.size(1) && w.size(1) != x.size(1) / groups) {
    // Depthwise kernels as TF writes them (in = channels, out = multiplier):
    // XLA's form has one input feature per group and channels * multiplier
    // outputs.
    std::vector<int64_t> shape = {w.size(0) * w.size(1), 1};
    for (int64_t d = 2; d < w.dim(); ++d) shape.push_back(w.size(d));
    w = w.transpose(0, 1).reshape(shape);
  }
  at::Tensor y = at::convolution(
      x, w, c10::nullopt, stride, std::vector<int64_t>(k, 0), dilation,
      /*transposed=*/false, std::vector<int64_t>(k, 0),
      attrs.feature_group_count);
  if (inputs.size() >= 3 && inputs[2].numel() == y.size(1)) {
    std::vector<int64_t> bias_shape(y.dim(), 1);
    bias_shape[1] = y.size(1);
    y = y + inputs[2].to(out).reshape(bias_shape);
  }
  const std::vector<int64_t> perm =
      Concat({cd.output_batch, cd.output_feature}, cd.output_spatial);
  return y.permute(InversePermutation(perm)).contiguous();
}

// The dims of `in` that reduce to `out`: dims whose size differs (or that
// disappear when ranks differ), matched left to right.
std::vector<int64_t> InferReducedDims(at::IntArrayRef in,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> reduced;
  if (in.size() == out.size()) {
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] != out[d]) reduced.push_back(d);
    }
    return reduced;
  }
  size_t j = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (j < out.size() && in[d] == out[j]) {
      ++j;
    } else {
      reduced.push_back(d);
    }
  }
  return reduced;
}

// The binary op of a reducer computation (XLA to_apply): "add", "maximum"...
std::string ReducerName(const graph::Graph& graph, const Node& node) {
  for (int32_t s : node.subgraphs) {
    if (s < 0 || s >= static_cast<int32_t>(graph.subgraphs().size())) continue;
    for (const Node& n : graph.subgraphs()[s]->nodes()) {
      if (n.kind == OpKind::kElementwiseBinary) return NormalizedOpName(n);
    }
  }
  return NormalizedOpName(node);
}

at::Tensor ReduceOne(const std::string& reducer, const at::Tensor& x,
                     const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  if (absl::StrContains(reducer, "max")) return at::amax(x, dims);
  if (absl::StrContains(reducer, "min")) return at::amin(x, dims);
  if (absl::StrContains(reducer, "mean")) return at::mean(AsFloating(x), dims);
  if (absl::StrContains(reducer, "mul") || absl::StrContains(reducer, "prod")) {
    at::Tensor y = x;
    for (size_t i = dims.size(); i-- > 0;) y = at::prod(y, dims[i]);
    return y;
  }
  if (x.scalar_type() == at::kBool) return at::any(x.to(at::kInt).sum(dims));
  return at::sum(x, dims);
}

// XLA reduce (variadic: operands then init values), ONNX Reduce*.
std::vector<at::Tensor> ReduceOp(const graph::Graph& graph, const Node& node,
                                 const std::vector<at::Tensor>& inputs) {
  const std::string reducer = ReducerName(graph, node);
  const size_t n = node.outputs.size();
  std::vector<at::Tensor> results;
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor& x = Input(inputs, i, node);
    std::vector<int64_t> dims = node.attributes.dimensions;
    for (int64_t& d : dims) d = d < 0 ? d + x.dim() : d;
    if (dims.empty()) dims = InferReducedDims(x.sizes(), node.outputs[i].dims);
    results.push_back(ReduceOne(reducer, x, dims));
  }
  return results;
}

// XLA reduce-window / ONNX pooling: the windowed dims move last and run as
// max (or average) pooling over 1 to 3 spatial dims.
at::Tensor ReduceWindowOp(const graph::Graph& graph, const Node& node,
                          const std::vector<at::Tensor>& inputs) {
  const at::Tensor x = AsFloating(Input(inputs, 0, node));
  const auto& window = node.attributes.window();
  const int64_t rank = x.dim();
  const int64_t offset = rank - static_cast<int64_t>(window.size());
  TORCH_CHECK(offset >= 0, "window longer than the operand's rank");
  std::vector<int64_t> active, others;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t w = d - offset;
    const bool windowed =
        w >= 0 && (window[w].size > 1 || window[w].stride > 1 ||
                   window[w].padding_low || window[w].padding_high);
    (windowed ? active : others).push_back(d);
  }
  const size_t k = active.size();
  TORCH_CHECK(k >= 1 && k <= 3, "pooling over ", k, " dims");
  const std::string reducer = ReducerName(graph, node);
  const bool is_max = absl::StrContains(reducer, "max") ||
                      !(absl::StrContains(reducer, "add") ||
                        absl::StrContains(reducer, "avg") ||
                        absl::StrContains(reducer, "average"));
  at::Tensor y = x.permute(Concat(others, active));
  std::vector<int64_t> other_sizes(y.sizes().begin(), y.sizes().end() - k);
  std::vector<int64_t> flat = {Product(x, others)};
  for (int64_t d : active) flat.push_back(x.size(d));
  y = y.reshape(flat);
  std::vector<int64_t> size, stride, dilation, pads;
  for (int64_t d : active) {
    const graph::WindowDimension& w = window[d - offset];
    TORCH_CHECK(w.base_dilation == 1, "base dilation in a pooling window");
    size.push_back(w.size);
    stride.push_back(w.stride);
    dilation.push_back(w.window_dilation);
  }
  for (size_t i = k; i-- > 0;) {
    pads.push_back(window[active[i] - offset].padding_low);
    pads.push_back(window[active[i] - offset].padding_high);
  }
  y = at::constant_pad_nd(y, pads, is_max ? -1e30 : 0);
  const std::vector<int64_t> zero(k, 0);
  if (is_max) {
    y = k == 1   ? at::max_pool1d(y, size, stride, zero, dilation)
        : k == 2 ? at::max_pool2d(y, size, stride, zero, dilation)
                 : at::max_pool3d(y, size, stride, zero, dilation);
  } else {
    TORCH_CHECK(std::all_of(dilation.begin(), dilation.end(),
                            [](int64_t d) { return d == 1; }),
                "dilated average pooling");
    y = k == 1   ? at::avg_pool1d(y, size, stride, zero)
        : k == 2 ? at::avg_pool2d(y, size, stride, zero)
                 : at::avg_pool3d(y, size, stride, zero);
  }
  std::vector<int64_t> unflat = other_sizes;
  for (size_t i = 0; i < k; ++i) unflat.push_back(y.size(1 + i));
  return y.reshape(unflat)
      .permute(InversePermutation(Concat(others, active)))
      .contiguous();
}

}  // namespace

at::ScalarType TorchScalarType(graph::DType dtype) {
  using graph::DType;
  switch (dtype) {
    case DType::kPred:
      return at::kBool;
    case DType::kS8:
      return at::kChar;
    case DType::kS16:
    case DType::kU16:
      return at::kShort;
    case DType::kS32:
    case DType::kU32:
      return at::kInt;
    case DType::kS64:
    case DType::kU64:
    case DType::kString:
      return at::kLong;
    case DType::kF16:
      return at::kHalf;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF32:
      return at::kFloat;
    case DType::kF64:
      return at::kDouble;
    case DType::kC64:
      return at::kComplexFloat;
    case DType::kC128:
      return at::kComplexDouble;
    default:
      return at::kByte;  // u8, s4/u4, f8, token, opaque, invalid
  }
}

std::vector<int64_t> TorchShape(const graph::TensorType& type) {
  if (type.is_tuple()) return {type.size_bytes()};
  if (graph::DTypeBits(type.dtype) == 0) return {0};
  return type.dims;
}

at::Tensor RandomTensor(const graph::TensorType& type, uint64_t seed,
                        const at::Device& device) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const std::vector<int64_t> shape = TorchShape(type);
  const at::ScalarType st =
      type.is_tuple() ? at::kByte : TorchScalarType(type.dtype);
  at::Tensor t;
  if (st == at::kBool) {
    t = at::rand(shape, gen, at::TensorOptions().dtype(at::kFloat)).lt(0.5);
  } else if (at::isFloatingType(st) || at::isComplexType(st)) {
    t = (at::rand(shape, gen, at::TensorOptions().dtype(at::kFloat)) * 2 - 1)
            .to(st);
  } else {
    t = at::randint(0, 64, shape, gen, at::TensorOptions().dtype(at::kLong))
            .to(st);
  }
  return t.to(device);
}

bool HasRealOp(OpKind kind) {
  switch (kind) {
    case OpKind::kFft:
    case OpKind::kRnn:
    case OpKind::kSelectAndScatter:
    case OpKind::kWhile:
    case OpKind::kConditional:
    case OpKind::kCall:
    case OpKind::kFusion:
    case OpKind::kLoopControl:
    case OpKind::kCustomCall:
    case OpKind::kInfeedOutfeed:
    case OpKind::kOther:
      return false;
    default:
      return true;
  }
}

std::vector<at::Tensor> RunRealOp(const graph::Graph& graph, const Node& node,
                                  const std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(HasRealOp(node.kind), "node '", node.name, "': kind ",
              std::string(graph::OpKindName(node.kind)), " has no real op");
  switch (graph::OpKindCategory(node.kind)) {
    case graph::OpCategory::kElementwise:
      return ConformOutputs(node, {ElementwiseOp(node, inputs)});
    case graph::OpCategory::kDataMovement:
      return ConformOutputs(node, DataMovementOp(node, inputs));
    default:
      break;
  }
  switch (node.kind) {
    case OpKind::kDot:
      return ConformOutputs(node, {DotOp(node, inputs)});
    case OpKind::kConvolution:
      return ConformOutputs(node, {ConvolutionOp(node, inputs)});
    case OpKind::kReduce:
      return ConformOutputs(node, ReduceOp(graph, node, inputs));
    case OpKind::kReduceWindow:
      return ConformOutputs(node, {ReduceWindowOp(graph, node, inputs)});
    default:
      return ConformOutputs(node, OtherOp(node, inputs));
  }
}

std::vector<at::Tensor> ConformOutputs(const Node& node,
                                       std::vector<at::Tensor> results) {
  TORCH_CHECK(!results.empty() && results.size() <= node.outputs.size(),
              "node '", node.name, "': op gave ", results.size(),
              " outputs, the node has ", node.outputs.size());
  // Secondary outputs LibTorch's op does not give (a dropout mask, a fused
  // batch norm's saved statistics) are zeros of their type.
  while (results.size() < node.outputs.size()) {
    const graph::TensorType& type = node.outputs[results.size()];
    results.push_back(at::zeros(
        TorchShape(type),
        results[0].options().dtype(
            type.is_tuple() ? at::kByte : TorchScalarType(type.dtype))));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const graph::TensorType& type = node.outputs[i];
    const std::vector<int64_t> shape = TorchShape(type);
    const int64_t numel = std::accumulate(shape.begin(), shape.end(),
                                          int64_t{1}, std::multiplies<>());
    at::Tensor r = results[i];
    if (type.is_tuple()) r = r.flatten().to(at::kByte);
    TORCH_CHECK(r.numel() == numel, "node '", node.name, "' output ", i,
                ": op gave ", r.numel(), " elements, the node has ", numel);
    if (!type.is_tuple()) r = r.to(TorchScalarType(type.dtype));
    results[i] = r.reshape(shape);
  }
  return results;
}

}  // namespace gopt::worker::internal
