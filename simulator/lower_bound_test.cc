#include "simulator/lower_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "simulator/fusion_rules.h"
#include "simulator/simulator.h"
#include "simulator/testing/test_graphs.h"

namespace gopt::simulator {
namespace {

using graph::DType;
using graph::Graph;
using graph::GraphBuilder;
using graph::MakeTensorType;
using graph::Node;
using graph::OpKind;

constexpr double kTolerance = 1e-12;

// Round numbers: a kernel with F FLOPs and B bytes takes
// max((F + 1e6) / 1e12, B / 1e11) + 1e-6 s (see RoundNumberTopology).
Topology TestTopology(int devices = 2) {
  return testing::RoundNumberTopology(devices);
}

// The graphs of these tests: ops of a chosen kind, f32[1000].
class GraphMaker : public testing::TestGraphBuilder {
 public:
  int Op(const std::string& name, OpKind kind, double flops,
         std::vector<int> inputs,
         graph::DeviceConstraint constraint = graph::DeviceConstraint::kAny) {
    return AddOp(name, kind, flops, inputs, /*elements=*/1000, constraint);
  }
};

LowerBoundTerms Bound(const Graph& graph, const Topology& topology) {
  RooflineCostModel cost_model;
  return ComputeLowerBound(graph, topology, cost_model);
}

// What Simulate says of `plan` (a rejection's message, else "").
std::string Rejection(const Graph& graph, const Topology& topology,
                      const Plan& plan) {
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  absl::StatusOr<SimulationResult> result = simulator.Simulate(plan);
  return result.ok() ? "" : std::string(result.status().message());
}

double StepTime(const Graph& graph, const Topology& topology,
                const Plan& plan) {
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  absl::StatusOr<SimulationResult> result = simulator.Simulate(plan);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->step_time_s : 0;
}

TEST(LowerBoundTest, FusedChainReachesTheBound) {
  // The kernel rules let the dot a and the adds b, c share one kernel: one
  // launch and one small-kernel microsecond, (3e9 + 1e6) / 1e12 + 1e-6.
  // That plan is the fastest, and the bound is exactly its step time.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kDot, 1e9, {p});
  const int b = g.Op("b", OpKind::kElementwiseBinary, 1e9, {a});
  g.Op("c", OpKind::kElementwiseBinary, 1e9, {b});
  const Graph graph = g.Build();
  const Topology topology = TestTopology();
  const LowerBoundTerms terms = Bound(graph, topology);
  EXPECT_NEAR(terms.path_s, 3.002e-3, kTolerance);
  EXPECT_NEAR(terms.work_s, 3.002e-3 / 2, kTolerance);
  Plan fused = DefaultPlan(graph);
  fused.fusion_group = {-1, 0, 0, 0};
  EXPECT_NEAR(StepTime(graph, topology, fused), terms.seconds(), kTolerance);
}

TEST(LowerBoundTest, KernelRulesChargeALaunchPerDot) {
  // Under the kernel rules each dot is a kernel of its own; the add after
  // the first may join it, so the path pays three launches, not four:
  // 3 x (1e-6 + 1e-6) + (3e9 + 1e6) / 1e12.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kDot, 1e9, {p});
  const int add = g.Op("add", OpKind::kElementwiseBinary, 1e6, {a});
  const int b = g.Op("b", OpKind::kDot, 1e9, {add});
  g.Op("c", OpKind::kDot, 1e9, {b});
  const Graph graph = g.Build();
  const Topology topology = TestTopology();
  EXPECT_NEAR(Bound(graph, topology).path_s, 6e-6 + 3.001e-3, kTolerance);
  // The greedy-style plan that fuses the add into the first dot reaches it.
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = {-1, 0, 0, -1, -1};
  EXPECT_NEAR(StepTime(graph, topology, plan), 6e-6 + 3.001e-3, kTolerance);
  // Fusing two dots breaks the rules, and Simulate says which and why.
  plan.fusion_group = {-1, 0, 0, 0, -1};
  EXPECT_EQ(Rejection(graph, topology, plan),
            "fusion group 0 holds two dots or convolutions, n1 'a' (dot) and "
            "n3 'b' (dot): a kernel holds at most one dot or convolution");
}

TEST(LowerBoundTest, OpsThatNeverFuseCostTheirSoloTime) {
  // A gather never shares a kernel: between two adds it costs its own
  // (1e6 + 1e6) / 1e12 + 1e-6 = 3e-6, and each add needs a kernel too
  // (they cannot share one around the gather): 3 x 3e-6.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kElementwiseBinary, 1e6, {p});
  const int gather = g.Op("gather", OpKind::kGather, 1e6, {a});
  g.Op("b", OpKind::kElementwiseBinary, 1e6, {gather});
  const Graph graph = g.Build();
  const Topology topology = TestTopology();
  EXPECT_NEAR(Bound(graph, topology).path_s, 9e-6, kTolerance);
  EXPECT_NEAR(StepTime(graph, topology, DefaultPlan(graph)), 9e-6, kTolerance);
  // A plan that fuses the gather with the adds is rejected.
  Plan fused = DefaultPlan(graph);
  fused.fusion_group = {-1, 0, 0, 0};
  EXPECT_EQ(
      Rejection(graph, topology, fused)
          .rfind("fusion group 0 holds an op that never shares a kernel, n2 "
                 "'gather' (gather) and n1 'a' (",
                 0),
      0u)
      << Rejection(graph, topology, fused);
}

TEST(LowerBoundTest, DeviceConstraintsForceATransfer) {
  // A CPU-only op feeding an accelerator-only one: two kernels on two
  // devices, and the 4000-byte tensor crosses the link:
  // 2 x 3e-6 + 1e-5 + 4000 / 1e10.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int host = g.Op("host", OpKind::kElementwiseUnary, 1e6, {p},
                        graph::DeviceConstraint::kCpuOnly);
  g.Op("device", OpKind::kElementwiseUnary, 1e6, {host},
       graph::DeviceConstraint::kAcceleratorOnly);
  const Graph graph = g.Build();
  Topology topology = TestTopology();
  topology.devices[1].kind = DeviceKind::kCpu;
  const double expected = 6e-6 + 1e-5 + 4e-7;
  EXPECT_NEAR(Bound(graph, topology).path_s, expected, kTolerance);
  // The weight sits on the CPU beside its consumer.
  Plan plan = DefaultPlan(graph, topology);
  plan.device[p] = 1;
  EXPECT_NEAR(StepTime(graph, topology, plan), expected, kTolerance);
  // Without a CPU device the host is implicit, and both may share one
  // kernel: (2e6 + 1e6) / 1e12 + 1e-6.
  EXPECT_NEAR(Bound(graph, TestTopology()).path_s, 4e-6, kTolerance);
}

TEST(LowerBoundTest, WeightReadsAreCertain) {
  // A 4e8-byte weight read by one cheap op. A parameter never joins a
  // kernel, so the read is certain: 4e8 bytes (plus the output's 4000) over
  // both devices' 2e11 B/s. (A plan that fused it into its reader would not
  // read it; Simulate rejects that plan.)
  GraphBuilder builder("weights", "generated");
  Node w;
  w.name = "w";
  w.kind = OpKind::kParameter;
  w.outputs = {MakeTensorType(DType::kF32, {100'000'000})};
  Node scale;
  scale.name = "scale";
  scale.kind = OpKind::kElementwiseUnary;
  scale.outputs = {MakeTensorType(DType::kF32, {1000})};
  scale.flops = 1e6;
  scale.bytes_read = 400'000'000;
  scale.bytes_written = 4000;
  const int wi = builder.AddNode(std::move(w));
  const int si = builder.AddNode(std::move(scale));
  builder.AddEdge(wi, 0, si, 0);
  const Graph graph = std::move(builder).Build(graph::GraphLimits()).value();
  const Topology topology = TestTopology();
  EXPECT_NEAR(Bound(graph, topology).memory_s, (4e8 + 4000) / 2e11, kTolerance);
  Plan fused = DefaultPlan(graph);
  fused.fusion_group = {0, 0};
  EXPECT_NE(Rejection(graph, topology, fused), "");
  EXPECT_GE(StepTime(graph, topology, DefaultPlan(graph)),
            Bound(graph, topology).seconds());
}

TEST(LowerBoundTest, WorkIsSpreadOverTheDevices) {
  // Four independent dots of 1e9 FLOPs on two devices: at least two each,
  // 2 x (1e-3 + 2e-6) under the kernel rules.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  for (int i = 0; i < 4; ++i) {
    g.Op("d" + std::to_string(i), OpKind::kDot, 1e9, {p});
  }
  const Graph graph = g.Build();
  EXPECT_NEAR(Bound(graph, TestTopology()).work_s, 2 * 1.002e-3, kTolerance);
  EXPECT_NEAR(Bound(graph, TestTopology()).path_s, 1.002e-3, kTolerance);
}

