#include "policy/go/go_model.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/go/actions.h"
#include "policy/go/features.h"
#include "policy/go/network.h"
#include "simulator/generators/generators.h"
#include "simulator/testing/baseline_graphs.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::CpuOnlyGraph;
using simulator::baselines::testing::DiamondGraph;
using simulator::baselines::testing::UniformTopology;
using ::testing::HasSubstr;

constexpr TaskSet kAllTasks{true, true, true, false};

GoModelOptions SmallOptions(uint64_t seed = 0) {
  GoModelOptions options;
  options.hidden = 32;
  options.attention_dim = 16;
  options.heads = 2;
  options.feed_forward = 32;
  options.segment = 4;  // several segments even on tiny graphs
  options.graph_embedding = 8;
  options.seed = seed;
  return options;
}

GraphFeatures Features(const graph::Graph& graph,
                       const simulator::Topology& topology) {
  simulator::RooflineCostModel cost_model;
  absl::StatusOr<GraphFeatures> features =
      Featurize(graph, topology, cost_model);
  EXPECT_TRUE(features.ok()) << features.status();
  return *features;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

// `model` saved under TempPath(`name`) and loaded back: Save's error, or
// Load's result.
absl::StatusOr<std::unique_ptr<GoModel>> SavedAndLoaded(
    const GoModel& model, const std::string& name) {
  const std::string path = TempPath(name);
  if (absl::Status saved = model.Save(path); !saved.ok()) return saved;
  return GoModel::Load(path);
}

// Sum over each row of exp(log-probability).
void ExpectRowsNormalised(const std::vector<float>& logp, int rows, int cols) {
  ASSERT_EQ(logp.size(), static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += std::exp(logp[r * cols + c]);
    EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << r;
  }
}

TEST(FeaturizeTest, ShapesAndMissingValues) {
  const graph::Graph graph = DiamondGraph();
  const GraphFeatures f = Features(graph, UniformTopology(3));
  EXPECT_EQ(f.num_nodes, graph.num_nodes());
  EXPECT_EQ(f.num_devices, 3);
  EXPECT_EQ(f.node.size(),
            static_cast<size_t>(graph.num_nodes()) * NumNodeFeatures());
  EXPECT_EQ(f.device.size(), 3u * NumDeviceFeatures());
  EXPECT_EQ(f.edge_src.size(), f.edge_dst.size());
  for (float value : f.node) EXPECT_TRUE(std::isfinite(value));
  // The diamond's nodes have rank-1 outputs: dims 2..6 are missing (-1).
  bool has_missing = false;
  for (float value : f.node) has_missing |= value == -1.0f;
  EXPECT_TRUE(has_missing);
  for (float position : f.work_position) {
    EXPECT_GE(position, 0.0f);
    EXPECT_LE(position, 1.0f);
  }
}

TEST(FeaturizeTest, HeuristicHintsAreDevicesOfTheTopology) {
  const graph::Graph graph = DiamondGraph();
  const GraphFeatures f = Features(graph, UniformTopology(3));
  ASSERT_EQ(f.heft_device.size(), static_cast<size_t>(graph.num_nodes()));
  ASSERT_EQ(f.metis_device.size(), static_cast<size_t>(graph.num_nodes()));
  for (int n = 0; n < graph.num_nodes(); ++n) {
    EXPECT_GE(f.heft_device[n], 0);
    EXPECT_LT(f.heft_device[n], 3);
    EXPECT_GE(f.metis_device[n], 0);
    EXPECT_LT(f.metis_device[n], 3);
  }
}

TEST(FeaturizeTest, RejectsTooManyDevices) {
  simulator::RooflineCostModel cost_model;
  absl::StatusOr<GraphFeatures> features =
      Featurize(DiamondGraph(), UniformTopology(65), cost_model);
  EXPECT_EQ(features.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(features.status().message(), HasSubstr("65 devices"));
}

TEST(GoModelTest, ForwardShapesOnTinyGraph) {
  const graph::Graph graph = DiamondGraph();
  const GraphFeatures features = Features(graph, UniformTopology(3));
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<PolicyOutput> out = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->num_nodes, graph.num_nodes());
  EXPECT_EQ(out->num_devices, 3);
  ExpectRowsNormalised(out->placement, graph.num_nodes(), 3);
  ExpectRowsNormalised(out->scheduling, graph.num_nodes(), kPriorityLevels);
  ExpectRowsNormalised(out->fusion, graph.num_nodes(), kPriorityLevels);
}

TEST(GoModelTest, MasksDevicesAConstraintForbids) {
  // The CPU-only node may only sit on the CPU (the last device).
  const graph::Graph graph = CpuOnlyGraph();
  const simulator::Topology topology =
      UniformTopology(3, 1'000'000'000, /*last_is_cpu=*/true);
  const GraphFeatures features = Features(graph, topology);
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallOptions());
  ASSERT_TRUE(model.ok());
  absl::StatusOr<PolicyOutput> out = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(out.ok()) << out.status();
  int constrained = 0;
  for (int n = 0; n < graph.num_nodes(); ++n) {
    if (graph.node(n).device_constraint != graph::DeviceConstraint::kCpuOnly) {
      continue;
    }
    ++constrained;
    EXPECT_EQ(std::exp(out->placement[n * 3 + 0]), 0.0f);
    EXPECT_EQ(std::exp(out->placement[n * 3 + 1]), 0.0f);
    EXPECT_NEAR(std::exp(out->placement[n * 3 + 2]), 1.0f, 1e-6);
  }
  EXPECT_EQ(constrained, 1);
  // Sampled plans respect the mask and pass the simulator's validation.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<simulator::Plan> plan =
        ActionsToPlan(graph, SampleActions(*out, &rng), nullptr);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(simulator::ValidatePlan(*plan, graph, topology).ok());
  }
}

