#include "graph/tf/training_costs.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "graph/tf/attr_util.h"

namespace gopt::graph::tf {
namespace {

using ::gopt::tensorflow::NodeDef;

// An optimizer's update, per element of the variable: the FLOPs of the
// kernel's formula and the tensors of that size it reads and writes besides
// the gradient (the variable and its slots).
struct Optimizer {
  absl::string_view name;
  int flops_per_element;
  int state_tensors;
};

// Hand counts from each kernel's update formula (one FLOP per add, multiply,
// divide, square root, compare or select; scalar terms such as Adam's
// bias-corrected learning rate are computed once and not counted):
constexpr Optimizer kOptimizers[] = {
    // var -= lr * g
    {"GradientDescent", 2, 1},
    // accum = accum * momentum + g; var -= lr * accum
    {"Momentum", 4, 2},
    // accum = accum * momentum - lr * g; var += accum
    {"KerasMomentum", 4, 2},
    // m += (g - m) * (1 - b1): 3; v += (g * g - v) * (1 - b2): 4;
    // var -= lr_t * m / (sqrt(v) + eps): 5
    {"Adam", 12, 3},
    // Adam plus vhat = max(vhat, v): 1
    {"AdamWithAmsgrad", 13, 4},
    // m += (g - m) * (1 - b1): 3; v = max(b2 * v, |g|): 3;
    // var -= lr_t * m / (v + eps): 4
    {"AdaMax", 10, 3},
    // ms += (g * g - ms) * (1 - rho): 4;
    // mom = mom * momentum + lr * g / sqrt(ms + eps): 6; var -= mom: 1
    {"RMSProp", 11, 3},
    // RMSProp plus mg += (g - mg) * (1 - rho): 3, and the denominator
    // ms - mg * mg + eps: 2 more
    {"CenteredRMSProp", 16, 4},
    // accum += g * g: 2; var -= lr * g / sqrt(accum): 4
    {"Adagrad", 6, 2},
    // Adagrad with + eps in the denominator: 1
    {"AdagradV2", 7, 2},
    // accum = rho * accum + (1 - rho) * g * g: 4;
    // update = sqrt(accum_update + eps) / sqrt(accum + eps) * g: 6;
    // accum_update = rho * accum_update + (1 - rho) * update^2: 4;
    // var -= lr * update: 2
    {"Adadelta", 16, 3},
    // new_accum = accum + g * g: 2;
    // linear += g - (new_accum^-p - accum^-p) / lr * var: 7;
    // quadratic = new_accum^-p / lr + 2 * l2: 3;
    // var = |linear| > l1 ? (sign(linear) * l1 - linear) / quadratic : 0: 7
    {"Ftrl", 19, 3},
    // Ftrl on the shrunk gradient g + 2 * l2_shrinkage * var: 2
    {"FtrlV2", 21, 3},
    // prox = var - lr * g: 2;
    // var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2): 6
    {"ProximalGradientDescent", 8, 1},
    // accum += g * g: 2; lr_t = lr / sqrt(accum): 2; then as above: 8
    {"ProximalAdagrad", 12, 2},
    // m = b * m + (1 - b) * g: 3;
    // var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g: 7
    {"AddSign", 10, 2},
    // as AddSign with exp(logbase * sign_decay * sign(g) * sign(m)): 8
    {"PowerSign", 11, 2},
};

// The optimizer of ApplyX, ResourceApplyX, SparseApplyX and
// ResourceSparseApplyX (they share the formula); `*sparse` tells the sparse
// forms, which update only the rows their gradient holds.
const Optimizer* FindOptimizer(absl::string_view op, bool* sparse) {
  absl::ConsumePrefix(&op, "Resource");
  *sparse = absl::ConsumePrefix(&op, "Sparse");
  if (!absl::ConsumePrefix(&op, "Apply")) return nullptr;
  for (const Optimizer& optimizer : kOptimizers) {
    if (optimizer.name == op) return &optimizer;
  }
  return nullptr;
}

// FLOPs per element of the gradient kernels of elementwise activations,
// where they differ from the one operation the catalog counts:
//   TanhGrad dy * (1 - y * y): 3      SigmoidGrad dy * y * (1 - y): 3
//   EluGrad x > 0 ? dy : dy * (y + 1): 3   SeluGrad: as Elu with a scale: 4
//   SoftplusGrad dy / (1 + exp(-x)): 4     SoftsignGrad dy / (1 + |x|)^2: 4
//   LeakyReluGrad x > 0 ? dy : alpha * dy: 3   RsqrtGrad dy * -0.5 * y^3: 4
//   SqrtGrad dy * 0.5 / y: 2   ReciprocalGrad / InvGrad -dy * y * y: 3
int ActivationGradFlops(absl::string_view op) {
  static const auto* const kTable = new absl::flat_hash_map<std::string, int>{
      {"TanhGrad", 3},       {"SigmoidGrad", 3},  {"EluGrad", 3},
      {"SeluGrad", 4},       {"SoftplusGrad", 4}, {"SoftsignGrad", 4},
      {"LeakyReluGrad", 3},  {"RsqrtGrad", 4},    {"SqrtGrad", 2},
      {"ReciprocalGrad", 3}, {"InvGrad", 3}};
  auto it = kTable->find(std::string(op));
  return it == kTable->end() ? 0 : it->second;
}

const absl::flat_hash_map<std::string, OpKind>& KindTable() {
  static const auto* const kTable = [] {
    auto* table = new absl::flat_hash_map<std::string, OpKind>();
    auto add = [table](OpKind kind, std::initializer_list<const char*> ops) {
      for (const char* op : ops) (*table)[op] = kind;
    };
    add(OpKind::kReduce, {"BiasAddGrad", "L2Loss"});
    add(OpKind::kConvolution,
        {"Conv2DBackpropInput", "Conv2DBackpropFilter",
         "DepthwiseConv2dNativeBackpropInput",
         "DepthwiseConv2dNativeBackpropFilter", "Conv3DBackpropInputV2",
         "Conv3DBackpropFilterV2"});
    add(OpKind::kSelectAndScatter,
        {"MaxPoolGrad", "MaxPoolGradV2", "MaxPool3DGrad"});
    add(OpKind::kReduceWindow, {"AvgPoolGrad"});
    add(OpKind::kNormalization,
        {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"});
    add(OpKind::kSoftmax, {"SoftmaxCrossEntropyWithLogits",
                           "SparseSoftmaxCrossEntropyWithLogits"});
    add(OpKind::kShapeOf,
        {"BroadcastGradientArgs", "InvertPermutation", "ConcatOffset"});
    add(OpKind::kScatter,
        {"UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
         "UnsortedSegmentProd", "DynamicStitch", "ParallelDynamicStitch"});
    add(OpKind::kElementwiseBinary,
        {"AssignAdd", "AssignSub", "AssignAddVariableOp", "AssignSubVariableOp",
         "EluGrad", "SeluGrad", "LeakyReluGrad", "SqrtGrad", "ReciprocalGrad",
         "InvGrad", "RsqrtGrad"});
    add(OpKind::kTranscendental, {"SoftplusGrad", "SoftsignGrad"});
    add(OpKind::kConstant, {"VariableV2", "Variable", "VarHandleOp"});
    add(OpKind::kIdentity, {"ReadVariableOp"});
    add(OpKind::kCopy, {"Assign", "AssignVariableOp", "RandomShuffle"});
    for (absl::string_view op : RandomOps()) {
      (*table)[std::string(op)] = OpKind::kRandom;
    }
    add(OpKind::kInfeedOutfeed,
        {"IteratorGetNext", "IteratorGetNextSync", "MakeIterator", "Assert",
         "SaveV2", "RestoreV2"});
    for (absl::string_view op : HandleOps()) {
      (*table)[std::string(op)] = OpKind::kInfeedOutfeed;
    }
    for (absl::string_view op : SummaryOps()) {
      (*table)[std::string(op)] = OpKind::kInfeedOutfeed;
    }
    for (const Optimizer& optimizer : kOptimizers) {
      for (const char* prefix :
           {"Apply", "ResourceApply", "SparseApply", "ResourceSparseApply"}) {
        (*table)[absl::StrCat(prefix, optimizer.name)] =
            OpKind::kElementwiseBinary;
      }
    }
    return table;
  }();
  return *kTable;
}

int64_t InputBytes(absl::Span<const TensorType* const> inputs) {
  int64_t total = 0;
  for (const TensorType* type : inputs) total += type->size_bytes();
  return total;
}

int64_t OutputBytes(absl::Span<const TensorType> outputs) {
  int64_t total = 0;
  for (const TensorType& type : outputs) total += type.size_bytes();
  return total;
}

double Elements(const TensorType* type) {
  return type == nullptr ? 0 : static_cast<double>(type->num_elements());
}

// The input or output `i`, or nullptr.
const TensorType* At(absl::Span<const TensorType* const> types, size_t i) {
  return i < types.size() ? types[i] : nullptr;
}

// Product of a filter's dimensions that one output element of the forward
// convolution reduces over: spatial dims and input features per group
// (depthwise filters [H, W, C, M] reduce over H * W only).
double FilterReduction(const TensorType& filter, bool depthwise) {
  double product = 1;
  const int reduced = filter.rank() - (depthwise ? 2 : 1);
  for (int d = 0; d < reduced; ++d) {
    product *= static_cast<double>(filter.dims[d]);
  }
  return product;
}

double WindowSize(const NodeDef& node) {
  absl::StatusOr<std::vector<int64_t>> ksize =
      IntListAttr(node, "ksize", std::nullopt, {});
  double size = 1;
  if (ksize.ok()) {
    for (int64_t k : *ksize)
      size *= static_cast<double>(std::max<int64_t>(k, 1));
  }
  return size;
}

}  // namespace

absl::Span<const absl::string_view> HandleOps() {
  static constexpr absl::string_view kOps[] = {
      "Iterator",
      "IteratorV2",
      "AnonymousIterator",
      "AnonymousIteratorV2",
      "AnonymousIteratorV3",
      "OneShotIterator",
      "MultiDeviceIterator",
      "IteratorFromStringHandle",
      "IteratorFromStringHandleV2",
      "OptimizeDataset",
      "OptimizeDatasetV2",
      "ModelDataset",
      "TensorDataset",
      "TensorSliceDataset",
      "RangeDataset",
      "RepeatDataset",
      "BatchDataset",
      "BatchDatasetV2",
      "ShuffleDataset",
      "ShuffleDatasetV2",
      "ShuffleDatasetV3",
      "ShuffleAndRepeatDataset",
      "MapDataset",
      "ParallelMapDataset",
      "ParallelMapDatasetV2",
      "PrefetchDataset",
      "TFRecordDataset",
      "FilterDataset",
      "TakeDataset",
      "SkipDataset",
      "CacheDataset",
      "CacheDatasetV2",
      "FlatMapDataset",
      "ParallelInterleaveDatasetV4",
      "MapAndBatchDataset",
      "FIFOQueueV2",
      "RandomShuffleQueueV2",
  };
  return kOps;
}

absl::Span<const absl::string_view> RandomOps() {
  static constexpr absl::string_view kOps[] = {
      "RandomUniform",
      "RandomStandardNormal",
      "TruncatedNormal",
      "RandomUniformInt",
      "StatelessRandomUniform",
      "StatelessRandomNormal",
      "StatelessTruncatedNormal",
      "StatelessRandomUniformV2",
      "StatelessRandomNormalV2",
      "StatelessTruncatedNormalV2",
      "StatelessRandomUniformInt",
      "StatelessRandomUniformIntV2",
      "StatelessRandomUniformFullInt",
  };
  return kOps;
}

absl::Span<const absl::string_view> SummaryOps() {
  static constexpr absl::string_view kOps[] = {
      "ScalarSummary",  "HistogramSummary", "ImageSummary",    "AudioSummary",
      "AudioSummaryV2", "TensorSummary",    "TensorSummaryV2", "MergeSummary",
  };
  return kOps;
}

absl::Span<const absl::string_view> OptimizerNames() {
  static const auto* const kNames = [] {
    auto* names = new std::vector<absl::string_view>();
    for (const Optimizer& optimizer : kOptimizers) {
      names->push_back(optimizer.name);
    }
    return names;
  }();
  return *kNames;
}

std::optional<OpKind> TrainingOpKind(absl::string_view op) {
  auto it = KindTable().find(std::string(op));
  if (it == KindTable().end()) return std::nullopt;
  return it->second;
}

std::optional<OpCost> TrainingOpCost(
    const NodeDef& node, absl::Span<const TensorType* const> input_types,
    absl::Span<const TensorType> output_types) {
  const std::string& op = node.op();
  OpCost cost;
  cost.bytes_read = InputBytes(input_types);
  cost.bytes_written = OutputBytes(output_types);
  const TensorType* out0 = output_types.empty() ? nullptr : &output_types[0];

  bool sparse = false;
  if (const Optimizer* optimizer = FindOptimizer(op, &sparse)) {
    // Dense updates touch every element of the variable (Apply*) or of the
    // gradient (ResourceApply*, whose variable and slots are handles): the
    // largest input. Sparse updates touch the rows of their gradient, the
    // input before the indices (the last).
    const TensorType* largest = nullptr;
    if (sparse) {
      largest = input_types.size() >= 2
                    ? At(input_types, input_types.size() - 2)
                    : nullptr;
    } else {
      for (const TensorType* type : input_types) {
        if (largest == nullptr ||
            type->num_elements() > largest->num_elements()) {
          largest = type;
        }
      }
    }
    if (largest == nullptr) return cost;
    const int64_t bytes = largest->size_bytes();
    cost.flops = optimizer->flops_per_element * Elements(largest);
    cost.bytes_read = bytes * (optimizer->state_tensors + 1);
    cost.bytes_written = bytes * optimizer->state_tensors;
    return cost;
  }
  if (const int per_element = ActivationGradFlops(op); per_element > 0) {
    cost.flops = per_element * Elements(out0);
    return cost;
  }
  const bool depthwise = absl::StartsWith(op, "DepthwiseConv2dNative");
  if (absl::StrContains(op, "BackpropInput")) {
    // (input_sizes, filter, out_backprop): the forward convolution's
    // multiply-adds, 2 * |out_backprop| * filter reduction.
    const TensorType* filter = At(input_types, 1);
    if (filter == nullptr || At(input_types, 2) == nullptr) return std::nullopt;
    cost.flops = 2.0 * Elements(At(input_types, 2)) *
                 FilterReduction(*filter, depthwise);
    return cost;
  }
  if (absl::StrContains(op, "BackpropFilter")) {
    // (input, filter_sizes, out_backprop) -> filter: the same count.
    if (out0 == nullptr || At(input_types, 2) == nullptr) return std::nullopt;
    cost.flops =
        2.0 * Elements(At(input_types, 2)) * FilterReduction(*out0, depthwise);
    return cost;
  }
  if (absl::StartsWith(op, "MaxPool") && absl::EndsWith(op, "Grad")) {
    // (orig_input, orig_output, grad): select the maximum of each window
    // and scatter the gradient there, 2 * |grad| * window (as the catalog
    // counts select-and-scatter).
    cost.flops = 2.0 * Elements(At(input_types, 2)) * WindowSize(node);
    return cost;
  }
  if (op == "AvgPoolGrad") {
    // (orig_input_shape, grad): each gradient element is spread over its
    // window, |grad| * window.
    cost.flops = Elements(At(input_types, 1)) * WindowSize(node);
    return cost;
  }
  if (absl::StartsWith(op, "FusedBatchNormGrad")) {
    // Per element of x: sum(dy) 1, x - mean 1, sum(dy * (x - mean)) 2,
    // dx = (dy - mean_dy - (x - mean) * c1) * c2: 4.
    cost.flops = 8.0 * Elements(out0);
    return cost;
  }
  if (op == "SoftmaxCrossEntropyWithLogits") {
    // Per logit: max 1, subtract 1, exp 1, sum 1, backprop exp / sum -
    // labels 2, loss sum(labels * (log(sum) - shifted)) 3.
    cost.flops = 9.0 * Elements(At(input_types, 0));
    return cost;
  }
  if (op == "SparseSoftmaxCrossEntropyWithLogits") {
    // Per logit: max, subtract, exp, sum, backprop exp / sum: 5; per row the
    // log, the label's gather and the loss subtraction: 3.
    const TensorType* logits = At(input_types, 0);
    const double rows =
        logits != nullptr && logits->rank() > 0 ? logits->dims[0] : 0;
    cost.flops = 5.0 * Elements(logits) + 3.0 * rows;
    return cost;
  }
  if (absl::StartsWith(op, "UnsortedSegment")) {
    // One accumulation per data element.
    cost.flops = Elements(At(input_types, 0));
    return cost;
  }
  if (op == "L2Loss") {
    // Square and accumulate every element.
    cost.flops = 2.0 * Elements(At(input_types, 0));
    return cost;
  }
  if (op == "AssignAdd" || op == "AssignSub") {
    cost.flops = Elements(At(input_types, 1));
    return cost;
  }
  if (op == "AssignAddVariableOp" || op == "AssignSubVariableOp" ||
      op == "AssignVariableOp") {
    // (resource, value): reads the value (and the variable, to update it)
    // and writes the variable; the handle is free.
    const TensorType* value = At(input_types, 1);
    const int64_t bytes = value == nullptr ? 0 : value->size_bytes();
    const bool update = op != "AssignVariableOp";
    cost.flops = update ? Elements(value) : 0;
    cost.bytes_read = update ? 2 * bytes : bytes;
    cost.bytes_written = bytes;
    return cost;
  }
  if (op == "HistogramSummary") {
    // One bucket lookup per element.
    cost.flops = Elements(At(input_types, 1));
    return cost;
  }
  if (TrainingOpKind(op) == OpKind::kInfeedOutfeed) {
    // Input pipelines deliver their outputs; handles, savers, assertions and
    // summaries read their inputs. No arithmetic, but a known cost.
    return cost;
  }
  return std::nullopt;
}

}  // namespace gopt::graph::tf
