#include "engine/policy_registry.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/testing/fake_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::engine {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class PolicyRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
    ASSERT_TRUE(
        registry_.RegisterFactory("fake", testing::FakePolicyFactory()).ok());
  }

  void WriteCard(const std::string& policy, const std::string& card) {
    fs::create_directories(root_ / policy);
    std::ofstream(root_ / policy / "card.json") << card;
  }

  fs::path root_;
  PolicyRegistry registry_;
};

TEST_F(PolicyRegistryTest, LoadsEveryCardAndPicksHighestVersion) {
  WriteCard("a", R"({"format_version": 1, "kind": "fake", "name": "go",
                     "version": "2", "tasks": ["placement"]})");
  WriteCard("b", R"({"format_version": 1, "kind": "fake", "name": "go",
                     "version": 10, "tasks": ["placement", "fusion"]})");
  fs::create_directories(root_ / "notes");  // no card: skipped
  ASSERT_TRUE(registry_.LoadDirectory(root_.string()).ok());
  ASSERT_EQ(registry_.policies().size(), 2u);
  absl::StatusOr<const policy::Policy*> newest = registry_.Find("go", "");
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ((*newest)->info().version, "10");
  EXPECT_TRUE((*newest)->info().tasks.fusion);
  EXPECT_FALSE((*newest)->info().tasks.scheduling);
  EXPECT_EQ((*newest)->info().directory, (root_ / "b").string());
  EXPECT_EQ((*registry_.Find("go", "2"))->info().version, "2");
  EXPECT_EQ(registry_.Find("go", "3").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(PolicyRegistryTest, LatestPoliciesKeepOneVersionPerName) {
  WriteCard("a", R"({"format_version": 1, "kind": "fake", "name": "go",
                     "version": "2", "tasks": ["placement"]})");
  WriteCard("b", R"({"format_version": 1, "kind": "fake", "name": "tiles",
                     "version": "1", "tasks": ["fusion"]})");
  WriteCard("c", R"({"format_version": 1, "kind": "fake", "name": "go",
                     "version": "3", "tasks": ["placement"]})");
  ASSERT_TRUE(registry_.LoadDirectory(root_.string()).ok());
  ASSERT_EQ(registry_.policies().size(), 3u);
  const std::vector<const policy::Policy*> latest = registry_.latest_policies();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0]->info().name, "tiles");
  EXPECT_EQ(latest[1]->info().name, "go");
  EXPECT_EQ(latest[1]->info().version, "3");
}

TEST_F(PolicyRegistryTest, UnknownKindNamesRegisteredKinds) {
  WriteCard("x", R"({"format_version": 1, "kind": "gnn", "name": "x"})");
  const absl::Status status = registry_.LoadDirectory(root_.string());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("kind 'gnn'"));
  EXPECT_THAT(status.message(), HasSubstr("registered kinds: fake"));
  EXPECT_THAT(status.message(), HasSubstr((root_ / "x").string()));
}

TEST_F(PolicyRegistryTest, CorruptCardsAreInvalidArgument) {
  for (const char* card :
       {"{not json", R"({"kind": "fake", "name": "x"})",
        R"({"format_version": 2, "kind": "fake", "name": "x"})",
        R"({"format_version": 1, "kind": "fake", "name": "x",
            "tasks": "placement"})"}) {
    fs::remove_all(root_);
    WriteCard("x", card);
    EXPECT_EQ(registry_.LoadDirectory(root_.string()).code(),
              absl::StatusCode::kInvalidArgument)
        << card;
  }
}

TEST_F(PolicyRegistryTest, FactoryErrorNamesDirectory) {
  WriteCard("x", R"({"format_version": 1, "kind": "fake", "name": "x",
                     "fail_to_load": true})");
  const absl::Status status = registry_.LoadDirectory(root_.string());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("checkpoint is corrupt"));
  EXPECT_THAT(status.message(), HasSubstr((root_ / "x").string()));
}

TEST_F(PolicyRegistryTest, DuplicatesAndMissingDirectory) {
  WriteCard("a", R"({"format_version": 1, "kind": "fake", "name": "x",
                     "version": "1"})");
  WriteCard("b", R"({"format_version": 1, "kind": "fake", "name": "x",
                     "version": "1"})");
  EXPECT_EQ(registry_.LoadDirectory(root_.string()).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry_.LoadDirectory((root_ / "missing").string()).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(
      registry_.RegisterFactory("fake", testing::FakePolicyFactory()).code(),
      absl::StatusCode::kAlreadyExists);
}

TEST(TaskSetNameTest, JoinsInTaskOrder) {
  EXPECT_EQ(TaskSetName(policy::TaskSet{}), "placement+scheduling+fusion");
  EXPECT_EQ(TaskSetName(policy::TaskSet{false, false, false, false}), "none");
  EXPECT_EQ(TaskSetName(policy::TaskSet{false, false, true, true}),
            "fusion+layout");
}

}  // namespace
}  // namespace gopt::engine