TEST(GoModelTest, RunsAnySubsetOfTasks) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  absl::StatusOr<std::unique_ptr<GoModel>> model =
      GoModel::Create(SmallOptions());
  ASSERT_TRUE(model.ok());
  absl::StatusOr<PolicyOutput> out =
      (*model)->Run(features, TaskSet{false, true, false, false});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->placement.empty());
  EXPECT_FALSE(out->scheduling.empty());
  EXPECT_TRUE(out->fusion.empty());
  // A given placement conditions scheduling.
  const std::vector<int32_t> placement(features.num_nodes, 1);
  absl::StatusOr<PolicyOutput> conditioned =
      (*model)->Run(features, TaskSet{false, true, false, false}, &placement);
  ASSERT_TRUE(conditioned.ok()) << conditioned.status();
  EXPECT_NE(conditioned->scheduling, out->scheduling);
}

TEST(GoModelTest, HandlesGraphsLongerThanOneSegment) {
  absl::StatusOr<graph::Graph> graph =
      simulator::generators::GenerateModelGraph(
          {"bert", /*layers=*/1, /*batch=*/1, /*seq=*/8, /*hidden=*/64});
  ASSERT_TRUE(graph.ok()) << graph.status();
  GoModelOptions options = SmallOptions();
  options.segment = 16;
  absl::StatusOr<std::unique_ptr<GoModel>> model = GoModel::Create(options);
  ASSERT_TRUE(model.ok());
  const GraphFeatures features = Features(*graph, UniformTopology(4));
  absl::StatusOr<PolicyOutput> out = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectRowsNormalised(out->placement, graph->num_nodes(), 4);
}

