#ifndef GOPT_GRAPH_ONNX_ONNX_RUNTIME_BOUNDS_H_
#define GOPT_GRAPH_ONNX_ONNX_RUNTIME_BOUNDS_H_

// Internal to the ONNX importer: bounded stand-ins for the shape-giving
// inputs (Reshape targets, pad amounts, slice bounds, Range limits,
// ConstantOfShape shapes, ...) that are truly computed at run time from
// data, so that the node still gets an output shape instead of refusing
// the model.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "graph/onnx/onnx_tensor.h"
#include "onnx/onnx.pb.h"

namespace gopt::graph::onnx_internal {

// Inputs to run a node's shape rule on again, with run-time integer inputs
// replaced by stand-ins. `inputs` points into `storage` or at the caller's
// values; `assumed` says, per replaced input, what was assumed.
struct BoundedInputs {
  std::deque<Value> storage;
  std::vector<const Value*> inputs;
  std::vector<std::string> assumed;
};

// Replaces each integer input of `node` that has no folded value (and at
// most kMaxFoldElements elements) by a stand-in constant bounded by `dim`
// (the request's value for unknown dimensions):
//  - Slice starts 0, ends the end of the axis, axes 0..n-1, steps 1 (the
//    whole input: the largest the graph allows);
//  - Reshape target [1, ..., 1, -1] (the element count is kept);
//  - Expand shape and Tile repeats 1 (the input's own extent);
//  - Range: a start of 0, a delta of 1, a limit of start + dim * delta;
//  - every other size, pad amount or count: `dim`.
// Input 0 is replaced only for ConstantOfShape and Range (elsewhere it is
// the data). Returns nullopt when nothing was replaced. Pure.
std::optional<BoundedInputs> BoundRuntimeInputs(
    const gopt::onnx::NodeProto& node, const std::vector<const Value*>& inputs,
    int64_t dim);

}  // namespace gopt::graph::onnx_internal

#endif  // GOPT_GRAPH_ONNX_ONNX_RUNTIME_BOUNDS_H_
