// The lower bound. Why each term is unavoidable, for every plan Simulate
// accepts (ValidatePlan holds every fusion group to the kernel rules of
// fusion_rules.h):
//  - Along any path of the graph, the kernels (units) its nodes run in are
//    distinct and run one after another: a unit that the path left and
//    re-entered would feed and consume another unit, a cycle Simulate
//    rejects. A unit starts only after the units feeding it end (plus the
//    transfer, across devices), so the step time is at least the sum of the
//    path's kernel times.
//  - A kernel costs at least launch + roofline compute of the FLOPs of its
//    members on the path; with FLOPs > 0 the roofline's efficiency
//    flops / (flops + peak * 1 us) adds exactly 1 us / max_efficiency to
//    flops / (peak * max_efficiency), however large the kernel, so fusing
//    cannot remove that term, only share it. Extra members, bytes, layout
//    copies and the 90% layout efficiency only add time.
//  - A kernel's peak is the one of its largest member's dtype, so FLOPs are
//    charged at the fastest dtype the graph computes in, on the fastest
//    device; launch and the 1 us term at their smallest over devices.
//  - How many kernels a path needs follows from the kernel rules: one per
//    dot or convolution (a kernel holds at most one), one per op that never
//    fuses (at its full solo time: it is a kernel of its own, bytes
//    included), one for a stretch of cheap ops between ops that never fuse
//    (a cheap op on each side of a non-fusing one cannot share a kernel
//    without a cycle), and a new one wherever device constraints put two
//    neighbours on different devices (a CPU-only and an accelerator-only
//    node).
//  - Device constraints force a transfer on every edge from a CPU-only to an
//    accelerator-only node and back (when the topology has both kinds, as
//    ValidatePlan requires): latency + bytes at the best such link.
//  - Total kernel time is spread over the devices at best evenly; a device
//    moves bytes at most at its bandwidth, so bytes no fusion removes (all
//    of a non-fusing op's bytes; the rest less every edge fusion could keep
//    on chip) take at least their sum over the devices' summed bandwidth.
// Memory capacity adds no term to the bound itself: a plan that does not
// fit is still simulated (reported OOM) at its step time, and the bound
// holds for it too. For the plans that fit, one more term is certain (the
// fits-in-memory bound, LowerBoundTerms::memory_split_s):
//  - Parameters and constants are allocated on their device before the
//    first kernel and never freed, so a device that fits holds at most its
//    memory_bytes of them. A weakly connected component (by data edges)
//    whose resident bytes exceed every device's memory must spread over two
//    devices or more, and being connected, some data edge of it joins two
//    devices. That edge's source output travels once its unit ends: the
//    step time is at least the path bound to the source's unit end, plus
//    the least link latency, plus the edge's bytes at the fastest link. No
//    plan knows which edge, so the term is the least over the component's
//    edges.
#include "simulator/lower_bound.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "simulator/fusion_rules.h"
#include "simulator/learned_cost_model.h"

