#include "graph/op_catalog.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace gopt::graph {
namespace {

const OpAttributes& DefaultAttributes() {
  static const OpAttributes* const kDefault = new OpAttributes();
  return *kDefault;
}

int64_t SumBytes(const std::vector<const TensorType*>& types, size_t begin = 0,
                 size_t end = SIZE_MAX) {
  int64_t total = 0;
  for (size_t i = begin; i < std::min(end, types.size()); ++i) {
    total += types[i]->size_bytes();
  }
  return total;
}

int64_t SumElements(const std::vector<const TensorType*>& types) {
  int64_t total = 0;
  for (const TensorType* type : types) total += type->num_elements();
  return total;
}

absl::Status RequireOperands(const OpCostQuery& query, size_t count) {
  if (query.operands.size() < count) {
    return absl::InvalidArgumentError(
        absl::StrCat(OpKindName(query.kind), " needs at least ", count,
                     " operand(s), has ", query.operands.size()));
  }
  return absl::OkStatus();
}

absl::Status CheckDimension(int64_t dim, const TensorType& type,
                            absl::string_view field) {
  if (dim < 0 || dim >= type.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " dimension ", dim, " is outside the rank ",
                     type.rank(), " of ", type.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<OpCost> DotCost(const OpCostQuery& query,
                               const OpAttributes& attrs, OpCost cost) {
  if (absl::Status s = RequireOperands(query, 2); !s.ok()) return s;
  const TensorType& lhs = *query.operands[0];
  double contracted = 1;
  if (attrs.has_dot_dimensions) {
    for (int64_t dim : attrs.dot().lhs_contracting) {
      if (absl::Status s = CheckDimension(dim, lhs, "lhs_contracting");
          !s.ok()) {
        return s;
      }
      contracted *= static_cast<double>(lhs.dims[dim]);
    }
  } else if (lhs.rank() > 0) {
    // Matmul convention: contract the lhs's last dimension.
    contracted = static_cast<double>(lhs.dims.back());
  }
  cost.flops =
      2.0 * static_cast<double>(SumElements(query.outputs)) * contracted;
  return cost;
}

absl::StatusOr<OpCost> ConvolutionCost(const OpCostQuery& query,
                                       const OpAttributes& attrs, OpCost cost) {
  if (absl::Status s = RequireOperands(query, 2); !s.ok()) return s;
  const TensorType& kernel = *query.operands[1];
  double per_output = 1;
  if (attrs.has_convolution_dimensions) {
    const ConvolutionDimensions& dims = attrs.convolution();
    if (absl::Status s = CheckDimension(dims.kernel_input_feature, kernel,
                                        "kernel_input_feature");
        !s.ok()) {
      return s;
    }
    per_output = static_cast<double>(kernel.dims[dims.kernel_input_feature]);
    for (int64_t dim : dims.kernel_spatial) {
      if (absl::Status s = CheckDimension(dim, kernel, "kernel_spatial");
          !s.ok()) {
        return s;
      }
      per_output *= static_cast<double>(kernel.dims[dim]);
    }
  } else {
    // Without dimension numbers assume an ONNX-style OIHW kernel: every
    // dimension but the output features is reduced over.
    if (kernel.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "convolution kernel ", kernel.ToString(), " has rank < 2"));
    }
    for (int i = 1; i < kernel.rank(); ++i) {
      per_output *= static_cast<double>(kernel.dims[i]);
    }
  }
  cost.flops =
      2.0 * static_cast<double>(SumElements(query.outputs)) * per_output;
  return cost;
}

double WindowElements(const OpAttributes& attrs) {
  double size = 1;
  for (const WindowDimension& dim : attrs.window()) {
    size *= static_cast<double>(dim.size);
  }
  return size;
}

absl::StatusOr<OpCost> RnnCost(const OpCostQuery& query, OpCost cost) {
  if (absl::Status s = RequireOperands(query, 3); !s.ok()) return s;
  const TensorType& x = *query.operands[0];
  const TensorType& w = *query.operands[1];
  const TensorType& r = *query.operands[2];
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("rnn expects rank-3 X, W, R; got ", x.ToString(), ", ",
                     w.ToString(), ", ", r.ToString()));
  }
  const double seq = static_cast<double>(x.dims[0]);
  const double batch = static_cast<double>(x.dims[1]);
  const double input = static_cast<double>(x.dims[2]);
  const double directions = static_cast<double>(w.dims[0]);
  const double gates_hidden = static_cast<double>(w.dims[1]);
  const double hidden = static_cast<double>(r.dims[2]);
  const double per_step = 2.0 * batch * gates_hidden * (input + hidden) +
                          8.0 * batch * gates_hidden;
  cost.flops = directions * seq * per_step;
  return cost;
}

