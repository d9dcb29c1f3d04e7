#include "policy/go/co_location_decode.h"

#include <algorithm>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/go/fine_tuning.h"
#include "policy/testing/go_instance.h"
#include "simulator/baselines/baseline_context.h"
#include "simulator/baselines/cost_table.h"
#include "simulator/baselines/metis_placer.h"
#include "simulator/generators/generators.h"
#include "simulator/plan.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::ChainGraph;

graph::Graph Gnmt() {
  absl::StatusOr<graph::Graph> gnmt = simulator::generators::GenerateModelGraph(
      simulator::generators::FindGeneratorPreset("gnmt2-small")->options);
  EXPECT_TRUE(gnmt.ok()) << gnmt.status();
  return *std::move(gnmt);
}

std::vector<int32_t> Metis(const TrainingInstance& instance) {
  const simulator::Simulator& sim = *instance.simulator;
  const simulator::baselines::BaselineContext context{
      sim.graph(), sim.topology(), sim.cost_model(), /*seed=*/0};
  absl::StatusOr<std::vector<int32_t>> device =
      simulator::baselines::MetisPlacer().Place(context);
  EXPECT_TRUE(device.ok()) << device.status();
  return *std::move(device);
}

// +4 where `device` keeps a dependency on one device, -4 where it cuts it.
std::vector<float> OracleLogits(const TrainingInstance& instance,
                                const std::vector<int32_t>& device) {
  const GraphFeatures& f = instance.features;
  std::vector<float> logits(f.edge_src.size());
  for (size_t e = 0; e < logits.size(); ++e) {
    logits[e] = device[f.edge_src[e]] == device[f.edge_dst[e]] ? 4.0f : -4.0f;
  }
  return logits;
}

TEST(CoLocationDecodeTest, ZeroLogitsGiveTheMetisPlacement) {
  std::unique_ptr<TrainingInstance> instance = testing::TestInstance(Gnmt(), 4);
  ASSERT_NE(instance, nullptr);
  const std::vector<float> zero(instance->features.edge_src.size(), 0.0f);
  const std::vector<int32_t> metis = Metis(*instance);
  for (double sharpness : kCoLocationSharpness) {
    absl::StatusOr<std::vector<int32_t>> device =
        MetisCoLocationPlacement(*instance, zero, sharpness);
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ(*device, metis) << "sharpness " << sharpness;
  }
  // The three METIS decodes coincide, and the components of nothing are one
  // placement per assignment: 1 METIS placement, 1 component one, 2
  // balanced merges, 1 scheduled component one.
  absl::StatusOr<std::vector<std::vector<int32_t>>> all =
      CoLocationPlacements(*instance, zero);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0], metis);
  EXPECT_LE(all->size(), 5u);
}

TEST(CoLocationDecodeTest, OracleLogitsKeepTheTargetsDependenciesTogether) {
  std::unique_ptr<TrainingInstance> instance = testing::TestInstance(Gnmt(), 4);
  ASSERT_NE(instance, nullptr);
  // A target that cuts the graph in two along its work axis.
  const GraphFeatures& f = instance->features;
  std::vector<int32_t> target(f.num_nodes);
  for (int i = 0; i < f.num_nodes; ++i) {
    target[i] = f.work_position[i] < 0.5f ? 1 : 3;
  }
  const std::vector<float> oracle = OracleLogits(*instance, target);
  for (double threshold : kComponentThresholdLogits) {
    absl::StatusOr<std::vector<int32_t>> device =
        ComponentPlacement(*instance, oracle, threshold);
    ASSERT_TRUE(device.ok()) << device.status();
    ASSERT_TRUE(
        simulator::baselines::CheckPlacement(instance->graph(), 4, *device)
            .ok());
    for (size_t e = 0; e < f.edge_src.size(); ++e) {
      if (oracle[e] > 0) {
        EXPECT_EQ((*device)[f.edge_src[e]], (*device)[f.edge_dst[e]])
            << "dependency " << e << " kept by the target is cut";
      }
    }
    EXPECT_GE(std::set<int32_t>(device->begin(), device->end()).size(), 2u);
  }
  // The METIS decode follows the oracle at least as often as METIS alone.
  auto kept = [&](const std::vector<int32_t>& device) {
    int agree = 0;
    for (size_t e = 0; e < f.edge_src.size(); ++e) {
      agree +=
          (device[f.edge_src[e]] == device[f.edge_dst[e]]) == (oracle[e] > 0);
    }
    return agree;
  };
  absl::StatusOr<std::vector<int32_t>> weighted =
      MetisCoLocationPlacement(*instance, oracle, 2.0);
  ASSERT_TRUE(weighted.ok()) << weighted.status();
  EXPECT_GE(kept(*weighted), kept(Metis(*instance)));
}