namespace gopt::simulator {
namespace {

using graph::Edge;
using graph::NodeId;

// How a node takes part in a path's kernels.
enum class Part : uint8_t {
  kFree,   // no work; may sit in a kernel without ending it
  kCheap,  // work that may join a kernel of other work
  kHeavy,  // work that needs a kernel of its own among heavy ones
  kAlone,  // a kernel of its own (or nothing, when free)
};

// The state of a path walk: whether the kernel open at the end of the path
// so far has been charged yet.
enum State : int {
  kNone = 0,        // no kernel open
  kCheapRun = 1,    // cheap work without FLOPs, its kernel not charged
  kCheapFlops = 2,  // cheap work with FLOPs, its kernel not charged
  kCharged = 3,     // a heavy op's kernel, charged
};
constexpr int kStates = 4;

// The graph and topology as the bound needs them.
struct BoundInputs {
  std::vector<Part> part;
  std::vector<double> compute_s;  // FLOPs at the fastest device and dtype
  std::vector<double> solo_s;     // kAlone: the kernel's least time
  std::vector<uint8_t> has_flops;
  std::vector<int8_t> side;   // 1 CPU-only, 2 accelerator-only, 0 either
  double launch_s = 0;        // least launch overhead
  double small_kernel_s = 0;  // least 1 us / max_efficiency
  // Least latency and largest bandwidth from CPUs to accelerators ([0])
  // and back ([1]).
  std::array<double, 2> latency_s = {0, 0};
  std::array<double, 2> bandwidth = {0, 0};
};

bool IsFree(const graph::Node& node) {
  return graph::IsFreeOpKind(node.kind) ||
         (node.flops == 0 && node.bytes_read == 0 && node.bytes_written == 0 &&
          node.bytes_communicated == 0);
}

// The dtype the simulator prices a node's kernel in.
graph::DType KernelDType(const graph::Node& node) {
  return node.outputs.empty() || node.outputs[0].is_tuple()
             ? graph::DType::kF32
             : node.outputs[0].dtype;
}

BoundInputs Prepare(const graph::Graph& graph, const Topology& topology,
                    const OpCostModel& cost_model) {
  const int n = graph.num_nodes();
  BoundInputs in;
  in.launch_s = std::numeric_limits<double>::infinity();
  in.small_kernel_s = std::numeric_limits<double>::infinity();
  // The fastest rate any kernel of this graph can reach: a fused kernel
  // runs at its largest member's dtype, which may be any dtype with FLOPs.
  double fastest = 0;
  for (const DeviceProfile& device : topology.devices) {
    in.launch_s = std::min(in.launch_s, device.launch_overhead_s);
    in.small_kernel_s =
        std::min(in.small_kernel_s, 1e-6 / device.max_efficiency);
    for (NodeId id = 0; id < n; ++id) {
      if (graph.node(id).flops <= 0) continue;
      fastest =
          std::max(fastest, device.PeakFlops(KernelDType(graph.node(id))) *
                                device.max_efficiency);
    }
  }
  bool has_cpu = false;
  bool has_accelerator = false;
  for (const DeviceProfile& device : topology.devices) {
    (device.kind == DeviceKind::kCpu ? has_cpu : has_accelerator) = true;
  }
  const bool constrained = has_cpu && has_accelerator;
  if (constrained) {
    in.latency_s = {std::numeric_limits<double>::infinity(),
                    std::numeric_limits<double>::infinity()};
    for (int a = 0; a < topology.num_devices(); ++a) {
      for (int b = 0; b < topology.num_devices(); ++b) {
        const bool a_cpu = topology.devices[a].kind == DeviceKind::kCpu;
        const bool b_cpu = topology.devices[b].kind == DeviceKind::kCpu;
        if (a_cpu == b_cpu) continue;
        const int direction = a_cpu ? 0 : 1;
        const Link& link = topology.link(a, b);
        in.latency_s[direction] =
            std::min(in.latency_s[direction], link.latency_s);
        in.bandwidth[direction] =
            std::max(in.bandwidth[direction], link.bandwidth_bytes_per_s);
      }
    }
  }
  in.part.resize(n);
  in.compute_s.resize(n);
  in.solo_s.assign(n, 0);
  in.has_flops.resize(n);
  in.side.assign(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    const bool free = IsFree(node);
    const FusionRole role = FusionRoleOf(node.kind);
    if (role == FusionRole::kAlone) {
      in.part[id] = Part::kAlone;
    } else if (free) {
      in.part[id] = Part::kFree;
    } else {
      in.part[id] = role == FusionRole::kHeavy ? Part::kHeavy : Part::kCheap;
    }
    in.has_flops[id] = !free && node.flops > 0;
    in.compute_s[id] = in.has_flops[id] ? node.flops / fastest : 0;
    if (in.part[id] == Part::kAlone && !free) {
      KernelWork kernel;
      kernel.flops = node.flops;
      kernel.bytes = std::max<int64_t>(0, node.bytes_read + node.bytes_written);
      kernel.dtype = KernelDType(node);
      kernel.kind = node.kind;
      double least = std::numeric_limits<double>::infinity();
      for (const DeviceProfile& device : topology.devices) {
        least = std::min(least, cost_model.KernelSeconds(kernel, device));
      }
      in.solo_s[id] = least;
    }
    if (constrained) {
      if (node.device_constraint == graph::DeviceConstraint::kCpuOnly) {
        in.side[id] = 1;
      } else if (node.device_constraint ==
                 graph::DeviceConstraint::kAcceleratorOnly) {
        in.side[id] = 2;
      }
    }
  }
  return in;
}

// What closing the open kernel of a walk in `state` costs.
double CloseCost(const BoundInputs& in, int state) {
  if (state == kCheapRun) return in.launch_s;
  if (state == kCheapFlops) return in.launch_s + in.small_kernel_s;
  return 0;
}

// The longest path, each path at the least cost of its kernels: per node
// and walk state, the largest cost of a path ending there in that state.
// finish_s[v]: the least time at which v's kernel can end.
double PathBound(const graph::Graph& graph, const BoundInputs& in,
                 std::vector<double>* finish_s) {
  constexpr double kUnreached = -std::numeric_limits<double>::infinity();
  const int n = graph.num_nodes();
  std::vector<std::array<double, kStates>> best(n);
  double bound = 0;
  finish_s->assign(n, 0);
  for (NodeId v = 0; v < n; ++v) {
    std::array<double, kStates> arriving;
    arriving.fill(kUnreached);
    arriving[kNone] = 0;  // a path may start here
    for (const Edge& edge : graph.in_edges(v)) {
      const std::array<double, kStates>& from = best[edge.src];
      const int8_t a = in.side[edge.src];
      const int8_t b = in.side[v];
      if (a != 0 && b != 0 && a != b) {
        // Different devices: the kernel ends, and data must travel.
        const int direction = a == 1 ? 0 : 1;
        const double transfer_s =
            edge.control ? 0
                         : in.latency_s[direction] +
                               static_cast<double>(graph.EdgeBytes(edge)) /
                                   in.bandwidth[direction];
        for (int s = 0; s < kStates; ++s) {
          if (from[s] == kUnreached) continue;
          arriving[kNone] = std::max(arriving[kNone],
                                     from[s] + CloseCost(in, s) + transfer_s);
        }
        continue;
      }
      for (int s = 0; s < kStates; ++s) {
        arriving[s] = std::max(arriving[s], from[s]);
      }
    }
    std::array<double, kStates>& here = best[v];
    here.fill(kUnreached);
    const double compute_s = in.compute_s[v];
    for (int s = 0; s < kStates; ++s) {
      if (arriving[s] == kUnreached) continue;
      const double cost = arriving[s];
      int next = s;
      double add = 0;
      switch (in.part[v]) {
        case Part::kFree:
          break;
        case Part::kAlone:
          next = kNone;
          add = CloseCost(in, s) + in.solo_s[v];
          break;
        case Part::kHeavy:
          // Cheap work before it may join its kernel; a heavy kernel before
          // it was charged already and ends here.
          next = kCharged;
          add = in.launch_s + compute_s +
                (in.has_flops[v] || s == kCheapFlops ? in.small_kernel_s : 0);
          break;
        case Part::kCheap:
          if (s == kNone || s == kCheapRun) {
            next = in.has_flops[v] ? kCheapFlops : kCheapRun;
          }
          add = compute_s;
          break;
      }
      here[next] = std::max(here[next], cost + add);
    }
    for (int s = 0; s < kStates; ++s) {
      if (here[s] != kUnreached) {
        (*finish_s)[v] = std::max((*finish_s)[v], here[s] + CloseCost(in, s));
      }
    }
    bound = std::max(bound, (*finish_s)[v]);
  }
  return bound;
}

// The transfer every plan that fits in memory makes (see the top of the
// file): per weakly connected component whose resident bytes no device
// holds, the least over its data edges of the source's finish + latency +
// bytes / bandwidth; the largest over such components. 0 when none.
double MemorySplitSeconds(const graph::Graph& graph, const Topology& topology,
                          const std::vector<double>& finish_s) {
  const int devices = topology.num_devices();
  if (devices < 2) return 0;
  int64_t capacity = 0;
  double latency_s = std::numeric_limits<double>::infinity();
  double bandwidth = 0;
  for (int a = 0; a < devices; ++a) {
    capacity = std::max(capacity, topology.devices[a].memory_bytes);
    for (int b = 0; b < devices; ++b) {
      if (a == b) continue;
      latency_s = std::min(latency_s, topology.link(a, b).latency_s);
      bandwidth =
          std::max(bandwidth, topology.link(a, b).bandwidth_bytes_per_s);
    }
  }
  if (bandwidth <= 0) return 0;
  const int n = graph.num_nodes();
  std::vector<NodeId> parent(n);
  for (NodeId id = 0; id < n; ++id) parent[id] = id;
  const auto root = [&parent](NodeId id) {
    while (parent[id] != id) id = parent[id] = parent[parent[id]];
    return id;
  };
  for (NodeId id = 0; id < n; ++id) {
    for (const Edge& edge : graph.in_edges(id)) {
      if (!edge.control) parent[root(edge.src)] = root(id);
    }
  }
  std::vector<int64_t> resident_bytes(n, 0);
  std::vector<double> least_s(n, std::numeric_limits<double>::infinity());
  for (NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    const NodeId r = root(id);
    if (node.kind == graph::OpKind::kParameter ||
        node.kind == graph::OpKind::kConstant) {
      resident_bytes[r] += node.output_bytes();
    }
    for (const Edge& edge : graph.in_edges(id)) {
      if (edge.control) continue;
      least_s[r] =
          std::min(least_s[r],
                   finish_s[edge.src] + latency_s +
                       static_cast<double>(graph.EdgeBytes(edge)) / bandwidth);
    }
  }
  double term_s = 0;
  for (NodeId r = 0; r < n; ++r) {
    if (resident_bytes[r] > capacity && std::isfinite(least_s[r])) {
      term_s = std::max(term_s, least_s[r]);
    }
  }
  return term_s;
}

// Kernel time no plan avoids, over all devices together.
double WorkSeconds(const BoundInputs& in) {
  double total_s = 0;
  bool cheap_work = false;
  bool cheap_flops = false;
  bool heavy_kernel = false;
  for (size_t id = 0; id < in.part.size(); ++id) {
    // (An op that never fuses has its compute inside its solo time.)
    if (in.part[id] != Part::kAlone) total_s += in.compute_s[id];
    switch (in.part[id]) {
      case Part::kFree:
        break;
      case Part::kAlone:
        total_s += in.solo_s[id];
        break;
      case Part::kHeavy:
        total_s += in.launch_s + (in.has_flops[id] ? in.small_kernel_s : 0);
        heavy_kernel = true;
        break;
      case Part::kCheap:
        cheap_work = true;
        cheap_flops = cheap_flops || in.has_flops[id];
        break;
    }
  }
  // Cheap work with no heavy kernel to join needs a kernel of its own (a
  // kernel of an op that never fuses takes none); with one (it may join
  // it) it needs none more.
  if (cheap_work && !heavy_kernel) {
    total_s += in.launch_s + (cheap_flops ? in.small_kernel_s : 0);
  }
  return total_s;
}

// Bytes no fusion removes. A kernel's bytes are the sum over its members
// of their reads and writes, less each input edge from inside the kernel
// and the write of a member all of whose consumers are inside (then
// clamped at 0). A node that cannot share a kernel pays all its bytes; for
// the others only the sum over all of them, less everything fusion could
// remove, is certain (a member may even subtract more than it reads).
double UnavoidableBytes(const graph::Graph& graph, const BoundInputs& in) {
  double alone_bytes = 0;
  double fusible_bytes = 0;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) {
    const graph::Node& node = graph.node(id);
    const double traffic =
        static_cast<double>(node.bytes_read + node.bytes_written);
    if (in.part[id] == Part::kAlone) {
      if (in.solo_s[id] > 0) alone_bytes += std::max(0.0, traffic);
      continue;
    }
    double least = traffic;
    for (const Edge& edge : graph.in_edges(id)) {
      if (!edge.control && in.part[edge.src] != Part::kAlone) {
        least -= static_cast<double>(graph.EdgeBytes(edge));
      }
    }
    bool all_consumers_fusible = !graph.out_edges(id).empty();
    for (const Edge& edge : graph.out_edges(id)) {
      if (in.part[edge.dst] == Part::kAlone) all_consumers_fusible = false;
    }
    if (all_consumers_fusible) least -= static_cast<double>(node.bytes_written);
    // A free node left alone runs no kernel and moves nothing.
    if (in.part[id] == Part::kFree) least = std::min(0.0, least);
    fusible_bytes += least;
  }
  return alone_bytes + std::max(0.0, fusible_bytes);
}

}  // namespace