TEST(GoModelTest, ThreadCountDoesNotChangeTheOutput) {
  // LibTorch's intra-op threads split element-wise work; the decisions
  // must not depend on how many there are.
  absl::StatusOr<graph::Graph> graph =
      simulator::generators::GenerateModelGraph(
          {"bert", /*layers=*/1, /*batch=*/1, /*seq=*/8, /*hidden=*/64});
  ASSERT_TRUE(graph.ok()) << graph.status();
  GoModelOptions options = SmallOptions();
  options.segment = 8;
  absl::StatusOr<std::unique_ptr<GoModel>> model = GoModel::Create(options);
  ASSERT_TRUE(model.ok());
  const GraphFeatures features = Features(*graph, UniformTopology(4));
  SetTorchThreads(1);
  absl::StatusOr<PolicyOutput> one = (*model)->Run(features, kAllTasks);
  SetTorchThreads(2);
  absl::StatusOr<PolicyOutput> two = (*model)->Run(features, kAllTasks);
  SetTorchThreads(1);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(one->placement, two->placement);
  EXPECT_EQ(one->scheduling, two->scheduling);
  EXPECT_EQ(one->fusion, two->fusion);
}

TEST(GoModelTest, SameSeedSameNetworkOtherSeedOtherNetwork) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto a = GoModel::Create(SmallOptions(/*seed=*/5));
  auto b = GoModel::Create(SmallOptions(/*seed=*/5));
  auto c = GoModel::Create(SmallOptions(/*seed=*/6));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto out_a = (*a)->Run(features, kAllTasks);
  auto out_b = (*b)->Run(features, kAllTasks);
  auto out_c = (*c)->Run(features, kAllTasks);
  ASSERT_TRUE(out_a.ok() && out_b.ok() && out_c.ok());
  EXPECT_EQ(out_a->placement, out_b->placement);
  EXPECT_EQ(out_a->fusion, out_b->fusion);
  EXPECT_NE(out_a->fusion, out_c->fusion);
}

TEST(GoModelTest, DisabledPriorsEqualANetworkCreatedWithout) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  GoModelOptions without = SmallOptions(/*seed=*/5);
  without.prior_strength = 0;
  auto a = GoModel::Create(SmallOptions(/*seed=*/5));
  auto b = GoModel::Create(without);
  ASSERT_TRUE(a.ok() && b.ok());
  auto before = (*a)->Run(features, kAllTasks);
  ASSERT_TRUE((*a)->DisableHeuristicPriors().ok());
  auto out_a = (*a)->Run(features, kAllTasks);
  auto out_b = (*b)->Run(features, kAllTasks);
  ASSERT_TRUE(before.ok() && out_a.ok() && out_b.ok());
  EXPECT_NE(before->fusion, out_a->fusion);
  EXPECT_EQ(out_a->placement, out_b->placement);
  EXPECT_EQ(out_a->scheduling, out_b->scheduling);
  EXPECT_EQ(out_a->fusion, out_b->fusion);
}

TEST(GoModelTest, RejectsBadArchitecture) {
  GoModelOptions options = SmallOptions();
  options.heads = 3;  // 16 is not a multiple of 3
  EXPECT_EQ(GoModel::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GoModelTest, EdgeOutsideTheGraphIsInvalidArgument) {
  GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto model = GoModel::Create(SmallOptions());
  ASSERT_TRUE(model.ok());
  features.edge_dst.back() = features.num_nodes;
  absl::StatusOr<PolicyOutput> out = (*model)->Run(features, kAllTasks);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("outside"));
  features.edge_dst.pop_back();
  EXPECT_EQ((*model)->Run(features, kAllTasks).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GoCheckpointTest, RoundTripKeepsOutputs) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto model = GoModel::Create(SmallOptions(/*seed=*/9));
  ASSERT_TRUE(model.ok());
  absl::StatusOr<std::unique_ptr<GoModel>> loaded =
      SavedAndLoaded(**model, "round_trip.pt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->options().hidden, 32);
  EXPECT_EQ((*loaded)->options().segment, 4);
  EXPECT_EQ((*loaded)->num_parameters(), (*model)->num_parameters());
  auto before = (*model)->Run(features, kAllTasks);
  auto after = (*loaded)->Run(features, kAllTasks);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(before->placement, after->placement);
  EXPECT_EQ(before->scheduling, after->scheduling);
  EXPECT_EQ(before->fusion, after->fusion);
}

TEST(GoCheckpointTest, OptionsRoundTripThroughJson) {
  GoModelOptions options = SmallOptions(/*seed=*/uint64_t{1} << 40);
  options.message = 24;
  options.prior_strength = 0.5f;
  absl::StatusOr<GoModelOptions> read =
      GoModelOptions::FromJson(options.ToJson());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->ToJson(), options.ToJson());
  EXPECT_EQ(read->seed, options.seed);
}

