#include "training/recipe.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gopt::policy {
namespace {

std::string Write(const std::string& text) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "recipe.json").string();
  std::ofstream(path) << text;
  return path;
}

TEST(RecipeTest, EveryValueKindBecomesAFlagInKeyOrder) {
  absl::StatusOr<std::vector<std::string>> flags = ReadRecipeFlags(Write(
      R"({"rounds": 50, "keep_best": true, "priors_off": false,
          "distill_learning_rate": 0.0003, "average_decay": 0.95,
          "policy_version": "4", "topologies": ["a", "b"],
          "description": "ignored"})"));
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(*flags, (std::vector<std::string>{
                        "--average_decay=0.95",
                        "--distill_learning_rate=0.0003",
                        "--keep_best=true",
                        "--policy_version=4",
                        "--priors_off=false",
                        "--rounds=50",
                        "--topologies=a,b",
                    }));
}

TEST(RecipeTest, ErrorsNameTheFileAndTheKey) {
  const absl::StatusOr<std::vector<std::string>> missing =
      ReadRecipeFlags("/no/such/recipe.json");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  const std::string path = Write("{\"rounds\": {\"a\": 1}}");
  const absl::StatusOr<std::vector<std::string>> object = ReadRecipeFlags(path);
  EXPECT_TRUE(absl::IsInvalidArgument(object.status()));
  EXPECT_NE(object.status().message().find(path + ": key 'rounds'"),
            std::string::npos)
      << object.status();
  const absl::StatusOr<std::vector<std::string>> not_json =
      ReadRecipeFlags(Write("{\n  \"rounds\": 5,\n}"));
  EXPECT_TRUE(absl::IsInvalidArgument(not_json.status()));
  EXPECT_NE(not_json.status().message().find("line 3"), std::string::npos)
      << not_json.status();
}

}  // namespace
}  // namespace gopt::policy