double LowerBoundTerms::seconds() const {
  return std::max({path_s, work_s, memory_s});
}

double LowerBoundTerms::fits_in_memory_seconds() const {
  return std::max(seconds(), memory_split_s);
}

LowerBoundTerms ComputeLowerBound(const graph::Graph& graph,
                                  const Topology& topology,
                                  const OpCostModel& cost_model) {
  LowerBoundTerms terms;
  if (topology.devices.empty() || graph.num_nodes() == 0) return terms;
  const BoundInputs in = Prepare(graph, topology, cost_model);
  std::vector<double> finish_s;
  terms.path_s = PathBound(graph, in, &finish_s);
  terms.memory_split_s = MemorySplitSeconds(graph, topology, finish_s);
  terms.work_s = WorkSeconds(in) / topology.num_devices();
  double total_bandwidth = 0;
  for (const DeviceProfile& device : topology.devices) {
    total_bandwidth += device.memory_bandwidth_bytes_per_s;
  }
  if (total_bandwidth > 0) {
    terms.memory_s = UnavoidableBytes(graph, in) / total_bandwidth;
  }
  // A learned runtime model prices a kernel at its roofline time times
  // exp(r), r >= min_log_ratio: every time the bound adds up stays a lower
  // bound once scaled by the smallest such factor (<= 1).
  double scale = 1;
  for (const DeviceProfile& device : topology.devices) {
    if (device.runtime_model != nullptr) {
      scale =
          std::min(scale, std::exp(static_cast<double>(
                              device.runtime_model->params().min_log_ratio)));
    }
  }
  if (scale < 1) {
    terms.path_s *= scale;
    terms.work_s *= scale;
    terms.memory_s *= scale;
    terms.memory_split_s *= scale;
  }
  return terms;
}

}  // namespace gopt::simulator
