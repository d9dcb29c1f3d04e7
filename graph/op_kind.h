#ifndef GOPT_GRAPH_OP_KIND_H_
#define GOPT_GRAPH_OP_KIND_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace gopt::graph {

// Canonical op kinds shared by every importer. Each importer maps its own op
// names (HLO opcodes, ONNX op_types, TF ops) onto one of these; the original
// spelling stays in Node::op. The kind decides how the op catalog costs a
// node and is the op one-hot the policy sees, so kinds group ops that cost
// alike, not ops that compute alike.
//
// X(enumerator, "name", category)
#define GOPT_OP_KINDS(X)                                        \
  X(kParameter, "parameter", kInput)                            \
  X(kConstant, "constant", kInput)                              \
  X(kIota, "iota", kInput)                                      \
  X(kRandom, "random", kInput)                                  \
  X(kElementwiseUnary, "elementwise-unary", kElementwise)       \
  X(kTranscendental, "transcendental", kElementwise)            \
  X(kElementwiseBinary, "elementwise-binary", kElementwise)     \
  X(kCompare, "compare", kElementwise)                          \
  X(kSelect, "select", kElementwise)                            \
  X(kClamp, "clamp", kElementwise)                              \
  X(kConvert, "convert", kElementwise)                          \
  X(kDot, "dot", kCompute)                                      \
  X(kConvolution, "convolution", kCompute)                      \
  X(kFft, "fft", kCompute)                                      \
  X(kTriangularSolve, "triangular-solve", kCompute)             \
  X(kCholesky, "cholesky", kCompute)                            \
  X(kRnn, "rnn", kCompute)                                      \
  X(kNormalization, "normalization", kCompute)                  \
  X(kSoftmax, "softmax", kCompute)                              \
  X(kReduce, "reduce", kReduction)                              \
  X(kReduceWindow, "reduce-window", kReduction)                 \
  X(kSelectAndScatter, "select-and-scatter", kReduction)        \
  X(kBroadcast, "broadcast", kDataMovement)                     \
  X(kTranspose, "transpose", kDataMovement)                     \
  X(kCopy, "copy", kDataMovement)                               \
  X(kReshape, "reshape", kMetadata)                             \
  X(kBitcast, "bitcast", kMetadata)                             \
  X(kSlice, "slice", kDataMovement)                             \
  X(kDynamicSlice, "dynamic-slice", kDataMovement)              \
  X(kDynamicUpdateSlice, "dynamic-update-slice", kDataMovement) \
  X(kPad, "pad", kDataMovement)                                 \
  X(kConcatenate, "concatenate", kDataMovement)                 \
  X(kReverse, "reverse", kDataMovement)                         \
  X(kGather, "gather", kDataMovement)                           \
  X(kScatter, "scatter", kDataMovement)                         \
  X(kResize, "resize", kDataMovement)                           \
  X(kSort, "sort", kDataMovement)                               \
  X(kTuple, "tuple", kMetadata)                                 \
  X(kGetTupleElement, "get-tuple-element", kMetadata)           \
  X(kIdentity, "identity", kMetadata)                           \
  X(kShapeOf, "shape-of", kMetadata)                            \
  X(kAllReduce, "all-reduce", kCollective)                      \
  X(kAllGather, "all-gather", kCollective)                      \
  X(kReduceScatter, "reduce-scatter", kCollective)              \
  X(kAllToAll, "all-to-all", kCollective)                       \
  X(kCollectivePermute, "collective-permute", kCollective)      \
  X(kSendRecv, "send-recv", kCollective)                        \
  X(kWhile, "while", kControl)                                  \
  X(kConditional, "conditional", kControl)                      \
  X(kCall, "call", kControl)                                    \
  X(kFusion, "fusion", kControl)                                \
  X(kLoopControl, "loop-control", kControl)                     \
  X(kCustomCall, "custom-call", kOpaqueOp)                      \
  X(kInfeedOutfeed, "infeed-outfeed", kOpaqueOp)                \
  X(kOther, "other", kOpaqueOp)

enum class OpKind : uint8_t {
#define GOPT_OP_KIND_ENUM_(e, name, category) e,
  GOPT_OP_KINDS(GOPT_OP_KIND_ENUM_)
#undef GOPT_OP_KIND_ENUM_
};

// Number of OpKind values; OpKind values are 0..kNumOpKinds-1 (for one-hots).
inline constexpr int kNumOpKinds = 0
#define GOPT_OP_KIND_COUNT_(e, name, category) +1
    GOPT_OP_KINDS(GOPT_OP_KIND_COUNT_)
#undef GOPT_OP_KIND_COUNT_
    ;

// Coarse families, used by the catalog's default cost rules and by fusion.
enum class OpCategory : uint8_t {
  kInput,         // parameters, constants, generated values
  kElementwise,   // one output element from the same-index input elements
  kCompute,       // FLOP-heavy kernels (dot, convolution, recurrent cells)
  kReduction,     // many inputs to one output element
  kDataMovement,  // copies elements without arithmetic
  kMetadata,      // changes only how a buffer is viewed (free)
  kCollective,    // moves data between devices
  kControl,       // loops, conditionals, calls, pre-fused kernels
  kOpaqueOp,      // cost unknown to gopt (custom calls, I/O)
};

// "dot" for kDot; stable across releases (used in JSON and checkpoints).
absl::string_view OpKindName(OpKind kind);

// Inverse of OpKindName; nullopt for an unknown name.
std::optional<OpKind> OpKindFromName(absl::string_view name);

OpCategory OpKindCategory(OpKind kind);

// True for ops that launch no kernel: they only name or alias buffers that
// exist already (parameters, constants, reshapes, bitcasts, tuples,
// get-tuple-element, identity, shape-of, loop control). The simulator runs
// them in zero time and the baselines never place work by them.
bool IsFreeOpKind(OpKind kind);

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_OP_KIND_H_