TEST(LowerBoundTest, WeightsNoDeviceHoldsForceATransferWhenTheyFit) {
  // Two 6e8-byte weights, 1e9 bytes per device: a plan that fits splits
  // them, and some edge crosses. The cheapest is a -> b: a ends at 3e-6,
  // then 1e-5 latency and 4000 / 1e10.
  GraphMaker g;
  const int w1 = g.Param("w1", 150'000'000);
  const int w2 = g.Param("w2", 150'000'000);
  const int a = g.Op("a", OpKind::kElementwiseUnary, 1e6, {w1});
  const int b = g.Op("b", OpKind::kElementwiseBinary, 1e6, {a, w2});
  const Graph graph = g.Build();
  const Topology topology = TestTopology();
  const LowerBoundTerms terms = Bound(graph, topology);
  EXPECT_NEAR(terms.memory_split_s, 3e-6 + 1e-5 + 4e-7, kTolerance);
  EXPECT_GT(terms.fits_in_memory_seconds(), terms.seconds());
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  const absl::StatusOr<SimulationResult> together =
      simulator.Simulate(DefaultPlan(graph));
  ASSERT_TRUE(together.ok());
  EXPECT_TRUE(together->oom);
  Plan split = DefaultPlan(graph);
  split.device[w2] = 1;
  split.device[b] = 1;
  const absl::StatusOr<SimulationResult> apart = simulator.Simulate(split);
  ASSERT_TRUE(apart.ok());
  EXPECT_FALSE(apart->oom);
  // The transfer, then b: 1.34e-5 + 3e-6.
  EXPECT_NEAR(apart->step_time_s, 1.64e-5, kTolerance);
  EXPECT_GE(apart->step_time_s, simulator.FitsInMemoryLowerBound());
  // One device alone: no plan fits, and the term says nothing.
  EXPECT_EQ(Bound(graph, TestTopology(1)).memory_split_s, 0);
}