TEST(CoLocationDecodeTest, ComponentsWithoutWorkFollowTheirNeighbour) {
  // Every dependency cut: each node is its own component; the parameter
  // (no kernel) joins the node it feeds.
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(ChainGraph(6), 2);
  ASSERT_NE(instance, nullptr);
  const std::vector<float> cut(instance->features.edge_src.size(), -4.0f);
  absl::StatusOr<std::vector<int32_t>> device =
      ComponentPlacement(*instance, cut, 0.0);
  ASSERT_TRUE(device.ok()) << device.status();
  const graph::Graph& graph = instance->graph();
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (!graph.in_edges(id).empty()) continue;
    const graph::NodeId consumer = graph.out_edges(id).front().dst;
    EXPECT_EQ((*device)[id], (*device)[consumer])
        << graph.node(id).name << " left its consumer";
  }
  // With every dependency kept, one component: one device.
  const std::vector<float> keep(cut.size(), 4.0f);
  device = ComponentPlacement(*instance, keep, 0.0);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(std::set<int32_t>(device->begin(), device->end()).size(), 1u);
}

TEST(CoLocationDecodeTest, ScheduledComponentsKeepACutChainOnOneDevice) {
  // Every dependency of a chain cut: LPT scatters the one-node components
  // over both devices, list scheduling keeps the chain where its previous
  // kernel finished (another device would only add transfers).
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(ChainGraph(8), 2);
  ASSERT_NE(instance, nullptr);
  const std::vector<float> cut(instance->features.edge_src.size(), -4.0f);
  absl::StatusOr<std::vector<int32_t>> scattered =
      ComponentPlacement(*instance, cut, 0.0);
  ASSERT_TRUE(scattered.ok()) << scattered.status();
  EXPECT_EQ(std::set<int32_t>(scattered->begin(), scattered->end()).size(), 2u);
  absl::StatusOr<std::vector<int32_t>> scheduled =
      ScheduledComponentPlacement(*instance, cut, 0.0);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  EXPECT_EQ(std::set<int32_t>(scheduled->begin(), scheduled->end()).size(), 1u);
}

TEST(CoLocationDecodeTest, ScheduledComponentsSpreadParallelBranches) {
  // root -> 4 independent heavy branches -> join on 4 devices: cut, each
  // branch starts where it finishes first, so the branches spread; kept,
  // the network asks for one device and gets it.
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(simulator::baselines::testing::FanOutGraph(4), 4);
  ASSERT_NE(instance, nullptr);
  const graph::Graph& graph = instance->graph();
  const std::vector<float> cut(instance->features.edge_src.size(), -4.0f);
  absl::StatusOr<std::vector<int32_t>> device =
      ScheduledComponentPlacement(*instance, cut, 0.0);
  ASSERT_TRUE(device.ok()) << device.status();
  std::set<int32_t> branch_devices;
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (graph.node(id).name.rfind("dot", 0) == 0) {
      branch_devices.insert((*device)[id]);
    }
  }
  EXPECT_GE(branch_devices.size(), 2u);
  const std::vector<float> keep(cut.size(), 4.0f);
  device = ScheduledComponentPlacement(*instance, keep, 0.0);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(std::set<int32_t>(device->begin(), device->end()).size(), 1u);
}

