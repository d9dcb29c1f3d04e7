#include "simulator/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "simulator/chrome_trace.h"
#include "simulator/fusion_rules.h"
#include "simulator/testing/test_graphs.h"

namespace gopt::simulator {
namespace {

using graph::DType;
using graph::Graph;
using graph::GraphBuilder;
using graph::MakeTensorType;
using graph::Node;
using graph::OpKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kTolerance = 1e-12;

// Round numbers: a kernel with F FLOPs and B bytes takes
// max((F + 1e6) / 1e12, B / 1e11) + 1e-6 s (see RoundNumberTopology).
Topology TestTopology(int devices = 2) {
  return testing::RoundNumberTopology(devices);
}

// The graphs of these tests: ops are elementwise, f32[elements].
class GraphMaker : public testing::TestGraphBuilder {
 public:
  int Op(const std::string& name, double flops, std::vector<int> inputs,
         int64_t elements = 1000) {
    return AddOp(name, OpKind::kElementwiseBinary, flops, inputs, elements);
  }
};

SimulationResult RunSimulation(const Graph& graph, const Topology& topology,
                               const Plan& plan) {
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  auto result = simulator.Simulate(plan);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SimulationResult();
}

TEST(SimulatorTest, ChainOnOneDevice) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e9, {p});
  g.Op("b", 2e9, {a});
  const Graph graph = g.Build();
  // a: (1e9 + 1e6) / 1e12 + 1e-6 = 1.002e-3; b: 2.001e-3 + 1e-6 = 2.002e-3.
  const SimulationResult result =
      RunSimulation(graph, TestTopology(), DefaultPlan(graph));
  EXPECT_NEAR(result.step_time_s, 3.004e-3, kTolerance);
  EXPECT_NEAR(result.node_start_s[2], 1.002e-3, kTolerance);
  EXPECT_NEAR(result.device_busy_s[0], 3.004e-3, kTolerance);
  EXPECT_EQ(result.num_kernels, 2);
  EXPECT_EQ(result.num_transfers, 0);
  EXPECT_THAT(result.critical_path, ElementsAre(0, 1, 2));
}

TEST(SimulatorTest, DiamondAcrossTwoDevicesPaysTransfers) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e9, {p}, /*elements=*/1'000'000);
  const int b = g.Op("b", 1e9, {a});
  const int c = g.Op("c", 1e9, {a}, /*elements=*/1'000'000);
  g.Op("d", 1e9, {b, c});
  const Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.device[c] = 1;
  // Every kernel takes 1.002e-3. a: [0, 1.002e-3]; b on device 0:
  // [1.002e-3, 2.004e-3]. a's 4e6-byte output goes to device 1 in
  // 1e-5 + 4e6 / 1e10 = 4.1e-4: arrives 1.412e-3; c: [1.412e-3, 2.414e-3];
  // c's output returns by 2.824e-3; d: [2.824e-3, 3.826e-3].
  const SimulationResult result = RunSimulation(graph, TestTopology(), plan);
  EXPECT_NEAR(result.node_start_s[c], 1.412e-3, kTolerance);
  EXPECT_NEAR(result.node_start_s[4], 2.824e-3, kTolerance);
  EXPECT_NEAR(result.step_time_s, 3.826e-3, kTolerance);
  EXPECT_EQ(result.num_transfers, 2);
  EXPECT_EQ(result.bytes_moved, 8'000'000);
  // The step time is decided by p -> a -> (send) -> c -> (send) -> d.
  EXPECT_THAT(result.critical_path, ElementsAre(p, a, c, 4));
  EXPECT_NEAR(result.critical_path_busy_s, 3 * 1.002e-3 + 2 * 4.1e-4,
              kTolerance);
}

TEST(SimulatorTest, TensorIsSentOncePerRemoteDevice) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e6, {p}, /*elements=*/1'000'000);
  const int b = g.Op("b", 1e6, {a});
  const int c = g.Op("c", 1e6, {a});
  const Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.device[b] = 1;
  plan.device[c] = 1;
  const SimulationResult result = RunSimulation(graph, TestTopology(), plan);
  EXPECT_EQ(result.num_transfers, 1);
  EXPECT_EQ(result.bytes_moved, 4'000'000);
}

