#include "training/train_commands.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/card.h"
#include "tests/util/shared_data.h"
#include "training/go/corpus.h"
#include "training/go/random_corpus.h"

namespace gopt::policy {
namespace {

using ::testing::HasSubstr;

// gopt-train finetune on the shipped policy, small enough for a test: one
// PPO step of four samples on a 152-node real graph.
FinetuneCommandOptions SmallFinetune(const std::string& graph) {
  FinetuneCommandOptions options;
  options.policy_dir = GOPT_TEST_GO_POLICY_DIR;
  options.graph = gopt::testing::SharedDataPath(graph);
  options.topologies = {"cpu-host"};
  options.max_steps = 1;
  options.max_seconds = 300;
  options.search_simulations = 0;
  options.go.samples = 4;
  options.go.seed = 3;
  return options;
}

// gopt-train expert, small enough for a test: a fresh narrow network, the
// generated corpus up to `max_nodes` nodes on one machine, a few rounds.
ExpertCommandOptions SmallExpert(const std::string& out_dir, int max_nodes) {
  ExpertCommandOptions options;
  options.out_dir = out_dir;
  options.data_dir = "";
  options.topologies = {"v100x2-pcie"};
  options.random_topologies = 0;
  options.random_graphs = 0;
  options.topologies_per_graph = 1;
  options.max_nodes = max_nodes;
  options.graphs = {"gen:transformer_xl-small"};
  options.hidden = 16;
  options.attention_layers = 1;
  options.rounds = 3;
  options.max_seconds = 1e9;
  options.instances_per_round = 1;
  options.search_rounds = 1;
  options.distill_steps = 1;
  options.ppo_steps = 0;
  options.eval_every = 1;
  options.co_location_head = true;
  options.go.seed = 1;
  return options;
}

// An empty directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / name).string();
  std::filesystem::remove_all(dir);
  return dir;
}

// The lowest point of the card's validation curve.
double BestOfValidationCurve(const nlohmann::json& card) {
  double best = 1e300;
  for (const nlohmann::json& point : card["metrics"]["validation_curve"]) {
    best = std::min(best, point["zero_shot_over_best"].get<double>());
  }
  return best;
}

TEST(TrainCommandsTest, ExpertKeepsTheCheckpointWithTheBestValidation) {
  // Two random generated graphs, the first the validation set: left out of
  // training, evaluated at the start, after every round and at the end;
  // the checkpoint written is the best of those.
  constexpr int kMaxNodes = 400;
  absl::StatusOr<std::vector<go::CorpusGraph>> random =
      go::RandomGeneratedGraphs(2, kMaxNodes, /*seed=*/1);
  ASSERT_TRUE(random.ok()) << random.status();
  ASSERT_EQ(random->size(), 2u);
  const go::CorpusGraph& smallest = random->front();
  const std::string dir = FreshDir("expert_validation");
  ExpertCommandOptions options = SmallExpert(dir, kMaxNodes);
  options.random_graphs = 2;
  options.validation_graphs = {smallest.label};
  options.policy_version = "7";
  std::ostringstream out;
  ASSERT_TRUE(RunExpert(options, out).ok()) << out.str();
  absl::StatusOr<nlohmann::json> card = ReadCardFile(dir);
  ASSERT_TRUE(card.ok()) << card.status();
  const nlohmann::json& metrics = (*card)["metrics"];
  ASSERT_EQ(metrics["validation_curve"].size(), 5u);  // start, 3 rounds, end
  EXPECT_EQ(metrics["validation_best"].get<double>(),
            BestOfValidationCurve(*card));
  EXPECT_EQ((*card)["version"], "7");
  EXPECT_EQ((*card)["training"]["rounds_run"].get<int>(), 3);
  EXPECT_LE((*card)["training"]["rounds"].get<int>(), 3);
  EXPECT_EQ((*card)["training"]["data"]["validation"]["graphs"][0],
            smallest.label);
  for (const nlohmann::json& trained : (*card)["training"]["data"]["graphs"]) {
    EXPECT_NE(trained["graph"], smallest.label) << "trained on validation";
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/go-multitask.pt"));

  // A resumed run whose card's validation_best is not a number starts the
  // comparison afresh instead of failing on it.
  nlohmann::json edited = *card;
  edited["metrics"]["validation_best"] = "not a number";
  ASSERT_TRUE(WriteCardFile(dir, edited).ok());
  ExpertCommandOptions resumed = options;
  resumed.resume = true;
  resumed.rounds = 4;
  const absl::Status resume = RunExpert(resumed, out);
  EXPECT_TRUE(resume.ok()) << resume;

  options.validation_graphs = {"hlo/not_in_the_corpus.hlo"};
  const absl::Status unknown = RunExpert(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(unknown)) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("hlo/not_in_the_corpus.hlo"));

  // A run from that policy is its next version by default; an initial
  // policy whose version is not a number needs --policy_version.
  const std::string next_dir = FreshDir("expert_validation-next");
  ExpertCommandOptions next = SmallExpert(next_dir, kMaxNodes);
  next.init_policy_dir = dir;
  next.co_location_head = false;  // the initial policy has one
  next.random_graphs = 2;
  next.rounds = 0;
  const absl::Status from_seven = RunExpert(next, out);
  ASSERT_TRUE(from_seven.ok()) << from_seven;
  absl::StatusOr<nlohmann::json> next_card = ReadCardFile(next_dir);
  ASSERT_TRUE(next_card.ok()) << next_card.status();
  EXPECT_EQ((*next_card)["version"], "8");
  edited = *ReadCardFile(dir);
  edited["version"] = "beta";
  ASSERT_TRUE(WriteCardFile(dir, edited).ok());
  const absl::Status beta = RunExpert(next, out);
  EXPECT_TRUE(absl::IsInvalidArgument(beta)) << beta;
  EXPECT_THAT(beta.message(), HasSubstr("set --policy_version"));
}

TEST(TrainCommandsTest, ExpertSelectionGraphsChooseTheCheckpointAndTrain) {
  // A selection graph is evaluated like a validation graph (it chooses the
  // checkpoint) but stays in the training corpus.
  constexpr int kMaxNodes = 400;
  absl::StatusOr<std::vector<go::CorpusGraph>> random =
      go::RandomGeneratedGraphs(2, kMaxNodes, /*seed=*/1);
  ASSERT_TRUE(random.ok()) << random.status();
  const std::string selected = random->front().label;
  const std::string dir = FreshDir("expert_selection");
  ExpertCommandOptions options = SmallExpert(dir, kMaxNodes);
  options.random_graphs = 2;
  options.rounds = 2;
  options.selection_graphs = {selected};
  options.keep_evaluated_checkpoints = true;
  std::ostringstream out;
  ASSERT_TRUE(RunExpert(options, out).ok()) << out.str();
  absl::StatusOr<nlohmann::json> card = ReadCardFile(dir);
  ASSERT_TRUE(card.ok()) << card.status();
  const nlohmann::json& metrics = (*card)["metrics"];
  ASSERT_EQ(metrics["validation_curve"].size(), 4u);  // start, 2 rounds, end
  EXPECT_EQ(metrics["validation_best"].get<double>(),
            BestOfValidationCurve(*card));
  const nlohmann::json& data = (*card)["training"]["data"];
  EXPECT_EQ((*card)["version"], "1") << "a fresh network's first version";
  EXPECT_EQ(data["validation"]["trained_graphs"][0], selected);
  EXPECT_TRUE(data["validation"]["selects_checkpoint"].get<bool>());
  EXPECT_TRUE(std::any_of(
      data["graphs"].begin(), data["graphs"].end(),
      [&selected](const nlohmann::json& g) { return g["graph"] == selected; }))
      << "a selection graph left the training corpus";
  // Every evaluated network is kept beside the chosen one: the start, the
  // two rounds (the last evaluated twice, by the round and at the end).
  for (const char* round : {"round-0000", "round-0001", "round-0002"}) {
    const std::string kept = dir + "/evaluated/" + round;
    absl::StatusOr<nlohmann::json> kept_card = ReadCardFile(kept);
    ASSERT_TRUE(kept_card.ok()) << kept_card.status();
    EXPECT_TRUE(std::filesystem::exists(kept + "/go-multitask.pt")) << kept;
  }

  // One label in both lists, and an unknown label, are refused by name.
  options.validation_graphs = {selected};
  absl::Status both = RunExpert(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(both)) << both;
  EXPECT_THAT(both.message(), HasSubstr("both a --validation_graph"));
  options.validation_graphs.clear();
  options.selection_graphs = {"gen:no_such_family"};
  const absl::Status unknown = RunExpert(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(unknown)) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("--selection_graph 'gen:no_such"));
}

