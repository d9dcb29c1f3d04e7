// Data-movement, normalisation, generated-value, metadata and collective
// kinds of the graph IR as LibTorch ops (see torch_ops.h).

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string>

#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "worker/torch_ops.h"

namespace gopt::worker::internal {
namespace {

using graph::Node;
using graph::OpKind;

std::string LowerName(const Node& node) {
  std::string name;
  for (char c : node.op) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name.push_back(static_cast<char>(std::tolower(c)));
    }
  }
  return name;
}

const at::Tensor& In(const std::vector<at::Tensor>& inputs, size_t i,
                     const Node& node) {
  TORCH_CHECK(i < inputs.size(), "node '", node.name, "' needs input ", i,
              ", has ", inputs.size());
  return inputs[i];
}

const std::vector<int64_t>& OutDims(const Node& node, size_t i = 0) {
  TORCH_CHECK(i < node.outputs.size(), "node '", node.name, "' has no output ",
              i);
  return node.outputs[i].dims;
}

int64_t FirstDimOr(const Node& node, int64_t fallback, int64_t rank) {
  if (node.attributes.dimensions.empty()) return fallback;
  const int64_t d = node.attributes.dimensions[0];
  return d < 0 ? d + rank : d;
}

// An index value read from a scalar (or one element of a vector) tensor.
int64_t IndexValue(const std::vector<at::Tensor>& inputs, size_t first,
                   size_t d) {
  if (inputs.size() == first + 1 && inputs[first].numel() > 1) {
    return inputs[first].flatten()[d].item<int64_t>();
  }
  if (first + d < inputs.size() && inputs[first + d].numel() >= 1) {
    return inputs[first + d].flatten()[0].item<int64_t>();
  }
  return 0;
}

// XLA broadcast (operand dim i -> output dim dimensions[i]) or numpy-style
// expansion (ONNX Expand, TF BroadcastTo), materialised as XLA does.
at::Tensor BroadcastOp(const Node& node, const std::vector<at::Tensor>& in) {
  const std::vector<int64_t>& out = OutDims(node);
  // TF Fill(dims, value): the first operand is the shape, the second the
  // value.
  const bool fill = in.size() >= 2 && in[1].numel() == 1 && in[0].dim() == 1 &&
                    in[0].numel() == static_cast<int64_t>(out.size());
  at::Tensor x = In(in, fill ? 1 : 0, node);
  if (fill) x = x.reshape({});
  const std::vector<int64_t>& dims = node.attributes.dimensions;
  if (!dims.empty() && static_cast<int64_t>(dims.size()) == x.dim()) {
    std::vector<int64_t> order(dims.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
    x = x.permute(order);
    std::vector<int64_t> view(out.size(), 1);
    for (size_t i = 0; i < order.size(); ++i) {
      view.at(dims[order[i]]) = x.size(i);
    }
    x = x.reshape(view);
  }
  return x.expand(out).contiguous();
}

at::Tensor SliceOp(const Node& node, const std::vector<at::Tensor>& in) {
  at::Tensor x = In(in, 0, node);
  const auto& starts = node.attributes.slice_starts();
  const auto& limits = node.attributes.slice_limits();
  const auto& strides = node.attributes.slice_strides();
  const std::vector<int64_t>& out = OutDims(node);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (static_cast<size_t>(d) < starts.size() &&
        static_cast<size_t>(d) < limits.size()) {
      const int64_t stride =
          static_cast<size_t>(d) < strides.size() ? strides[d] : 1;
      x = x.slice(d, starts[d], limits[d], std::max<int64_t>(stride, 1));
    } else if (static_cast<size_t>(d) < out.size()) {
      x = x.narrow(d, 0, std::min(out[d], x.size(d)));
    }
  }
  return x.contiguous();
}

at::Tensor DynamicSliceOp(const Node& node, const std::vector<at::Tensor>& in,
                          bool update) {
  at::Tensor x = In(in, 0, node);
  const at::Tensor* upd = update ? &In(in, 1, node) : nullptr;
  const size_t first_index = update ? 2 : 1;
  at::Tensor result = update ? x.clone() : x;
  at::Tensor view = result;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t len =
        update ? upd->size(d) : OutDims(node).at(static_cast<size_t>(d));
    const int64_t start =
        std::clamp<int64_t>(IndexValue(in, first_index, d), 0,
                            std::max<int64_t>(0, x.size(d) - len));
    view = view.narrow(d, start, len);
  }
  if (!update) return view.contiguous();
  view.copy_(*upd);
  return result;
}