// A link is busy for a transfer's bytes only: its latency delays the
// arrival but overlaps the next transfer queued on the link.
TEST(SimulatorTest, LatencyOfQueuedTransfersOverlaps) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int q = g.Param("q", 1000);
  const int a = g.Op("a", 1e6, {p});
  const int b = g.Op("b", 1e6, {q});
  const Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.device[a] = 1;
  plan.device[b] = 1;
  // p and q (4000 bytes each) leave device 0 at 0: the first arrives at
  // 1e-5 + 4e-7, the second 4e-7 later (not after a second latency), while
  // the first's consumer runs (3e-6); the other consumer follows it.
  const SimulationResult result = RunSimulation(graph, TestTopology(), plan);
  EXPECT_EQ(result.num_transfers, 2);
  const auto [first, second] =
      std::minmax(result.node_start_s[a], result.node_start_s[b]);
  EXPECT_NEAR(first, 1e-5 + 4e-7, kTolerance);
  EXPECT_NEAR(second, 1e-5 + 4e-7 + 3e-6, kTolerance);
  ASSERT_EQ(result.transfers.size(), 2u);
  EXPECT_NEAR(std::max(result.transfers[0].end_s, result.transfers[1].end_s),
              1e-5 + 8e-7, kTolerance);
}

TEST(SimulatorTest, FusedChainPaysOneLaunch) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e6, {p});
  const int b = g.Op("b", 1e6, {a});
  const int c = g.Op("c", 1e6, {b});
  const Graph graph = g.Build();
  // Unfused: 3 x ((1e6 + 1e6) / 1e12 + 1e-6) = 9e-6.
  EXPECT_NEAR(
      RunSimulation(graph, TestTopology(), DefaultPlan(graph)).step_time_s,
      9e-6, kTolerance);
  // Fused: (3e6 + 1e6) / 1e12 + 1e-6 = 5e-6, one kernel. Its traffic is
  // 3 x 8000 minus the internal reads and writes of a and b (4 x 4000):
  // 8000 bytes, 8e-8 s, well under the compute time.
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = {-1, 0, 0, 0};
  const SimulationResult fused = RunSimulation(graph, TestTopology(), plan);
  EXPECT_NEAR(fused.step_time_s, 5e-6, kTolerance);
  EXPECT_EQ(fused.num_kernels, 1);
  EXPECT_NEAR(fused.node_start_s[a], 0, kTolerance);
  EXPECT_NEAR(fused.node_end_s[c], 5e-6, kTolerance);
}

// On a device whose groups run op by op (fused_groups_run_op_by_op), a
// group is one scheduling unit whose members keep their own kernels: the
// same launches, bytes and class curves as unfused, so the same step time.
TEST(SimulatorTest, GroupOnAnOpByOpDeviceCostsItsMembersKernels) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e6, {p});
  const int b = g.Op("b", 1e6, {a});
  const int c = g.Op("c", 1e6, {b});
  const Graph graph = g.Build();
  Topology topology = TestTopology();
  for (DeviceProfile& d : topology.devices) {
    d.fused_groups_run_op_by_op = true;
    // A calibrated elementwise curve: it prices every member, grouped or not.
    d.op_curves[static_cast<int>(OpCostClass::kElementwise)] =
        OpClassCurve{0.5, 0.0, 1.0, 3e-6};
  }
  // Each op: 1e6 / (1e12 * 0.5) + 3e-6 = 5e-6.
  const SimulationResult unfused =
      RunSimulation(graph, topology, DefaultPlan(graph));
  EXPECT_NEAR(unfused.step_time_s, 15e-6, kTolerance);
  Plan plan = DefaultPlan(graph);
  plan.fusion_group = {-1, 0, 0, -1};
  const SimulationResult grouped = RunSimulation(graph, topology, plan);
  EXPECT_NEAR(grouped.step_time_s, 15e-6, kTolerance);
  EXPECT_EQ(grouped.num_kernels, 3);
  // One unit: a and b start together and end together.
  EXPECT_NEAR(grouped.node_end_s[a], 10e-6, kTolerance);
  EXPECT_NEAR(grouped.node_start_s[b], 0, kTolerance);
  EXPECT_NEAR(grouped.node_start_s[c], 10e-6, kTolerance);
  // The same topology with fused kernels: a and b share one kernel of the
  // device's own numbers, (2e6 + 1e6) / 1e12 + 1e-6, then c alone.
  for (DeviceProfile& d : topology.devices) d.fused_groups_run_op_by_op = false;
  EXPECT_NEAR(RunSimulation(graph, topology, plan).step_time_s, 4e-6 + 5e-6,
              kTolerance);
}