TEST(TrainCommandsTest, FinetuneWithMeasuredRewardsRunsPlansOnThisHost) {
  FinetuneCommandOptions options = SmallFinetune("tf_graphdef/kws_DS_CNN_S.pb");
  options.reward = "measured";
  // The start plan and one step's four samples.
  options.max_reward_measurements = 5;
  std::ostringstream out;
  absl::Status status = RunFinetune(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(out.str(), HasSubstr("(1 steps"));
  EXPECT_THAT(out.str(), HasSubstr("fine-tuned with measured rewards: "));
  EXPECT_THAT(out.str(), HasSubstr("the start plan measured "));

  // A budget below one step's samples stops PPO before the step.
  options.max_reward_measurements = 3;
  out.str("");
  status = RunFinetune(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(out.str(), HasSubstr("(0 steps"));
  EXPECT_THAT(out.str(), HasSubstr("the measurement budget was spent"));
}

TEST(TrainCommandsTest, MeasuredRewardsRefuseMoreDevicesThanTheHostRuns) {
  FinetuneCommandOptions options = SmallFinetune("tf_graphdef/kws_DS_CNN_S.pb");
  options.reward = "measured";
  options.topologies = {"a100x8-nvlink"};
  std::ostringstream out;
  const absl::Status status = RunFinetune(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("'a100x8-nvlink' has 8 devices"));
}

TEST(TrainCommandsTest, MeasuredRewardsRefuseGraphsOverTheServersLimit) {
  // 3,182 nodes: over the 2,000 gopt-server allows too.
  FinetuneCommandOptions options =
      SmallFinetune("hlo/llama2_ptxla_neuron_train_tp1.hlo");
  options.reward = "measured";
  std::ostringstream out;
  const absl::Status status = RunFinetune(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("measured rewards are for graphs of at most 2000"));
}

}  // namespace
}  // namespace gopt::policy
