#include "training/recipe.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace gopt::policy {
namespace {

// One value as flag text; InvalidArgument naming the key otherwise.
absl::StatusOr<std::string> FlagText(const std::string& path,
                                     const std::string& key,
                                     const nlohmann::json& value) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": key '", key, "': ", what));
  };
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean())
    return std::string(value.get<bool>() ? "true" : "false");
  // Numbers print as the shortest text that reads back as the same value.
  if (value.is_number()) return value.dump();
  if (value.is_array()) {
    std::vector<std::string> items;
    for (const nlohmann::json& item : value) {
      if (!item.is_string()) {
        return error(absl::StrCat("expected an array of strings, got ",
                                  item.dump(), " in it"));
      }
      const std::string text = item.get<std::string>();
      if (text.find(',') != std::string::npos) {
        return error(absl::StrCat("list item '", text,
                                  "' has a comma (items are joined by them)"));
      }
      items.push_back(text);
    }
    return absl::StrJoin(items, ",");
  }
  return error(
      absl::StrCat("expected a string, number, bool or array of strings, got ",
                   value.dump()));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadRecipeFlags(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot read the recipe file"));
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json recipe;
  try {
    recipe = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& error) {
    // what() names the line and column.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not JSON: ", error.what()));
  }
  if (!recipe.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object of flag names, got ",
                     recipe.type_name()));
  }
  std::vector<std::string> flags;
  for (const auto& [key, value] : recipe.items()) {
    if (key == "description") continue;
    absl::StatusOr<std::string> flag_text = FlagText(path, key, value);
    if (!flag_text.ok()) return flag_text.status();
    flags.push_back(absl::StrCat("--", key, "=", *flag_text));
  }
  return flags;
}

}  // namespace gopt::policy
