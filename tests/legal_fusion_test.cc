// Every planner's fusion groups obey the kernel rules that ValidatePlan
// enforces (simulator/fusion_rules.h), on the real graphs: each fusion
// baseline after each placement baseline, and the GO policy's decode of
// any fusion priorities (ActionsToPlan, which every GO plan goes through:
// zero-shot, fine-tuning, PPO samples, the plan search's starts).

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/import/builtin_importers.h"
#include "policy/go/actions.h"
#include "simulator/baselines/baseline_registry.h"
#include "simulator/fusion_rules.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/topology.h"
#include "tests/util/shared_data.h"

namespace gopt {
namespace {

struct RealGraph {
  const char* path;
  // Symbolic dimensions the file needs to be a valid input.
  std::vector<std::pair<std::string, int64_t>> symbolic_dims = {};
};

const RealGraph kRealGraphs[] = {
    {"hlo/mixer_b16_jax_unopt.hlo"},
    {"hlo/efficientnet_jax_lambda256.hlo"},
    {"hlo/nux_flow_jit_loss9581.hlo"},
    {"hlo/jaxmd_apply_fn.hlo"},
    {"hlo/jaxrl_td_target.hlo"},
    {"hlo/maml_flax_train_step.hlo"},
    {"onnx/light_resnet50.onnx"},
    {"onnx/light_shufflenet.onnx"},
    {"onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     {{"p2o.DynamicDimension.1", 48}, {"p2o.DynamicDimension.2", 192}}},
    {"onnx/silero_vad_legacy.onnx", {{"sequence", 512}}},
    {"tf_graphdef/kws_LSTM_S.pb"},
    {"tf_graphdef/kws_DS_CNN_S.pb"},
    {"tfjs/handtrack.json"},
    {"tfjs/movenet-multipose.json"},
    {"tpugraphs/module_tuning_data_layout.pb"},
};

void PrintTo(const RealGraph& file, std::ostream* os) { *os << file.path; }

class LegalFusionTest : public ::testing::TestWithParam<RealGraph> {
 protected:
  void SetUp() override {
    graph::ImporterRegistry importers;
    graph::RegisterBuiltinImporters(&importers);
    graph::ImportOptions options;
    options.source_name = GetParam().path;
    for (const auto& [name, value] : GetParam().symbolic_dims) {
      options.symbolic_dims[name] = value;
    }
    const std::string contents = testing::ReadSharedData(GetParam().path);
    ASSERT_FALSE(contents.empty()) << GetParam().path;
    absl::StatusOr<graph::Graph> graph =
        importers.Import(contents, "auto", options);
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_.emplace(*std::move(graph));
    absl::StatusOr<simulator::Topology> topology =
        simulator::PresetTopology("v100x4-nvlink");
    ASSERT_TRUE(topology.ok()) << topology.status();
    topology_ = *std::move(topology);
  }

  std::optional<graph::Graph> graph_;
  simulator::Topology topology_;
};

TEST_P(LegalFusionTest, EveryFusionBaselineMakesLegalGroups) {
  simulator::baselines::BaselineRegistry registry;
  simulator::baselines::RegisterBuiltinBaselines(&registry);
  const simulator::RooflineCostModel cost_model;
  const simulator::baselines::BaselineContext context{*graph_, topology_,
                                                      cost_model, /*seed=*/7};
  for (const std::string& placer_name : registry.PlacerNames()) {
    const auto placer = registry.FindPlacer(placer_name);
    ASSERT_TRUE(placer.ok()) << placer.status();
    absl::StatusOr<std::vector<int32_t>> device = (*placer)->Place(context);
    if (!device.ok()) continue;  // a placer may refuse a graph
    for (const std::string& fuser_name : registry.FuserNames()) {
      SCOPED_TRACE(placer_name + "+" + fuser_name);
      const auto fuser = registry.FindFuser(fuser_name);
      ASSERT_TRUE(fuser.ok()) << fuser.status();
      absl::StatusOr<std::vector<int32_t>> groups =
          (*fuser)->Fuse(context, *device);
      ASSERT_TRUE(groups.ok()) << groups.status();
      EXPECT_TRUE(simulator::CheckFusionRules(*graph_, *groups).ok())
          << simulator::CheckFusionRules(*graph_, *groups);
    }
  }
}

TEST_P(LegalFusionTest, GoDecodeMakesLegalGroupsForAnyPriorities) {
  const int n = graph_->num_nodes();
  std::mt19937_64 rng(11);
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    policy::go::Actions actions;
    actions.device.resize(n);
    actions.fusion_priority.resize(n);
    for (int id = 0; id < n; ++id) {
      // Rounds 0 and 1: one device (the most fusion); then random devices.
      actions.device[id] =
          round < 2 ? 0 : static_cast<int32_t>(rng() % topology_.num_devices());
      // Round 0: every node as eager as it can be; else random levels.
      actions.fusion_priority[id] =
          round == 0
              ? policy::go::kPriorityLevels - 1
              : static_cast<int32_t>(rng() % policy::go::kPriorityLevels);
    }
    simulator::ColocateGroups(*graph_, topology_, &actions.device);
    absl::StatusOr<simulator::Plan> plan =
        policy::go::ActionsToPlan(*graph_, actions, /*base_plan=*/nullptr);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(simulator::CheckFusionRules(*graph_, plan->fusion_group).ok())
        << simulator::CheckFusionRules(*graph_, plan->fusion_group);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedData, LegalFusionTest,
                         ::testing::ValuesIn(kRealGraphs));

}  // namespace
}  // namespace gopt
