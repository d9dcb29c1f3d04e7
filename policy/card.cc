#include "policy/card.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/status_macros.h"

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

bool VersionLess(absl::string_view a, absl::string_view b) {
  int64_t x = 0;
  int64_t y = 0;
  if (absl::SimpleAtoi(a, &x) && absl::SimpleAtoi(b, &y)) return x < y;
  return a < b;
}

absl::StatusOr<std::vector<PolicyDirectory>> ListPolicyDirectories(
    const std::string& parent) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(parent, error)) {
    return absl::NotFoundError(
        absl::StrCat("policy directory '", parent, "' does not exist"));
  }
  std::vector<fs::path> paths;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(parent, error)) {
    if (entry.is_directory() && fs::exists(entry.path() / "card.json")) {
      paths.push_back(entry.path());
    }
  }
  if (error) {
    return absl::InternalError(absl::StrCat("cannot list policy directory '",
                                            parent, "': ", error.message()));
  }
  std::sort(paths.begin(), paths.end());
  std::vector<PolicyDirectory> result;
  for (const fs::path& path : paths) {
    const std::string where = absl::StrCat("policy '", path.string(), "'");
    absl::StatusOr<nlohmann::json> card = ReadCardFile(path.string());
    if (!card.ok()) return Annotate(card.status(), where);
    absl::StatusOr<PolicyCard> fields = ParseCard(*card);
    if (!fields.ok()) return Annotate(fields.status(), where);
    RETURN_IF_ERROR(Annotate(CheckCardComplete(*fields), where));
    result.push_back({path.string(), *std::move(card), *std::move(fields)});
  }
  return result;
}

absl::StatusOr<std::string> NewestPolicyDirectory(const std::string& parent,
                                                  absl::string_view kind) {
  ASSIGN_OR_RETURN(std::vector<PolicyDirectory> directories,
                   ListPolicyDirectories(parent));
  const PolicyDirectory* newest = nullptr;
  std::vector<std::string> names;
  const auto version = [](const PolicyDirectory& d) -> std::string {
    return d.fields.version.empty() ? "1" : d.fields.version;
  };
  for (const PolicyDirectory& directory : directories) {
    if (directory.fields.kind != kind) continue;
    if (std::find(names.begin(), names.end(), directory.fields.name) ==
        names.end()) {
      names.push_back(directory.fields.name);
    }
    if (newest == nullptr ||
        VersionLess(version(*newest), version(directory))) {
      newest = &directory;
    }
  }
  if (newest == nullptr) {
    return absl::NotFoundError(absl::StrCat("policy directory '", parent,
                                            "' holds no policy of kind '", kind,
                                            "'"));
  }
  if (names.size() > 1) {
    std::sort(names.begin(), names.end());
    return absl::InvalidArgumentError(
        absl::StrCat("policy directory '", parent, "' holds ", kind,
                     " policies under several names (",
                     absl::StrJoin(names, ", "), "): name the one to use"));
  }
  return newest->path;
}

}  // namespace gopt::policy
