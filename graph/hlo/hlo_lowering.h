#ifndef GOPT_GRAPH_HLO_HLO_LOWERING_H_
#define GOPT_GRAPH_HLO_HLO_LOWERING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/hlo/hlo_module.h"

namespace gopt::graph::hlo {

// (computation index, instruction index) of an instruction in an HloModule.
using HloInstructionRef = std::pair<int32_t, int32_t>;

// Where an instruction ended up in a lowered Graph: follow `subgraph_path`
// from the top graph (each entry indexes the current graph's subgraphs()),
// then take node `node` of the graph reached.
struct HloNodeLocation {
  std::vector<int32_t> subgraph_path;
  NodeId node = -1;
};

struct HloLoweringOptions {
  // Graph::format() of the result ("hlo", "hlo-proto", "tpugraphs").
  std::string format = "hlo";
  // Graph name; empty means the module's name.
  std::string graph_name;
  GraphLimits limits;
  // When set, exactly these instructions are layout-configurable. When
  // unset (plain HLO), the opcode rule applies: convolution, dot and reshape
  // are configurable — the rule the TpuGraphs layout data follows (its
  // config_index_to_node marks every convolution and every reshape of its
  // module and nothing else; dot shares convolution's operand/kernel layout
  // choice).
  std::optional<absl::flat_hash_set<HloInstructionRef>> layout_configurable;
  // The module is one device's program of an SPMD mesh (see SpmdProgram in
  // graph/graph.h; PartitionSpmdModule makes it from a sharded module):
  // when num_partitions > 1 the graph records it and every top-level node
  // joins the colocation group "spmd-program", so placement keeps the
  // given sharding.
  SpmdProgram spmd;
};

// Lowers `module` (which must have passed ValidateHloModule) to the graph IR:
//  - the entry computation's instructions are nodes named without '%';
//  - `call` is inlined: the callee's instructions become nodes named
//    "<call name>/<instruction name>" (nested calls nest the prefix), its
//    parameters are the call's operands and its root the call's value;
//  - `while` and `conditional` are single nodes whose body + condition /
//    branches are attached subgraphs (lowered by these same rules, parameters
//    as nodes) and whose cost is SubgraphCost(body, condition; trip count)
//    or MaxBranchCost(branches). The trip count comes from the backend
//    config's known_trip_count {"n": ...}, else from the loop's counter
//    (DeriveWhileTripCount); without either the loop is costed once, the
//    graph gets a warning naming the node and one saying how many loops
//    stayed unknown;
//  - async-start is the op its wrapped computation holds (that op's kind
//    and cost, the computation kept as a subgraph); async-update and
//    async-done are free;
//  - every node keeps the instruction's metadata (op_name; source file,
//    function and line, resolved through the module's stack-frame tables)
//    and its sharding text in Node::source;
//  - the module's warnings (unknown attributes) become graph warnings;
//  - `fusion` is a pre-fused node: FLOPs of its fused computation (kept as a
//    subgraph), bytes of its own operands and outputs;
//  - scalar computations of reduce, sort, scatter, map, select-and-scatter,
//    reduce-window and collectives are not lowered (the op is costed from
//    its shapes);
//  - custom-call is costed by bytes only, with one graph warning per distinct
//    target;
//  - tuple-shaped values have one output per top-level element; an operand
//    reading a whole tuple uses Edge::kAllOutputs, get-tuple-element reads
//    the selected output;
//  - the root of each lowered computation has attributes.is_root.
// Declared shapes are checked against the operands for dot, convolution,
// elementwise ops, reshape, transpose, broadcast, slice and
// get-tuple-element. Errors are InvalidArgument naming the instruction
// ("instruction 'dot.3': declared shape f32[2,5] but operands give
// f32[2,4]"), or ResourceExhausted past options.limits. Computation call
// cycles and nesting beyond kMaxHloNestingDepth are errors.
//
// When `locations` is not null it receives, for every lowered instruction,
// where its node is (an inlined computation's instructions: their first
// inlining). Thread-safe (no shared state).
absl::StatusOr<Graph> LowerHloModule(
    const HloModule& module, const HloLoweringOptions& options,
    absl::flat_hash_map<HloInstructionRef, HloNodeLocation>* locations =
        nullptr);

// The trip count in an XLA backend config ({"known_trip_count":{"n":"5"}});
// nullopt when absent or malformed.
std::optional<int64_t> KnownTripCount(absl::string_view backend_config);

// True for the opcodes whose layouts TpuGraphs tunes (see
// HloLoweringOptions::layout_configurable).
bool IsLayoutConfigurableOpcode(absl::string_view opcode);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_LOWERING_H_
