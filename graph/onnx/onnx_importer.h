#ifndef GOPT_GRAPH_ONNX_ONNX_IMPORTER_H_
#define GOPT_GRAPH_ONNX_ONNX_IMPORTER_H_

#include <memory>

#include "graph/importer.h"

namespace gopt::graph {

// Returns the importer for serialized ONNX ModelProto files (format "onnx").
//
// What it produces:
//  - Graph inputs become kParameter nodes and initializers kConstant nodes
//    (an input that is also an initializer, as IR version < 4 files list
//    them, is one constant node). Every ONNX node becomes one gopt node named
//    after NodeProto.name, or "<op_type>_<index>" when it has none (a suffix
//    keeps names unique). Edges follow tensor names.
//  - Each node gets a canonical kind and XLA-style attributes (Conv is a
//    convolution with NCHW/OIHW dimension numbers, Gemm/MatMul a dot, pools
//    reduce-windows, LSTM/GRU/RNN rnn with operands X, W, R, ...), concrete
//    output types from shape inference, and costs from ComputeOpCost.
//  - Shape-computing subgraphs (Shape, Gather, Concat, Slice, Cast,
//    arithmetic, ConstantOfShape, Range, ...) are folded at import, so
//    Reshape targets, Slice bounds and Pad amounts computed at run time by
//    exporters resolve to concrete shapes.
//  - If, Loop and Scan are single nodes whose bodies are attached subgraphs
//    (names of the enclosing graphs resolve inside them, through
//    "OuterScope" parameter nodes and extra edges into the control node).
//    If costs its worst branch (the taken one when the condition folds);
//    Loop its body times a constant trip count M (unknown: once, with a
//    warning); Scan its body times the sequence length.
//  - Symbolic dimensions take ImportOptions::symbolic_dims[name] or
//    default_symbolic_dim, with one warning per symbol; unknown dimensions
//    likewise, one warning per tensor.
//  - An op without a rule (or whose output shape depends on run-time data)
//    imports as a kOther node costed by bytes only, with a warning, when
//    value_info or the graph outputs declare the shape of all of its
//    outputs. Otherwise, when the run-time input is an integer shape-giving
//    tensor (Reshape target, Pad amounts, Slice bounds, Range limit,
//    ConstantOfShape shape, ...), it is bounded (onnx_runtime_bounds.h: the
//    whole axis for slices, the request's default_symbolic_dim for sizes)
//    and the node keeps its kind and cost, with a warning naming it and what
//    was assumed. Only when neither applies does the import fail naming the
//    node.
//
// Errors are InvalidArgument naming the node and field (e.g. "node 'Conv_12'
// (Conv) input 1 names tensor 'W9', which no node, initializer or graph
// input produces"); ResourceExhausted when the node count (subgraphs
// included) exceeds ImportOptions::limits. Declared types (value_info, graph
// outputs, graph inputs backed by initializers) that contradict inference
// are errors. Opsets 9-18 of the default domain are supported; 7-8 and
// newer ones import with a warning.
//
// The importer is stateless and safe to use from many threads at once.
std::unique_ptr<Importer> NewOnnxImporter();

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_ONNX_ONNX_IMPORTER_H_