at::Tensor PadOp(const Node& node, const std::vector<at::Tensor>& in) {
  at::Tensor x = In(in, 0, node);
  const auto& padding = node.attributes.padding();
  const std::vector<int64_t>& out = OutDims(node);
  const double value = in.size() >= 2 && in[1].numel() == 1
                           ? in[1].to(at::kDouble).item<double>()
                           : 0.0;
  std::vector<int64_t> pads;
  for (int64_t d = x.dim(); d-- > 0;) {
    if (static_cast<size_t>(d) < padding.size()) {
      const graph::PaddingDimension& p = padding[d];
      if (p.interior > 0 && x.size(d) > 0) {
        std::vector<int64_t> sizes = x.sizes().vec();
        sizes[d] = (sizes[d] - 1) * (p.interior + 1) + 1;
        at::Tensor y = at::full(sizes, value, x.options());
        y.slice(d, 0, sizes[d], p.interior + 1).copy_(x);
        x = y;
      }
      pads.push_back(p.low);
      pads.push_back(p.high);
    } else {
      pads.push_back(0);
      pads.push_back(out.at(d) - x.size(d));
    }
  }
  return at::constant_pad_nd(x, pads, value);
}

at::Tensor ConcatenateOp(const Node& node, const std::vector<at::Tensor>& in) {
  const at::Tensor& first = In(in, 0, node);
  const std::vector<int64_t>& out = OutDims(node);
  int64_t dim = -1;
  if (!node.attributes.dimensions.empty()) {
    dim = FirstDimOr(node, 0, first.dim());
  } else {
    for (int64_t d = 0; d < first.dim(); ++d) {
      if (static_cast<size_t>(d) < out.size() && out[d] != first.size(d)) {
        dim = d;
      }
    }
    if (dim < 0) dim = 0;
  }
  std::vector<at::Tensor> parts;
  for (const at::Tensor& t : in) {
    if (t.dim() == first.dim()) parts.push_back(t.to(first.scalar_type()));
  }
  if (static_cast<int64_t>(out.size()) == first.dim() + 1) {
    // TF Pack: stacks along a new axis.
    const int64_t axis = FirstDimOr(node, 0, first.dim() + 1);
    return at::stack(parts, axis);
  }
  return at::cat(parts, dim);
}

std::vector<at::Tensor> GatherScatterOp(const Node& node,
                                        const std::vector<at::Tensor>& in) {
  const at::Tensor& operand = In(in, 0, node);
  const at::Tensor& indices = In(in, 1, node);
  const int64_t axis =
      node.kind == OpKind::kGather ? FirstDimOr(node, 0, operand.dim()) : 0;
  TORCH_CHECK(operand.dim() > 0 && operand.size(axis) > 0, "empty operand");
  const at::Tensor idx =
      indices.to(at::kLong).flatten().remainder(operand.size(axis));
  if (node.kind == OpKind::kGather) return {operand.index_select(axis, idx)};
  const at::Tensor& updates = In(in, 2, node);
  std::vector<int64_t> shape = operand.sizes().vec();
  shape[0] = idx.numel();
  at::Tensor y = operand.clone();
  y.index_add_(0, idx, updates.to(operand.scalar_type()).reshape(shape));
  return {y};
}

at::Tensor ResizeOp(const Node& node, const std::vector<at::Tensor>& in) {
  at::Tensor x = In(in, 0, node);
  const std::vector<int64_t>& out = OutDims(node);
  TORCH_CHECK(x.dim() == 4 && out.size() == 4, "resize of rank ", x.dim());
  const bool nhwc = out[1] != x.size(1) && out[3] == x.size(3);
  if (nhwc) x = x.permute({0, 3, 1, 2});
  const std::vector<int64_t> size = nhwc ? std::vector<int64_t>{out[1], out[2]}
                                         : std::vector<int64_t>{out[2], out[3]};
  at::Tensor y = at::upsample_nearest2d(
      x.is_floating_point() ? x : x.to(at::kFloat), size);
  return nhwc ? y.permute({0, 2, 3, 1}).contiguous() : y;
}