TEST(SimulatorTest, WeightsOverCapacityAreOom) {
  GraphMaker g;
  const int p = g.Param("weights", 300'000'000);  // 1.2e9 bytes > 1e9
  g.Op("a", 1e6, {p});
  const Graph graph = g.Build();
  const SimulationResult result =
      RunSimulation(graph, TestTopology(), DefaultPlan(graph));
  EXPECT_TRUE(result.oom);
  EXPECT_GE(result.peak_memory_bytes[0], 1'200'000'000);
  // Split over two devices nothing exceeds 1e9... except the weights
  // themselves, which cannot be split: still OOM on device 0.
  Plan plan = DefaultPlan(graph);
  plan.device[1] = 1;
  EXPECT_TRUE(RunSimulation(graph, TestTopology(), plan).oom);
}

TEST(SimulatorTest, ActivationsAreFreedAfterLastUse) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e6, {p}, /*elements=*/1'000'000);
  const int b = g.Op("b", 1e6, {a}, /*elements=*/1'000'000);
  g.Op("c", 1e6, {b}, /*elements=*/1'000'000);
  const Graph graph = g.Build();
  // Peak: p (4000) + a + b (4e6 each) while b runs; a is freed before c.
  const SimulationResult result =
      RunSimulation(graph, TestTopology(), DefaultPlan(graph));
  EXPECT_EQ(result.peak_memory_bytes[0], 4000 + 8'000'000);
  EXPECT_FALSE(result.oom);
}

TEST(SimulatorTest, PriorityInversionChangesStepTime) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int x = g.Op("x", 1e9, {p});
  const int y = g.Op("y", 1e6, {p}, /*elements=*/1);
  const int z = g.Op("z", 1e9, {y});
  const Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.device[z] = 1;
  // FIFO runs x first: x [0, 1.002e-3], y [1.002e-3, 1.005e-3], y's 4 bytes
  // arrive after 1e-5 + 4e-10, z ends 1.002e-3 later.
  const double send = 1e-5 + 4.0 / 1e10;
  EXPECT_NEAR(RunSimulation(graph, TestTopology(), plan).step_time_s,
              1.005e-3 + send + 1.002e-3, kTolerance);
  // Prioritising y lets z overlap x: y [0, 3e-6], x [3e-6, 1.005e-3],
  // z [3e-6 + send, 3e-6 + send + 1.002e-3].
  plan.priority = {0, 0, 1, 0};
  const SimulationResult result = RunSimulation(graph, TestTopology(), plan);
  EXPECT_NEAR(result.step_time_s, 3e-6 + send + 1.002e-3, kTolerance);
  EXPECT_NEAR(result.node_start_s[x], 3e-6, kTolerance);
}

TEST(SimulatorTest, LayoutMismatchInsertsACopy) {
  graph::GraphBuilder builder("layout", "generated");
  Node p;
  p.name = "p";
  p.kind = OpKind::kParameter;
  p.outputs = {MakeTensorType(DType::kF32, {1000, 1000})};
  Node t = p;
  t.name = "t";
  t.kind = OpKind::kElementwiseUnary;
  t.flops = 1e6;
  t.bytes_read = t.bytes_written = 4'000'000;
  Node u = t;
  u.name = "u";
  const int pi = builder.AddNode(p);
  const int ti = builder.AddNode(t);
  const int ui = builder.AddNode(u);
  builder.AddEdge(pi, 0, ti, 0);
  builder.AddEdge(ti, 0, ui, 0);
  const Graph graph = std::move(builder).Build(graph::GraphLimits()).value();
  Plan plan = DefaultPlan(graph);
  plan.layout = {{}, {0, 1}, {1, 0}};
  // Each op: max(2e-6, 8e6 / 1e11 = 8e-5) + 1e-6 = 8.1e-5. The copy before
  // u reads and writes 4e6 bytes: 8e-5 + a 1e-6 launch.
  const SimulationResult result = RunSimulation(graph, TestTopology(), plan);
  EXPECT_NEAR(result.layout_copy_s, 8.1e-5, kTolerance);
  EXPECT_NEAR(result.step_time_s, 3 * 8.1e-5, kTolerance);
}

