#include "policy/card.h"

#include "gtest/gtest.h"

namespace gopt::policy {
namespace {

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

}  // namespace
}  // namespace gopt::policy