TEST(GoCheckpointTest, OptionsJsonNamesTheBadField) {
  nlohmann::json json = SmallOptions().ToJson();
  json.erase("heads");
  EXPECT_THAT(GoModelOptions::FromJson(json).status().message(),
              HasSubstr("'heads' is missing"));
  json = SmallOptions().ToJson();
  json["segment"] = "four";
  EXPECT_THAT(GoModelOptions::FromJson(json).status().message(),
              HasSubstr("'segment' is not a number"));
  json.erase("prior_strength");
  json["segment"] = 4;
  EXPECT_TRUE(GoModelOptions::FromJson(json).ok());  // prior_strength: 1
  EXPECT_EQ(GoModelOptions::FromJson(nlohmann::json::array()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A boolean architecture field `key` (`field`): false by default, read back
// from ToJson when set, false when absent (as in every checkpoint written
// before it), refused by name when not a boolean.
void ExpectOptionalBoolean(const char* key, bool GoModelOptions::*field) {
  EXPECT_FALSE(GoModelOptions().*field) << key;
  GoModelOptions options = SmallOptions();
  options.co_location_head = true;
  options.*field = true;
  absl::StatusOr<GoModelOptions> read =
      GoModelOptions::FromJson(options.ToJson());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE((*read).*field) << key;
  nlohmann::json json = options.ToJson();
  json.erase(key);
  read = GoModelOptions::FromJson(json);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE((*read).*field) << key;
  json[key] = 1;
  EXPECT_THAT(std::string(GoModelOptions::FromJson(json).status().message()),
              HasSubstr(absl::StrCat("'", key, "' is not a boolean")));
}

TEST(GoCoLocationHeadTest, OffByDefaultAndRoundTripsThroughJson) {
  ExpectOptionalBoolean("co_location_head", &GoModelOptions::co_location_head);
}

TEST(GoCoLocationHeadTest, HintCutsRoundTripAndNeedTheHead) {
  ExpectOptionalBoolean("co_location_hint_cuts",
                        &GoModelOptions::co_location_hint_cuts);
  GoModelOptions options = SmallOptions();
  options.co_location_hint_cuts = true;  // without co_location_head
  absl::StatusOr<std::unique_ptr<GoModel>> refused = GoModel::Create(options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("co_location_hint_cuts without co_location_head"));
}

TEST(GoCoLocationHeadTest, HintCutsHeadReadsWhetherTheHintsCutAnEdge) {
  // A head with the hint inputs, its output layer set so that the logit is
  // its hidden layer's response: changing only the HEFT hint's devices
  // (same graph, same node features) changes the logits of exactly the
  // edges whose cut flag changed.
  GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto model = GoModel::Create(SmallOptions(/*seed=*/3));
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->EnableCoLocationHead(/*hint_cuts=*/true).ok());
  EXPECT_TRUE((*model)->options().co_location_hint_cuts);
  const int64_t w = kCoLocationWidth;
  int64_t head = 0;
  for (const auto& item : (*model)->impl().network->named_parameters()) {
    if (item.key().rfind("co_location.", 0) == 0) head += item.value().numel();
  }
  const int64_t hidden = SmallOptions().hidden;
  EXPECT_EQ(head, (hidden * w + w) + ((2 * w + 2) * w + w) + (w + 1));
  {
    torch::NoGradGuard no_grad;
    for (auto& item : (*model)->impl().network->named_parameters()) {
      if (item.key() == "co_location.output.weight") item.value().fill_(1.0f);
      if (item.key() == "co_location.hidden.weight") {
        // The hint columns (the last two) push every hidden unit up.
        item.value().narrow(1, 2 * w, 2).fill_(1.0f);
      }
    }
  }
  std::vector<int32_t> together(features.num_nodes, 0);
  features.heft_device = together;
  features.metis_device = together;
  auto kept = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::vector<int32_t> split = together;
  split.back() = 1;  // the sink on another device: its in-edges are cut
  features.heft_device = split;
  auto cut = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(cut.ok()) << cut.status();
  ASSERT_EQ(cut->co_location.size(), features.edge_src.size());
  for (size_t e = 0; e < features.edge_src.size(); ++e) {
    const bool to_sink = features.edge_dst[e] == features.num_nodes - 1;
    if (to_sink) {
      EXPECT_GT(cut->co_location[e], kept->co_location[e]) << e;
    } else {
      EXPECT_EQ(cut->co_location[e], kept->co_location[e]) << e;
    }
  }
  // Saved, it loads with the hint inputs and gives the same logits.
  absl::StatusOr<std::unique_ptr<GoModel>> loaded =
      SavedAndLoaded(**model, "hint_cuts_head.pt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->options().co_location_hint_cuts);
  auto again = (*loaded)->Run(features, kAllTasks);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->co_location, cut->co_location);
}

TEST(GoCoLocationHeadTest, UntrainedHeadGivesZeroPerEdge) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  GoModelOptions options = SmallOptions();
  options.co_location_head = true;
  auto model = GoModel::Create(options);
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->co_location.size(), features.edge_src.size());
  ASSERT_FALSE(out->co_location.empty());
  for (float logit : out->co_location) EXPECT_EQ(logit, 0.0f);
  // Placement not decided: no head output.
  auto scheduling_only = (*model)->Run(features, {false, true, false, false});
  ASSERT_TRUE(scheduling_only.ok());
  EXPECT_TRUE(scheduling_only->co_location.empty());
}

