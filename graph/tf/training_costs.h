#ifndef GOPT_GRAPH_TF_TRAINING_COSTS_H_
#define GOPT_GRAPH_TF_TRAINING_COSTS_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/op_catalog.h"
#include "graph/op_kind.h"
#include "graph/tensor_type.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// Kinds and costs of the ops TensorFlow training graphs add beside the
// forward ops: gradient kernels, loss kernels, optimizer updates, variables,
// input pipelines and summaries. The catalog's rules by kind cannot cost
// them (a Conv2DBackpropInput's operands are not a convolution's), so each
// has a FLOPs rule counted by hand from the kernel's arithmetic (the
// comments in training_costs.cc give the count per element).

// The optimizers X whose updates are the ops ApplyX, ResourceApplyX,
// SparseApplyX and ResourceSparseApplyX ("GradientDescent", "Adam", ...).
absl::Span<const absl::string_view> OptimizerNames();

// Ops that create input-pipeline handles: iterators, datasets, queues
// (IteratorV2, TensorSliceDataset, FIFOQueueV2, ...).
absl::Span<const absl::string_view> HandleOps();

// Random generators whose first input is the output's shape (RandomUniform,
// TruncatedNormal, StatelessRandomNormalV2, ...).
absl::Span<const absl::string_view> RandomOps();

// Summary ops (ScalarSummary, HistogramSummary, MergeSummary, ...).
absl::Span<const absl::string_view> SummaryOps();

// The canonical kind of a training op ("Conv2DBackpropInput" ->
// kConvolution, "ApplyAdam" -> kElementwiseBinary, "VariableV2" ->
// kConstant); nullopt for ops that are not training ops.
std::optional<OpKind> TrainingOpKind(absl::string_view op);

// The cost of one execution of a training op from its data input types and
// output types (what is read and written, FLOPs by the hand counts); nullopt
// when the op has no rule of its own here (TrainingOpKind is nullopt, or the
// op is costed by the catalog's rule for its kind). Pure and thread-safe.
std::optional<OpCost> TrainingOpCost(
    const tensorflow::NodeDef& node,
    absl::Span<const TensorType* const> input_types,
    absl::Span<const TensorType> output_types);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_TRAINING_COSTS_H_
