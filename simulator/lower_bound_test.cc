#include "simulator/lower_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

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

LowerBoundTerms Bound(const Graph& graph, const Topology& topology,
                      bool kernel_rules) {
  RooflineCostModel cost_model;
  LowerBoundOptions options;
  options.kernel_rules = kernel_rules;
  return ComputeLowerBound(graph, topology, cost_model, options);
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
  // Simulate's rules let a, b, c share one kernel: one launch and one
  // small-kernel microsecond, (3e9 + 1e6) / 1e12 + 1e-6. That plan is the
  // fastest, and the bound is exactly its step time.
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", OpKind::kDot, 1e9, {p});
  const int b = g.Op("b", OpKind::kDot, 1e9, {a});
  g.Op("c", OpKind::kDot, 1e9, {b});
  const Graph graph = g.Build();
  const Topology topology = TestTopology();
  const LowerBoundTerms terms = Bound(graph, topology, false);
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
  EXPECT_NEAR(Bound(graph, topology, true).path_s, 6e-6 + 3.001e-3, kTolerance);
  // The greedy-style plan that fuses the add into the first dot reaches it.
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = {-1, 0, 0, -1, -1};
  EXPECT_NEAR(StepTime(graph, topology, plan), 6e-6 + 3.001e-3, kTolerance);
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
  EXPECT_NEAR(Bound(graph, topology, true).path_s, 9e-6, kTolerance);
  EXPECT_NEAR(StepTime(graph, topology, DefaultPlan(graph)), 9e-6, kTolerance);
  // Simulate's own rules let all three share a kernel: 5e-6.
  EXPECT_NEAR(Bound(graph, topology, false).path_s, 5e-6, kTolerance);
  Plan fused = DefaultPlan(graph);
  fused.fusion_group = {-1, 0, 0, 0};
  EXPECT_NEAR(StepTime(graph, topology, fused), 5e-6, kTolerance);
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
  EXPECT_NEAR(Bound(graph, topology, false).path_s, expected, kTolerance);
  // The weight sits on the CPU beside its consumer.
  Plan plan = DefaultPlan(graph, topology);
  plan.device[p] = 1;
  EXPECT_NEAR(StepTime(graph, topology, plan), expected, kTolerance);
  // Without a CPU device the host is implicit, and both may share one
  // kernel: (2e6 + 1e6) / 1e12 + 1e-6.
  EXPECT_NEAR(Bound(graph, TestTopology(), false).path_s, 4e-6, kTolerance);
}

TEST(LowerBoundTest, WeightReadsCountOnlyUnderTheKernelRules) {
  // A 4e8-byte weight read by one cheap op. Under the kernel rules a
  // parameter never joins a kernel, so the read is certain: 4e8 bytes
  // (plus the output's 4000) over both devices' 2e11 B/s. Simulate itself
  // lets the parameter join the op's group, and then the edge is inside the
  // kernel and its bytes are not read: the bound for any plan cannot count
  // them.
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
  EXPECT_NEAR(Bound(graph, topology, true).memory_s, (4e8 + 4000) / 2e11,
              kTolerance);
  EXPECT_NEAR(Bound(graph, topology, false).memory_s, 4000 / 2e11, kTolerance);
  Plan fused = DefaultPlan(graph);
  fused.fusion_group = {0, 0};
  EXPECT_NEAR(StepTime(graph, topology, fused), 3e-6, kTolerance);
  EXPECT_GE(StepTime(graph, topology, DefaultPlan(graph)),
            Bound(graph, topology, true).seconds());
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
  EXPECT_NEAR(Bound(graph, TestTopology(), true).work_s, 2 * 1.002e-3,
              kTolerance);
  EXPECT_NEAR(Bound(graph, TestTopology(), true).path_s, 1.002e-3, kTolerance);
}

