#ifndef GOPT_GRAPH_HLO_HLO_PROTO_READER_H_
#define GOPT_GRAPH_HLO_HLO_PROTO_READER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/hlo/hlo_module.h"
#include "graph/parse_cost.h"
#include "xla/hlo.pb.h"

namespace gopt::graph::hlo {

// Converts a parsed xla.HloModuleProto into an HloModule: operand and
// called-computation ids become indices, the entry is found by
// entry_computation_id (else by name, else the last computation), and the
// attributes gopt models are copied with XLA's defaults for unset fields
// (stride, dilation and group counts of 0 read as 1). Constants keep only
// scalar integer and predicate literals (what trip counts read). SPMD
// information is read as the text format spells it: each OpSharding
// becomes the `sharding={...}` text (REPLICATED, MAXIMAL, MANUAL, UNKNOWN,
// TUPLE, OTHER with explicit or iota devices and subgroups; UNREDUCED reads
// as replicated: the full shape on every device), replica_groups /
// collective_device_list give collective_group_size, device_assignment
// gives num_partitions and replica_count, and a schedule sets is_scheduled.
// A malformed sharding (tile product != device count, a device out of
// range or listed twice, a transpose that is no permutation) is
// InvalidArgument naming the instruction and field path ("computation 'e'
// instruction 'p' sharding.tile_assignment_devices[3]: device 7 is out of
// range [0, 4)").
//
// The returned module has passed ValidateHloModule. Errors are
// InvalidArgument naming the computation, instruction and field ("computation
// 'main' instruction 'add.3' operand_ids[1]: id 77 is not an instruction of
// this computation"). Thread-safe.
absl::StatusOr<HloModule> HloModuleFromProto(const xla::HloModuleProto& proto);

// Parses serialized HloModuleProto bytes and converts them. InvalidArgument
// when the bytes are not a valid protobuf message.
absl::StatusOr<HloModule> ParseHloModuleProto(absl::string_view bytes);

// A cheap structural check of serialized bytes: a HloModuleProto starts with
// its name (field 1, printable) and holds computations (field 3) whose first
// field is a name too. Looks at a bounded prefix only.
bool LooksLikeHloModuleProto(absl::string_view bytes);

// The node types of HLO protos: instructions, never empty.
NodeTypes InstructionNodes();

// What parsing `bytes` as an xla.HloModuleProto and reading it into an
// HloModule costs (ProtoParseCost; the nodes are the instructions of every
// computation).
absl::StatusOr<ParseCost> HloModuleProtoParseCost(
    absl::string_view bytes, const ParseCostLimits& limits);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_PROTO_READER_H_
