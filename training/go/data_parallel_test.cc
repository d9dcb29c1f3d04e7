#include "training/go/data_parallel.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policy/go/network.h"
#include "policy/testing/go_instance.h"
#include "simulator/testing/baseline_graphs.h"
#include "training/go/distillation.h"
#include "training/go/expert_iteration.h"
#include "training/go/pretraining.h"

namespace gopt::policy::go {
namespace {

using simulator::baselines::testing::GraphMaker;
using testing::SmallModelOptions;
using testing::TestInstance;

// A chain of `length` dot ops with a side branch of convolutions joining it
// at the end, named `name`: small graphs that differ in shape.
graph::Graph Branchy(const std::string& name, int length) {
  GraphMaker g(name);
  int a = g.Param("p", 1'000'000);
  int b = a;
  for (int i = 0; i < length; ++i) {
    a = g.Op(absl::StrCat("a", i), graph::OpKind::kDot, 1e9, {a}, 1'000'000);
    if (i % 2 == 0) {
      b = g.Op(absl::StrCat("b", i), graph::OpKind::kConvolution, 5e8, {b},
               500'000);
    }
  }
  g.Op("join", 1e6, {a, b}, 1'000'000);
  return g.Build();
}

// A TCP port that was free a moment ago on the loopback interface.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

PretrainOptions FourGraphSteps() {
  PretrainOptions options;
  options.ppo.tasks = TaskSet{true, true, true, false};
  options.ppo.samples_per_graph = 4;
  options.ppo.simulation_threads = 1;
  options.ppo.seed = 11;
  options.max_steps = 3;
  options.max_seconds = 1e9;
  options.graphs_per_step = 4;
  options.pool_size = 4;
  options.switch_every = 2;
  options.seed = 5;
  return options;
}

torch::Tensor Flat(const GoModel& model) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& p : model.impl().network->parameters()) {
    flat.push_back(p.detach().reshape({-1}));
  }
  return torch::cat(flat);
}

// Runs `rank_body(group, rank)` on two ranks, each a thread connected to a
// loopback process group; the status of each rank (Connect's error when it
// could not join).
std::vector<absl::Status> RunTwoRanks(
    const std::function<absl::Status(DataParallel*, int)>& rank_body) {
  DistributedEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = FreePort();
  env.world_size = 2;
  std::vector<absl::Status> results(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      DistributedEnv mine = env;
      mine.rank = r;
      absl::StatusOr<std::unique_ptr<DataParallel>> group =
          DataParallel::Connect(mine, absl::Seconds(60));
      results[r] = group.ok() ? rank_body(group->get(), r) : group.status();
    });
  }
  for (std::thread& rank : ranks) rank.join();
  return results;
}

TEST(DataParallelTest, TwoRanksOnLoopbackMatchOneProcessOverTheSameBatch) {
  std::vector<std::unique_ptr<TrainingInstance>> owned;
  std::vector<const TrainingInstance*> instances;
  for (int i = 0; i < 5; ++i) {
    owned.push_back(TestInstance(Branchy(absl::StrCat("g", i), 3 + i), 2));
    ASSERT_NE(owned.back(), nullptr);
    instances.push_back(owned.back().get());
  }
  std::unique_ptr<GoModel> single = *GoModel::Create(SmallModelOptions(1));
  absl::StatusOr<PretrainResult> one =
      Pretrain(single.get(), instances, FourGraphSteps());
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->steps, 3);

  std::vector<std::unique_ptr<GoModel>> models;
  models.push_back(*GoModel::Create(SmallModelOptions(1)));
  // Rank 1 starts elsewhere: the broadcast must give it rank 0's start.
  models.push_back(*GoModel::Create(SmallModelOptions(2)));
  std::vector<int> steps(2, 0);
  const std::vector<absl::Status> results =
      RunTwoRanks([&](DataParallel* group, int r) -> absl::Status {
        PretrainOptions options = FourGraphSteps();
        options.data_parallel = group;
        absl::StatusOr<PretrainResult> trained =
            Pretrain(models[r].get(), instances, options);
        if (trained.ok()) steps[r] = trained->steps;
        return trained.status();
      });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
    EXPECT_EQ(steps[r], 3);
  }
  const torch::Tensor reference = Flat(*single);
  const torch::Tensor start = Flat(**GoModel::Create(SmallModelOptions(1)));
  EXPECT_GT((reference - start).abs().max().item<float>(), 1e-4)
      << "training did not move the parameters";
  for (int r = 0; r < 2; ++r) {
    const float diff = (Flat(*models[r]) - reference).abs().max().item<float>();
    EXPECT_LT(diff, 1e-4) << "rank " << r;
  }
}

