#include "training/cost_model/experiments.h"

#include <gtest/gtest.h>

#include "tests/util/shared_data.h"

namespace gopt::policy::cost_model {
namespace {

// The layout protocol on the real TPU runs, small and short: one hash half
// of the 112 valid runs trains an ensemble, the other half is evaluated.
CostModelEvalRequest SmallLayoutProtocol(int32_t ensemble) {
  CostModelEvalRequest request;
  request.task = Task::kLayout;
  request.data =
      testing::SharedDataPath("tpugraphs/module_tuning_data_layout.pb");
  request.model.hidden_dim = 8;
  request.model.opcode_embedding_dim = 4;
  request.model.prune_hops = 1;
  request.model.cross_config_attention = false;
  request.train.steps = 20;
  request.train.loss = RankingLoss::kPairwiseHinge;
  request.train.seed = 0;
  request.ensemble = ensemble;
  return request;
}

TEST(CostModelExperimentsTest, LayoutProtocolTrainsTheEnsembleItIsAskedFor) {
  const absl::StatusOr<nlohmann::json> single =
      RunCostModelEval(SmallLayoutProtocol(1));
  ASSERT_TRUE(single.ok()) << single.status();
  const absl::StatusOr<nlohmann::json> pair =
      RunCostModelEval(SmallLayoutProtocol(2));
  ASSERT_TRUE(pair.ok()) << pair.status();
  for (const nlohmann::json* out : {&*single, &*pair}) {
    for (const char* key : {"kendall_tau", "top1_slowdown", "top5_slowdown",
                            "baseline_top1_slowdown", "configs_evaluated",
                            "top1_in_fastest_cluster"}) {
      EXPECT_TRUE(out->contains(key)) << key << " in " << out->dump();
    }
    // Seed 0's hash half: 55 runs train, the other 57 are evaluated.
    EXPECT_EQ((*out)["train_configs"], nlohmann::json::array({55}));
    EXPECT_EQ((*out)["configs_evaluated"], 57);
  }
  EXPECT_EQ((*single)["ensemble"], 1);
  EXPECT_EQ((*single)["train"]["steps"], 20);
  // Two members (seeds 0 and 1), 20 steps each, scores averaged: the
  // ranking differs from member 0's alone.
  EXPECT_EQ((*pair)["ensemble"], 2);
  EXPECT_EQ((*pair)["train"]["steps"], 40);
  EXPECT_NE((*pair)["kendall_tau"], (*single)["kendall_tau"]);
}

}  // namespace
}  // namespace gopt::policy::cost_model
