#ifndef GOPT_GRAPH_OP_CATALOG_H_
#define GOPT_GRAPH_OP_CATALOG_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_attributes.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"

namespace gopt::graph {

// The cost of one execution of one op.
struct OpCost {
  double flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t bytes_communicated = 0;
  bool unknown = false;  // only bytes are known (custom calls, I/O)
};

// What the catalog needs to cost an op. Operand and output types are
// borrowed, not owned.
struct OpCostQuery {
  OpKind kind = OpKind::kOther;
  const OpAttributes* attributes = nullptr;  // nullptr = all defaults
  std::vector<const TensorType*> operands;
  std::vector<const TensorType*> outputs;
};

// Costs an op from its kind, attributes and shapes. The rules (FLOPs count a
// multiply-add as 2; bytes are what the op reads and writes in memory, as
// XLA's HloCostAnalysis counts them):
//  - elementwise, compare, select, clamp, convert: 1 FLOP per output element;
//    reads every operand once (broadcast operands at their own size).
//  - dot: 2 * output elements * product of lhs contracting dims.
//  - convolution: 2 * output elements * product of kernel spatial dims *
//    kernel input features (so feature groups, batch groups, strides and
//    transposed convolutions expressed by base dilation are all covered;
//    positions in padding are counted, as a dense kernel computes them).
//  - rnn (ONNX LSTM/GRU/RNN: X, W, R operands): per step and direction,
//    2 * batch * gates*hidden * (input + hidden) + 8 * batch * gates*hidden.
//  - normalization and softmax: 5 FLOPs per element.
//  - reduce: 1 FLOP per input element; reduce-window: output elements *
//    window size; select-and-scatter: 2 * source elements * window size.
//  - fft: 5 * N * log2(N) per transform of length N (last dims).
//  - triangular-solve: batch * n^2 * m; cholesky: batch * n^3 / 3.
//  - sort: elements * ceil(log2(n)) comparisons per operand.
//  - data movement (broadcast, transpose, copy, pad, concatenate, reverse,
//    resize): 0 FLOPs, reads its operands and writes its output;
//    slice/dynamic-slice/gather read only what they output (plus indices);
//    dynamic-update-slice/scatter read and write only the update.
//  - metadata ops (reshape, bitcast, tuple, get-tuple-element, identity,
//    shape-of) and loop control: free.
//  - collectives: bytes_communicated = the buffer each device sends
//    (all-reduce, reduce-scatter, all-to-all, permute: operand bytes;
//    all-gather: output bytes); reductions add 1 FLOP per element. With a
//    group size n (OpAttributes::collective_group_size) the ring algorithm's
//    bytes per device: all-reduce 2(n-1)/n of that buffer, all-gather,
//    reduce-scatter and all-to-all (n-1)/n, permute all of it (n > 1).
//  - custom-call, infeed/outfeed, other: bytes only, unknown = true.
//  - while, conditional, call, fusion: costed from their bodies with
//    SubgraphCost; here they cost only their operand and output bytes.
// Returns InvalidArgument when attributes contradict the shapes (e.g. a
// contracting dimension beyond the operand's rank, a missing kernel).
absl::StatusOr<OpCost> ComputeOpCost(const OpCostQuery& query);

// The cost of running `bodies` (each once) `iterations` times: the sum of
// their total FLOPs and bytes, times iterations. Used for while loops (body
// and condition), calls, and If/Loop/Scan bodies.
OpCost SubgraphCost(absl::Span<const Graph* const> bodies, int64_t iterations);

// The most expensive of `branches` (conditional / If: the worst case).
OpCost MaxBranchCost(absl::Span<const Graph* const> branches);

// Copies `cost` into the cost fields of `node`.
void SetNodeCost(const OpCost& cost, Node* node);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_OP_CATALOG_H_