// The co-location head's parameters, flattened.
torch::Tensor HeadParameters(const GoModel& model) {
  std::vector<torch::Tensor> flat;
  for (const auto& item : model.impl().network->named_parameters()) {
    if (item.key().rfind("co_location.", 0) != 0) continue;
    flat.push_back(item.value().detach().reshape({-1}));
  }
  return torch::cat(flat);
}

TEST(DataParallelTest, TwoRanksDistilTheCoLocationHeadAsOneProcess) {
  std::vector<std::unique_ptr<TrainingInstance>> owned;
  std::vector<DistillTarget> targets;
  for (int i = 0; i < 2; ++i) {
    owned.push_back(TestInstance(Branchy(absl::StrCat("g", i), 4 + i), 2));
    ASSERT_NE(owned.back(), nullptr);
    absl::StatusOr<ScoredPlan> baseline = BestBaselinePlan(*owned.back(), 1);
    ASSERT_TRUE(baseline.ok()) << baseline.status();
    absl::StatusOr<DistillTarget> target =
        MakeDistillTarget(*owned.back(), baseline->plan);
    ASSERT_TRUE(target.ok()) << target.status();
    targets.push_back(*std::move(target));
  }
  auto with_head = [](uint64_t seed) {
    GoModelOptions options = SmallModelOptions(seed);
    options.co_location_head = true;
    return *GoModel::Create(options);
  };
  DistillOptions options;
  options.tasks = TaskSet{true, true, true, false};
  options.learning_rate = 1e-3;
  constexpr int kSteps = 3;
  std::unique_ptr<GoModel> single = with_head(1);
  {
    DistillationTrainer trainer(single.get(), options);
    for (int step = 0; step < kSteps; ++step) {
      ASSERT_TRUE(trainer.Step({&targets[0], &targets[1]}).ok());
    }
  }
  std::vector<std::unique_ptr<GoModel>> models;
  models.push_back(with_head(1));
  models.push_back(with_head(2));  // the broadcast gives it rank 0's start
  const std::vector<absl::Status> results =
      RunTwoRanks([&](DataParallel* group, int r) -> absl::Status {
        GoModel* model = models[r].get();
        absl::Status synced = group->BroadcastParameters(model);
        if (!synced.ok()) return synced;
        DistillOptions mine = options;
        mine.after_backward = [group, model] {
          return group->AverageGradients(model);
        };
        DistillationTrainer trainer(model, mine);
        for (int step = 0; step < kSteps; ++step) {
          absl::StatusOr<DistillStats> stats = trainer.Step({&targets[r]});
          if (!stats.ok()) return stats.status();
        }
        return absl::OkStatus();
      });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
  }
  EXPECT_GT((HeadParameters(*single) - HeadParameters(*with_head(1)))
                .abs()
                .max()
                .item<float>(),
            1e-4)
      << "distillation did not move the head";
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT((Flat(*models[r]) - Flat(*single)).abs().max().item<float>(),
              1e-4)
        << "rank " << r;
  }
}

TEST(DataParallelTest, EnvironmentWithoutVariablesIsOneProcess) {
  unsetenv("WORLD_SIZE");
  unsetenv("RANK");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  absl::StatusOr<DistributedEnv> env = DistributedEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->rank, 0);
}

TEST(DataParallelTest, EnvironmentErrorsNameTheVariable) {
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  absl::StatusOr<DistributedEnv> env = DistributedEnvFromEnvironment();
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("RANK"), std::string::npos)
      << env.status();
  setenv("RANK", "1", 1);
  unsetenv("MASTER_PORT");
  env = DistributedEnvFromEnvironment();
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("MASTER_PORT"), std::string::npos)
      << env.status();
  setenv("MASTER_PORT", "x", 1);
  env = DistributedEnvFromEnvironment();
  EXPECT_FALSE(env.ok());
  for (const char* name :
       {"WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    unsetenv(name);
  }
}

TEST(DataParallelTest, BatchThatDoesNotSplitIsAnError) {
  std::vector<std::unique_ptr<TrainingInstance>> owned;
  std::vector<const TrainingInstance*> instances;
  for (int i = 0; i < 3; ++i) {
    owned.push_back(TestInstance(Branchy(absl::StrCat("g", i), 3), 2));
    ASSERT_NE(owned.back(), nullptr);
    instances.push_back(owned.back().get());
  }
  std::unique_ptr<GoModel> model = *GoModel::Create(SmallModelOptions(1));
  std::unique_ptr<GoModel> other = *GoModel::Create(SmallModelOptions(1));
  const std::vector<absl::Status> results =
      RunTwoRanks([&](DataParallel* group, int r) {
        PretrainOptions options = FourGraphSteps();
        options.graphs_per_step = 3;
        options.pool_size = 3;
        options.data_parallel = group;
        return Pretrain(r == 0 ? model.get() : other.get(), instances, options)
            .status();
      });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), absl::StatusCode::kInvalidArgument)
        << results[r];
  }
}

}  // namespace
}  // namespace gopt::policy::go