TEST(GoCoLocationHeadTest, HeadLeavesTheOtherOutputsUnchanged) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  GoModelOptions with = SmallOptions(/*seed=*/3);
  with.co_location_head = true;
  auto a = GoModel::Create(SmallOptions(/*seed=*/3));
  auto b = GoModel::Create(with);
  ASSERT_TRUE(a.ok() && b.ok());
  auto out_a = (*a)->Run(features, kAllTasks);
  auto out_b = (*b)->Run(features, kAllTasks);
  ASSERT_TRUE(out_a.ok() && out_b.ok());
  EXPECT_TRUE(out_a->co_location.empty());
  EXPECT_EQ(out_a->placement, out_b->placement);
  EXPECT_EQ(out_a->scheduling, out_b->scheduling);
  EXPECT_EQ(out_a->fusion, out_b->fusion);
}

// Moves every co-location head parameter off its initial value, so that
// its logits differ from 0 and a checkpoint must keep them.
void PerturbHead(GoModel& model) {
  torch::NoGradGuard no_grad;
  int perturbed = 0;
  for (auto& item : model.impl().network->named_parameters()) {
    if (item.key().rfind("co_location.", 0) != 0) continue;
    item.value().add_(0.1f * (perturbed + 1));
    ++perturbed;
  }
  ASSERT_EQ(perturbed, 6);  // three linear layers' weights and biases
}

