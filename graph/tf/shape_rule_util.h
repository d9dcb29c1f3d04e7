#ifndef GOPT_GRAPH_TF_SHAPE_RULE_UTIL_H_
#define GOPT_GRAPH_TF_SHAPE_RULE_UTIL_H_

// Internal to the TensorFlow importers: what the per-family shape rule files
// (*_rules.cc beside this header) share: the context a rule runs in, the
// table families register into, and helpers over partial shapes and folded
// values. All functions are pure and thread-safe.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/tf/shape_rules.h"
#include "tensorflow/graph.pb.h"

namespace gopt::graph::tf {

// Inputs, outputs and error reporting for one node's rule. Borrows the node
// and the inputs, and writes into `out` (owned by the caller); lives for one
// rule call.
struct RuleContext {
  const tensorflow::NodeDef& node;
  absl::Span<const TensorInfo* const> in;
  std::vector<TensorInfo>& out;

  const TensorInfo& In(size_t i) const { return *in[i]; }
  int num_inputs() const { return static_cast<int>(in.size()); }
  // InvalidArgument "node 'NAME' (OP): message".
  absl::Status Error(absl::string_view message) const;
  // `status` unchanged when OK, else Error(status.message()).
  absl::Status Annotated(const absl::Status& status) const;
};

// One op's rule: fills ctx.out, or returns InvalidArgument naming the node.
using RuleFn = absl::Status (*)(RuleContext&);

// A rule and the number of data inputs it reads at least.
struct Rule {
  int min_inputs = 0;
  RuleFn fn = nullptr;
};

// Op name -> rule.
using RuleTable = absl::flat_hash_map<std::string, Rule>;

// Registers `fn` for every op in `ops`.
void AddRule(RuleTable& rules, std::initializer_list<const char*> ops,
             int min_inputs, RuleFn fn);

// Elementwise ops, casts, Select, BiasAdd: elementwise_rules.cc.
void AddElementwiseRules(RuleTable& rules);
// Convolutions, pools, matrix products, batch norm, TopK, NMS, resize and
// audio ops: nn_rules.cc.
void AddNeuralNetRules(RuleTable& rules);
// Shape-computing and shape-manipulating ops (Shape ... Reshape, Concat,
// StridedSlice, Gather, reductions, Range, OneHot): shape_op_rules.cc.
void AddShapeRules(RuleTable& rules);
// Gradient kernels, optimizer updates, variables, random initializers,
// input pipelines and summaries: training_rules.cc.
void AddTrainingRules(RuleTable& rules);

// Switch/Merge loops, graph inputs, constants, TensorArray and TensorList
// ops: control_rules.cc.
void AddControlFlowRules(RuleTable& rules);

// Saturating int64 arithmetic (overflow gives INT64_MAX).
int64_t SatAdd(int64_t a, int64_t b);
int64_t SatMul(int64_t a, int64_t b);

// `primary` with its unknown dimensions taken from `secondary` when both
// have the same known rank; `secondary` when `primary`'s rank is unknown.
PartialShape FillUnknownDims(const PartialShape& primary,
                             const PartialShape& secondary);

// The folded value when every element is known, else nullopt.
std::optional<std::vector<int64_t>> KnownValues(const TensorInfo& info);

// The single known element of a folded scalar (or one-element) value.
std::optional<int64_t> ScalarValue(const TensorInfo& info);

// The number of values of a 1-D (or scalar) shape-like tensor: its value
// length when folded, else its static length.
std::optional<int64_t> VectorLength(const TensorInfo& info);

// The type attribute `attr` of the rule's node, or `fallback` when absent,
// malformed or invalid.
DType AttrOr(const RuleContext& ctx, absl::string_view attr, DType fallback);

// The node's "T" or "dtype" attribute, else its first input's type, else
// f32.
DType DefaultDType(const RuleContext& ctx);

// Gives every output `dtype` and `shape`.
void SetAll(RuleContext& ctx, DType dtype, const PartialShape& shape);

// A shape given as the value of a 1-D tensor (Reshape, Fill, BroadcastTo):
// negative or unknown entries become unknown dims.
PartialShape ShapeFromValue(const TensorInfo& info);

}  // namespace gopt::graph::tf

#endif  // GOPT_GRAPH_TF_SHAPE_RULE_UTIL_H_