// A random graph for the randomized test (testing::RandomGraph): ops of
// every fusion role (cheap, heavy, never fusing; free views among them), f32
// and f16 outputs, and CPU-only / accelerator-only nodes.
Graph RandomGraph(std::mt19937_64& rng, int nodes) {
  testing::RandomGraphOptions options;
  options.kinds = {OpKind::kElementwiseBinary,
                   OpKind::kDot,
                   OpKind::kConvolution,
                   OpKind::kReshape,
                   OpKind::kIdentity,
                   OpKind::kGather,
                   OpKind::kReduce,
                   OpKind::kSort};
  options.f16_outputs = true;
  options.device_constraints = true;
  return testing::RandomGraph(rng, nodes, options);
}

// 1-4 devices: identical GPUs, or a mix of GPUs and CPUs with their own
// speeds, efficiencies, launch costs and links; small memories, so that
// some plans run out of it.
Topology RandomTopology(std::mt19937_64& rng) {
  const int devices = 1 + static_cast<int>(rng() % 4);
  Topology topology = TestTopology(devices);
  for (DeviceProfile& device : topology.devices) {
    device.memory_bytes = 20'000 + rng() % 200'000;
  }
  if (rng() % 2) return topology;
  for (DeviceProfile& device : topology.devices) {
    device.kind = rng() % 3 == 0 ? DeviceKind::kCpu : DeviceKind::kGpu;
    device.peak_f32_flops = 1e11 * static_cast<double>(1 + rng() % 20);
    device.peak_f16_flops = rng() % 2 ? 0 : 4 * device.peak_f32_flops;
    device.memory_bandwidth_bytes_per_s =
        1e10 * static_cast<double>(1 + rng() % 20);
    device.launch_overhead_s = 1e-6 * static_cast<double>(rng() % 6);
    device.max_efficiency = 0.4 + 0.1 * static_cast<double>(rng() % 7);
  }
  for (Link& link : topology.links) {
    link = Link{1e9 * static_cast<double>(1 + rng() % 50),
                1e-6 * static_cast<double>(rng() % 20)};
  }
  return topology;
}