TEST(GoCoLocationHeadTest, SaveLoadKeepsTheHead) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  GoModelOptions options = SmallOptions(/*seed=*/4);
  options.co_location_head = true;
  auto model = GoModel::Create(options);
  ASSERT_TRUE(model.ok());
  PerturbHead(**model);
  absl::StatusOr<std::unique_ptr<GoModel>> loaded =
      SavedAndLoaded(**model, "co_location_head.pt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->options().co_location_head);
  auto before = (*model)->Run(features, kAllTasks);
  auto after = (*loaded)->Run(features, kAllTasks);
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_FALSE(before->co_location.empty());
  EXPECT_NE(before->co_location[0], 0.0f);
  EXPECT_EQ(before->co_location, after->co_location);
  EXPECT_EQ(before->placement, after->placement);
  auto copy = (*model)->Clone();
  ASSERT_TRUE(copy.ok());
  auto copied = (*copy)->Run(features, kAllTasks);
  ASSERT_TRUE(copied.ok());
  EXPECT_EQ(before->co_location, copied->co_location);
}

TEST(GoCoLocationHeadTest, EnableAddsTheHeadOnceAndDeterministically) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto model = GoModel::Create(SmallOptions(/*seed=*/7));
  auto other = GoModel::Create(SmallOptions(/*seed=*/7));
  ASSERT_TRUE(model.ok() && other.ok());
  const int64_t headless = (*model)->num_parameters();
  auto before = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->co_location.empty());

  ASSERT_TRUE((*model)->EnableCoLocationHead().ok());
  EXPECT_TRUE((*model)->options().co_location_head);
  const int64_t with_head = (*model)->num_parameters();
  const int64_t w = kCoLocationWidth;
  const int64_t hidden = SmallOptions().hidden;
  EXPECT_EQ(with_head - headless, (hidden * w + w) +     // embed
                                      (2 * w * w + w) +  // hidden layer
                                      (w + 1));          // output
  auto after = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->placement, before->placement);
  ASSERT_EQ(after->co_location.size(), features.edge_src.size());
  for (float logit : after->co_location) EXPECT_EQ(logit, 0.0f);

  ASSERT_TRUE((*model)->EnableCoLocationHead().ok());  // idempotent
  EXPECT_EQ((*model)->num_parameters(), with_head);

  // The same seed gives the same head.
  ASSERT_TRUE((*other)->EnableCoLocationHead().ok());
  std::vector<torch::Tensor> a;
  std::vector<torch::Tensor> b;
  for (const auto& item : (*model)->impl().network->named_parameters()) {
    a.push_back(item.value());
  }
  for (const auto& item : (*other)->impl().network->named_parameters()) {
    b.push_back(item.value());
  }
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i]));

  // Saved, it loads with the head.
  absl::StatusOr<std::unique_ptr<GoModel>> loaded =
      SavedAndLoaded(**model, "enabled_head.pt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->options().co_location_head);
  EXPECT_EQ((*loaded)->num_parameters(), with_head);
}

TEST(GoCoLocationHeadTest, ShippedCheckpointLoadsWithoutTheHead) {
  const std::string path = std::string(GOPT_SOURCE_DIR) +
                           "/policy/pretrained/go-multitask-v2/go-multitask.pt";
  ASSERT_TRUE(std::ifstream(path).good())
      << "missing shipped checkpoint " << path;
  absl::StatusOr<std::unique_ptr<GoModel>> model = GoModel::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->options().co_location_head);
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto out = (*model)->Run(features, kAllTasks);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->co_location.empty());
  EXPECT_FALSE(out->placement.empty());
}

TEST(GoCheckpointTest, CloneIsIndependentCopy) {
  const GraphFeatures features = Features(DiamondGraph(), UniformTopology(2));
  auto model = GoModel::Create(SmallOptions());
  ASSERT_TRUE(model.ok());
  auto copy = (*model)->Clone();
  ASSERT_TRUE(copy.ok());
  auto a = (*model)->Run(features, kAllTasks);
  auto b = (*copy)->Run(features, kAllTasks);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->scheduling, b->scheduling);
}

