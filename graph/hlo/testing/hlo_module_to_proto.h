#ifndef GOPT_GRAPH_HLO_TESTING_HLO_MODULE_TO_PROTO_H_
#define GOPT_GRAPH_HLO_TESTING_HLO_MODULE_TO_PROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/hlo/hlo_module.h"
#include "xla/hlo.pb.h"

// Test-only: writes an HloModule (typically parsed from an HLO text
// fixture) as the xla.HloModuleProto XLA would serialize for it, so that
// tests can check that the proto reader sees what the text parser sees.
namespace gopt::graph::hlo::testing {

// Converts `module`: ids are assigned in order (computation c gets id c + 1,
// instructions get module-unique ids), shapes and the attributes gopt reads
// are copied, scalar integer and predicate literals become LiteralProto
// values, `sharding=` text becomes an OpSharding (tiled shardings whose
// devices are 0..n-1 in order use the iota form iota_reshape_dims=[n],
// others an explicit tile_assignment_devices list), a collective's group
// size becomes one replica group {0..size-1}, num_partitions and
// replica_count go into device_assignment, and a scheduled module gets a
// schedule in definition order. InvalidArgument for a sharding that does
// not parse or an element type with no proto spelling.
absl::StatusOr<xla::HloModuleProto> HloModuleToProto(const HloModule& module);

// Parses HLO `text`, converts it with HloModuleToProto and imports the
// serialized proto with the "hlo-proto" importer: the graph the proto path
// gives for the same module. The text parser's or the importer's error.
absl::StatusOr<Graph> ImportHloTextAsProto(const std::string& text);

}  // namespace gopt::graph::hlo::testing

#endif  // GOPT_GRAPH_HLO_TESTING_HLO_MODULE_TO_PROTO_H_
