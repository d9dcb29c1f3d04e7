#include "policy/card.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gopt::policy {
namespace {

using ::testing::HasSubstr;

TEST(CardTextTest, StringsIntegersAndEverythingElse) {
  const nlohmann::json card = nlohmann::json::parse(
      R"({"name": "go", "version": 2, "tasks": ["placement"], "x": 1.5})");
  EXPECT_EQ(CardText(card, "name", "?"), "go");
  EXPECT_EQ(CardText(card, "version", "1"), "2");
  EXPECT_EQ(CardText(card, "tasks", "none"), "none");
  EXPECT_EQ(CardText(card, "x", "none"), "none");
  EXPECT_EQ(CardText(card, "missing", "fallback"), "fallback");
  EXPECT_EQ(CardText(nlohmann::json::array(), "name", "f"), "f");
}

TEST(CardFlagTest, OnlyTrueIsTrue) {
  const nlohmann::json card = nlohmann::json::parse(
      R"({"yes": true, "no": false, "text": "true", "one": 1})");
  EXPECT_TRUE(CardFlag(card, "yes"));
  EXPECT_FALSE(CardFlag(card, "no"));
  EXPECT_FALSE(CardFlag(card, "text"));
  EXPECT_FALSE(CardFlag(card, "one"));
  EXPECT_FALSE(CardFlag(card, "missing"));
  EXPECT_FALSE(CardFlag(nlohmann::json::array(), "yes"));
}

TEST(ParseCardTest, ReadsEveryCommonField) {
  absl::StatusOr<PolicyCard> card = ParseCard(nlohmann::json::parse(
      R"({"format_version": 1, "kind": "go", "name": "go-multitask",
          "version": "2", "tasks": ["placement", "tile"],
          "checkpoint": "model.pt", "extra": {"any": 1}})"));
  ASSERT_TRUE(card.ok()) << card.status();
  EXPECT_EQ(card->format_version, 1);
  EXPECT_EQ(card->kind, "go");
  EXPECT_EQ(card->name, "go-multitask");
  EXPECT_EQ(card->version, "2");
  ASSERT_TRUE(card->tasks.has_value());
  EXPECT_EQ(*card->tasks, (std::vector<std::string>{"placement", "tile"}));
  EXPECT_EQ(card->checkpoint, "model.pt");
  EXPECT_TRUE(CheckCardComplete(*card).ok());
}

TEST(ParseCardTest, NumericVersionIsItsDecimalText) {
  // nlohmann's card.value("version", "1") throws type_error.302 here.
  absl::StatusOr<PolicyCard> card = ParseCard(
      nlohmann::json::parse(R"({"kind": "go", "name": "x", "version": 7})"));
  ASSERT_TRUE(card.ok()) << card.status();
  EXPECT_EQ(card->version, "7");
}

TEST(ParseCardTest, AbsentFieldsKeepDefaults) {
  absl::StatusOr<PolicyCard> card = ParseCard(nlohmann::json::object());
  ASSERT_TRUE(card.ok()) << card.status();
  EXPECT_EQ(card->format_version, 0);
  EXPECT_EQ(card->kind, "");
  EXPECT_EQ(card->version, "");
  EXPECT_FALSE(card->tasks.has_value());
  EXPECT_THAT(CheckCardComplete(*card).message(), HasSubstr("format_version"));
}

TEST(ParseCardTest, WrongTypesAreInvalidArgumentNamingTheField) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"([1, 2])", "not a JSON object"},
      {R"({"format_version": "1"})", "'format_version'"},
      {R"({"format_version": 1.5})", "'format_version'"},
      {R"({"kind": 3})", "'kind'"},
      {R"({"name": null})", "'name'"},
      {R"({"checkpoint": ["a"]})", "'checkpoint'"},
      {R"({"version": 1.5})", "'version'"},
      {R"({"version": {"major": 1}})", "'version'"},
      {R"({"tasks": "placement"})", "'tasks'"},
      {R"({"tasks": ["placement", 2]})", "'tasks'"},
  };
  for (const auto& [text, field] : cases) {
    absl::StatusOr<PolicyCard> card = ParseCard(nlohmann::json::parse(text));
    ASSERT_FALSE(card.ok()) << text;
    EXPECT_EQ(card.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(card.status().message(), HasSubstr(field)) << text;
  }
}