// Fft: 5 n log2(n) per output row of length n.
absl::StatusOr<OpCost> FftCost(const OpCostQuery& query, double output_elements,
                               OpCost cost) {
  const TensorType* out = query.outputs.empty() ? nullptr : query.outputs[0];
  const double n = out != nullptr && out->rank() > 0
                       ? static_cast<double>(out->dims.back())
                       : 1;
  cost.flops = n > 1 ? 5.0 * output_elements * std::log2(n) : 0;
  return cost;
}

// TriangularSolve: b has batch * n * m elements; each needs ~n multiply-adds.
absl::StatusOr<OpCost> TriangularSolveCost(const OpCostQuery& query,
                                           OpCost cost) {
  if (absl::Status s = RequireOperands(query, 2); !s.ok()) return s;
  const TensorType& a = *query.operands[0];
  const double n = a.rank() > 0 ? static_cast<double>(a.dims.back()) : 1;
  // b has batch * n * m elements; each needs ~n multiply-adds.
  cost.flops = static_cast<double>(query.operands[1]->num_elements()) * n;
  return cost;
}

// Cholesky: n^3 / 3 per matrix.
absl::StatusOr<OpCost> CholeskyCost(const OpCostQuery& query, OpCost cost) {
  if (absl::Status s = RequireOperands(query, 1); !s.ok()) return s;
  const TensorType& a = *query.operands[0];
  const double n = a.rank() > 0 ? static_cast<double>(a.dims.back()) : 1;
  cost.flops = static_cast<double>(a.num_elements()) * n / 3.0;
  return cost;
}

// Reduce: one op per input element.
absl::StatusOr<OpCost> ReduceCost(const OpCostQuery& query, OpCost cost) {
  // XLA reduce takes N inputs then N init values; count the inputs.
  const size_t inputs = std::max<size_t>(1, query.operands.size() / 2);
  double elements = 0;
  for (size_t i = 0; i < std::min(inputs, query.operands.size()); ++i) {
    elements += static_cast<double>(query.operands[i]->num_elements());
  }
  cost.flops = elements;
  return cost;
}

// SelectAndScatter: two ops per source element and window element.
absl::StatusOr<OpCost> SelectAndScatterCost(const OpCostQuery& query,
                                            const OpAttributes& attrs,
                                            OpCost cost) {
  if (absl::Status s = RequireOperands(query, 2); !s.ok()) return s;
  cost.flops = 2.0 * static_cast<double>(query.operands[1]->num_elements()) *
               WindowElements(attrs);
  return cost;
}

// DynamicUpdateSlice: reads and writes the update only.
absl::StatusOr<OpCost> DynamicUpdateSliceCost(const OpCostQuery& query,
                                              OpCost cost) {
  if (absl::Status s = RequireOperands(query, 2); !s.ok()) return s;
  const int64_t update = query.operands[1]->size_bytes();
  cost.bytes_read = update + SumBytes(query.operands, 2);
  cost.bytes_written = update;
  return cost;
}