TEST(SimulatorTest, RejectsBadPlans) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e6, {p});
  const int b = g.Op("b", 1e6, {a});
  g.Op("c", 1e6, {b});
  const Graph graph = g.Build();
  RooflineCostModel cost_model;
  const Topology topology = TestTopology();
  Simulator simulator(graph, topology, cost_model);

  Plan short_plan = DefaultPlan(graph);
  short_plan.device.pop_back();
  EXPECT_THAT(std::string(simulator.Simulate(short_plan).status().message()),
              HasSubstr("'device' has 3 entries; the graph 'test' has 4"));

  Plan far = DefaultPlan(graph);
  far.device[2] = 7;
  EXPECT_THAT(std::string(simulator.Simulate(far).status().message()),
              HasSubstr("node 'b' on device 7"));

  Plan split_group = DefaultPlan(graph);
  split_group.fusion_group = {-1, 0, 0, -1};
  split_group.device[b] = 1;
  EXPECT_THAT(std::string(simulator.Simulate(split_group).status().message()),
              HasSubstr("spans devices"));

  Plan cycle = DefaultPlan(graph);
  cycle.fusion_group = {-1, 0, -1, 0};  // a and c fused around b
  EXPECT_THAT(std::string(simulator.Simulate(cycle).status().message()),
              HasSubstr("cycle"));
}

TEST(SimulatorTest, CpuOnlyNodeMustRunOnTheCpu) {
  graph::GraphBuilder builder("host", "generated");
  Node audio;
  audio.name = "mfcc";
  audio.op = "Mfcc";
  audio.kind = OpKind::kOther;
  audio.outputs = {MakeTensorType(DType::kF32, {10})};
  audio.bytes_written = 40;
  audio.device_constraint = graph::DeviceConstraint::kCpuOnly;
  builder.AddNode(audio);
  const Graph graph = std::move(builder).Build(graph::GraphLimits()).value();
  Topology topology = TestTopology();
  topology.devices[1].kind = DeviceKind::kCpu;
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  EXPECT_THAT(
      std::string(simulator.Simulate(DefaultPlan(graph)).status().message()),
      HasSubstr("CPU-only node 'mfcc' (Mfcc) on device 0"));
  Plan plan = DefaultPlan(graph);
  plan.device[0] = 1;
  EXPECT_TRUE(simulator.Simulate(plan).ok());
  // The framework default on this topology puts it there itself.
  EXPECT_EQ(DefaultPlan(graph, topology).device[0], 1);
  EXPECT_TRUE(simulator.Simulate(DefaultPlan(graph, topology)).ok());
}

// "variable" anchors colocation group "variable"; "read" belongs to it.
Graph ColocatedGraph() {
  graph::GraphBuilder builder("colocated", "generated");
  for (const char* name : {"variable", "read", "other"}) {
    Node node;
    node.name = name;
    node.op = "op";
    node.kind = OpKind::kElementwiseUnary;
    node.outputs = {MakeTensorType(DType::kF32, {10})};
    if (std::string(name) != "other") {
      node.colocation_group = builder.ColocationGroup("variable");
    }
    builder.AddNode(std::move(node));
  }
  return std::move(builder).Build(graph::GraphLimits()).value();
}

TEST(SimulatorTest, SplitColocationGroupIsRejected) {
  const Graph graph = ColocatedGraph();
  Plan plan = DefaultPlan(graph);
  plan.device = {/*variable=*/0, /*read=*/1, /*other=*/1};
  EXPECT_THAT(std::string(ValidatePlan(plan, graph, TestTopology()).message()),
              HasSubstr("plan splits colocation group 'variable': node "
                        "'variable' on device 0, node 'read' on device 1"));
}

TEST(SimulatorTest, ColocateGroupsFollowsTheAnchor) {
  const Graph graph = ColocatedGraph();
  std::vector<int32_t> device = {/*variable=*/1, /*read=*/0, /*other=*/0};
  ColocateGroups(graph, TestTopology(), &device);
  EXPECT_THAT(device, ElementsAre(1, 1, 0));
  Plan plan = DefaultPlan(graph);
  plan.device = device;
  EXPECT_TRUE(ValidatePlan(plan, graph, TestTopology()).ok());
}

