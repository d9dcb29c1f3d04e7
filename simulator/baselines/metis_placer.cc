#include "simulator/baselines/metis_placer.h"

#include <fcntl.h>
#include <metis.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "simulator/baselines/cost_table.h"
#include "util/status_macros.h"

namespace gopt::simulator::baselines {
namespace {

using graph::Edge;
using graph::NodeId;

// Totals stay far below 2^31 so METIS's 32-bit sums cannot overflow.
constexpr double kTotalVertexWeight = 1 << 26;
constexpr double kMaxTotalEdgeWeight = 1 << 29;

std::string MetisErrorName(int code) {
  switch (code) {
    case METIS_ERROR_INPUT:
      return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY:
      return "METIS_ERROR_MEMORY";
    case METIS_ERROR:
      return "METIS_ERROR";
    default:
      return absl::StrCat("code ", code);
  }
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> MetisPlacer::Place(
    const BaselineContext& context) const {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const CostTable costs(context.graph, context.topology, context.cost_model);
  return MetisPlaceWeighted(context, costs, nullptr);
}

absl::StatusOr<std::vector<int32_t>> MetisPlaceWeighted(
    const BaselineContext& context, const CostTable& costs,
    const MetisEdgeFactor& edge_factor) {
  RETURN_IF_ERROR(CheckTopology(context.topology));
  const graph::Graph& graph = context.graph;
  const int n = graph.num_nodes();
  const int num_devices = context.topology.num_devices();
  std::vector<int32_t> device(n, 0);
  if (num_devices == 1 || n <= num_devices) {
    for (NodeId id = 0; id < n; ++id) {
      device[id] = costs.NearestAllowedDevice(id, id % num_devices);
    }
    return device;
  }

  // Undirected adjacency with merged parallel edges, in CSR form.
  // Bytes of one edge, times its factor when there is one.
  auto weight = [&](const Edge& edge) -> absl::StatusOr<double> {
    const double bytes = static_cast<double>(graph.EdgeBytes(edge));
    if (!edge_factor) return bytes;
    const double factor = edge_factor(edge.src, edge.dst);
    if (!std::isfinite(factor) || factor < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("metis: edge factor of ", graph.node(edge.src).name,
                       " -> ", graph.node(edge.dst).name, " is ", factor,
                       "; expected a finite value >= 0"));
    }
    return bytes * factor;
  };
  std::vector<std::pair<NodeId, double>> neighbors;
  std::vector<idx_t> xadj(n + 1, 0);
  std::vector<NodeId> adjncy_nodes;
  std::vector<double> adj_bytes;
  adjncy_nodes.reserve(2 * static_cast<size_t>(graph.num_edges()));
  adj_bytes.reserve(2 * static_cast<size_t>(graph.num_edges()));
  double total_edge_bytes = 0;
  for (NodeId id = 0; id < n; ++id) {
    neighbors.clear();
    for (const Edge& edge : graph.in_edges(id)) {
      if (edge.src == id) continue;
      ASSIGN_OR_RETURN(const double w, weight(edge));
      neighbors.emplace_back(edge.src, w);
    }
    for (const Edge& edge : graph.out_edges(id)) {
      if (edge.dst == id) continue;
      ASSIGN_OR_RETURN(const double w, weight(edge));
      neighbors.emplace_back(edge.dst, w);
    }
    std::sort(neighbors.begin(), neighbors.end());
    for (size_t i = 0; i < neighbors.size(); ++i) {
      if (i > 0 && neighbors[i].first == neighbors[i - 1].first) {
        adj_bytes.back() += neighbors[i].second;
      } else {
        adjncy_nodes.push_back(neighbors[i].first);
        adj_bytes.push_back(neighbors[i].second);
      }
      total_edge_bytes += neighbors[i].second;
    }
    xadj[id + 1] = static_cast<idx_t>(adjncy_nodes.size());
  }
  std::vector<idx_t> adjncy(adjncy_nodes.begin(), adjncy_nodes.end());
  const double edge_scale =
      total_edge_bytes + static_cast<double>(adj_bytes.size()) >
              kMaxTotalEdgeWeight
          ? kMaxTotalEdgeWeight / (total_edge_bytes + adj_bytes.size())
          : 1.0;
  std::vector<idx_t> adjwgt(adj_bytes.size());
  for (size_t i = 0; i < adj_bytes.size(); ++i) {
    adjwgt[i] = std::max<idx_t>(
        1, static_cast<idx_t>(std::llround(adj_bytes[i] * edge_scale)));
  }

  double total_work = 0;
  for (NodeId id = 0; id < n; ++id) total_work += costs.MeanComputeSeconds(id);
  const double vertex_scale =
      total_work > 0 ? kTotalVertexWeight / total_work : 0;
  std::vector<idx_t> vwgt(n);
  for (NodeId id = 0; id < n; ++id) {
    vwgt[id] = std::max<idx_t>(
        1, static_cast<idx_t>(
               std::llround(costs.MeanComputeSeconds(id) * vertex_scale)));
  }

  // Part sizes proportional to device speed.
  std::vector<real_t> target(num_devices);
  double total_speed = 0;
  for (const DeviceProfile& profile : context.topology.devices) {
    total_speed += std::max(profile.peak_f32_flops, 1.0);
  }
  for (int d = 0; d < num_devices; ++d) {
    target[d] = static_cast<real_t>(
        std::max(context.topology.devices[d].peak_f32_flops, 1.0) /
        total_speed);
  }

  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  options[METIS_OPTION_SEED] =
      static_cast<idx_t>(context.seed % std::numeric_limits<idx_t>::max());
  idx_t nvtxs = n;
  idx_t ncon = 1;
  idx_t nparts = num_devices;
  idx_t objval = 0;
  std::vector<idx_t> part(n, 0);
  int code = METIS_OK;
  {
    // libmetis prints diagnostics ("***Cannot bisect a graph with 0
    // vertices!") with printf on small or lopsided graphs, which would
    // corrupt machine-readable output such as `gopt bench --json`. Send
    // stdout to /dev/null for the call; the mutex keeps concurrent calls
    // from restoring each other's descriptor.
    static absl::Mutex* const stdout_mutex = new absl::Mutex();
    absl::MutexLock lock(stdout_mutex);
    std::fflush(stdout);
    const int saved_stdout = dup(STDOUT_FILENO);
    const int null_fd = open("/dev/null", O_WRONLY);
    if (saved_stdout >= 0 && null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
    code = METIS_PartGraphKway(
        &nvtxs, &ncon, xadj.data(), adjncy.empty() ? nullptr : adjncy.data(),
        vwgt.data(), /*vsize=*/nullptr,
        adjwgt.empty() ? nullptr : adjwgt.data(), &nparts, target.data(),
        /*ubvec=*/nullptr, options, &objval, part.data());
    std::fflush(stdout);
    if (saved_stdout >= 0 && null_fd >= 0) dup2(saved_stdout, STDOUT_FILENO);
    if (null_fd >= 0) close(null_fd);
    if (saved_stdout >= 0) close(saved_stdout);
  }
  if (code != METIS_OK) {
    return absl::InternalError(
        absl::StrCat("metis: METIS_PartGraphKway failed with ",
                     MetisErrorName(code), " on graph '", graph.name(), "' (",
                     n, " nodes, ", num_devices, " parts)"));
  }
  for (NodeId id = 0; id < n; ++id) {
    device[id] = costs.NearestAllowedDevice(id, static_cast<int32_t>(part[id]));
  }
  return device;
}

}  // namespace gopt::simulator::baselines