// A device for each node that ValidatePlan accepts.
std::vector<int32_t> RandomPlacement(std::mt19937_64& rng, const Graph& graph,
                                     const Topology& topology) {
  std::vector<int32_t> cpus, accelerators, device(graph.num_nodes());
  for (int d = 0; d < topology.num_devices(); ++d) {
    (topology.devices[d].kind == DeviceKind::kCpu ? cpus : accelerators)
        .push_back(d);
  }
  const bool both = !cpus.empty() && !accelerators.empty();
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const graph::DeviceConstraint constraint = graph.node(id).device_constraint;
    device[id] = static_cast<int32_t>(rng() % topology.num_devices());
    if (both && constraint == graph::DeviceConstraint::kCpuOnly) {
      device[id] = cpus[rng() % cpus.size()];
    } else if (both &&
               constraint == graph::DeviceConstraint::kAcceleratorOnly) {
      device[id] = accelerators[rng() % accelerators.size()];
    }
  }
  return device;
}

// Fusion groups. Mode 0: runs of consecutive nodes on one device within
// the kernel rules. Mode 1: within the rules, nodes anywhere on a device
// joined at random into up to four groups (which may form a cycle). Mode 2:
// runs of consecutive nodes of any kinds, or everything on a device in one
// group (which the rules mostly reject).
std::vector<int32_t> RandomFusion(std::mt19937_64& rng, const Graph& graph,
                                  const std::vector<int32_t>& device,
                                  int mode) {
  const int n = graph.num_nodes();
  std::vector<int32_t> group(n, -1);
  if (mode == 2 && rng() % 2) {
    for (int id = 0; id < n; ++id) group[id] = device[id];
    return group;
  }
  if (mode == 1) {
    const int slots = 1 + static_cast<int>(rng() % 4);
    std::map<int32_t, bool> has_heavy;
    for (int id = 0; id < n; ++id) {
      const FusionRole role = FusionRoleOf(graph.node(id).kind);
      if (role == FusionRole::kAlone || rng() % 3 == 0) continue;
      const int32_t g = device[id] * 4 + static_cast<int32_t>(rng() % slots);
      if (role == FusionRole::kHeavy) {
        if (has_heavy[g]) continue;
        has_heavy[g] = true;
      }
      group[id] = g;
    }
    return group;
  }
  std::vector<int> heavy(n + 1, 0);
  for (int i = 1; i < n; ++i) {
    if (rng() % 2 || device[i] != device[i - 1]) continue;
    const FusionRole a = FusionRoleOf(graph.node(i - 1).kind);
    const FusionRole b = FusionRoleOf(graph.node(i).kind);
    if (mode == 0) {
      const int g = group[i - 1] < 0 ? i : group[i - 1];
      const int heavies = (group[i - 1] < 0 && a == FusionRole::kHeavy) +
                          heavy[g] + (b == FusionRole::kHeavy);
      if (a == FusionRole::kAlone || b == FusionRole::kAlone || heavies > 1) {
        continue;
      }
      heavy[g] = heavies;
    }
    if (group[i - 1] < 0) group[i - 1] = i;
    group[i] = group[i - 1];
  }
  return group;
}

// Whether every group of `plan` obeys the kernel rules.
bool ObeysKernelRules(const Graph& graph, const Plan& plan) {
  std::map<int32_t, std::vector<int>> members;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!plan.fusion_group.empty() && plan.fusion_group[id] >= 0) {
      members[plan.fusion_group[id]].push_back(id);
    }
  }
  for (const auto& [group, nodes] : members) {
    if (nodes.size() < 2) continue;
    int heavy = 0;
    for (int id : nodes) {
      const FusionRole role = FusionRoleOf(graph.node(id).kind);
      if (role == FusionRole::kAlone) return false;
      heavy += role == FusionRole::kHeavy;
    }
    if (heavy > 1) return false;
  }
  return true;
}