TEST(SimulatorTest, ParallelSimulationsAgreeWithSerialOnes) {
  // One Simulator shared by threads, each simulating its own plans (as
  // parallel PPO rollouts do); results equal the serial ones.
  GraphMaker g;
  int previous = g.Param("p", 1000);
  std::vector<int> nodes;
  for (int i = 0; i < 200; ++i) {
    previous = g.Op("n" + std::to_string(i), 1e6 * (1 + i % 7),
                    {previous, i > 3 ? nodes[i - 3] : previous},
                    /*elements=*/1000 + i);
    nodes.push_back(previous);
  }
  const Graph graph = g.Build();
  const Topology topology = TestTopology(/*devices=*/4);
  RooflineCostModel cost_model;
  Simulator simulator(graph, topology, cost_model);
  std::vector<Plan> plans;
  for (int k = 0; k < 8; ++k) {
    Plan plan = DefaultPlan(graph);
    for (int i = 0; i < graph.num_nodes(); ++i)
      plan.device[i] = (i * (k + 1)) % 4;
    plans.push_back(plan);
  }
  std::vector<double> serial;
  for (const Plan& plan : plans) {
    serial.push_back(simulator.Simulate(plan)->step_time_s);
  }
  std::vector<double> parallel(plans.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = t; k < plans.size(); k += 4) {
        for (int repeat = 0; repeat < 20; ++repeat) {
          parallel[k] = simulator.Simulate(plans[k])->step_time_s;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(parallel, serial);
}

// Fuses runs of consecutive nodes on one device (each node joins the one
// before with probability 1/3) where the kernel rules allow: no op that
// never fuses, at most one dot or convolution per group.
void FuseRandomRuns(std::mt19937_64& rng, const Graph& graph, Plan* plan) {
  const int n = graph.num_nodes();
  plan->fusion_group.assign(n, -1);
  std::vector<uint8_t> has_heavy(n, 0);  // by group id (its second member)
  for (int i = 1; i < n; ++i) {
    if (rng() % 3 != 0 || plan->device[i] != plan->device[i - 1]) continue;
    const FusionRole before = FusionRoleOf(graph.node(i - 1).kind);
    const FusionRole role = FusionRoleOf(graph.node(i).kind);
    if (before == FusionRole::kAlone || role == FusionRole::kAlone) continue;
    const int group =
        plan->fusion_group[i - 1] < 0 ? i : plan->fusion_group[i - 1];
    const int heavies =
        (plan->fusion_group[i - 1] < 0 && before == FusionRole::kHeavy) +
        has_heavy[group] + (role == FusionRole::kHeavy);
    if (heavies > 1) continue;
    has_heavy[group] = heavies;
    plan->fusion_group[i - 1] = group;
    plan->fusion_group[i] = group;
  }
}

// What every simulation must satisfy, whatever the plan: checked on random
// graphs and plans (placements, priorities, fusion, layouts), so that a
// faster event loop can be swapped in with its timelines checked against
// the rules rather than against hand-computed numbers alone.
TEST(SimulatorTest, RandomPlansKeepTheTimelineInvariants) {
  RooflineCostModel cost_model;
  int plans_checked = 0;
  int transfers_checked = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    SCOPED_TRACE("graph seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Graph graph =
        testing::RandomGraph(rng, 2 + static_cast<int>(rng() % 60));
    const Topology topology = TestTopology(/*devices=*/1 + seed % 4);
    const Simulator simulator(graph, topology, cost_model);
    const int n = graph.num_nodes();
    const int devices = topology.num_devices();
    for (int k = 0; k < 4; ++k) {
      SCOPED_TRACE("plan " + std::to_string(k));
      Plan plan = DefaultPlan(graph);
      for (int i = 0; i < n; ++i) {
        plan.device[i] =
            k % 2 == 0 ? static_cast<int>(rng() % devices) : i * devices / n;
      }
      if (rng() % 2) {
        plan.priority.resize(n);
        for (int32_t& priority : plan.priority) priority = rng() % 4;
      }
      if (rng() % 2) FuseRandomRuns(rng, graph, &plan);
      if (rng() % 3 == 0) {
        plan.layout.resize(n);
        for (std::vector<int32_t>& layout : plan.layout) {
          if (rng() % 2)
            layout = rng() % 2 ? std::vector<int32_t>{0, 1}
                               : std::vector<int32_t>{1, 0};
        }
      }
      const absl::StatusOr<SimulationResult> result = simulator.Simulate(plan);
      ASSERT_TRUE(result.ok()) << result.status();
      const SimulationResult& r = *result;
      ++plans_checked;
      // A unit: a fusion group (same times for all members) or one node.
      auto unit = [&](int id) {
        return plan.fusion_group.empty() || plan.fusion_group[id] < 0
                   ? -1 - id
                   : plan.fusion_group[id];
      };
      double last_end = 0;
      std::vector<int64_t> resident(devices, 0);
      for (int id = 0; id < n; ++id) {
        EXPECT_LE(0, r.node_start_s[id]);
        EXPECT_LE(r.node_start_s[id], r.node_end_s[id]);
        last_end = std::max(last_end, r.node_end_s[id]);
        const OpKind kind = graph.node(id).kind;
        if (kind == OpKind::kParameter || kind == OpKind::kConstant) {
          resident[plan.device[id]] += graph.node(id).output_bytes();
        }
      }
      // Transfers: one per (tensor, destination device); one at a time
      // per directed link; the bytes they carry add up.
      std::map<std::tuple<int, int, int>, const TransferRecord*> sent;
      std::map<std::pair<int, int>, std::vector<const TransferRecord*>> links;
      int64_t bytes = 0;
      double last_arrival = 0;
      for (const TransferRecord& t : r.transfers) {
        EXPECT_TRUE(
            sent.emplace(std::make_tuple(t.node, t.output, t.dst_device), &t)
                .second)
            << "node " << t.node << " output " << t.output
            << " sent twice to device " << t.dst_device;
        EXPECT_NE(t.src_device, t.dst_device);
        EXPECT_EQ(t.src_device, plan.device[t.node]);
        EXPECT_GE(t.start_s, r.node_end_s[t.node]);
        EXPECT_GT(t.end_s, t.start_s);
        links[{t.src_device, t.dst_device}].push_back(&t);
        bytes += t.bytes;
        last_arrival = std::max(last_arrival, t.end_s);
      }
      EXPECT_EQ(r.bytes_moved, bytes);
      EXPECT_EQ(r.num_transfers, static_cast<int64_t>(r.transfers.size()));
      for (auto& [link, on_link] : links) {
        std::sort(on_link.begin(), on_link.end(),
                  [](const TransferRecord* a, const TransferRecord* b) {
                    return a->start_s < b->start_s;
                  });
        // One transfer's bytes at a time; latencies overlap.
        const double latency_s =
            topology.link(link.first, link.second).latency_s;
        for (size_t i = 1; i < on_link.size(); ++i) {
          EXPECT_GE(on_link[i]->start_s,
                    on_link[i - 1]->end_s - latency_s - kTolerance)
              << "link " << link.first << "->" << link.second;
          EXPECT_GE(on_link[i]->end_s, on_link[i - 1]->end_s)
              << "link " << link.first << "->" << link.second;
        }
      }
      // Dependencies: a consumer starts after its producer ends, and after
      // the transfer that brings a remote input.
      for (const graph::Edge& edge : graph.edges()) {
        if (unit(edge.src) == unit(edge.dst)) continue;
        const double ready = r.node_end_s[edge.src];
        const int src_device = plan.device[edge.src];
        const int dst_device = plan.device[edge.dst];
        if (edge.control || src_device == dst_device) {
          EXPECT_GE(r.node_start_s[edge.dst], ready)
              << edge.src << " -> " << edge.dst;
          continue;
        }
        const auto it =
            sent.find(std::make_tuple(edge.src, edge.src_output, dst_device));
        ASSERT_NE(it, sent.end())
            << "no transfer for " << edge.src << " -> " << edge.dst;
        EXPECT_GE(r.node_start_s[edge.dst], it->second->end_s)
            << edge.src << " -> " << edge.dst;
        ++transfers_checked;
      }
      // Devices: one kernel at a time; busy time is the kernels' time.
      std::vector<std::map<int, std::pair<double, double>>> kernels(devices);
      for (int id = 0; id < n; ++id) {
        if (r.node_end_s[id] > r.node_start_s[id]) {
          kernels[plan.device[id]][unit(id)] = {r.node_start_s[id],
                                                r.node_end_s[id]};
        }
      }
      for (int d = 0; d < devices; ++d) {
        std::vector<std::pair<double, double>> spans;
        double busy = 0;
        for (const auto& [u, span] : kernels[d]) {
          spans.push_back(span);
          busy += span.second - span.first;
        }
        std::sort(spans.begin(), spans.end());
        for (size_t i = 1; i < spans.size(); ++i) {
          EXPECT_GE(spans[i].first, spans[i - 1].second) << "device " << d;
        }
        EXPECT_NEAR(r.device_busy_s[d], busy, 1e-9 * (1 + busy));
        EXPECT_GE(r.peak_memory_bytes[d], resident[d]);
      }
      EXPECT_EQ(r.step_time_s, std::max(last_end, last_arrival));
      EXPECT_GE(r.step_time_s, simulator.LowerBound() * (1 - 1e-12));
      EXPECT_FALSE(r.critical_path.empty());
    }
  }
  EXPECT_EQ(plans_checked, 600);
  EXPECT_GT(transfers_checked, 1000);
}

// Every field of two results, compared exactly (an incremental run must be
// bit-identical to a full one).
void ExpectSameResult(const SimulationResult& a, const SimulationResult& b) {
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.device_busy_s, b.device_busy_s);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.oom, b.oom);
  EXPECT_EQ(a.bytes_moved, b.bytes_moved);
  EXPECT_EQ(a.num_transfers, b.num_transfers);
  EXPECT_EQ(a.num_kernels, b.num_kernels);
  EXPECT_EQ(a.layout_copy_s, b.layout_copy_s);
  EXPECT_EQ(a.critical_path, b.critical_path);
  EXPECT_EQ(a.critical_path_busy_s, b.critical_path_busy_s);
  EXPECT_EQ(a.node_start_s, b.node_start_s);
  EXPECT_EQ(a.node_end_s, b.node_end_s);
  ASSERT_EQ(a.transfers.size(), b.transfers.size());
  for (size_t i = 0; i < a.transfers.size(); ++i) {
    const TransferRecord& x = a.transfers[i];
    const TransferRecord& y = b.transfers[i];
    EXPECT_EQ(std::tie(x.node, x.output, x.src_device, x.dst_device, x.bytes,
                       x.start_s, x.end_s),
              std::tie(y.node, y.output, y.src_device, y.dst_device, y.bytes,
                       y.start_s, y.end_s))
        << "transfer " << i;
  }
}