std::vector<at::Tensor> SortOp(const Node& node,
                               const std::vector<at::Tensor>& in) {
  const at::Tensor& keys = In(in, 0, node);
  const int64_t dim = FirstDimOr(node, keys.dim() - 1, keys.dim());
  const std::vector<int64_t>& out = OutDims(node);
  at::Tensor values, indices;
  if (static_cast<size_t>(dim) < out.size() && out[dim] < keys.size(dim)) {
    std::tie(values, indices) = at::topk(keys, out[dim], dim);
  } else {
    // The stable flag as an optional: a plain bool converts to sort(self,
    // dim, descending)'s dim as well, and GCC then picks that overload
    // (sorting along dim 0 or 1, descending).
    std::tie(values, indices) =
        at::sort(keys, c10::optional<bool>(node.attributes.is_stable), dim,
                 /*descending=*/false);
  }
  std::vector<at::Tensor> results = {values};
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    const bool carried = i < in.size() && in[i].dim() == keys.dim();
    results.push_back(carried ? at::take_along_dim(in[i], indices, dim)
                              : indices);
  }
  return results;
}

at::Tensor NormalizationOp(const Node& node, const std::vector<at::Tensor>& in,
                           std::vector<at::Tensor>* extra) {
  const std::string name = LowerName(node);
  at::Tensor x = In(in, 0, node);
  x = x.is_floating_point() ? x : x.to(at::kFloat);
  auto optional = [&](size_t i, int64_t n) -> c10::optional<at::Tensor> {
    if (i < in.size() && in[i].numel() == n) {
      return in[i].to(x.scalar_type()).flatten();
    }
    return c10::nullopt;
  };
  if (absl::StrContains(name, "layer") || x.dim() < 2) {
    const int64_t n = x.size(-1);
    return at::layer_norm(x, {n}, optional(1, n), optional(2, n));
  }
  const int64_t feature = FirstDimOr(node, 1, x.dim());
  const bool moved = feature != 1;
  if (moved) x = x.movedim(feature, 1);
  const int64_t c = x.size(1);
  at::Tensor y;
  if (node.outputs.size() == 3) {
    at::Tensor mean, invstd;
    std::tie(y, mean, invstd) = at::native_batch_norm(
        x, optional(1, c), optional(2, c), c10::nullopt, c10::nullopt,
        /*training=*/true, 0.1, 1e-5);
    extra->push_back(mean);
    extra->push_back(invstd);
  } else {
    c10::optional<at::Tensor> var = optional(4, c);
    if (var) var = at::abs(*var);
    y = at::batch_norm(x, optional(1, c), optional(2, c), optional(3, c), var,
                       /*training=*/!var.has_value(), 0.1, 1e-5,
                       /*cudnn_enabled=*/false);
  }
  return moved ? y.movedim(1, feature).contiguous() : y;
}

// A collective on one device moves its operand's bytes: each output is a
// copy of the matching operand, repeated or cut to the output's size.
std::vector<at::Tensor> CollectiveOp(const Node& node,
                                     const std::vector<at::Tensor>& in) {
  TORCH_CHECK(!in.empty(), "collective without operands");
  std::vector<at::Tensor> results;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const at::Tensor src = in[i % in.size()].flatten();
    const int64_t want = node.outputs[i].num_elements();
    TORCH_CHECK(src.numel() > 0 || want == 0, "empty collective operand");
    at::Tensor y = src.numel() >= want
                       ? src.narrow(0, 0, want).clone()
                       : src.repeat({(want + src.numel() - 1) / src.numel()})
                             .narrow(0, 0, want);
    results.push_back(y);
  }
  return results;
}

at::Tensor GeneratedOp(const Node& node) {
  const std::vector<int64_t>& out = OutDims(node);
  if (node.kind == OpKind::kRandom) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(
        absl::Hash<std::string>()(node.name));
    return at::rand(out, gen, at::TensorOptions().dtype(at::kFloat));
  }
  if (out.empty()) return at::zeros({}, at::kLong);
  const int64_t dim = FirstDimOr(node, 0, static_cast<int64_t>(out.size()));
  std::vector<int64_t> view(out.size(), 1);
  view.at(dim) = out[dim];
  return at::arange(out[dim], at::kLong).reshape(view).expand(out).contiguous();
}

}  // namespace