// A random plan of `graph` on `topology`: placement, priorities, fusion
// (RandomFusion's mode `fusion`; 3: none) and layouts.
Plan RandomPlan(std::mt19937_64& rng, const Graph& graph,
                const Topology& topology, int fusion) {
  const int n = graph.num_nodes();
  Plan plan = DefaultPlan(graph);
  plan.device = RandomPlacement(rng, graph, topology);
  if (rng() % 2) {
    plan.priority.resize(n);
    for (int32_t& priority : plan.priority) priority = rng() % 4;
  }
  if (fusion < 3) {
    plan.fusion_group = RandomFusion(rng, graph, plan.device, fusion);
  }
  if (rng() % 3 == 0) {
    plan.layout.resize(n);
    for (int id = 0; id < n; ++id) {
      if (graph.node(id).outputs[0].rank() == 2 && rng() % 2) {
        plan.layout[id] =
            rng() % 2 ? std::vector<int32_t>{0, 1} : std::vector<int32_t>{1, 0};
      }
    }
  }
  return plan;
}

// The bound holds for every plan Simulate accepts, on random graphs,
// topologies and plans: placements, priorities, fusion groups within the
// kernel rules (runs and scattered groups), layouts, OOM plans. Simulate
// rejects exactly the plans whose groups break the rules (or form a cycle).
TEST(LowerBoundTest, RandomPlansNeverBeatTheBounds) {
  RooflineCostModel cost_model;
  int plans = 0, scattered_plans = 0, oom_plans = 0, broken_plans = 0;
  int split_plans = 0;  // fitting plans the memory-split term binds
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Graph graph = RandomGraph(rng, 2 + static_cast<int>(rng() % 60));
    Topology topology = RandomTopology(rng);
    if (seed % 3 == 0 && topology.num_devices() > 1) {
      // Memories just under the weights: plans that fit must split them
      // (when the graph is connected).
      int64_t resident_bytes = 0;
      for (int id = 0; id < graph.num_nodes(); ++id) {
        const OpKind kind = graph.node(id).kind;
        if (kind == OpKind::kParameter || kind == OpKind::kConstant) {
          resident_bytes += graph.node(id).output_bytes();
        }
      }
      for (DeviceProfile& device : topology.devices) {
        device.memory_bytes = resident_bytes * 9 / 10;
      }
      // Slow links, so that the forced transfer outweighs the other terms.
      for (Link& link : topology.links) link.latency_s = 1e-4;
    }
    const Simulator simulator(graph, topology, cost_model);
    const double bound_s = simulator.LowerBound();
    const double fits_s = simulator.FitsInMemoryLowerBound();
    EXPECT_NEAR(bound_s,
                ComputeLowerBound(graph, topology, cost_model).seconds(), 0);
    EXPECT_GE(fits_s, bound_s);
    for (int k = 0; k < 8; ++k) {
      const int fusion = static_cast<int>(rng() % 4);
      const Plan plan = RandomPlan(rng, graph, topology, fusion);
      const absl::StatusOr<SimulationResult> result = simulator.Simulate(plan);
      if (!ObeysKernelRules(graph, plan)) {
        ++broken_plans;
        EXPECT_EQ(fusion, 2);
        ASSERT_FALSE(result.ok());
        EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_EQ(result.status().message().rfind("fusion group ", 0), 0u)
            << result.status();
        continue;
      }
      if (!result.ok()) {
        // Scattered or whole-device groups may form a cycle.
        EXPECT_NE(fusion % 3, 0) << result.status();
        continue;
      }
      ++plans;
      scattered_plans += fusion == 1;
      oom_plans += result->oom;
      EXPECT_GE(result->step_time_s, bound_s * (1 - 1e-12))
          << "fusion mode " << fusion;
      if (!result->oom) {
        split_plans += fits_s > bound_s;
        EXPECT_GE(result->step_time_s, fits_s * (1 - 1e-12))
            << "fusion mode " << fusion;
      }
    }
  }
  EXPECT_GT(plans, 1800);
  EXPECT_GT(scattered_plans, 200);
  EXPECT_GT(oom_plans, 100);
  EXPECT_GT(broken_plans, 200);
  EXPECT_GT(split_plans, 0);
  std::printf(
      "plans %d (scattered groups %d, OOM %d, bound by the memory split "
      "%d), rejected for the kernel rules %d\n",
      plans, scattered_plans, oom_plans, split_plans, broken_plans);
}

