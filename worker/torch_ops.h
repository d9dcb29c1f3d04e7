#ifndef GOPT_WORKER_TORCH_OPS_H_
#define GOPT_WORKER_TORCH_OPS_H_

// LibTorch kernels for the graph IR's op kinds: internal to the worker
// (includes ATen; only worker/*.cc include it).

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace gopt::worker::internal {

// The LibTorch element type that stores `dtype`: the same type where
// LibTorch has it, else an integer type of the same width (u32 -> int32, f8
// -> uint8); string as int64 (a pointer each); token/opaque as uint8.
at::ScalarType TorchScalarType(graph::DType dtype);

// The shape LibTorch holds a value of `type` in: its dims, or {bytes} for a
// nested tuple, or {0} for token/opaque.
std::vector<int64_t> TorchShape(const graph::TensorType& type);

// A seeded random tensor of `type` on `device`: floats uniform in [-1, 1),
// integers in [0, 64), booleans half true. Throws c10::Error.
at::Tensor RandomTensor(const graph::TensorType& type, uint64_t seed,
                        const at::Device& device);

// Whether `kind` is computed by a real op; kinds outside this set (while,
// conditional, call, custom-call, infeed, rnn, fft, select-and-scatter,
// other) always run as copies of their bytes.
bool HasRealOp(graph::OpKind kind);

// Runs `node`'s op of `graph` on `inputs` (its data operands in dst_input
// order, a tuple operand expanded into its elements) and returns one tensor
// per node output, reshaped and converted to the node's output types.
// Parameters and constants are not run here (they are resident inputs).
// Throws c10::Error (or std::exception) when the op cannot run on these
// inputs or its result does not have the node's output sizes; the caller
// then runs the node as a copy.
std::vector<at::Tensor> RunRealOp(const graph::Graph& graph,
                                  const graph::Node& node,
                                  const std::vector<at::Tensor>& inputs);

// Conforms `results` to `node`'s output types (same element counts:
// reshape, convert). Throws c10::Error on a count or size mismatch.
std::vector<at::Tensor> ConformOutputs(const graph::Node& node,
                                       std::vector<at::Tensor> results);

// The data-movement kinds (broadcast, transpose, slice, dynamic slice and
// update, pad, concatenate, reverse, gather, scatter, resize, sort, copy):
// one or more results for RunRealOp to conform. Throws c10::Error.
std::vector<at::Tensor> DataMovementOp(const graph::Node& node,
                                       const std::vector<at::Tensor>& inputs);

// Normalisations, softmax, linear algebra, generated values (iota,
// random), metadata (reshape, tuple, get-tuple-element, identity,
// shape-of) and collectives (a copy on one device): results for RunRealOp
// to conform. Throws c10::Error.
std::vector<at::Tensor> OtherOp(const graph::Node& node,
                                const std::vector<at::Tensor>& inputs);

}  // namespace gopt::worker::internal

#endif  // GOPT_WORKER_TORCH_OPS_H_