// A move like the plan search's: a window of 1-8 consecutive nodes of the
// base's critical path raised above every priority, or moved to one device
// (with the rest of their fusion groups); now and then an arbitrary change
// (a lowered priority, a random node moved) that must still simulate
// exactly, from the start.
Plan RandomMove(const Plan& base, const SimulationResult& base_result,
                int devices, std::mt19937_64& rng) {
  Plan plan = base;
  const int n = static_cast<int>(plan.device.size());
  if (plan.priority.empty()) plan.priority.assign(n, 0);
  const std::vector<graph::NodeId>& path = base_result.critical_path;
  const int begin = static_cast<int>(rng() % path.size());
  const int end = std::min<int>(path.size(), begin + 1 + rng() % 8);
  const int top =
      *std::max_element(plan.priority.begin(), plan.priority.end()) + 1;
  // Moves a node with the rest of its fusion group.
  auto move = [&](graph::NodeId id, int target) {
    plan.device[id] = target;
    if (plan.fusion_group.empty() || plan.fusion_group[id] < 0) return;
    for (int j = 0; j < n; ++j) {
      if (plan.fusion_group[j] == plan.fusion_group[id])
        plan.device[j] = target;
    }
  };
  switch (rng() % 8) {
    case 0:  // arbitrary
      plan.priority[rng() % n] = static_cast<int>(rng() % 4) - 1;
      move(static_cast<int>(rng() % n), static_cast<int>(rng() % devices));
      break;
    case 1:
    case 2:
    case 3:
      for (int i = begin; i < end; ++i) plan.priority[path[i]] = top + end - i;
      break;
    default: {
      const int target = static_cast<int>(rng() % devices);
      for (int i = begin; i < end; ++i) move(path[i], target);
    }
  }
  return plan;
}