TEST(GoCheckpointTest, MissingFileIsNotFound) {
  absl::StatusOr<std::unique_ptr<GoModel>> loaded =
      GoModel::Load(TempPath("does_not_exist.pt"));
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
}

TEST(GoCheckpointTest, GarbageFileIsDataLoss) {
  const std::string path = TempPath("garbage.pt");
  std::ofstream(path) << "this is not a checkpoint";
  absl::StatusOr<std::unique_ptr<GoModel>> loaded = GoModel::Load(path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
}

TEST(GoCheckpointTest, TruncatedFileIsDataLoss) {
  auto model = GoModel::Create(SmallOptions());
  ASSERT_TRUE(model.ok());
  const std::string path = TempPath("truncated.pt");
  ASSERT_TRUE((*model)->Save(path).ok());
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << bytes.substr(0, bytes.size() / 2);
  absl::StatusOr<std::unique_ptr<GoModel>> loaded = GoModel::Load(path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
}

TEST(ActionsTest, GreedyTakesTheMostLikelyAction) {
  PolicyOutput output;
  output.num_nodes = 2;
  output.num_devices = 2;
  output.placement = {std::log(0.2f), std::log(0.8f), std::log(0.9f),
                      std::log(0.1f)};
  const Actions actions = SampleActions(output, nullptr);
  EXPECT_EQ(actions.device, (std::vector<int32_t>{1, 0}));
  EXPECT_TRUE(actions.priority.empty());
  EXPECT_NEAR(ActionsLogProb(output, actions), std::log(0.8 * 0.9), 1e-6);
}

TEST(ActionsTest, FusionPrioritiesBecomeGreedyGroups) {
  const graph::Graph graph = simulator::baselines::testing::ChainGraph(4);
  Actions actions;
  actions.device.assign(graph.num_nodes(), 0);
  actions.fusion_priority.assign(graph.num_nodes(), 15);
  absl::StatusOr<simulator::Plan> fused =
      ActionsToPlan(graph, actions, nullptr);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->method, "go");
  int grouped = 0;
  for (int32_t group : fused->fusion_group) grouped += group >= 0 ? 1 : 0;
  EXPECT_GT(grouped, 1);
  actions.fusion_priority.assign(graph.num_nodes(), 0);
  absl::StatusOr<simulator::Plan> unfused =
      ActionsToPlan(graph, actions, nullptr);
  ASSERT_TRUE(unfused.ok());
  for (int32_t group : unfused->fusion_group) EXPECT_EQ(group, -1);
}

TEST(ActionsTest, FusionJoinGroupsEveryProducerOfAConsumer) {
  // x -> y -> c and z -> c: greedy fuses c with z only, greedy-join makes
  // x, y, z and c one kernel.
  simulator::baselines::testing::GraphMaker g;
  const int p = g.Param("p", 1000);
  const int x = g.Op("x", 1e3, {p});
  const int y = g.Op("y", 1e3, {x});
  const int z = g.Op("z", 1e3, {p});
  g.Op("c", 1e3, {y, z});
  const graph::Graph graph = g.Build();
  Actions actions;
  actions.device.assign(graph.num_nodes(), 0);
  actions.fusion_priority.assign(graph.num_nodes(), 15);
  absl::StatusOr<simulator::Plan> one = ActionsToPlan(graph, actions, nullptr);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(one->fusion_group, ::testing::ElementsAre(-1, 0, 0, 1, 1));
  actions.fusion_join = simulator::baselines::FusionJoin::kAllProducers;
  absl::StatusOr<simulator::Plan> all = ActionsToPlan(graph, actions, nullptr);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(all->fusion_group, ::testing::ElementsAre(-1, 0, 0, 0, 0));
}

TEST(ActionsTest, WrongLengthIsInvalidArgument) {
  Actions actions;
  actions.device = {0};
  EXPECT_EQ(ActionsToPlan(DiamondGraph(), actions, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gopt::policy::go