TEST(CoLocationDecodeTest, RelativeThresholdsCutOnlyTheLeastKeptDependency) {
  // Every logit below every absolute threshold, one dependency lower than
  // the rest: the absolute decodes cut all and spread the heavy branches;
  // the relative ones cut that one alone, and the rest stays together.
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(simulator::baselines::testing::FanOutGraph(4), 4);
  ASSERT_NE(instance, nullptr);
  const graph::Graph& graph = instance->graph();
  const GraphFeatures& f = instance->features;
  std::vector<float> logits(f.edge_src.size(), -1.0f);
  for (size_t e = 0; e < logits.size(); ++e) {
    if (graph.node(f.edge_src[e]).name == "root" &&
        graph.node(f.edge_dst[e]).name == "dot3") {
      logits[e] = -3.0f;
    }
  }
  auto dot_devices = [&graph](const std::vector<int32_t>& device) {
    std::set<int32_t> devices;
    for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
      if (graph.node(id).name.rfind("dot", 0) == 0) devices.insert(device[id]);
    }
    return devices.size();
  };
  absl::StatusOr<std::vector<int32_t>> absolute =
      ScheduledComponentPlacement(*instance, logits, 0.0);
  ASSERT_TRUE(absolute.ok()) << absolute.status();
  EXPECT_GE(dot_devices(*absolute), 2u);
  absl::StatusOr<std::vector<std::vector<int32_t>>> all =
      CoLocationPlacements(*instance, logits);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(std::any_of(all->begin(), all->end(),
                          [&](const std::vector<int32_t>& device) {
                            return dot_devices(device) == 1;
                          }));
}

TEST(CoLocationDecodeTest, CutFractionLogitIsTheQuantileOfKernelDependencies) {
  // The fan-out's dependencies between two kernels with logits 0, 1, 2, ...
  // in edge order: cutting a fraction f of them is cutting every logit up
  // to the ceil(f * count)-th smallest.
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(simulator::baselines::testing::FanOutGraph(4), 4);
  ASSERT_NE(instance, nullptr);
  const GraphFeatures& f = instance->features;
  std::vector<float> logits(f.edge_src.size());
  for (size_t e = 0; e < logits.size(); ++e) logits[e] = static_cast<float>(e);
  absl::StatusOr<double> all = CutFractionLogit(*instance, logits, 1.0);
  ASSERT_TRUE(all.ok()) << all.status();
  absl::StatusOr<double> least = CutFractionLogit(*instance, logits, 1e-9);
  ASSERT_TRUE(least.ok()) << least.status();
  EXPECT_LE(*least, *all);
  // At least one dependency is cut, so the threshold is one of the logits.
  EXPECT_NE(std::find(logits.begin(), logits.end(), *least), logits.end());
  for (double bad : {0.0, -0.5, 1.5}) {
    absl::StatusOr<double> refused = CutFractionLogit(*instance, logits, bad);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(std::string(refused.status().message()),
                ::testing::HasSubstr("cut fraction must be in (0, 1]"));
  }
  EXPECT_EQ(
      CutFractionLogit(*instance, std::vector<float>(1), 0.5).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CoLocationDecodeTest,
     DecodesEveryPlacementOfTheSmallGraphsDeterministically) {
  for (const auto& [name, graph] :
       simulator::baselines::testing::SmallGraphs()) {
    if (graph.num_nodes() == 0) continue;
    std::unique_ptr<TrainingInstance> instance =
        testing::TestInstance(graph, 3);
    ASSERT_NE(instance, nullptr) << name;
    std::vector<float> logits(instance->features.edge_src.size());
    for (size_t e = 0; e < logits.size(); ++e) {
      logits[e] = static_cast<float>(e % 5) - 2.0f;
    }
    absl::StatusOr<std::vector<std::vector<int32_t>>> first =
        CoLocationPlacements(*instance, logits);
    ASSERT_TRUE(first.ok()) << name << ": " << first.status();
    for (const std::vector<int32_t>& device : *first) {
      EXPECT_TRUE(simulator::baselines::CheckPlacement(graph, 3, device).ok())
          << name;
    }
    absl::StatusOr<std::vector<std::vector<int32_t>>> again =
        CoLocationPlacements(*instance, logits);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*first, *again) << name;
  }
}