// The differential test of incremental simulation: thousands of local moves
// on random graphs and plans (priorities, fusion, layouts, tight memory),
// each simulated against a recorded base and from scratch, with and without
// a cutoff at the base's step time. Bases change as a search's would (a
// candidate becomes the next base) and two bases alternate on one thread,
// so each thread's restored copy is exercised across bases.
TEST(SimulatorTest, CandidatesMatchFullSimulationBitForBit) {
  RooflineCostModel cost_model;
  int candidates = 0;
  int incremental = 0;
  int stopped = 0;
  int rejoined = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    SCOPED_TRACE("graph seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Graph graph =
        testing::RandomGraph(rng, 2 + static_cast<int>(rng() % 150));
    Topology topology = TestTopology(/*devices=*/1 + seed % 4);
    if (seed % 5 == 0) {
      for (DeviceProfile& device : topology.devices) device.memory_bytes = 1e5;
    }
    const Simulator simulator(graph, topology, cost_model);
    const int n = graph.num_nodes();
    const int devices = topology.num_devices();
    std::vector<std::unique_ptr<Trajectory>> bases;
    for (int k = 0; k < 2; ++k) {
      Plan plan = DefaultPlan(graph);
      for (int i = 0; i < n; ++i) {
        plan.device[i] =
            k == 0 ? static_cast<int>(rng() % devices) : i * devices / n;
      }
      if (rng() % 2) {
        plan.priority.resize(n);
        for (int32_t& priority : plan.priority) priority = rng() % 4;
      }
      if (rng() % 3 == 0) FuseRandomRuns(rng, graph, &plan);
      if (rng() % 4 == 0) {
        plan.layout.resize(n);
        for (std::vector<int32_t>& layout : plan.layout) {
          if (rng() % 2) layout = {static_cast<int32_t>(rng() % 2), 1};
          if (!layout.empty()) layout[1] = 1 - layout[0];
        }
      }
      absl::StatusOr<std::unique_ptr<Trajectory>> base = simulator.Record(plan);
      ASSERT_TRUE(base.ok()) << base.status();
      ExpectSameResult((*base)->result(), simulator.Simulate(plan).value());
      bases.push_back(*std::move(base));
    }
    for (int move = 0; move < 12; ++move) {
      SCOPED_TRACE("move " + std::to_string(move));
      std::unique_ptr<Trajectory>& base = bases[move % 2];
      const Plan plan = RandomMove(base->plan(), base->result(), devices, rng);
      const SimulationResult full = simulator.Simulate(plan).value();
      const CandidateResult candidate =
          simulator.SimulateCandidate(*base, plan).value();
      ASSERT_FALSE(candidate.slower_than_cutoff);
      ExpectSameResult(candidate.result, full);
      if (candidate.incremental) {
        EXPECT_LE(candidate.events_skipped, base->num_events());
      } else {
        EXPECT_EQ(candidate.events_skipped, 0);
      }
      ++candidates;
      incremental += candidate.incremental;
      rejoined += candidate.rejoined_base;
      const double cutoff = base->result().step_time_s;
      const CandidateResult cut =
          simulator.SimulateCandidate(*base, plan, {}, cutoff).value();
      if (cut.slower_than_cutoff) {
        ++stopped;
        EXPECT_GT(full.step_time_s, cutoff);
        EXPECT_GT(cut.step_time_lower_bound_s, cutoff);
        EXPECT_LE(cut.step_time_lower_bound_s, full.step_time_s * (1 + 1e-9));
      } else {
        ExpectSameResult(cut.result, full);
      }
      if (rng() % 4 == 0) {  // the search adopts the candidate
        base = simulator.Record(plan, {}, std::move(base)).value();
      }
    }
  }
  EXPECT_EQ(candidates, 1000 * 12);
  EXPECT_GT(incremental, candidates / 3);
  EXPECT_GT(stopped, 500);
  EXPECT_GT(rejoined, 500);
}

