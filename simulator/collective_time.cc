#include "simulator/collective_time.h"

#include <algorithm>

namespace gopt::simulator {

using graph::OpKind;

double CollectiveLinkSeconds(const graph::Node& node,
                             int64_t default_group_size,
                             const Topology& topology) {
  if (graph::OpKindCategory(node.kind) != graph::OpCategory::kCollective ||
      node.bytes_communicated <= 0) {
    return 0;
  }
  const int64_t n = node.attributes.collective_group_size > 0
                        ? node.attributes.collective_group_size
                        : default_group_size;
  const int m = static_cast<int>(std::min<int64_t>(n, topology.num_devices()));
  if (n < 2 || m < 2) return 0;
  double bandwidth = 0;
  double latency = 0;
  for (int d = 0; d < m; ++d) {
    const Link& link = topology.link(d, (d + 1) % m);
    bandwidth = d == 0 ? link.bandwidth_bytes_per_s
                       : std::min(bandwidth, link.bandwidth_bytes_per_s);
    latency = std::max(latency, link.latency_s);
  }
  if (!(bandwidth > 0)) return 0;
  double steps = static_cast<double>(n - 1);
  if (node.kind == OpKind::kAllReduce) steps *= 2;
  if (node.kind == OpKind::kCollectivePermute ||
      node.kind == OpKind::kSendRecv) {
    steps = 1;
  }
  return static_cast<double>(node.bytes_communicated) / bandwidth +
         steps * latency;
}

int64_t DefaultCollectiveGroupSize(const graph::Graph& graph,
                                   const Topology& topology) {
  return graph.spmd().num_partitions > 1 ? graph.spmd().num_partitions
                                         : topology.num_devices();
}

}  // namespace gopt::simulator
