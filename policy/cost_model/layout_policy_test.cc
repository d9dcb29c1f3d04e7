#include "policy/cost_model/layout_policy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "graph/hlo/hlo_lowering.h"
#include "graph/hlo/hlo_text_parser.h"
#include "policy/checkpoint_integrity.h"
#include "simulator/op_cost_model.h"
#include "simulator/plan.h"
#include "simulator/simulator.h"
#include "simulator/topology.h"

namespace gopt::policy {
namespace {

// The shipped checkpoint, from the source tree.
constexpr char kShippedDir[] =
    GOPT_SOURCE_DIR "/policy/pretrained/costmodel-layout-v1";

nlohmann::json ReadCard(const std::string& dir) {
  std::ifstream in(dir + "/card.json");
  EXPECT_TRUE(in.good()) << dir << "/card.json";
  return nlohmann::json::parse(in, nullptr, false);
}

graph::Graph SmallHloGraph() {
  constexpr char kHlo[] = R"(HloModule two_dots
ENTRY main {
  a = f32[64,128]{1,0} parameter(0)
  b = f32[128,256]{1,0} parameter(1)
  d = f32[64,256]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[256,32]{1,0} parameter(2)
  e = f32[64,32]{1,0} dot(d, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[64,4,8]{2,1,0} reshape(e)
  ROOT t = f32[8,4,64]{2,1,0} transpose(r), dimensions={2,1,0}
}
)";
  absl::StatusOr<graph::hlo::HloModule> module = graph::hlo::ParseHloText(kHlo);
  EXPECT_TRUE(module.ok()) << module.status();
  absl::StatusOr<graph::Graph> graph =
      graph::hlo::LowerHloModule(*module, graph::hlo::HloLoweringOptions());
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

TEST(LayoutCandidatesTest, AllOrdersUpToRankFourSampledAbove) {
  EXPECT_EQ(LayoutCandidates(2, 0),
            (std::vector<std::vector<int32_t>>{{1, 0}, {0, 1}}));
  EXPECT_EQ(LayoutCandidates(4, 0).size(), 24u);
  const std::vector<std::vector<int32_t>> five = LayoutCandidates(5, 7);
  EXPECT_EQ(five.size(), 24u);
  EXPECT_EQ(five[0], (std::vector<int32_t>{4, 3, 2, 1, 0}));
  EXPECT_EQ(std::set<std::vector<int32_t>>(five.begin(), five.end()).size(),
            five.size());
}

TEST(LayoutPolicyTest, ShippedCheckpointProposesValidLayouts) {
  const nlohmann::json card = ReadCard(kShippedDir);
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LayoutCostModelFactory()(kShippedDir, card);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->info().kind, "cost-model-layout");
  EXPECT_TRUE((*policy)->info().tasks.layout);
  EXPECT_FALSE((*policy)->info().tasks.placement);

  const graph::Graph graph = SmallHloGraph();
  const simulator::Topology topology =
      simulator::PresetTopology("v100x4-nvlink").value();
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator sim(graph, topology, cost_model);
  simulator::Plan base = simulator::DefaultPlan(graph);
  base.device.assign(graph.num_nodes(), 1);
  ProposeOptions options;
  options.tasks = TaskSet{false, false, false, true};
  options.base_plan = &base;
  absl::StatusOr<Proposal> proposal = (*policy)->Propose(sim, options);
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  EXPECT_TRUE(simulator::ValidatePlan(proposal->plan, graph, topology).ok());
  // Other decisions come from the base plan.
  EXPECT_EQ(proposal->plan.device, base.device);
  ASSERT_EQ(proposal->plan.layout.size(),
            static_cast<size_t>(graph.num_nodes()));
  for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
    if (!graph.node(id).layout_configurable) {
      EXPECT_TRUE(proposal->plan.layout[id].empty()) << graph.node(id).name;
    }
  }
  EXPECT_GT(proposal->step_time_s, 0);
  ASSERT_FALSE(proposal->warnings.empty());
  EXPECT_NE(proposal->warnings.back().find("predicted gain"),
            std::string::npos);
}

TEST(LayoutPolicyTest, RejectsOtherTasksAndWrongCards) {
  nlohmann::json card = ReadCard(kShippedDir);
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LayoutCostModelFactory()(kShippedDir, card);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const graph::Graph graph = SmallHloGraph();
  const simulator::Topology topology =
      simulator::PresetTopology("v100x4-nvlink").value();
  const simulator::RooflineCostModel cost_model;
  const simulator::Simulator sim(graph, topology, cost_model);
  ProposeOptions options;  // placement/scheduling/fusion, no layout
  absl::StatusOr<Proposal> proposal = (*policy)->Propose(sim, options);
  ASSERT_FALSE(proposal.ok());
  EXPECT_EQ(proposal.status().code(), absl::StatusCode::kInvalidArgument);

  card["version"] = 2;  // nlohmann's value("version", "1") would throw
  absl::StatusOr<std::unique_ptr<Policy>> numeric =
      LayoutCostModelFactory()(kShippedDir, card);
  ASSERT_TRUE(numeric.ok()) << numeric.status();
  EXPECT_EQ((*numeric)->info().version, "2");

  card["kind"] = "go";
  EXPECT_EQ(LayoutCostModelFactory()(kShippedDir, card).status().code(),
            absl::StatusCode::kInvalidArgument);
  card["kind"] = "cost-model-layout";
  card["checkpoint"] = "missing.pt";
  EXPECT_EQ(LayoutCostModelFactory()(kShippedDir, card).status().code(),
            absl::StatusCode::kFailedPrecondition);  // no hash recorded
  card[kCheckpointSha256Key]["missing.pt"] = std::string(64, '0');
  EXPECT_EQ(LayoutCostModelFactory()(kShippedDir, card).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gopt::policy
