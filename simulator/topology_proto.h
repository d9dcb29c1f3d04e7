#ifndef GOPT_SIMULATOR_TOPOLOGY_PROTO_H_
#define GOPT_SIMULATOR_TOPOLOGY_PROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "gopt/v1/topology.pb.h"
#include "simulator/topology.h"

namespace gopt::simulator {

// The edge between the simulator's Topology and gopt.v1.Topology (requests,
// topology JSON files): the simulator itself never sees a proto. Pure
// functions; thread-safe.

// Converts and validates a topology message: 1..64 devices; every number
// finite and within physical bounds (peaks 1..1e21 FLOP/s, 0 = not given
// for the non-f32 peaks; bandwidths 1..1e16 B/s; memory 1..2^60 bytes;
// launch overhead 0..1 s; link latency 0..10 s; link device overhead
// 0..1 s; max_efficiency 0.001..1,
// 0 = default 0.7), so that no simulated time can overflow or be NaN; links
// naming existing devices; every device pair connected (directly or through
// default_link). InvalidArgument names the device/link, field, expected
// range and value.
absl::StatusOr<Topology> TopologyFromProto(const gopt::v1::Topology& proto);

gopt::v1::Topology TopologyToProto(const Topology& topology);

// A preset name, or a path to a topology JSON file (gopt.v1.Topology in the
// protobuf JSON mapping). A file's runtime_model (relative to the file) is
// loaded onto every device (DeviceProfile::runtime_model). Errors name the
// file (and the runtime model's file and field) or list the presets.
absl::StatusOr<Topology> LoadTopology(const std::string& name_or_path);

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_TOPOLOGY_PROTO_H_