// Scatter: reads indices and updates, one op per update element.
absl::StatusOr<OpCost> ScatterCost(const OpCostQuery& query, OpCost cost) {
  if (absl::Status s = RequireOperands(query, 3); !s.ok()) return s;
  // operand(s), indices, update(s): XLA puts indices after the operands.
  const size_t operands = (query.operands.size() - 1) / 2;
  const int64_t updates = SumBytes(query.operands, operands + 1);
  cost.bytes_read = updates + query.operands[operands]->size_bytes();
  cost.bytes_written = updates;
  double update_elements = 0;
  for (size_t i = operands + 1; i < query.operands.size(); ++i) {
    update_elements += static_cast<double>(query.operands[i]->num_elements());
  }
  cost.flops = update_elements;
  return cost;
}

// Sort: n log2(n) per sorted element along the sort dimension.
absl::StatusOr<OpCost> SortCost(const OpCostQuery& query,
                                const OpAttributes& attrs, OpCost cost) {
  if (absl::Status s = RequireOperands(query, 1); !s.ok()) return s;
  const TensorType& keys = *query.operands[0];
  int64_t n = 1;
  if (!attrs.dimensions.empty()) {
    if (absl::Status s = CheckDimension(attrs.dimensions[0], keys, "sort");
        !s.ok()) {
      return s;
    }
    n = keys.dims[attrs.dimensions[0]];
  } else if (keys.rank() > 0) {
    n = keys.dims.back();
  }
  const double log_n = n > 1 ? std::ceil(std::log2(static_cast<double>(n))) : 0;
  cost.flops = static_cast<double>(SumElements(query.operands)) * log_n;
  return cost;
}

// Bytes each device sends in a ring collective over `group_size` devices
// of a `bytes` buffer (the full one: all-reduce's operand, all-gather's
// output, reduce-scatter's operand): 2(n-1)/n of it for all-reduce, (n-1)/n
// for all-gather, reduce-scatter and all-to-all, all of it for a permute.
// Without a group size the buffer itself (the older, group-blind rule).
int64_t RingBytes(OpKind kind, int64_t bytes, int64_t group_size) {
  if (group_size < 1) return bytes;
  const double n = static_cast<double>(group_size);
  const double b = static_cast<double>(bytes);
  switch (kind) {
    case OpKind::kAllReduce:
      return static_cast<int64_t>(2.0 * (n - 1) / n * b);
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
      return static_cast<int64_t>((n - 1) / n * b);
    default:
      return group_size > 1 ? bytes : 0;
  }
}

}  // namespace