// A topology as `gopt calibrate` writes it for a CPU host (fitted curves per
// op class, each with a launch of at least the device's plus 1 us, since
// the roofline's small-kernel term is 1 us), 1-3 alike devices whose fusion
// groups run op by op or as one kernel.
Topology RandomCalibratedTopology(std::mt19937_64& rng) {
  Topology topology = TestTopology(1 + static_cast<int>(rng() % 3));
  DeviceProfile device = topology.devices[0];
  device.kind = DeviceKind::kCpu;
  device.peak_f32_flops = 1e10 * static_cast<double>(5 + rng() % 50);
  device.peak_f64_flops = device.peak_f32_flops / 2;
  device.memory_bandwidth_bytes_per_s =
      1e9 * static_cast<double>(5 + rng() % 50);
  device.memory_bytes = 20'000 + rng() % 200'000;
  device.launch_overhead_s = 1e-6 * static_cast<double>(1 + rng() % 5);
  device.max_efficiency = 1.0;
  device.fused_groups_run_op_by_op = rng() % 4 != 0;
  for (int c = 1; c < kNumOpCostClasses; ++c) {
    const bool compute = c == static_cast<int>(OpCostClass::kDot) ||
                         c == static_cast<int>(OpCostClass::kConvolution);
    OpClassCurve& curve = device.op_curves[c];
    curve.max_efficiency =
        compute ? 0.3 + 0.1 * static_cast<double>(rng() % 8) : 1.0;
    curve.half_efficiency_s =
        compute ? 1e-6 * static_cast<double>(1 + rng() % 20) : 0.0;
    curve.bandwidth_efficiency =
        compute ? 1.0 : 0.2 + 0.1 * static_cast<double>(rng() % 9);
    curve.launch_overhead_s =
        device.launch_overhead_s +
        (compute ? 0.0 : 1e-6 * static_cast<double>(1 + rng() % 8));
  }
  topology.devices.assign(topology.devices.size(), device);
  for (Link& link : topology.links) {
    link = Link{1e9 * static_cast<double>(1 + rng() % 20),
                1e-6 * static_cast<double>(rng() % 60)};
  }
  return topology;
}

// On calibrated CPU topologies, where a fusion group may run op by op (each
// member its own kernel at its class's cost) and saves nothing, the bound
// still holds for every plan: they never count on fusion saving a launch or
// a byte that the topology says it does not.
TEST(LowerBoundTest, RandomPlansOnCalibratedTopologiesNeverBeatTheBounds) {
  RooflineCostModel cost_model;
  int plans = 0, op_by_op_plans = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Graph graph = RandomGraph(rng, 2 + static_cast<int>(rng() % 60));
    const Topology topology = RandomCalibratedTopology(rng);
    const Simulator simulator(graph, topology, cost_model);
    const double bound_s = simulator.LowerBound();
    for (int k = 0; k < 8; ++k) {
      Plan plan = DefaultPlan(graph);
      plan.device = RandomPlacement(rng, graph, topology);
      if (rng() % 2) {
        plan.priority.resize(graph.num_nodes());
        for (int32_t& priority : plan.priority) priority = rng() % 4;
      }
      const int fusion = static_cast<int>(rng() % 3);
      plan.fusion_group = RandomFusion(rng, graph, plan.device, fusion);
      const absl::StatusOr<SimulationResult> result = simulator.Simulate(plan);
      if (!result.ok()) {
        // Mode 1 may join groups into a cycle; mode 2 breaks the kernel
        // rules. Simulate refuses both; runs within the rules always pass.
        EXPECT_NE(fusion, 0) << result.status();
        if (ObeysKernelRules(graph, plan)) {
          EXPECT_TRUE(absl::StrContains(result.status().message(), "cycle"))
              << result.status();
        }
        continue;
      }
      ++plans;
      op_by_op_plans += topology.devices[0].fused_groups_run_op_by_op;
      EXPECT_GE(result->step_time_s, bound_s * (1 - 1e-12))
          << "fusion mode " << fusion;
    }
  }
  EXPECT_GT(plans, 1200);
  EXPECT_GT(op_by_op_plans, 800);
}

}  // namespace
}  // namespace gopt::simulator
