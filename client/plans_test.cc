#include "client/plans.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/plan_store.h"

namespace gopt::client {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "plans_test" /
       ::testing::UnitTest::GetInstance()->current_test_info()->name())
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

engine::PlanStoreEntry Entry(const std::string& key, double step_time_s) {
  engine::PlanStoreEntry entry;
  entry.set_key(key);
  entry.set_step_time_s(step_time_s);
  entry.set_graph_name("model.hlo");
  entry.set_num_nodes(2);
  entry.mutable_plan()->add_device(0);
  entry.mutable_plan()->add_device(1);
  entry.mutable_provenance()->set_method("metis");
  return entry;
}

TEST(PlansTest, DefaultStoreFollowsXdgCacheHome) {
  setenv("XDG_CACHE_HOME", "/tmp/cache-home", /*overwrite=*/1);
  EXPECT_EQ(DefaultLocalPlanStore(), "/tmp/cache-home/gopt/plans.sqlite");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", /*overwrite=*/1);
  EXPECT_EQ(DefaultLocalPlanStore(), "/home/someone/.cache/gopt/plans.sqlite");
}

TEST(PlansTest, NoneOpensNoStore) {
  absl::StatusOr<std::shared_ptr<engine::PlanStore>> store =
      OpenCliPlanStore("none");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*store, nullptr);
}

TEST(PlansTest, ListShowExportImportPrune) {
  const std::string dir = TempDir();
  PlansOptions options;
  options.plan_store = dir + "/plans.sqlite";
  {
    absl::StatusOr<std::shared_ptr<engine::PlanStore>> store =
        OpenCliPlanStore(options.plan_store);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(
        (*store)
            ->Put(Entry("k1-aaaa", 0.002), "", engine::PutMode::kKeepBest)
            .ok());
    ASSERT_TRUE(
        (*store)
            ->Put(Entry("k1-abbb", 0.003), "", engine::PutMode::kKeepBest)
            .ok());
  }
  options.action = "list";
  std::ostringstream listed;
  ASSERT_TRUE(RunPlans(options, listed).ok());
  EXPECT_THAT(listed.str(), HasSubstr("k1-aaaa"));
  EXPECT_THAT(listed.str(), HasSubstr("2 entries"));

  options.action = "show";
  options.argument = "k1-a";
  std::ostringstream ambiguous;
  EXPECT_TRUE(absl::IsInvalidArgument(RunPlans(options, ambiguous)));
  options.argument = "k1-ab";
  std::ostringstream shown;
  ASSERT_TRUE(RunPlans(options, shown).ok());
  EXPECT_THAT(shown.str(), HasSubstr("\"key\": \"k1-abbb\""));
  EXPECT_THAT(shown.str(), HasSubstr("\"device\""));
  options.argument = "k1-zz";
  std::ostringstream missing;
  EXPECT_TRUE(absl::IsNotFound(RunPlans(options, missing)));

  options.action = "export";
  options.argument = dir + "/plans.bin";
  std::ostringstream exported;
  ASSERT_TRUE(RunPlans(options, exported).ok());
  EXPECT_THAT(exported.str(), HasSubstr("exported 2 entries"));

  PlansOptions other = options;
  other.plan_store = dir + "/other.sqlite";
  other.action = "import";
  std::ostringstream imported;
  ASSERT_TRUE(RunPlans(other, imported).ok());
  EXPECT_THAT(imported.str(), HasSubstr("2 entries new or better"));

  other.action = "prune";
  other.unused_days = 0;
  std::ostringstream pruned;
  ASSERT_TRUE(RunPlans(other, pruned).ok());
  EXPECT_THAT(pruned.str(), HasSubstr("pruned 2 entries"));
}

TEST(PlansTest, BadInputIsInvalidArgument) {
  PlansOptions options;
  options.plan_store = TempDir() + "/plans.sqlite";
  options.action = "frobnicate";
  std::ostringstream out;
  EXPECT_THAT(RunPlans(options, out).message(), HasSubstr("unknown action"));
  options.action = "import";
  EXPECT_THAT(RunPlans(options, out).message(), HasSubstr("expected a FILE"));
  options.argument = TempDir() + "/garbage.bin";
  {
    std::ofstream garbage(options.argument);
    garbage << "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff not a record";
  }
  absl::Status status = RunPlans(options, out);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("record 0"));
}

}  // namespace
}  // namespace gopt::client
