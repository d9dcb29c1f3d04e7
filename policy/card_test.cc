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

}  // namespace
}  // namespace gopt::policy