TEST(CheckCardCompleteTest, NeedsFormatKindAndName) {
  PolicyCard card;
  card.format_version = kPolicyCardFormatVersion;
  card.kind = "go";
  card.name = "x";
  EXPECT_TRUE(CheckCardComplete(card).ok());
  card.format_version = 2;
  EXPECT_THAT(CheckCardComplete(card).message(), HasSubstr("not supported"));
  card.format_version = kPolicyCardFormatVersion;
  card.name = "";
  EXPECT_THAT(CheckCardComplete(card).message(), HasSubstr("'name'"));
  card.name = "x";
  card.kind = "";
  EXPECT_EQ(CheckCardComplete(card).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CardFileTest, WriteThenReadAndErrors) {
  const std::string dir = ::testing::TempDir() + "/card_file_test";
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ReadCardFile(dir).status().code(), absl::StatusCode::kNotFound);
  std::filesystem::create_directories(dir);
  const nlohmann::json card = {{"kind", "go"}, {"version", 3}};
  ASSERT_TRUE(WriteCardFile(dir, card).ok());
  absl::StatusOr<nlohmann::json> read = ReadCardFile(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, card);
  std::ofstream(dir + "/card.json") << "{\"kind\": ";
  EXPECT_EQ(ReadCardFile(dir).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VersionLessTest, NumbersAsNumbersElseText) {
  EXPECT_TRUE(VersionLess("9", "10"));
  EXPECT_FALSE(VersionLess("10", "9"));
  EXPECT_FALSE(VersionLess("3", "3"));
  EXPECT_TRUE(VersionLess("10", "9b"));  // not both numbers: as text
}

// Writes a complete card of `kind`, `name` and `version` into `parent`/`dir`.
void WriteCard(const std::string& parent, const std::string& dir,
               const std::string& kind, const std::string& name,
               const std::string& version) {
  std::filesystem::create_directories(parent + "/" + dir);
  nlohmann::json card = {{"format_version", kPolicyCardFormatVersion},
                         {"kind", kind},
                         {"name", name}};
  if (!version.empty()) card["version"] = version;
  ASSERT_TRUE(WriteCardFile(parent + "/" + dir, card).ok());
}

TEST(PolicyDirectoryTest, ListsCardDirectoriesInNameOrder) {
  const std::string parent = ::testing::TempDir() + "/policy_dirs_list";
  std::filesystem::remove_all(parent);
  EXPECT_EQ(ListPolicyDirectories(parent).status().code(),
            absl::StatusCode::kNotFound);
  WriteCard(parent, "b", "go", "go-multitask", "2");
  WriteCard(parent, "a", "cost_model", "costmodel-tile", "1");
  std::filesystem::create_directories(parent + "/no-card");
  absl::StatusOr<std::vector<PolicyDirectory>> listed =
      ListPolicyDirectories(parent);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2);
  EXPECT_EQ((*listed)[0].path, parent + "/a");
  EXPECT_EQ((*listed)[0].fields.name, "costmodel-tile");
  EXPECT_EQ((*listed)[1].fields.version, "2");
  // An incomplete card fails the listing, naming its directory.
  std::filesystem::create_directories(parent + "/c");
  ASSERT_TRUE(WriteCardFile(parent + "/c", {{"kind", "go"}}).ok());
  listed = ListPolicyDirectories(parent);
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(listed.status().message(), HasSubstr(parent + "/c"));
  EXPECT_THAT(listed.status().message(), HasSubstr("format_version"));
}

TEST(PolicyDirectoryTest, NewestPicksTheHighestVersionOfTheKind) {
  const std::string parent = ::testing::TempDir() + "/policy_dirs_newest";
  std::filesystem::remove_all(parent);
  WriteCard(parent, "go-multitask-v9", "go", "go-multitask", "9");
  WriteCard(parent, "go-multitask-v10", "go", "go-multitask", "10");
  WriteCard(parent, "go-multitask-v1", "go", "go-multitask", "");
  WriteCard(parent, "tile", "cost_model", "costmodel-tile", "99");
  absl::StatusOr<std::string> newest = NewestPolicyDirectory(parent, "go");
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(*newest, parent + "/go-multitask-v10");
  // No policy of the kind: NotFound naming the directory and kind.
  absl::StatusOr<std::string> none = NewestPolicyDirectory(parent, "layout");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("kind 'layout'"));
  // Two names of one kind: the caller must choose.
  WriteCard(parent, "go-other", "go", "go-other", "1");
  absl::StatusOr<std::string> ambiguous = NewestPolicyDirectory(parent, "go");
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ambiguous.status().message(),
              HasSubstr("(go-multitask, go-other)"));
}

}  // namespace
}  // namespace gopt::policy