absl::StatusOr<OpCost> ComputeOpCost(const OpCostQuery& query) {
  const OpAttributes& attrs =
      query.attributes != nullptr ? *query.attributes : DefaultAttributes();
  OpCost cost;
  const int64_t operand_bytes = SumBytes(query.operands);
  const int64_t output_bytes = SumBytes(query.outputs);
  const double output_elements =
      static_cast<double>(SumElements(query.outputs));
  cost.bytes_read = operand_bytes;
  cost.bytes_written = output_bytes;

  // The free kinds (op_kind.h's one list) launch no kernel; the elementwise
  // category costs 1 FLOP per output element.
  if (IsFreeOpKind(query.kind)) return OpCost{};
  if (OpKindCategory(query.kind) == OpCategory::kElementwise) {
    cost.flops = output_elements;
    return cost;
  }
  switch (query.kind) {
    case OpKind::kIota:
      cost.bytes_read = 0;
      return cost;
    case OpKind::kRandom:
      cost.flops = output_elements;
      return cost;
    case OpKind::kDot:
      return DotCost(query, attrs, cost);
    case OpKind::kConvolution:
      return ConvolutionCost(query, attrs, cost);
    case OpKind::kRnn:
      return RnnCost(query, cost);
    case OpKind::kNormalization:
    case OpKind::kSoftmax:
      cost.flops = 5.0 * output_elements;
      return cost;
    case OpKind::kFft:
      return FftCost(query, output_elements, cost);
    case OpKind::kTriangularSolve:
      return TriangularSolveCost(query, cost);
    case OpKind::kCholesky:
      return CholeskyCost(query, cost);
    case OpKind::kReduce:
      return ReduceCost(query, cost);
    case OpKind::kReduceWindow:
      cost.flops = output_elements * WindowElements(attrs);
      return cost;
    case OpKind::kSelectAndScatter:
      return SelectAndScatterCost(query, attrs, cost);
    case OpKind::kBroadcast:
    case OpKind::kTranspose:
    case OpKind::kCopy:
    case OpKind::kPad:
    case OpKind::kConcatenate:
    case OpKind::kReverse:
      return cost;
    case OpKind::kResize:
      cost.flops = output_elements;
      return cost;
    case OpKind::kSlice:
      cost.bytes_read = output_bytes;
      return cost;
    case OpKind::kDynamicSlice:
    case OpKind::kGather:
      cost.bytes_read = output_bytes + SumBytes(query.operands, 1);
      return cost;
    case OpKind::kDynamicUpdateSlice:
      return DynamicUpdateSliceCost(query, cost);
    case OpKind::kScatter:
      return ScatterCost(query, cost);
    case OpKind::kSort:
      return SortCost(query, attrs, cost);
    case OpKind::kAllReduce:
    case OpKind::kReduceScatter:
      cost.bytes_communicated =
          RingBytes(query.kind, operand_bytes, attrs.collective_group_size);
      cost.flops = static_cast<double>(SumElements(query.operands));
      return cost;
    case OpKind::kAllGather:
      cost.bytes_communicated =
          RingBytes(query.kind, output_bytes, attrs.collective_group_size);
      return cost;
    case OpKind::kAllToAll:
    case OpKind::kCollectivePermute:
    case OpKind::kSendRecv:
      cost.bytes_communicated =
          RingBytes(query.kind, operand_bytes, attrs.collective_group_size);
      return cost;
    case OpKind::kWhile:
    case OpKind::kConditional:
    case OpKind::kCall:
    case OpKind::kFusion:
      return cost;
    case OpKind::kCustomCall:
    case OpKind::kInfeedOutfeed:
    case OpKind::kOther:
      cost.unknown = true;
      return cost;
    default:  // the free and elementwise kinds, costed above
      return cost;
  }
}

OpCost SubgraphCost(absl::Span<const Graph* const> bodies, int64_t iterations) {
  OpCost cost;
  for (const Graph* body : bodies) {
    for (const Node& node : body->nodes()) {
      cost.flops += node.flops;
      cost.bytes_read += node.bytes_read;
      cost.bytes_written += node.bytes_written;
      cost.bytes_communicated += node.bytes_communicated;
      cost.unknown = cost.unknown || node.cost_unknown;
    }
  }
  const double n = static_cast<double>(std::max<int64_t>(iterations, 1));
  // Trip counts come from untrusted files: scale in double and saturate, so
  // an absurd count yields a huge cost instead of signed overflow.
  auto scale = [n](int64_t bytes) {
    const double scaled = static_cast<double>(bytes) * n;
    return scaled >= 9.0e18 ? int64_t{9'000'000'000'000'000'000}
                            : static_cast<int64_t>(scaled);
  };
  cost.flops *= n;
  cost.bytes_read = scale(cost.bytes_read);
  cost.bytes_written = scale(cost.bytes_written);
  cost.bytes_communicated = scale(cost.bytes_communicated);
  return cost;
}

OpCost MaxBranchCost(absl::Span<const Graph* const> branches) {
  OpCost best;
  for (const Graph* branch : branches) {
    const Graph* one[] = {branch};
    OpCost cost = SubgraphCost(one, 1);
    if (cost.flops + static_cast<double>(cost.bytes_read + cost.bytes_written) >
        best.flops +
            static_cast<double>(best.bytes_read + best.bytes_written)) {
      best = cost;
    }
  }
  return best;
}

void SetNodeCost(const OpCost& cost, Node* node) {
  node->flops = cost.flops;
  node->bytes_read = cost.bytes_read;
  node->bytes_written = cost.bytes_written;
  node->bytes_communicated = cost.bytes_communicated;
  node->cost_unknown = cost.unknown;
}

}  // namespace gopt::graph