TEST(SimulatorTest, CandidateNeedsItsOwnSimulatorsTrajectory) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  g.Op("a", 1e9, {p});
  const Graph graph = g.Build();
  const Topology topology = TestTopology();
  RooflineCostModel cost_model;
  const Simulator first(graph, topology, cost_model);
  const Simulator second(graph, topology, cost_model);
  const Plan plan = DefaultPlan(graph);
  const std::unique_ptr<Trajectory> base = first.Record(plan).value();
  EXPECT_THAT(second.SimulateCandidate(*base, plan).status().message(),
              HasSubstr("another simulator"));
  Plan bad = plan;
  bad.device[1] = 7;
  EXPECT_THAT(first.SimulateCandidate(*base, bad).status().message(),
              HasSubstr("device 7"));
}

TEST(ChromeTraceTest, EventsMatchTheSimulation) {
  GraphMaker g;
  const int p = g.Param("p", 1000);
  const int a = g.Op("a", 1e9, {p}, /*elements=*/1'000'000);
  const int b = g.Op("b", 1e9, {a});
  g.Op("c", 1e9, {a});
  const Graph graph = g.Build();
  Plan plan = DefaultPlan(graph);
  plan.device[3] = 1;
  const SimulationResult result = RunSimulation(graph, TestTopology(), plan);
  const nlohmann::json trace = ChromeTrace(graph, TestTopology(), plan, result);
  int kernels = 0;
  int transfers = 0;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    if (event["cat"] == "transfer") {
      ++transfers;
      continue;
    }
    ++kernels;
    if (event["name"] == "b") {
      EXPECT_NEAR(event["ts"].get<double>(), result.node_start_s[b] * 1e6,
                  1e-6);
      EXPECT_NEAR(event["dur"].get<double>(),
                  (result.node_end_s[b] - result.node_start_s[b]) * 1e6, 1e-6);
      EXPECT_EQ(event["pid"], 0);
    }
  }
  EXPECT_EQ(kernels, result.num_kernels);
  EXPECT_EQ(transfers, result.num_transfers);
  (void)a;
}

}  // namespace
}  // namespace gopt::simulator