TEST(CoLocationDecodeTest, BalancedMergeKeepsDevicesNearTheirShareOfTheWork) {
  // p -> a1 -> ... -> a8 on two devices: the oracle of the split after a4
  // is reproduced, and with every dependency kept (a wrong "keep" on the
  // cut) the cap still splits the chain where ComponentPlacement would put
  // it all on one device.
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(ChainGraph(8), 2);
  ASSERT_NE(instance, nullptr);
  const graph::Graph& graph = instance->graph();
  std::vector<int32_t> target(graph.num_nodes());
  for (int i = 0; i < graph.num_nodes(); ++i) target[i] = i <= 4 ? 0 : 1;
  const std::vector<float> oracle = OracleLogits(*instance, target);
  absl::StatusOr<std::vector<int32_t>> device =
      BalancedMergePlacement(*instance, oracle, 1.05);
  ASSERT_TRUE(device.ok()) << device.status();
  for (int i = 1; i < graph.num_nodes(); ++i) {
    EXPECT_EQ((*device)[i] == (*device)[i - 1], target[i] == target[i - 1])
        << graph.node(i).name;
  }
  const std::vector<float> keep(oracle.size(), 4.0f);
  device = BalancedMergePlacement(*instance, keep, 1.05);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(std::set<int32_t>(device->begin(), device->end()).size(), 2u);
  device = ComponentPlacement(*instance, keep, 0.0);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(std::set<int32_t>(device->begin(), device->end()).size(), 1u);
}