// A random graph for the randomized test: parameters and constants, ops of
// every fusion role (cheap, heavy, never fusing; free views among them), f32
// and f16 outputs, a second output on some nodes, edges reading one output
// or all, control edges, and CPU-only / accelerator-only nodes.
Graph RandomGraph(std::mt19937_64& rng, int nodes) {
  const OpKind kinds[] = {OpKind::kElementwiseBinary,
                          OpKind::kDot,
                          OpKind::kConvolution,
                          OpKind::kReshape,
                          OpKind::kIdentity,
                          OpKind::kGather,
                          OpKind::kReduce,
                          OpKind::kSort};
  GraphBuilder builder("random", "generated");
  for (int i = 0; i < nodes; ++i) {
    Node node;
    node.name = "n" + std::to_string(i);
    node.op = "op";
    const bool input = i < 2 || rng() % 8 == 0;
    node.kind = input ? (rng() % 2 ? OpKind::kParameter : OpKind::kConstant)
                      : kinds[rng() % 8];
    node.outputs = {MakeTensorType(rng() % 4 == 0 ? DType::kF16 : DType::kF32,
                                   {static_cast<int64_t>(1 + rng() % 64),
                                    static_cast<int64_t>(1 + rng() % 64)})};
    if (rng() % 5 == 0) {
      node.outputs.push_back(
          MakeTensorType(DType::kF16, {static_cast<int64_t>(1 + rng() % 99)}));
    }
    if (!input) {
      node.flops = static_cast<double>(rng() % 4) * 1e6;
      node.bytes_read = static_cast<int64_t>(rng() % 3) * 40000;
      node.bytes_written = static_cast<int64_t>(rng() % 3) * 20000;
    }
    if (rng() % 8 == 0) {
      node.device_constraint = rng() % 2
                                   ? graph::DeviceConstraint::kCpuOnly
                                   : graph::DeviceConstraint::kAcceleratorOnly;
    }
    const int id = builder.AddNode(std::move(node));
    if (input) continue;
    const int operands = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < operands; ++k) {
      const int src = i - 1 - static_cast<int>(rng() % std::min(i, 10));
      if (rng() % 10 == 0) {
        builder.AddControlEdge(src, id);
      } else {
        builder.AddEdge(src, rng() % 4 == 0 ? graph::Edge::kAllOutputs : 0, id,
                        k);
      }
    }
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
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

// Fusion groups: runs of consecutive nodes on one device (any kinds, or only
// joins the kernel rules allow), or everything on a device in one group.
std::vector<int32_t> RandomFusion(std::mt19937_64& rng, const Graph& graph,
                                  const std::vector<int32_t>& device,
                                  int mode) {
  const int n = graph.num_nodes();
  std::vector<int32_t> group(n, -1);
  if (mode == 2) {
    for (int id = 0; id < n; ++id) group[id] = device[id];
    return group;
  }
  std::vector<int> heavy(n + 1, 0);
  for (int i = 1; i < n; ++i) {
    if (rng() % 2 || device[i] != device[i - 1]) continue;
    const FusionRole a = FusionRoleOf(graph.node(i - 1).kind);
    const FusionRole b = FusionRoleOf(graph.node(i).kind);
    if (mode == 1) {
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

// The bounds hold for every plan Simulate accepts (the kernel-rules one for
// every such plan within the rules), on random graphs, topologies and
// plans: placements, priorities, fusion of any kind (parameters and dots
// together, whole devices in one kernel), layouts, OOM plans.
TEST(LowerBoundTest, RandomPlansNeverBeatTheBounds) {
  RooflineCostModel cost_model;
  LowerBoundOptions rules;
  rules.kernel_rules = true;
  int plans = 0, rule_plans = 0, mega_plans = 0, oom_plans = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Graph graph = RandomGraph(rng, 2 + static_cast<int>(rng() % 60));
    const Topology topology = RandomTopology(rng);
    const Simulator simulator(graph, topology, cost_model);
    const double any_plan_s = simulator.LowerBound();
    const double rules_s =
        ComputeLowerBound(graph, topology, cost_model, rules).seconds();
    EXPECT_GE(rules_s, any_plan_s * (1 - 1e-12));
    const int n = graph.num_nodes();
    for (int k = 0; k < 8; ++k) {
      Plan plan = DefaultPlan(graph);
      plan.device = RandomPlacement(rng, graph, topology);
      if (rng() % 2) {
        plan.priority.resize(n);
        for (int32_t& priority : plan.priority) priority = rng() % 4;
      }
      const int fusion = static_cast<int>(rng() % 4);  // 3: none
      if (fusion < 3) {
        plan.fusion_group = RandomFusion(rng, graph, plan.device, fusion);
      }
      if (rng() % 3 == 0) {
        plan.layout.resize(n);
        for (int id = 0; id < n; ++id) {
          if (graph.node(id).outputs[0].rank() == 2 && rng() % 2) {
            plan.layout[id] = rng() % 2 ? std::vector<int32_t>{0, 1}
                                        : std::vector<int32_t>{1, 0};
          }
        }
      }
      const absl::StatusOr<SimulationResult> result = simulator.Simulate(plan);
      if (!result.ok()) {
        // Only whole-device groups may form a cycle between devices.
        EXPECT_EQ(fusion, 2) << result.status();
        continue;
      }
      ++plans;
      mega_plans += fusion == 2;
      oom_plans += result->oom;
      EXPECT_GE(result->step_time_s, any_plan_s * (1 - 1e-12));
      if (ObeysKernelRules(graph, plan)) {
        ++rule_plans;
        EXPECT_GE(result->step_time_s, rules_s * (1 - 1e-12))
            << "fusion mode " << fusion;
      }
    }
  }
  EXPECT_GT(plans, 2500);
  EXPECT_GT(rule_plans, 1500);
  EXPECT_GT(mega_plans, 200);
  EXPECT_GT(oom_plans, 100);
}

}  // namespace
}  // namespace gopt::simulator