std::vector<at::Tensor> DataMovementOp(const Node& node,
                                       const std::vector<at::Tensor>& in) {
  switch (node.kind) {
    case OpKind::kBroadcast:
      return {BroadcastOp(node, in)};
    case OpKind::kTranspose: {
      const at::Tensor& x = In(in, 0, node);
      std::vector<int64_t> perm = node.attributes.dimensions;
      if (perm.empty()) {
        for (int64_t d = x.dim(); d-- > 0;) perm.push_back(d);
      }
      return {x.permute(perm).contiguous()};
    }
    case OpKind::kCopy:
      return {In(in, 0, node).clone()};
    case OpKind::kSlice:
      if (node.outputs.size() > 1) {
        // TF Unpack / ONNX Split: one output per piece.
        const at::Tensor& x = In(in, 0, node);
        const int64_t axis = FirstDimOr(node, 0, x.dim());
        if (x.size(axis) == static_cast<int64_t>(node.outputs.size())) {
          return at::unbind(x, axis);
        }
        return at::tensor_split(x, static_cast<int64_t>(node.outputs.size()),
                                axis);
      }
      return {SliceOp(node, in)};
    case OpKind::kDynamicSlice:
      return {DynamicSliceOp(node, in, /*update=*/false)};
    case OpKind::kDynamicUpdateSlice:
      return {DynamicSliceOp(node, in, /*update=*/true)};
    case OpKind::kPad:
      return {PadOp(node, in)};
    case OpKind::kConcatenate:
      return {ConcatenateOp(node, in)};
    case OpKind::kReverse:
      return {In(in, 0, node).flip(node.attributes.dimensions)};
    case OpKind::kGather:
    case OpKind::kScatter:
      return GatherScatterOp(node, in);
    case OpKind::kResize:
      return {ResizeOp(node, in)};
    case OpKind::kSort:
      return SortOp(node, in);
    default:
      TORCH_CHECK(false, "not a data-movement kind");
  }
}

std::vector<at::Tensor> OtherOp(const Node& node,
                                const std::vector<at::Tensor>& in) {
  switch (node.kind) {
    case OpKind::kNormalization: {
      std::vector<at::Tensor> extra;
      at::Tensor y = NormalizationOp(node, in, &extra);
      extra.insert(extra.begin(), y);
      return extra;
    }
    case OpKind::kSoftmax: {
      const at::Tensor& x = In(in, 0, node);
      const int64_t dim = FirstDimOr(node, x.dim() - 1, x.dim());
      const at::Tensor f = x.is_floating_point() ? x : x.to(at::kFloat);
      return {absl::StrContains(LowerName(node), "log")
                  ? at::log_softmax(f, dim)
                  : at::softmax(f, dim)};
    }
    case OpKind::kCholesky:
      return {std::get<0>(at::linalg_cholesky_ex(In(in, 0, node)))};
    case OpKind::kTriangularSolve:
      return {at::linalg_solve_triangular(In(in, 0, node), In(in, 1, node),
                                          /*upper=*/false)};
    case OpKind::kIota:
    case OpKind::kRandom:
      return {GeneratedOp(node)};
    case OpKind::kReshape:
    case OpKind::kBitcast:
      return {In(in, 0, node).reshape(OutDims(node))};
    case OpKind::kTuple:
      return std::vector<at::Tensor>(in.begin(), in.end());
    case OpKind::kIdentity:
      return std::vector<at::Tensor>(
          in.begin(), in.begin() + std::min(in.size(), node.outputs.size()));
    case OpKind::kGetTupleElement: {
      // The edge names the element (one input) or the whole tuple (all).
      const int64_t index = std::max<int64_t>(0, node.attributes.tuple_index);
      return {In(in, in.size() == 1 ? 0 : static_cast<size_t>(index), node)};
    }
    case OpKind::kShapeOf:
      return {at::tensor(In(in, 0, node).sizes().vec(), at::kLong)};
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kCollectivePermute:
    case OpKind::kSendRecv:
      return CollectiveOp(node, in);
    default:
      TORCH_CHECK(false, "no LibTorch op for kind ",
                  std::string(graph::OpKindName(node.kind)));
  }
}

}  // namespace gopt::worker::internal