TEST(CoLocationDecodeTest, RejectsLogitsOfTheWrongLength) {
  std::unique_ptr<TrainingInstance> instance =
      testing::TestInstance(ChainGraph(4), 2);
  ASSERT_NE(instance, nullptr);
  const std::vector<float> short_logits(1, 0.0f);
  absl::StatusOr<std::vector<int32_t>> device =
      ComponentPlacement(*instance, short_logits, 0.0);
  EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(device.status().message().find("one per dependency"),
            std::string::npos)
      << device.status();
  EXPECT_EQ(
      MetisCoLocationPlacement(*instance, short_logits, 1.0).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BalancedMergePlacement(*instance, short_logits, 1.05).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ScheduledComponentPlacement(*instance, short_logits, 0.0).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CoLocationPlacements(*instance, short_logits).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CoLocationDecodeTest, MetisRejectsANegativeEdgeFactorNamingTheEdge) {
  const graph::Graph graph = Gnmt();
  const simulator::Topology topology =
      simulator::baselines::testing::UniformTopology(2);
  simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{graph, topology,
                                                      cost_model, 0};
  const simulator::baselines::CostTable costs(graph, topology, cost_model);
  absl::StatusOr<std::vector<int32_t>> device =
      simulator::baselines::MetisPlaceWeighted(
          context, costs, [](graph::NodeId, graph::NodeId) { return -1.0; });
  EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(device.status().message().find("->"), std::string::npos)
      << device.status();
}

TEST(CoLocationDecodeTest, ZeroShotTriesTheCoLocationPlacementsBeforeSampling) {
  std::unique_ptr<TrainingInstance> instance = testing::TestInstance(Gnmt(), 4);
  ASSERT_NE(instance, nullptr);
  GoModelOptions options = testing::SmallModelOptions(/*seed=*/5);
  options.co_location_head = true;
  absl::StatusOr<std::unique_ptr<GoModel>> model = GoModel::Create(options);
  ASSERT_TRUE(model.ok()) << model.status();
  const TaskSet tasks{true, true, true, false};
  absl::StatusOr<PolicyOutput> output =
      (*model)->Run(instance->features, tasks);
  ASSERT_TRUE(output.ok()) << output.status();
  ASSERT_EQ(output->co_location.size(), instance->features.edge_src.size());
  // The untrained head's METIS placement with the greedy decode's
  // priorities and fusion is among the candidates, so the result is at
  // least as good.
  Actions metis = SampleActions(*output, nullptr);
  metis.device = Metis(*instance);
  const ScoredPlan metis_plan = ScoreActions(*instance, metis);
  absl::StatusOr<ZeroShotResult> first =
      ZeroShot(**model, *instance, tasks, /*num_samples=*/16, /*seed=*/3,
               /*threads=*/2);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(BetterPlan(metis_plan, first->best));
  absl::StatusOr<ZeroShotResult> again =
      ZeroShot(**model, *instance, tasks, 16, 3, /*threads=*/1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(first->best.step_time_s, again->best.step_time_s);
  EXPECT_EQ(first->decode, again->decode);
  // Without samples to spend, only the greedy plan is tried (grouped by
  // both fusion rules).
  absl::StatusOr<ZeroShotResult> greedy_only =
      ZeroShot(**model, *instance, tasks, /*num_samples=*/0, 3, 1);
  ASSERT_TRUE(greedy_only.ok()) << greedy_only.status();
  EXPECT_THAT(greedy_only->decode, ::testing::AnyOf("greedy", "greedy-join"));
  EXPECT_LE(greedy_only->num_valid, 2);
}

// Gnmt() on 4 devices, an untrained network without the co-location head
// and its output for placement, scheduling and fusion (`tasks`).
struct UntrainedGnmt {
  const TaskSet tasks{true, true, true, false};
  std::unique_ptr<TrainingInstance> instance;
  std::unique_ptr<GoModel> model;
  PolicyOutput output;
};

void MakeUntrainedGnmt(UntrainedGnmt* gnmt) {
  gnmt->instance = testing::TestInstance(Gnmt(), 4);
  ASSERT_NE(gnmt->instance, nullptr);
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(testing::SmallModelOptions(/*seed=*/5));
  ASSERT_TRUE(model.ok()) << model.status();
  gnmt->model = *std::move(model);
  absl::StatusOr<PolicyOutput> output =
      gnmt->model->Run(gnmt->instance->features, gnmt->tasks);
  ASSERT_TRUE(output.ok()) << output.status();
  gnmt->output = *std::move(output);
}

TEST(CoLocationDecodeTest, ZeroShotTriesTheHintPlacementsThePriorsRead) {
  UntrainedGnmt gnmt;
  ASSERT_NO_FATAL_FAILURE(MakeUntrainedGnmt(&gnmt));
  const TrainingInstance& instance = *gnmt.instance;
  GoModel& model = *gnmt.model;
  Actions heft = SampleActions(gnmt.output, nullptr);
  // The untrained network follows its strongest prior, METIS's placement;
  // HEFT's is another.
  ASSERT_EQ(heft.device, instance.features.metis_device);
  ASSERT_NE(heft.device, instance.features.heft_device);
  heft.device = instance.features.heft_device;
  const ScoredPlan heft_plan = ScoreActions(instance, heft);
  ASSERT_TRUE(heft_plan.valid);
  ASSERT_NE(heft.device, simulator::DefaultPlan(instance.graph()).device);
  // Two samples to spend: the framework default placement, then HEFT's,
  // each with the greedy decode's priorities and fusion, grouped by both
  // fusion rules.
  absl::StatusOr<ZeroShotResult> zero_shot =
      ZeroShot(model, instance, gnmt.tasks, /*num_samples=*/2, /*seed=*/3,
               /*threads=*/1);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_EQ(zero_shot->num_valid, 6);
  EXPECT_FALSE(BetterPlan(heft_plan, zero_shot->best));
  // With the priors off the network reads no hint, and its second sample
  // is drawn from its distributions.
  ASSERT_TRUE(model.DisableHeuristicPriors().ok());
  EXPECT_FALSE(model.PlacementHintsUsed().heft);
  EXPECT_FALSE(model.PlacementHintsUsed().metis);
  zero_shot = ZeroShot(model, instance, gnmt.tasks, /*num_samples=*/2,
                       /*seed=*/3, /*threads=*/1);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_THAT(zero_shot->decode,
              ::testing::Not(::testing::AnyOf("hint", "hint+greedy-join")));
  EXPECT_LE(zero_shot->num_valid, 5);
}

TEST(CoLocationDecodeTest, ZeroShotTriesEveryNodeOnOneDeviceFirst) {
  UntrainedGnmt gnmt;
  ASSERT_NO_FATAL_FAILURE(MakeUntrainedGnmt(&gnmt));
  const TrainingInstance& instance = *gnmt.instance;
  Actions one_device = SampleActions(gnmt.output, nullptr);
  one_device.device = simulator::DefaultPlan(instance.graph()).device;
  ASSERT_EQ(
      std::set<int32_t>(one_device.device.begin(), one_device.device.end()),
      std::set<int32_t>{0});
  Actions joined = one_device;
  joined.fusion_join = simulator::baselines::FusionJoin::kAllProducers;
  const ScoredPlan one_plan = ScoreActions(instance, one_device);
  const ScoredPlan joined_plan = ScoreActions(instance, joined);
  ASSERT_TRUE(one_plan.valid && joined_plan.valid);
  absl::StatusOr<ZeroShotResult> zero_shot =
      ZeroShot(*gnmt.model, instance, gnmt.tasks, /*num_samples=*/1, /*seed=*/3,
               /*threads=*/1);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_EQ(zero_shot->num_valid, 4);
  EXPECT_FALSE(BetterPlan(one_plan, zero_shot->best));
  EXPECT_FALSE(BetterPlan(joined_plan, zero_shot->best));
}

TEST(CoLocationDecodeTest, ZeroShotPutsEveryNodeOnTheFastestDevice) {
  simulator::Topology topology =
      simulator::baselines::testing::UniformTopology(4);
  topology.devices[2].peak_f32_flops *= 50;
  topology.devices[2].peak_f16_flops *= 50;
  absl::StatusOr<std::unique_ptr<TrainingInstance>> instance =
      MakeTrainingInstance(
          "gnmt", std::make_shared<const graph::Graph>(Gnmt()),
          std::make_shared<const simulator::Topology>(std::move(topology)));
  ASSERT_TRUE(instance.ok()) << instance.status();
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(testing::SmallModelOptions(/*seed=*/5));
  ASSERT_TRUE(model.ok()) << model.status();
  const TaskSet tasks{true, true, true, false};
  absl::StatusOr<PolicyOutput> output =
      (*model)->Run((*instance)->features, tasks);
  ASSERT_TRUE(output.ok()) << output.status();
  Actions on_fast = SampleActions(*output, nullptr);
  Actions on_first = on_fast;
  on_fast.device.assign(on_fast.device.size(), 2);
  on_first.device.assign(on_first.device.size(), 0);
  const ScoredPlan fast_plan = ScoreActions(**instance, on_fast);
  ASSERT_TRUE(fast_plan.valid);
  ASSERT_TRUE(BetterPlan(fast_plan, ScoreActions(**instance, on_first)));
  absl::StatusOr<ZeroShotResult> zero_shot =
      ZeroShot(**model, **instance, tasks, /*num_samples=*/1, /*seed=*/3,
               /*threads=*/1);
  ASSERT_TRUE(zero_shot.ok()) << zero_shot.status();
  EXPECT_FALSE(BetterPlan(fast_plan, zero_shot->best));
  // On a machine this uneven, that placement (its memory-fitting decode
  // moving what does not fit) beats the network's spread.
  EXPECT_THAT(zero_shot->decode,
              ::testing::AnyOf("one-device", "one-device+greedy-join"));
}

}  // namespace
}  // namespace gopt::policy::go
