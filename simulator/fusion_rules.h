#ifndef GOPT_SIMULATOR_FUSION_RULES_H_
#define GOPT_SIMULATOR_FUSION_RULES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "graph/graph.h"
#include "graph/op_kind.h"

namespace gopt::simulator {

// What an op kind may do in an XLA-style fusion. The kernel rules every
// plan obeys (ValidatePlan rejects a fusion group that breaks them, and the
// lower bound charges what they force), each what XLA, cuDNN / oneDNN,
// TensorFlow's Grappler or ONNX Runtime put into one kernel:
//  - kHeavy: dot, convolution; a kernel holds at most one (a library GEMM /
//    convolution call with the cheap ops around it fused in);
//  - kCheap: elementwise (convert included), reduce, reduce-window,
//    broadcast, transpose, copy, slice, dynamic-slice, pad, concatenate,
//    reverse, the views reshape and bitcast, normalizations and softmax;
//    these join a kernel;
//  - a normalization that applies given statistics (inference batch norm:
//    a scale and a shift per channel) joins any kernel, the one of the
//    convolution or dot that produces its input included: XLA's
//    BatchNormExpander rewrites it into elementwise ops before fusion;
//    Grappler's remapper makes Conv2D + FusedBatchNorm (is_training=false)
//    + activation one _FusedConv2D; ONNX Runtime's ConvBNFusion folds it
//    into the Conv, whose activation ConvActivationFusion then takes;
//  - a normalization that computes statistics of its input (training batch
//    norm, layer / instance / group norm, LRN, normalization gradients) and
//    softmax are a reduction plus elementwise work: they join kernels of
//    cheap ops (XLA expands batch norm into reduces and elementwise ops,
//    and its GPU backend fuses a softmax or normalization's reduction with
//    its elementwise producers and consumers into one kernel; oneDNN's
//    batch normalization takes the ReLU after it, TensorFlow's
//    _FusedBatchNormEx the side input and activation), but never the
//    kernel of a dot or convolution (see ComputesStatistics);
//  - kAlone: everything else (parameters, constants, gathers, scatters,
//    sorts, collectives, control flow, custom calls, pre-fused kernels,
//    tuples, ...) never shares a kernel.
// The `greedy` fuser, and with it the GO policy and the plan search, build
// groups within these rules.
enum class FusionRole { kAlone, kCheap, kHeavy };

// The role of `kind`. Thread-safe.
FusionRole FusionRoleOf(graph::OpKind kind);

// Whether node `id` normalizes its input with statistics it computes from
// it (a reduction the kernel must finish before it can write an output):
// every softmax, and every normalization except a batch norm in inference
// mode. A batch norm is in inference mode when it is HLO's
// batch-norm-inference, or an ONNX BatchNormalization / TF FusedBatchNorm
// (V2, V3) that is given the running mean and variance (five inputs) and
// whose own statistics outputs nobody reads (in training they feed the
// moving averages and the gradient). No library computes such statistics
// inside a GEMM or convolution kernel, so a kernel holding one holds no dot
// or convolution. Thread-safe; O(out-edges of the node).
bool ComputesStatistics(const graph::Graph& graph, graph::NodeId id);

// Checks the fusion groups of a plan (`fusion_group`, one entry per node of
// `graph`, equal ids >= 0 form one kernel; empty = no fusion) against the
// kernel rules. InvalidArgument naming the group, the two offending nodes
// (id, name, op kind) and the rule when a group holds two dots or
// convolutions, a dot or convolution with a node that computes statistics
// (ComputesStatistics), or a node that never shares a kernel together with
// another node. The caller checks the length. Thread-safe; O(fused nodes).
absl::Status CheckFusionRules(const graph::Graph& graph,
                              const std::vector<int32_t>& fusion_group);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_FUSION_RULES_H_
