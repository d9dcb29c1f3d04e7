#include "policy/card.h"

#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gopt::policy {
namespace {

// card[key] as a string into `out`; absent leaves `out` as it is.
absl::Status ReadString(const nlohmann::json& card, const char* key,
                        std::string* out) {
  const auto it = card.find(key);
  if (it == card.end()) return absl::OkStatus();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("card.json: '", key, "' must be a string"));
  }
  *out = it->get<std::string>();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PolicyCard> ParseCard(const nlohmann::json& card) {
  if (!card.is_object()) {
    return absl::InvalidArgumentError("card.json: not a JSON object");
  }
  PolicyCard out;
  if (const auto format = card.find("format_version"); format != card.end()) {
    if (!format->is_number_integer()) {
      return absl::InvalidArgumentError(
          "card.json: 'format_version' must be an integer");
    }
    out.format_version = format->get<int64_t>();
  }
  for (const auto& [key, field] :
       {std::pair<const char*, std::string*>{"kind", &out.kind},
        {"name", &out.name},
        {"checkpoint", &out.checkpoint}}) {
    if (absl::Status status = ReadString(card, key, field); !status.ok()) {
      return status;
    }
  }
  if (const auto version = card.find("version"); version != card.end()) {
    if (!version->is_string() && !version->is_number_integer()) {
      return absl::InvalidArgumentError(
          "card.json: 'version' must be a string or an integer");
    }
    out.version = CardText(card, "version", "");
  }
  if (const auto tasks = card.find("tasks"); tasks != card.end()) {
    if (!tasks->is_array()) {
      return absl::InvalidArgumentError(
          "card.json: 'tasks' must be an array of task names");
    }
    out.tasks.emplace();
    for (const nlohmann::json& task : *tasks) {
      if (!task.is_string()) {
        return absl::InvalidArgumentError(
            "card.json: 'tasks' must be an array of task names");
      }
      out.tasks->push_back(task.get<std::string>());
    }
  }
  return out;
}

absl::Status CheckCardComplete(const PolicyCard& card) {
  if (card.format_version != kPolicyCardFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "card.json: format_version ",
        card.format_version == 0
            ? std::string("is missing")
            : absl::StrCat(card.format_version, " is not supported"),
        " (this server reads ", kPolicyCardFormatVersion, ")"));
  }
  for (const auto& [key, value] :
       {std::pair<const char*, const std::string*>{"kind", &card.kind},
        {"name", &card.name}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "card.json: '", key, "' is missing or not a non-empty string"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> ReadCardFile(const std::string& directory) {
  const std::string path = absl::StrCat(directory, "/card.json");
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("no policy card '", path, "'"));
  }
  nlohmann::json card = nlohmann::json::parse(in, /*cb=*/nullptr,
                                              /*allow_exceptions=*/false);
  if (card.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not valid JSON"));
  }
  return card;
}

absl::Status WriteCardFile(const std::string& directory,
                           const nlohmann::json& card) {
  const std::string path = absl::StrCat(directory, "/card.json");
  std::ofstream out(path);
  out << card.dump(2) << "\n";
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string CardText(const nlohmann::json& card, absl::string_view key,
                     absl::string_view fallback) {
  if (!card.is_object()) return std::string(fallback);
  const auto it = card.find(std::string(key));
  if (it == card.end()) return std::string(fallback);
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return std::string(fallback);
}

bool CardFlag(const nlohmann::json& card, absl::string_view key) {
  if (!card.is_object()) return false;
  const auto it = card.find(std::string(key));
  return it != card.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace gopt::policy
